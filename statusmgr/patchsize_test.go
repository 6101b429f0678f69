package statusmgr

import (
	"encoding/json"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/internal/seedpod"
)

// StatusPatch is never larger than the kubelet's patch for the same change (two JSON
// encodings and apimachinery's two-way strategic merge), on W4's realistic statuses: each
// step of a pod's history to the next two (a status coalesced with the next) and to the
// pod's terminal status.
func TestStatusPatchNoLargerThanTheKubelets(t *testing.T) {
	const pods = 20
	var pairs, ours, theirs int
	for n := range pods {
		h := seedpod.Realistic(1, n, t0)
		steps := make([]v1.PodStatus, 0, len(h.Statuses)+1)
		for _, s := range h.Statuses {
			steps = append(steps, roundTrip(t, s))
		}
		final, err := TerminatedStatus(h.Deleting, h.Statuses[len(h.Statuses)-1])
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, roundTrip(t, final))
		for i := range steps {
			for _, j := range slices.Compact([]int{min(i+1, len(steps)-1), min(i+2, len(steps)-1), len(steps) - 1}) {
				if j == i {
					continue
				}
				got, unchanged, err := StatusPatch(h.Pod.UID, &steps[i], &steps[j])
				if err != nil {
					t.Fatal(err)
				}
				if unchanged {
					continue
				}
				want := kubeletPatch(t, h.Pod, &steps[i], &steps[j])
				pairs, ours, theirs = pairs+1, ours+len(got), theirs+len(want)
				if len(got) > len(want) {
					t.Errorf("pod %d, step %d -> %d: %d bytes, the kubelet's %d:\n%s\n%s", n, i, j, len(got), len(want), got, want)
				}
			}
		}
	}
	t.Logf("%d changes: %d bytes, the kubelet's %d", pairs, ours, theirs)
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
