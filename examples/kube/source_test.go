package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
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

// apiScript is client-go's fake clientset whose lists are answered from a queue and whose
// watches are handed to the test, which drives them.
type apiScript struct {
	client  *fake.Clientset
	mu      sync.Mutex
	lists   []any // *v1.PodList or error, in order
	calls   []string
	watches chan *watch.FakeWatcher
}

func newAPIScript(lists ...any) *apiScript {
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

// update is a config.PodUpdate in short: the op and the pods as name/uid@resourceVersion.
type update struct {
	Op   config.Op
	Pods string
}

func short(u config.PodUpdate) update {
	var pods []string
	for _, p := range u.Pods {
		pods = append(pods, fmt.Sprintf("%s/%s@%s", p.Name, p.UID, p.ResourceVersion))
	}
	return update{Op: u.Op, Pods: strings.Join(pods, " ")}
}

// next waits for the next update on out, which must name the API source.
func next(t *testing.T, out <-chan config.PodUpdate) update {
	t.Helper()
	u := <-out
	if u.Source != node.SourceAPI {
		t.Errorf("update %v names the source %q, want %q", u.Op, u.Source, node.SourceAPI)
	}
	return short(u)
}

// running starts src.Run in the test's bubble; the returned channel yields Run's error
// once it returns.
func running(ctx context.Context, src *Source, nodeName string, out chan<- config.PodUpdate) <-chan error {
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, nodeName, out) }()
	return done
}

// TestSourceListWatchRelist drives one Run through a list, a watch, a watch error and the
// re-list after it: every list is a Set of what it listed, every watch event one op.
func TestSourceListWatchRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIScript(
			podList("10", podRV("a", "ua", "1"), podRV("b", "ub", "2")),
			// The re-list: c changed, d is new, a is unchanged, and the name b now
			// belongs to a new UID.
			podList("30", podRV("a", "ua", "12"), podRV("c", "uc", "20"), podRV("d", "ud", "21"), podRV("b", "ub2", "22")),
		)
		src, err := NewSource(SourceConfig{Client: api.client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		out := make(chan config.PodUpdate, 8)
		done := running(ctx, src, "node1", out)

		var got []update
		got = append(got, next(t, out))
		w1 := <-api.watches
		w1.Add(podRV("c", "uc", "11"))
		w1.Modify(podRV("a", "ua", "12"))
		w1.Delete(podRV("b", "ub", "14"))
		for range 3 {
			got = append(got, next(t, out))
		}
		// The watch breaks (the server compacted its history): the Reflector lists again.
		w1.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
			Message: "too old resource version: 14 (25)"})
		got = append(got, next(t, out))
		w2 := <-api.watches
		w2.Delete(podRV("d", "ud", "31"))
		got = append(got, next(t, out))

		want := []update{
			{config.Set, "a/ua@1 b/ub@2"},
			{config.Add, "c/uc@11"},
			{config.Update, "a/ua@12"},
			{config.Remove, "b/ub@14"},
			{config.Set, "a/ua@12 c/uc@20 d/ud@21 b/ub2@22"},
			{config.Remove, "d/ud@31"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("updates (-want +got):\n%s", diff)
		}

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil once the context ended", err)
		}
		synctest.Wait()
		select {
		case u := <-out:
			t.Errorf("update %+v after the context ended", short(u))
		default:
		}
		sel := "spec.nodeName=node1"
		wantCalls := []string{"list " + sel, "watch " + sel + ` from "10"`, "list " + sel, "watch " + sel + ` from "30"`}
		if diff := cmp.Diff(wantCalls, api.Calls()); diff != "" {
			t.Errorf("API calls (-want +got):\n%s", diff)
		}
	})
}

// TestSourceRetries checks that failed lists and a failed watch are retried (after the
// Reflector's backoff) and send nothing: the first update is the Set of the list that
// succeeded, and a watch that could not be opened is followed by a new list and Set.
func TestSourceRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := apierrors.NewServiceUnavailable("etcd is down")
		api := newAPIScript(unavailable, unavailable, podList("5", podRV("a", "ua", "5")), podList("7", podRV("a", "ua", "7")))
		failWatch := true
		api.client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			if failWatch {
				failWatch = false
				return true, nil, apierrors.NewForbidden(v1.Resource("pods"), "", errors.New("not yet allowed"))
			}
			return false, nil, nil
		})
		src, err := NewSource(SourceConfig{Client: api.client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		out := make(chan config.PodUpdate, 8)
		done := running(ctx, src, "node1", out)

		got := []update{next(t, out), next(t, out)}
		w := <-api.watches
		w.Add(podRV("b", "ub", "8"))
		got = append(got, next(t, out))
		want := []update{{config.Set, "a/ua@5"}, {config.Set, "a/ua@7"}, {config.Add, "b/ub@8"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("updates (-want +got):\n%s", diff)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if n := strings.Count(strings.Join(api.Calls(), "\n"), "list "); n != 4 {
			t.Errorf("%d lists, want 4 (two failed, one before the failed watch, one after); calls %q", n, api.Calls())
		}
	})
}

// TestSourceStopsWhileSending checks that Run returns, with every goroutine it started
// ended (synctest.Test fails otherwise), when its context ends while nobody receives.
func TestSourceStopsWhileSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIScript(podList("1", podRV("a", "ua", "1")))
		src, err := NewSource(SourceConfig{Client: api.client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := running(ctx, src, "node1", make(chan config.PodUpdate))
		synctest.Wait() // Run is blocked sending the Set
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before its context ended", err)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

func TestNewSourceValidation(t *testing.T) {
	if _, err := NewSource(SourceConfig{}); !errors.Is(err, ErrNilClient) {
		t.Errorf("NewSource without a client = %v, want ErrNilClient", err)
	}
	src, err := NewSource(SourceConfig{Client: fake.NewClientset()})
	if err != nil {
		t.Fatalf("NewSource with defaults: %v", err)
	}
	tests := []struct {
		name     string
		nodeName string
		out      chan<- config.PodUpdate
	}{
		{name: "empty node name", nodeName: "", out: make(chan config.PodUpdate)},
		{name: "nil channel", nodeName: "node1", out: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := src.Run(t.Context(), tt.nodeName, tt.out); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("Run = %v, want ErrInvalidArgument", err)
			}
		})
	}
}
