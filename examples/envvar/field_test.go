package envvar_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/examples/envvar"
)

// TestFieldValue is the downward API's field paths with the addresses given as
// parameters (the env resolver passes the node's, examples/cri's downwardAPI volume the
// pod's status) and StatusIPs.
func TestFieldValue(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"b": "2", "a": `q"x`}, Annotations: map[string]string{"k": "v"}},
		Spec:   v1.PodSpec{NodeName: "node1", ServiceAccountName: "sa"},
		Status: v1.PodStatus{HostIP: "10.0.0.1", PodIP: "10.1.0.5"},
	}
	hostIPs, podIPs := []string{"10.0.0.1", "fd00::1"}, []string{"10.1.0.5", "fd01::5"}
	for _, tc := range []struct {
		name, path      string
		hostIPs, podIPs []string
		want, wantErr   string
	}{
		{name: "name", path: "metadata.name", want: "web"},
		{name: "namespace", path: "metadata.namespace", want: "ns"},
		{name: "uid", path: "metadata.uid", want: "u1"},
		{name: "labels, sorted and quoted", path: "metadata.labels", want: "a=\"q\\\"x\"\nb=\"2\""},
		{name: "one label", path: "metadata.labels['b']", want: "2"},
		{name: "a missing label", path: "metadata.labels['nope']", want: ""},
		{name: "one annotation", path: "metadata.annotations['k']", want: "v"},
		{name: "node name", path: "spec.nodeName", want: "node1"},
		{name: "service account", path: "spec.serviceAccountName", want: "sa"},
		{name: "host IP, the first given", path: "status.hostIP", hostIPs: hostIPs, want: "10.0.0.1"},
		{name: "host IPs", path: "status.hostIPs", hostIPs: hostIPs, want: "10.0.0.1,fd00::1"},
		{name: "pod IP, the first given", path: "status.podIP", podIPs: podIPs, want: "10.1.0.5"},
		{name: "pod IPs", path: "status.podIPs", podIPs: podIPs, want: "10.1.0.5,fd01::5"},
		{name: "no pod IP given: empty, not the status's", path: "status.podIP", want: ""},
		{name: "no host IP given: empty", path: "status.hostIP", want: ""},
		{name: "unsupported", path: "spec.schedulerName", wantErr: "field label not supported: spec.schedulerName"},
		{name: "subscript of another field", path: "metadata.name['x']", wantErr: "field label not supported: metadata.name['x']"},
	} {
		got, err := envvar.FieldValue(pod, tc.path, tc.hostIPs, tc.podIPs)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: FieldValue(%q) = %q, error %q; want %q, error %q", tc.name, tc.path, got, gotErr, tc.want, tc.wantErr)
		}
	}

	for _, tc := range []struct {
		name                    string
		status                  v1.PodStatus
		wantHostIPs, wantPodIPs []string
	}{
		{name: "empty"},
		{name: "singular fields only", status: v1.PodStatus{HostIP: "10.0.0.1", PodIP: "10.1.0.5"},
			wantHostIPs: []string{"10.0.0.1"}, wantPodIPs: []string{"10.1.0.5"}},
		{name: "the lists win", status: v1.PodStatus{HostIP: "10.0.0.1", PodIP: "10.1.0.5",
			HostIPs: []v1.HostIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}, PodIPs: []v1.PodIP{{IP: "10.1.0.5"}, {IP: "fd01::5"}}},
			wantHostIPs: []string{"10.0.0.1", "fd00::1"}, wantPodIPs: []string{"10.1.0.5", "fd01::5"}},
	} {
		h, p := envvar.StatusIPs(&v1.Pod{Status: tc.status})
		if diff := cmp.Diff([][]string{tc.wantHostIPs, tc.wantPodIPs}, [][]string{h, p}); diff != "" {
			t.Errorf("%s: StatusIPs (-want +got):\n%s", tc.name, diff)
		}
	}
}
