package grace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNilArguments: the package's functions take nil pointers without a panic.
func TestNilArguments(t *testing.T) {
	type pair struct {
		Seconds   int64
		Shortened bool
	}
	for _, tc := range []struct {
		name string
		got  func() any
		want any
	}{
		{"ContainerGracePeriod(nil, nil)", func() any { return ContainerGracePeriod(nil, nil, KillPodTermination) }, int64(MinContainerStopSeconds)},
		{"ContainerStopTimeout(nil, nil, nil)", func() any { return ContainerStopTimeout(nil, nil, nil, KillPodTermination, 0) }, int64(MinContainerStopSeconds)},
		{"StopTimeout(0, 0, nil)", func() any { return StopTimeout(0, 0, nil) }, int64(MinContainerStopSeconds)},
		{"HasPreStop(nil)", func() any { return HasPreStop(nil) }, false},
		{"Effective(0, nil, nil)", func() any { s, sh := Effective(0, nil, nil); return pair{s, sh} }, pair{1, false}},
		{"Effective(5, nil, nil)", func() any { s, sh := Effective(5, nil, nil); return pair{s, sh} }, pair{5, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
