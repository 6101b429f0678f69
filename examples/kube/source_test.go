package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

func podRV(name, uid, rv string) *v1.Pod {
	p := testPod(name, types.UID(uid))
	p.ResourceVersion = rv
	return p
}

func podList(rv string, pods ...*v1.Pod) *v1.PodList {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return l
}

// apiScript is a fake API whose lists are answered from a queue and whose watches are handed
// to the test, which drives them.
type apiScript struct {
	client  *fake.Clientset
	mu      sync.Mutex
	lists   []any // *v1.PodList or error, in order
	calls   []string
	watches chan *watch.FakeWatcher
}

func newAPIScript(t *testing.T, lists ...any) *apiScript {
	s := &apiScript{client: fake.NewClientset(), lists: lists, watches: make(chan *watch.FakeWatcher, 4)}
	s.client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls = append(s.calls, fmt.Sprintf("list %s", a.(k8stesting.ListAction).GetListRestrictions().Fields))
		if len(s.lists) == 0 {
			return true, nil, errors.New("script: no more lists")
		}
		next := s.lists[0]
		s.lists = s.lists[1:]
		if err, ok := next.(error); ok {
			return true, nil, err
		}
		return true, next.(*v1.PodList), nil
	})
	s.client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		r := a.(k8stesting.WatchAction).GetWatchRestrictions()
		s.mu.Lock()
		s.calls = append(s.calls, fmt.Sprintf("watch %s from %q", r.Fields, r.ResourceVersion))
		s.mu.Unlock()
		w := watch.NewFake()
		s.watches <- w
		return true, w, nil
	})
	return s
}

func (s *apiScript) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

type seen struct {
	Type      statusmgrtest.EventType
	Name, UID string
	RV        string
}

func collect(ch <-chan statusmgrtest.Event, n int) []seen {
	var got []seen
	for range n {
		ev, ok := <-ch
		if !ok {
			break
		}
		got = append(got, seen{ev.Type, ev.Pod.Name, string(ev.Pod.UID), ev.Pod.ResourceVersion})
	}
	return got
}

// TestSourceListWatchRelist drives one Watch through an initial list, a watch the server
// ends, a resumed watch that expires (410) and the re-list, checking that every change
// arrives once and the re-list sends only the difference.
func TestSourceListWatchRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIScript(t,
			podList("10", podRV("a", "ua", "1"), podRV("b", "ub", "2")),
			// The re-list: e vanished, c changed, d is new, a is unchanged, and the
			// name b now belongs to a new UID.
			podList("30", podRV("a", "ua", "12"), podRV("c", "uc", "20"), podRV("d", "ud", "21"), podRV("b", "ub2", "22")),
		)
		src, err := NewSource(SourceConfig{Client: api.client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		initial, ch := src.Watch(ctx, "node1")
		var names []string
		for _, p := range initial {
			names = append(names, p.Name+"@"+p.ResourceVersion)
		}
		if diff := cmp.Diff([]string{"a@1", "b@2"}, names); diff != "" {
			t.Errorf("initial list (-want +got):\n%s", diff)
		}

		w1 := <-api.watches
		go func() {
			w1.Add(podRV("c", "uc", "11"))
			w1.Modify(podRV("a", "ua", "12"))
			w1.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "13"}})
			w1.Delete(podRV("b", "ub", "14"))
			w1.Add(podRV("e", "ue", "15"))
			w1.Stop() // the server's watch timeout
		}()
		got := collect(ch, 4)
		want := []seen{
			{statusmgrtest.Added, "c", "uc", "11"},
			{statusmgrtest.Modified, "a", "ua", "12"},
			{statusmgrtest.Deleted, "b", "ub", "14"},
			{statusmgrtest.Added, "e", "ue", "15"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("first watch's events (-want +got):\n%s", diff)
		}

		w2 := <-api.watches
		w2.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
			Message: "too old resource version: 15 (25)"})
		got = collect(ch, 4)
		want = []seen{
			{statusmgrtest.Deleted, "e", "ue", "15"},
			{statusmgrtest.Modified, "c", "uc", "20"},
			{statusmgrtest.Added, "d", "ud", "21"},
			{statusmgrtest.Added, "b", "ub2", "22"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("re-list's events (-want +got):\n%s", diff)
		}

		w3 := <-api.watches
		go w3.Modify(podRV("d", "ud", "31"))
		if diff := cmp.Diff([]seen{{statusmgrtest.Modified, "d", "ud", "31"}}, collect(ch, 1)); diff != "" {
			t.Errorf("third watch's events (-want +got):\n%s", diff)
		}
		cancel()
		if _, ok := <-ch; ok {
			t.Error("the channel is still open after the context ended")
		}

		sel := "spec.nodeName=node1"
		wantCalls := []string{"list " + sel, "watch " + sel + ` from "10"`, "watch " + sel + ` from "15"`,
			"list " + sel, "watch " + sel + ` from "30"`}
		if diff := cmp.Diff(wantCalls, api.Calls()); diff != "" {
			t.Errorf("API calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(Stats{Lists: 2, Watches: 3, Failures: 0, Events: 9}, src.Stats()); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
	})
}

// TestSourceRetries checks that failed lists and watches are retried after a backoff, and
// that a Watch whose context ends before the first list returns a closed channel.
func TestSourceRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := apierrors.NewServiceUnavailable("etcd is down")
		api := newAPIScript(t, unavailable, unavailable, podList("5", podRV("a", "ua", "5")))
		failWatch := true
		api.client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			if failWatch {
				failWatch = false
				return true, nil, errors.New("connection refused")
			}
			return false, nil, nil
		})
		src, err := NewSource(SourceConfig{Client: api.client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		initial, ch := src.Watch(ctx, "node1")
		if len(initial) != 1 {
			t.Fatalf("initial list has %d pods, want 1", len(initial))
		}
		w := <-api.watches
		go w.Add(podRV("b", "ub", "6"))
		if diff := cmp.Diff([]seen{{statusmgrtest.Added, "b", "ub", "6"}}, collect(ch, 1)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(Stats{Lists: 1, Watches: 1, Failures: 3, Events: 1}, src.Stats()); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}

		ended, stop := context.WithCancel(t.Context())
		stop()
		pods, closed := src.Watch(ended, "node1")
		if _, ok := <-closed; ok || pods != nil {
			t.Errorf("Watch on an ended context = %v, open channel %v; want nothing and a closed channel", pods, ok)
		}
	})
}

func TestNewSourceValidation(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name string
		cfg  SourceConfig
		want error
	}{
		{name: "nil client", cfg: SourceConfig{}, want: ErrNilClient},
		{name: "negative backoff", cfg: SourceConfig{Client: client, RetryBackoffInitial: -1}, want: ErrInvalidArgument},
		{name: "negative watch timeout", cfg: SourceConfig{Client: client, WatchTimeoutSeconds: -1}, want: ErrInvalidArgument},
		{name: "defaults", cfg: SourceConfig{Client: client}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSource(tt.cfg)
			if !errors.Is(err, tt.want) {
				t.Errorf("NewSource = %v, want %v", err, tt.want)
			}
		})
	}
	src, _ := NewSource(SourceConfig{Client: client})
	pods, ch := src.Watch(context.Background(), "")
	if _, ok := <-ch; ok || pods != nil || src.Stats().Failures != 1 {
		t.Errorf("Watch with an empty node: %v, open %v, stats %+v; want a counted refusal", pods, ok, src.Stats())
	}
}

// TestSourceBacksOffEmptyWatches checks that watches the server ends at once without
// delivering anything are reopened after a growing backoff, not in a busy loop.
func TestSourceBacksOffEmptyWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIScript(t, podList("5"))
		src, err := NewSource(SourceConfig{Client: api.client, RetryBackoffInitial: time.Second, RetryBackoffMax: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		_, ch := src.Watch(ctx, "node1")
		var opened []time.Duration
		for range 5 {
			w := <-api.watches
			opened = append(opened, time.Since(start))
			w.Stop()
		}
		cancel()
		for range ch {
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 11 * time.Second}
		if diff := cmp.Diff(want, opened); diff != "" {
			t.Errorf("watches opened at (-want +got):\n%s", diff)
		}
	})
}
