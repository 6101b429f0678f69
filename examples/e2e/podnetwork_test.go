package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podlife/podlife/examples/cri"
)

// EnvCNI is the pod network's range when hack/e2e.sh gave containerd one (a CNI bridge
// inside the run's own network namespace); unset, the pod network tests skip.
const EnvCNI = "PODLIFE_E2E_CNI"

// Pods that are not hostNetwork (issue 30 item 4): with cri.PodNetworkRuntime
// (nodeagent -pod-network runtime) each gets its own network namespace from containerd's
// CNI configuration and an address of the pod network, which the pod's status reports
// (podIP and podIPs, hostIP the node's), the readiness probe reaches (httpGet to the pod's
// address, as the kubelet's prober) and the test reaches too; two pods get two addresses.
func TestE2ECRIPodNetwork(t *testing.T) {
	subnet := os.Getenv(EnvCNI)
	if subnet == "" {
		t.Skipf("%s is not set: hack/e2e.sh as root runs containerd with a pod network in a network namespace of its own", EnvCNI)
	}
	_, podNet, err := net.ParseCIDR(subnet)
	if err != nil {
		t.Fatalf("%s=%q: %v", EnvCNI, subnet, err)
	}
	admin, nodeClient, ep, image := criEnv(t)
	rt := newCRIConfig(t, cri.Config{Endpoint: ep, PodNetwork: cri.PodNetworkRuntime})
	startCRIAgent(t, nodeClient, rt)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	const port = 8080 // each pod has its own ports
	var ips []string
	for _, name := range []string{"cri-podnet-a", "cri-podnet-b"} {
		pod := criPod(t, name, image, v1.RestartPolicyAlways, 2, "-http", fmt.Sprintf(":%d", port), "-healthy-for", "1h")
		pod.Spec.HostNetwork = false
		pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3,
			ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port)}}}
		pw := watchPod(t, ctx, admin, pod.Name)
		pod = createPod(t, ctx, admin, pod)
		removeLeftovers(t, rt, pod)
		events := pw.waitFor(t, ctx, "Ready with a pod IP", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return ready(e.Pod) && e.Pod.Status.PodIP != "" })
		})
		st := events[len(events)-1].Pod.Status
		ip := net.ParseIP(st.PodIP)
		if ip == nil || !podNet.Contains(ip) {
			t.Fatalf("%s: podIP %q is not in the pod network %s", pod.Name, st.PodIP, subnet)
		}
		if len(st.PodIPs) != 1 || st.PodIPs[0].IP != st.PodIP {
			t.Errorf("%s: podIPs %v, want [%s]", pod.Name, st.PodIPs, st.PodIP)
		}
		if st.HostIP == "" || st.HostIP == st.PodIP {
			t.Errorf("%s: hostIP %q, want the node's address (not the pod's %s)", pod.Name, st.HostIP, st.PodIP)
		}
		// The pod's server, reached at its own address from the node's namespace.
		hc := &http.Client{Timeout: 5 * time.Second}
		resp, err := hc.Get(fmt.Sprintf("http://%s/healthz", net.JoinHostPort(st.PodIP, fmt.Sprint(port))))
		if err != nil {
			t.Fatalf("%s: GET its /healthz at %s: %v", pod.Name, st.PodIP, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET /healthz at %s: %d %q", pod.Name, st.PodIP, resp.StatusCode, body)
		}
		ips = append(ips, st.PodIP)
	}
	if ips[0] == ips[1] {
		t.Errorf("two pods share the address %s", ips[0])
	}
}
