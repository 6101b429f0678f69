package podfacts

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestRestartPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.RestartPolicy
		want   v1.RestartPolicy
	}{
		{name: "empty is Always", policy: "", want: v1.RestartPolicyAlways},
		{name: "Always", policy: v1.RestartPolicyAlways, want: v1.RestartPolicyAlways},
		{name: "OnFailure", policy: v1.RestartPolicyOnFailure, want: v1.RestartPolicyOnFailure},
		{name: "Never", policy: v1.RestartPolicyNever, want: v1.RestartPolicyNever},
		{name: "unknown kept", policy: "Sometimes", want: "Sometimes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, RestartPolicy(&v1.PodSpec{RestartPolicy: tt.policy})); diff != "" {
				t.Errorf("RestartPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTerminationGracePeriodSeconds(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name  string
		grace *int64
		want  int64
	}{
		{name: "nil is 30", grace: nil, want: 30},
		{name: "zero kept", grace: i64(0), want: 0},
		{name: "negative is 1", grace: i64(-5), want: 1},
		{name: "positive kept", grace: i64(45), want: 45},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, TerminationGracePeriodSeconds(&v1.PodSpec{TerminationGracePeriodSeconds: tt.grace})); diff != "" {
				t.Errorf("TerminationGracePeriodSeconds (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImagePullPolicy's answers were checked against github.com/distribution/reference
// v0.6.0's ParseNormalizedNamed, which the API server's parsers.ParseImageName uses.
func TestImagePullPolicy(t *testing.T) {
	sha := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		image  string
		policy v1.PullPolicy
		want   v1.PullPolicy
	}{
		{name: "set policy kept", image: "busybox", policy: v1.PullNever, want: v1.PullNever},
		{name: "no tag is latest", image: "busybox", want: v1.PullAlways},
		{name: "latest tag", image: "busybox:latest", want: v1.PullAlways},
		{name: "other tag", image: "busybox:1.36", want: v1.PullIfNotPresent},
		{name: "tag that contains latest", image: "busybox:latest-1", want: v1.PullIfNotPresent},
		{name: "registry with port, no tag", image: "localhost:5000/busybox", want: v1.PullAlways},
		{name: "registry with port and tag", image: "localhost:5000/busybox:v1", want: v1.PullIfNotPresent},
		{name: "registry with port and latest", image: "registry.k8s.io:443/pause:latest", want: v1.PullAlways},
		{name: "nested path", image: "registry.k8s.io/e2e-test-images/agnhost:2.53", want: v1.PullIfNotPresent},
		{name: "digest only", image: "busybox@" + sha, want: v1.PullIfNotPresent},
		{name: "tag and digest", image: "busybox:1.36@" + sha, want: v1.PullIfNotPresent},
		{name: "latest and digest", image: "busybox:latest@" + sha, want: v1.PullAlways},
		{name: "empty image does not parse", image: "", want: v1.PullIfNotPresent},
		{name: "upper-case path does not parse", image: "BusyBox", want: v1.PullIfNotPresent},
		{name: "upper-case domain parses", image: "Registry.Example/busybox", want: v1.PullAlways},
		{name: "bad digest does not parse", image: "busybox:latest@sha256:abc", want: v1.PullIfNotPresent},
		{name: "unknown digest algorithm does not parse", image: "busybox:latest@md5:" + strings.Repeat("ab", 16), want: v1.PullIfNotPresent},
		{name: "bare image ID does not parse", image: strings.Repeat("ab", 32), want: v1.PullIfNotPresent},
		{name: "trailing colon does not parse", image: "busybox:", want: v1.PullIfNotPresent},
		{name: "space does not parse", image: "busy box", want: v1.PullIfNotPresent},
		{name: "upper-case digest does not parse", image: "busybox:latest@sha256:" + strings.Repeat("AB", 32), want: v1.PullIfNotPresent},
		{name: "three underscores do not parse", image: "x___y:latest", want: v1.PullIfNotPresent},
		{name: "two underscores parse", image: "x__y", want: v1.PullAlways},
		{name: "ipv6 registry", image: "[::1]:5000/x:latest", want: v1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1.Container{Image: tt.image, ImagePullPolicy: tt.policy}
			if diff := cmp.Diff(tt.want, ImagePullPolicy(c)); diff != "" {
				t.Errorf("ImagePullPolicy(%q) (-want +got):\n%s", tt.image, diff)
			}
		})
	}
}
