package config

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

var errOtherNode = errors.New("test: pod of another node")

// The Mux drops pods without a name and pods Accept refuses before the store sees them:
// reported as Drops with their input indexes (the store's drops among them), the rest
// merged; a dropped pod counts as not listed.
func TestMuxAccept(t *testing.T) {
	other := newPod("other", "uid-o")
	other.Spec.NodeName = "node2"
	nameless := newPod("", "uid-n")
	type drop struct {
		Index int
		Err   string
	}
	sentinel := func(err error) string {
		for _, s := range []error{ErrEmptyName, errOtherNode, ErrNilPod, ErrEmptyUID, ErrDuplicateName} {
			if errors.Is(err, s) {
				return s.Error()
			}
		}
		return fmt.Sprint(err)
	}
	for _, tc := range []struct {
		name      string
		accept    bool
		u         PodUpdate
		wantAdds  []string
		wantDrops []drop
	}{
		{"nameless dropped", false, set(newPod("a", "uid-a"), nameless, newPod("b", "uid-b")),
			[]string{"a", "b"}, []drop{{1, ErrEmptyName.Error()}}},
		{"nameless first", false, set(nameless, newPod("a", "uid-a")),
			[]string{"a"}, []drop{{0, ErrEmptyName.Error()}}},
		{"another node's pod kept without Accept", false, set(other),
			[]string{"other"}, nil},
		{"another node's pod refused", true, set(newPod("a", "uid-a"), other),
			[]string{"a"}, []drop{{1, errOtherNode.Error()}}},
		{"an Add refused", true, PodUpdate{Op: Add, Source: "api", Pods: []*v1.Pod{other}},
			nil, []drop{{0, errOtherNode.Error()}}},
		{"store drops keep their input indexes", true, set(other, nil, newPod("a", "uid-a"), newPod("", ""), newPod("a", "uid-a2")),
			[]string{"a"}, []drop{{0, errOtherNode.Error()}, {1, ErrNilPod.Error()}, {3, ErrEmptyUID.Error()}, {4, ErrDuplicateName.Error()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var drops []drop
			cfg := MuxConfig{OnDrop: func(d Drop) {
				if d.Index < len(tc.u.Pods) && d.Pod != tc.u.Pods[d.Index] {
					t.Errorf("drop %d: Pod is not the input's", d.Index)
				}
				drops = append(drops, drop{d.Index, sentinel(d.Err)})
			}}
			if tc.accept {
				cfg.Accept = func(_ string, p *v1.Pod) error {
					if p.Spec.NodeName != "" && p.Spec.NodeName != "node1" {
						return errOtherNode
					}
					return nil
				}
			}
			m := newTestMux(t, cfg)
			before := append([]*v1.Pod(nil), tc.u.Pods...)
			if err := m.Update(context.Background(), tc.u); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, tc.u.Pods); diff != "" {
				t.Errorf("the input's Pods changed (-before +after):\n%s", diff)
			}
			var adds []string
			for len(m.Updates()) > 0 {
				if u := <-m.Updates(); u.Op == Add {
					for _, p := range u.Pods {
						adds = append(adds, p.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.wantAdds, adds); diff != "" {
				t.Errorf("adds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDrops, drops); diff != "" {
				t.Errorf("drops (-want +got):\n%s", diff)
			}
		})
	}
}

// With OnlySources, an update from another source fails with ErrUnknownSource and
// changes nothing; without it, it is merged.
func TestMuxOnlySources(t *testing.T) {
	for _, only := range []bool{false, true} {
		t.Run(fmt.Sprint("OnlySources=", only), func(t *testing.T) {
			m := newTestMux(t, MuxConfig{Sources: []string{"api"}, OnlySources: only})
			err := m.Update(context.Background(), PodUpdate{Op: Set, Source: "apiserver", Pods: []*v1.Pod{newPod("a", "uid-a")}})
			if got := errors.Is(err, ErrUnknownSource); got != only {
				t.Fatalf("Update from an unlisted source = %v, want ErrUnknownSource: %v", err, only)
			}
			if got, want := len(m.Updates()), 1; only && got != 0 || !only && got != want {
				t.Errorf("%d updates delivered", got)
			}
			if err := m.Update(context.Background(), set(newPod("a", "uid-a"))); err != nil {
				t.Errorf("Update from a listed source = %v", err)
			}
		})
	}
}

// Close fails later updates and ends the wait of an update blocked on a full channel,
// each with ErrClosed; channel updates report it to OnError.
func TestMuxClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errs := make(chan error, 1)
		m := newTestMux(t, MuxConfig{UpdatesBufferLen: 1, OnError: func(_ string, err error) { errs <- err }})
		ctx := t.Context()
		if err := m.Update(ctx, set(newPod("a", "uid-a"))); err != nil {
			t.Fatal(err)
		}
		blocked := make(chan error, 1)
		go func() { blocked <- m.Update(ctx, set(newPod("b", "uid-b"))) }()
		synctest.Wait()
		m.Close()
		if err := <-blocked; !errors.Is(err, ErrClosed) {
			t.Errorf("blocked Update = %v, want ErrClosed", err)
		}
		if err := m.Update(ctx, set(newPod("c", "uid-c"))); !errors.Is(err, ErrClosed) {
			t.Errorf("Update after Close = %v, want ErrClosed", err)
		}
		m.Channel(ctx, "file") <- PodUpdate{Op: Set}
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("channel update after Close: OnError got %v, want ErrClosed", err)
		}
		m.Close() // again: nothing
	})
}
