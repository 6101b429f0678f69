package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTruncateHostname ports the kubelet's TestTruncatePodHostname
// (pkg/kubelet/kubelet_pods_test.go, v1.37.2) and adds the error cases.
func TestTruncateHostname(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
		wantErr           bool
	}{
		{name: "kubelet: valid hostname", input: "test.pod.hostname", want: "test.pod.hostname"},
		{name: "kubelet: too long hostname", input: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567.", want: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.1234567"},
		{name: "kubelet: hostname end with .", input: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456.1234567.", want: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456"},
		{name: "kubelet: hostname end with -", input: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456-1234567.", want: "1234567.1234567.1234567.1234567.1234567.1234567.1234567.123456"},
		{name: "exactly 63 characters kept", input: strings.Repeat("a", 63), want: strings.Repeat("a", 63)},
		{name: "70-character pod name", input: strings.Repeat("a", 70), want: strings.Repeat("a", 63)},
		{name: "only dashes and dots beyond the cap", input: strings.Repeat("-.", 40), wantErr: true},
		{name: "empty", input: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TruncateHostname(tc.input)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrHostname)) {
				t.Fatalf("error %v, want error %v wrapping ErrHostname", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TruncateHostname(%q) (-want +got):\n%s", tc.input, diff)
			}
		})
	}
}

func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
		err  bool
	}{
		{name: "pod name", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, want: "web"},
		{name: "spec hostname wins", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Hostname: "h"}}, want: "h"},
		{name: "long pod name truncated, trailing dash removed", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}}, want: strings.Repeat("a", 62)},
		{name: "nil pod", pod: nil, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodHostname(tc.pod)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodHostname (-want +got):\n%s", diff)
			}
		})
	}
}
