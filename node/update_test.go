package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// errorEvents returns the recorded error events as reason and the first of sentinels
// their error wraps.
func (e *env) errorEvents(sentinels ...error) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		if ev.Kind != node.EventError {
			continue
		}
		s := ev.Reason + ": " + ev.Err.Error()
		for _, want := range sentinels {
			if errors.Is(ev.Err, want) {
				s = ev.Reason + ": " + want.Error()
				break
			}
		}
		out = append(out, s)
	}
	return out
}

func apiPod(name string, uid types.UID, nodeName string) *v1.Pod {
	p := newPod(name, 30, v1.RestartPolicyAlways, nil)
	p.UID, p.Spec.NodeName = uid, nodeName
	return p
}

// Updates the node cannot use are errors, never silence: an update from a source not in
// Config.Sources fails with ErrUnknownSource (also through a Channel, as an EventError),
// and a pod bound to another node or without a name is dropped from its update (an
// EventError with ReasonDropped) and gets no worker, while the update's other pods run.
func TestUpdateErrors(t *testing.T) {
	sentinels := []error{node.ErrUnknownSource, node.ErrOtherNode, config.ErrEmptyName, node.ErrStopped}
	for _, tc := range []struct {
		name       string
		update     config.PodUpdate
		channel    bool // sent through n.Channel(ctx, update.Source)
		wantErr    error
		wantEvents []string
		wantSynced []types.UID
	}{
		{name: "unknown source", update: config.PodUpdate{Op: config.Set, Source: "apiserver", Pods: []*v1.Pod{apiPod("a", "ua", nodeName)}},
			wantErr: node.ErrUnknownSource},
		{name: "unknown source through a channel", channel: true,
			update:     config.PodUpdate{Op: config.Set, Source: "apiserver", Pods: []*v1.Pod{apiPod("a", "ua", nodeName)}},
			wantEvents: []string{node.ReasonUpdateFailed + ": " + node.ErrUnknownSource.Error()}},
		{name: "a pod of another node",
			update:     config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{apiPod("a", "ua", nodeName), apiPod("b", "ub", "node2")}},
			wantEvents: []string{node.ReasonDropped + ": " + node.ErrOtherNode.Error()}, wantSynced: []types.UID{"ua"}},
		{name: "a pod of another node through a channel", channel: true,
			update:     config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{apiPod("b", "ub", "node2")}},
			wantEvents: []string{node.ReasonDropped + ": " + node.ErrOtherNode.Error()}},
		{name: "a pod without nodeName is this node's",
			update: config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{apiPod("a", "ua", "")}}, wantSynced: []types.UID{"ua"}},
		{name: "a pod without a name",
			update:     config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{apiPod("", "ua", nodeName), apiPod("b", "ub", nodeName)}},
			wantEvents: []string{node.ReasonDropped + ": " + config.ErrEmptyName.Error()}, wantSynced: []types.UID{"ub"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, nil, nil, envOpts{noAPISource: true})
				for _, p := range tc.update.Pods {
					if p.Name != "" {
						e.create(p)
					}
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var err error
				if tc.channel {
					e.n.Channel(ctx, tc.update.Source) <- tc.update
				} else {
					err = e.n.Update(ctx, tc.update)
				}
				if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
					t.Errorf("Update = %v, want an error wrapping %v", err, tc.wantErr)
				}
				time.Sleep(5 * time.Second)
				cancel()
				e.stop()
				if diff := cmp.Diff(tc.wantEvents, e.errorEvents(sentinels...)); diff != "" {
					t.Errorf("error events (-want +got):\n%s", diff)
				}
				var synced []types.UID
				for _, a := range e.rt.Actions() {
					if a.Verb == "SyncPod" && !slices.Contains(synced, a.UID) {
						synced = append(synced, a.UID)
					}
				}
				if diff := cmp.Diff(tc.wantSynced, synced); diff != "" {
					t.Errorf("synced pods (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// Once Run has returned, every Update fails with ErrStopped (none is queued for a loop
// that is gone), an Update waiting for room when Run returned fails with it too, and a
// Channel's updates are reported with it. Before Run, updates are queued.
func TestUpdateAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{noAPISource: true})
		ctx := t.Context()
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI}); err != nil {
			t.Fatal(err)
		}
		<-e.n.Ready()
		e.stop()
		for i := range 60 {
			u := config.PodUpdate{Op: config.Add, Source: node.SourceAPI,
				Pods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID(rune('a' + i%26))}}}}
			if err := e.n.Update(ctx, u); !errors.Is(err, node.ErrStopped) {
				t.Fatalf("Update %d after Run = %v, want ErrStopped", i, err)
			}
		}
		e.n.Channel(ctx, node.SourceAPI) <- config.PodUpdate{Op: config.Set}
		synctest.Wait()
		if got, want := e.errorEvents(node.ErrStopped), []string{node.ReasonUpdateFailed + ": " + node.ErrStopped.Error()}; !cmp.Equal(got, want) {
			t.Errorf("error events %q, want %q", got, want)
		}
	})
}

// An Update blocked on the full buffer when Run returns does not wait for its context:
// it fails with ErrStopped, unless the loop took an update before it ended (it chooses
// at random between its context and the updates), which lets it in. Before Run, the
// buffer takes 50 updates.
func TestUpdateBlockedWhenRunReturns(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			// "file" never lists: the node never gets ready, nor drains the buffer for it.
			n, err := node.New(node.Config{NodeName: nodeName, Runtime: node.RuntimeFuncs{}, Patcher: statusmgrtest.NewFakeAPI(),
				Sources: []string{node.SourceAPI, "file"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			add := func(uid types.UID) error {
				return n.Update(ctx, config.PodUpdate{Op: config.Add, Source: node.SourceAPI, Pods: []*v1.Pod{apiPod(string(uid), uid, nodeName)}})
			}
			for i := range 50 { // before Run: queued
				if err := add(types.UID(fmt.Sprint("u", i))); err != nil {
					t.Fatalf("Update %d before Run = %v", i, err)
				}
			}
			blocked := make(chan error, 1)
			go func() { blocked <- add("blocked") }()
			synctest.Wait()
			runCtx, cancel := context.WithCancel(ctx)
			cancel()
			if err := n.Run(runCtx); err != nil {
				t.Fatal(err)
			}
			if err := <-blocked; err != nil && !errors.Is(err, node.ErrStopped) {
				t.Errorf("blocked Update = %v, want nil or ErrStopped", err)
			}
			if err := add("late"); !errors.Is(err, node.ErrStopped) {
				t.Errorf("Update after Run = %v, want ErrStopped", err)
			}
		})
	}
}
