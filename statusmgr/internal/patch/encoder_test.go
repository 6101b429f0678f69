package patch

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestAppendIsTheBuildsEncoder: Append is the typed encoder by default, which writes a
// patch into a buffer with room without allocating, and Reference under the tag
// podlife_simple, which allocates its own buffer.
func TestAppendIsTheBuildsEncoder(t *testing.T) {
	old := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7"}
	now := v1.PodStatus{Phase: v1.PodFailed, PodIP: "10.0.0.7", Reason: "Evicted"}
	buf := make([]byte, 0, 1024)
	var err error
	allocs := testing.AllocsPerRun(10, func() { _, _, err = Append(buf, "uid-1", &old, &now) })
	if err != nil {
		t.Fatal(err)
	}
	if typed := allocs == 0; typed == Simple {
		t.Errorf("Append made %v allocations, Simple is %v: the build's encoder is not the one Simple says", allocs, Simple)
	}
}
