package vk_test

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestFilterSource: rejected pods are left out of the initial list and the events; a
// rejected pod the filter accepts after a change arrives as added; an accepted pod's
// later changes and removal pass even if the filter rejects them.
func TestFilterSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := statusmgrtest.NewFakeAPI()
		mk := func(name, label string) *v1.Pod {
			p, err := server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
				Labels: map[string]string{"run": label}}, Spec: v1.PodSpec{NodeName: "n"}})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		relabel := func(name, label string) {
			p, _ := server.Pod("default", name)
			p.Labels = map[string]string{"run": label}
			server.Put(p)
		}
		mk("a", "yes")
		mk("b", "no")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		src := vk.FilterSource(server, func(p *v1.Pod) bool { return p.Labels["run"] == "yes" })
		initial, events := src.Watch(ctx, "n")
		if len(initial) != 1 || initial[0].Name != "a" {
			t.Fatalf("initial pods %v, want only a", initial)
		}
		mk("c", "no")
		relabel("b", "yes") // accepted now: added
		relabel("a", "no")  // accepted before: still passes
		if err := server.Delete("default", "a", new(int64)); err != nil {
			t.Fatal(err)
		}
		want := []string{"ADDED b", "MODIFIED a", "DELETED a"}
		for _, w := range want {
			ev := <-events
			if got := string(ev.Type) + " " + ev.Pod.Name; got != w {
				t.Fatalf("event %q, want %q", got, w)
			}
		}
		synctest.Wait()
		select {
		case ev := <-events:
			t.Fatalf("unexpected event %s %s", ev.Type, ev.Pod.Name)
		default:
		}
		cancel()
		for range events {
		}
	})
}
