package kube

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// FuzzRelist checks the re-list's difference: applied to what had been sent, its events give
// exactly the new list; unchanged pods send nothing, no UID gets two events, and every
// removal comes before every addition (so a reused name is free before the new pod arrives).
//
// Each input byte is one UID (b%16) and its fate (b/16%4): only sent before, only in the new
// list, in both unchanged, or in both with a new resourceVersion. A UID's first byte wins.
func FuzzRelist(f *testing.F) {
	f.Add([]byte{0x00, 0x11, 0x22, 0x33})
	f.Add([]byte{0x01, 0x01, 0x31, 0x12})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		known := map[types.UID]*v1.Pod{}
		list := &v1.PodList{}
		want := map[types.UID]string{}
		unchanged := map[types.UID]bool{}
		seen := map[types.UID]bool{}
		for _, b := range data {
			uid := types.UID(fmt.Sprintf("u%d", b%16))
			if seen[uid] {
				continue
			}
			seen[uid] = true
			name := fmt.Sprintf("p%d", b%16)
			switch b / 16 % 4 {
			case 0:
				known[uid] = podRV(name, string(uid), "1")
			case 1:
				list.Items = append(list.Items, *podRV(name, string(uid), "2"))
				want[uid] = "2"
			case 2:
				known[uid] = podRV(name, string(uid), "1")
				list.Items = append(list.Items, *podRV(name, string(uid), "1"))
				want[uid], unchanged[uid] = "1", true
			case 3:
				known[uid] = podRV(name, string(uid), "1")
				list.Items = append(list.Items, *podRV(name, string(uid), "3"))
				want[uid] = "3"
			}
		}
		client := fake.NewClientset()
		client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, list.DeepCopy(), nil
		})
		src, err := NewSource(SourceConfig{Client: client})
		if err != nil {
			t.Fatal(err)
		}
		sent := map[types.UID]string{}
		for uid, p := range known {
			sent[uid] = p.ResourceVersion
		}
		out := make(chan statusmgrtest.Event, len(data)+1)
		w := &watcher{s: src, node: "node1", known: known, out: out, backoff: src.cfg.RetryBackoffInitial}
		if !w.relist(context.Background()) {
			t.Fatal("relist failed")
		}
		close(out)
		events := map[types.UID]int{}
		added := false
		for ev := range out {
			uid := ev.Pod.UID
			events[uid]++
			if events[uid] > 1 {
				t.Errorf("two events for %s", uid)
			}
			if unchanged[uid] {
				t.Errorf("an event for the unchanged %s: %s", uid, ev.Type)
			}
			switch ev.Type {
			case statusmgrtest.Deleted:
				if added {
					t.Errorf("a removal (%s) after an addition", uid)
				}
				delete(sent, uid)
			default:
				added = added || ev.Type == statusmgrtest.Added
				sent[uid] = ev.Pod.ResourceVersion
			}
		}
		if fmt.Sprint(sent) != fmt.Sprint(want) {
			t.Errorf("after the re-list's events: %v, want the new list %v", sent, want)
		}
	})
}
