package statusmgr

import (
	"encoding/json"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// StatusPatch is never larger than the kubelet's patch for the same change (two JSON
// encodings and apimachinery's two-way strategic merge), on W4's realistic statuses: each
// step of a pod's history to the next two (a status coalesced with the next) and to the
// pod's terminal status, and the server's first status (the seed pod's) to every step.
func TestStatusPatchNoLargerThanTheKubelets(t *testing.T) {
	const pods = 20
	var pairs, ours, theirs, oursMax, theirsMax int
	for n := range pods {
		h := seedpod.Realistic(1, n, t0)
		steps := append([]v1.PodStatus{statustest.RoundTrip(t, h.Pod.Status)}, realisticSteps(t, n)...)
		for i := range steps {
			next := []int{min(i+1, len(steps)-1), min(i+2, len(steps)-1), len(steps) - 1}
			if i == 0 {
				next = nil
				for j := range steps {
					next = append(next, j)
				}
			}
			for _, j := range slices.Compact(next) {
				if j == i {
					continue
				}
				got, unchanged, err := statusPatch(h.Pod.UID, &steps[i], &steps[j])
				if err != nil {
					t.Fatal(err)
				}
				if unchanged {
					continue
				}
				want := kubeletPatch(t, h.Pod, &steps[i], &steps[j])
				pairs, ours, theirs = pairs+1, ours+len(got), theirs+len(want)
				oursMax, theirsMax = max(oursMax, len(got)), max(theirsMax, len(want))
				if len(got) > len(want) {
					t.Errorf("pod %d, step %d -> %d: %d bytes, the kubelet's %d:\n%s\n%s", n, i, j, len(got), len(want), got, want)
				}
			}
		}
	}
	t.Logf("%d changes: %d bytes (largest %d), the kubelet's %d (largest %d)", pairs, ours, oursMax, theirs, theirsMax)
}

// kubeletPatch is the kubelet's status patch from old to nw (statusutil.PatchPodStatus).
func kubeletPatch(t *testing.T, pod *v1.Pod, old, nw *v1.PodStatus) []byte {
	t.Helper()
	o, err := json.Marshal(v1.Pod{Status: *old})
	if err != nil {
		t.Fatal(err)
	}
	m, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod.UID}, Status: *nw})
	if err != nil {
		t.Fatal(err)
	}
	p, err := strategicpatch.CreateTwoWayMergePatch(o, m, v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
