package vk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/examples/vk"
)

// scriptSource sends its updates in order, then waits for ctx.
type scriptSource []config.PodUpdate

func (s scriptSource) Run(ctx context.Context, _ string, out chan<- config.PodUpdate) error {
	for _, u := range s {
		select {
		case out <- u:
		case <-ctx.Done():
			return nil
		}
	}
	<-ctx.Done()
	return nil
}

// labelled is a pod whose label run is yes or no: what the test's filter decides on.
func labelled(name, run string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		Labels: map[string]string{"run": run}}}
}

func upd(op config.Op, pods ...*v1.Pod) config.PodUpdate {
	return config.PodUpdate{Op: op, Source: "api", Pods: pods}
}

func describe(u config.PodUpdate) string {
	var names []string
	for _, p := range u.Pods {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("%v [%s]", u.Op, strings.Join(names, " "))
}

// TestFilterSource: rejected pods are left out of every Set and op; a rejected pod the
// filter accepts after a change arrives as added; an accepted pod's later changes and
// removal pass even if the filter rejects them; a Set keeps the pods accepted before and
// forgets those it no longer lists.
func TestFilterSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := scriptSource{
			upd(config.Set, labelled("a", "yes"), labelled("b", "no")),
			upd(config.Add, labelled("c", "no")),
			upd(config.Update, labelled("b", "yes")),
			upd(config.Update, labelled("a", "no")),
			upd(config.Remove, labelled("a", "no")),
			upd(config.Remove, labelled("c", "no")),
			upd(config.Set, labelled("b", "no"), labelled("c", "no"), labelled("d", "yes")),
			upd(config.Set, labelled("c", "yes")),
			upd(config.Update, labelled("b", "no")),
			upd(config.Set),
		}
		want := []string{
			"set [a]",
			"add [b]",
			"update [a]",
			"remove [a]",
			"set [b d]",
			"set [c]",
			"set []",
		}
		ctx, cancel := context.WithCancel(t.Context())
		src := vk.FilterSource(script, func(p *v1.Pod) bool { return p.Labels["run"] == "yes" })
		out := make(chan config.PodUpdate)
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, "n", out) }()
		var got []string
		for range want {
			got = append(got, describe(<-out))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("updates (-want +got):\n%s", diff)
		}
		synctest.Wait()
		select {
		case u := <-out:
			t.Errorf("unexpected update %s", describe(u))
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}
