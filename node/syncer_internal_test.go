package node

import (
	"fmt"
	"hash/maphash"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// TestStoppedStatuses: a status kept for a pod is taken once, by that pod only; a newer
// one replaces it; the pods of every shard keep theirs apart.
func TestStoppedStatuses(t *testing.T) {
	s := &stoppedStatuses{seed: maphash.MakeSeed()}
	const pods = 4 * stoppedShards
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }
	kept := make([]*pleg.PodStatus, pods)
	for i := range pods {
		kept[i] = &pleg.PodStatus{ID: uid(i)}
		s.put(uid(i), &pleg.PodStatus{ID: uid(i)})
		s.put(uid(i), kept[i]) // the newer one wins
	}
	if got := s.take("unknown"); got != nil {
		t.Fatalf("take of an unknown pod = %v, want nil", got)
	}
	for i := range pods {
		if got := s.take(uid(i)); got != kept[i] {
			t.Fatalf("take(%s) = %p, want %p", uid(i), got, kept[i])
		}
		if got := s.take(uid(i)); got != nil {
			t.Fatalf("second take(%s) = %v, want nil", uid(i), got)
		}
	}
}
