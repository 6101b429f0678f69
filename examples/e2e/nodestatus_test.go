package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/nodeinfo"
	"github.com/podlife/podlife/examples/nodestatus"
	"github.com/podlife/podlife/pleg/plegtest"
)

// TestE2ENodeRegistration: the agent as system:node:node1, under the Node authorizer and
// NodeRestriction, registers node1 with Ready True and its allocatable, renews its Lease
// in kube-node-lease (renewTime advances, owned by the Node), registers the node again
// when its Node object is deleted, and renews nothing once stopped. The status and the
// Lease are updated every second here (the defaults, 10 s, are the unit tests').
func TestE2ENodeRegistration(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("5Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
	reg := nodeRegistration{resources: rl, labels: map[string]string{"example.com/pool": "e2e"},
		addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}},
		updateFrequency: time.Second, renewInterval: time.Second}
	r := startAgentWith(t, nodeClient, agent.Config{Runtime: plegtest.NewRuntime(nil), HostIPs: []string{"192.0.2.10"},
		NodeStatus: reg.nodeStatus(t, admin, nodeClient)})

	first := waitReady(t, ctx, admin, "")
	if got := first.Status.Allocatable[v1.ResourceCPU]; got.String() != "3" {
		t.Errorf("allocatable cpu %s, want 3", got.String())
	}
	if got := first.Status.Allocatable[v1.ResourceMemory]; got.String() != "5Gi" {
		t.Errorf("allocatable memory %s, want 5Gi", got.String())
	}
	if first.Labels[v1.LabelHostname] != node || first.Labels["example.com/pool"] != "e2e" {
		t.Errorf("labels %v", first.Labels)
	}
	if first.Status.NodeInfo.KubeletVersion != nodestatus.KubeletVersion || first.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("nodeInfo %+v, daemonEndpoints %+v", first.Status.NodeInfo, first.Status.DaemonEndpoints)
	}
	if len(first.Status.Addresses) == 0 || first.Status.Addresses[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: "192.0.2.10"}) {
		t.Errorf("addresses %v", first.Status.Addresses)
	}

	// The Lease: owned by the Node, renewed.
	l := waitLease(t, ctx, admin, "the lease owned by the node", func(l *leaseView) bool { return l.ownerUID == string(first.UID) })
	renewed := l.renew
	waitLease(t, ctx, admin, "the lease renewed", func(l *leaseView) bool { return l.renew.After(renewed) })
	if l.holder != node || l.duration != nodestatus.DefaultLeaseDurationSeconds {
		t.Errorf("lease holder %q duration %d, want %q %d", l.holder, l.duration, node, nodestatus.DefaultLeaseDurationSeconds)
	}

	// Deleted: registered again, and the Lease's owner follows.
	if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := waitReady(t, ctx, admin, first.UID)
	waitLease(t, ctx, admin, "the lease owned by the new node", func(l *leaseView) bool { return l.ownerUID == string(again.UID) })

	// Stopped: no more renewals.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	l = waitLease(t, ctx, admin, "the lease", func(*leaseView) bool { return true })
	time.Sleep(3 * time.Second) // three renew intervals
	after := waitLease(t, ctx, admin, "the lease", func(*leaseView) bool { return true })
	if !after.renew.Equal(l.renew) {
		t.Errorf("renewTime moved from %v to %v after the agent stopped", l.renew, after.renew)
	}
}

// nodeRegistration is how a test's agent registers node1 and renews its Lease (package
// nodestatus, as nodeagent -register-node): agent.Config.NodeStatus, made by nodeStatus,
// or startCRINode's option withRegistration.
type nodeRegistration struct {
	resources   v1.ResourceList   // the node's capacity and allocatable
	labels      map[string]string // besides the well-known ones (nodeinfo.NewNode)
	addresses   []v1.NodeAddress
	kubeletPort int32 // status.daemonEndpoints; 0: 10250
	// updateFrequency and renewInterval: the status's and the Lease's; 0: nodestatus's
	// defaults (10 s).
	updateFrequency, renewInterval time.Duration
}

// nodeStatus returns the agent's NodeStatus that registers node1 as reg says. It first
// removes node1 and its Lease (another test's agent may have registered node1), and again
// when the test ends (after the agent stopped, if it was started after this call).
func (reg nodeRegistration) nodeStatus(t *testing.T, admin, nodeClient kubernetes.Interface) *nodestatus.Config {
	t.Helper()
	removeNode := func() {
		if err := admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the node: %v", err)
		}
		if err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(context.Background(), node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the lease: %v", err)
		}
	}
	removeNode()
	t.Cleanup(removeNode)
	return &nodestatus.Config{Client: nodeClient, Node: nodeinfo.NewNode(node, reg.resources, reg.labels),
		Addresses: reg.addresses, KubeletPort: reg.kubeletPort,
		UpdateFrequency: reg.updateFrequency, RenewInterval: reg.renewInterval}
}

// waitReady waits for node1 to be Ready True with a UID other than notUID.
func waitReady(t *testing.T, ctx context.Context, admin kubernetes.Interface, notUID types.UID) *v1.Node {
	t.Helper()
	var n *v1.Node
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		n = got
		for _, c := range got.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && got.UID != notUID {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for node %s Ready (UID not %q): %v; last %+v", node, notUID, err, n)
	}
	return n
}

// leaseView is what the test reads of the node's Lease.
type leaseView struct {
	holder   string
	duration int32
	renew    time.Time
	ownerUID string
}

// waitLease waits until the node's Lease satisfies cond.
func waitLease(t *testing.T, ctx context.Context, admin kubernetes.Interface, what string, cond func(*leaseView) bool) *leaseView {
	t.Helper()
	var last *leaseView
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		v := &leaseView{}
		if l.Spec.HolderIdentity != nil {
			v.holder = *l.Spec.HolderIdentity
		}
		if l.Spec.LeaseDurationSeconds != nil {
			v.duration = *l.Spec.LeaseDurationSeconds
		}
		if l.Spec.RenewTime != nil {
			v.renew = l.Spec.RenewTime.Time
		}
		if len(l.OwnerReferences) == 1 && l.OwnerReferences[0].Kind == "Node" && l.OwnerReferences[0].Name == node {
			v.ownerUID = string(l.OwnerReferences[0].UID)
		}
		last = v
		return cond(v), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last %+v", what, err, last)
	}
	return last
}
