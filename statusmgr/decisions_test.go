package statusmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/podlife/podlife/statusmgr/internal/patch"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func podWith(f func(p *v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1",
		Annotations: map[string]string{ConfigSourceAnnotationKey: APISource}}}
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	p.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}}
	if f != nil {
		f(p)
	}
	return p
}

func withDeletion(p *v1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
}

func TestCanBeDeleted(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		finished bool
		want     bool
	}{
		{"nil pod", nil, true, false},
		{"no deletionTimestamp", podWith(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), true, false},
		{"deleting, Failed, finished", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodFailed }), true, true},
		{"deleting, Succeeded, finished", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodSucceeded }), true, true},
		{"deleting, Failed, not finished", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodFailed }), false, false},
		{"deleting, Running on the server", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodRunning }), true, false},
		{"deleting, Pending", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodPending }), true, false},
		{"deleting, Unknown", podWith(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodUnknown }), true, false},
		{"deleting, empty phase", podWith(func(p *v1.Pod) { withDeletion(p) }), true, false},
		{"mirror pod", podWith(func(p *v1.Pod) {
			withDeletion(p)
			p.Status.Phase = v1.PodFailed
			p.Annotations[ConfigMirrorAnnotationKey] = "hash"
		}), true, false},
		{"mirror pod with empty annotation", podWith(func(p *v1.Pod) {
			withDeletion(p)
			p.Status.Phase = v1.PodSucceeded
			p.Annotations[ConfigMirrorAnnotationKey] = ""
		}), true, false},
		{"static pod is not special", podWith(func(p *v1.Pod) {
			withDeletion(p)
			p.Status.Phase = v1.PodSucceeded
			p.Annotations[ConfigSourceAnnotationKey] = "file"
		}), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The node agent's own status does not matter, only the server's phase.
			for _, local := range []v1.PodPhase{v1.PodRunning, v1.PodFailed} {
				if got := CanBeDeleted(tc.pod, v1.PodStatus{Phase: local}, tc.finished); got != tc.want {
					t.Errorf("CanBeDeleted(local %s) = %v, want %v", local, got, tc.want)
				}
			}
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	deletingPod := podWith(withDeletion)
	server := func(f func(p *v1.Pod)) *v1.Pod { return keepServer(podWith(f)) }
	tests := []struct {
		name string
		e    entry
		want bool
	}{
		{"never sent", entry{pod: podWith(nil), version: 1}, true},
		{"older version sent", entry{pod: podWith(nil), version: 3, sentVersion: 2}, true},
		{"latest sent", entry{pod: podWith(nil), version: 3, sentVersion: 3, server: server(nil)}, false},
		{"sent, finished, no deletion", entry{pod: podWith(nil), version: 2, sentVersion: 2, podIsFinished: true,
			status: &v1.PodStatus{Phase: v1.PodFailed}, server: server(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed })}, false},
		{"sent, finished, deletable on the server", entry{pod: deletingPod, version: 2, sentVersion: 2, podIsFinished: true,
			server: server(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodFailed })}, true},
		{"sent, not finished, deletable phase", entry{pod: deletingPod, version: 2, sentVersion: 2,
			server: server(func(p *v1.Pod) { withDeletion(p); p.Status.Phase = v1.PodFailed })}, false},
		{"sent, finished, server copy unknown, deleting", entry{pod: deletingPod, version: 2, sentVersion: 2, podIsFinished: true}, true},
		{"sent, finished, server copy unknown, not deleting", entry{pod: podWith(nil), version: 2, sentVersion: 2, podIsFinished: true}, false},
		{"sent, finished, stale server copy without deletion", entry{pod: deletingPod, version: 2, sentVersion: 2, podIsFinished: true,
			server: server(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed })}, true},
		{"sent, finished, terminal phase held back on the server", entry{pod: podWith(nil), version: 2, sentVersion: 2, podIsFinished: true,
			status: &v1.PodStatus{Phase: v1.PodFailed}, server: server(func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })}, true},
		{"mirror pod never deleted", entry{pod: deletingPod, version: 2, sentVersion: 2, podIsFinished: true,
			server: server(func(p *v1.Pod) {
				withDeletion(p)
				p.Status.Phase = v1.PodFailed
				p.Annotations[ConfigMirrorAnnotationKey] = "h"
			})}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.e.status == nil {
				tc.e.status = &v1.PodStatus{} // a stored entry always has one
			}
			if got := tc.e.needsUpdate(); got != tc.want {
				t.Errorf("needsUpdate = %v, want %v", got, tc.want)
			}
		})
	}
}

func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}
}

func terminated(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func unknownTerminated(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: ReasonContainerStatusUnknown, Message: MessageContainerNotFound, ExitCode: ExitCodeContainerNotFound}}}
}

func TestTerminatedStatus(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	withInits := func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}}
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		in   v1.PodStatus
		want v1.PodStatus
	}{
		{
			name: "running pod: containers without terminated state fail, phase Failed",
			pod:  podWith(nil),
			in:   v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a"), terminated("b", 0)}},
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("a"), terminated("b", 0)}},
		},
		{
			name: "pending pod becomes Failed",
			pod:  podWith(nil),
			in:   v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("a")}},
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("a")}},
		},
		{
			name: "unknown phase becomes Failed",
			pod:  podWith(nil),
			in:   v1.PodStatus{Phase: "Bogus"},
			want: v1.PodStatus{Phase: v1.PodFailed},
		},
		{
			name: "Succeeded is kept",
			pod:  podWith(nil),
			in:   v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
			want: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{terminated("a", 0)}},
		},
		{
			name: "static pod keeps its phase",
			pod:  podWith(func(p *v1.Pod) { p.Annotations[ConfigSourceAnnotationKey] = "file" }),
			in:   v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}},
			want: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("a")}},
		},
		{
			name: "not initialized: waiting regular containers kept, first init container failed",
			pod: podWith(func(p *v1.Pod) {
				withInits(p)
				p.Status.ContainerStatuses = []v1.ContainerStatus{waiting("a")}
			}),
			in: v1.PodStatus{Phase: v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{waiting("i1"), waiting("i2")},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a"), waiting("b")}},
			want: v1.PodStatus{Phase: v1.PodFailed,
				InitContainerStatuses: []v1.ContainerStatus{unknownTerminated("i1"), waiting("i2")},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a"), waiting("b")}},
		},
		{
			name: "not initialized: init containers up to the last started one fail",
			pod:  podWith(withInits),
			in: v1.PodStatus{Phase: v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{terminated("i1", 0), running("i2")},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a")}},
			want: v1.PodStatus{Phase: v1.PodFailed,
				InitContainerStatuses: []v1.ContainerStatus{terminated("i1", 0), unknownTerminated("i2")},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a")}},
		},
		{
			name: "initialized by the last init container's success: waiting regular containers fail",
			pod: podWith(func(p *v1.Pod) {
				withInits(p)
				p.Status.InitContainerStatuses = []v1.ContainerStatus{terminated("i1", 0), terminated("i2", 0)}
				p.Status.ContainerStatuses = []v1.ContainerStatus{waiting("a")}
			}),
			in: v1.PodStatus{Phase: v1.PodRunning,
				InitContainerStatuses: []v1.ContainerStatus{terminated("i1", 0), terminated("i2", 0)},
				ContainerStatuses:     []v1.ContainerStatus{waiting("a")}},
			want: v1.PodStatus{Phase: v1.PodFailed,
				InitContainerStatuses: []v1.ContainerStatus{terminated("i1", 0), terminated("i2", 0)},
				ContainerStatuses:     []v1.ContainerStatus{unknownTerminated("a")}},
		},
		{
			name: "initialized by a started sidecar",
			pod: podWith(func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always}}
				side := running("side")
				side.Started = ptr(true)
				p.Status.InitContainerStatuses = []v1.ContainerStatus{side}
				p.Status.ContainerStatuses = []v1.ContainerStatus{waiting("a")}
			}),
			in:   v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{waiting("a")}},
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("a")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := *tc.in.DeepCopy()
			got, err := TerminatedStatus(tc.pod, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tc.in); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
			if changes, want := needsTermination(tc.pod, &in), !cmp.Equal(got, in); changes != want {
				t.Errorf("terminate without applying = %v, want %v", changes, want)
			}
		})
	}
	if _, err := TerminatedStatus(nil, v1.PodStatus{}); !errors.Is(err, ErrNilPod) {
		t.Errorf("nil pod: %v", err)
	}
}

func TestCheckContainerStateTransition(t *testing.T) {
	onFailure := v1.ContainerRestartPolicyOnFailure
	always := v1.ContainerRestartPolicyAlways
	never := v1.ContainerRestartPolicyNever
	policy := func(rp v1.RestartPolicy) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.RestartPolicy = rp } }
	st := func(cs ...v1.ContainerStatus) *v1.PodStatus { return &v1.PodStatus{ContainerStatuses: cs} }
	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.PodStatus
		illegal  bool
	}{
		{"Never: terminated back to running", podWith(policy(v1.RestartPolicyNever)), st(terminated("a", 0)), st(running("a")), true},
		{"Never: terminated back to waiting", podWith(policy(v1.RestartPolicyNever)), st(terminated("a", 1)), st(waiting("a")), true},
		{"Never: stays terminated", podWith(policy(v1.RestartPolicyNever)), st(terminated("a", 1)), st(terminated("a", 1)), false},
		{"Never: running to terminated", podWith(policy(v1.RestartPolicyNever)), st(running("a")), st(terminated("a", 0)), false},
		{"Never: other container unaffected", podWith(policy(v1.RestartPolicyNever)), st(terminated("a", 0)), st(running("b")), false},
		{"Always: restart allowed", podWith(policy(v1.RestartPolicyAlways)), st(terminated("a", 0)), st(running("a")), false},
		{"empty policy is Always: a crashed container restarts", podWith(policy("")), st(terminated("a", 1)), st(running("a")), false},
		{"empty policy is Always: restart after success", podWith(policy("")), st(terminated("a", 0)), st(waiting("a")), false},
		{"empty policy is Always: init container may restart", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = ""
			p.Spec.InitContainers = []v1.Container{{Name: "i"}}
		}), &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("i", 0)}},
			&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{running("i")}}, false},
		{"OnFailure: after failure allowed", podWith(policy(v1.RestartPolicyOnFailure)), st(terminated("a", 2)), st(running("a")), false},
		{"OnFailure: after success refused", podWith(policy(v1.RestartPolicyOnFailure)), st(terminated("a", 0)), st(running("a")), true},
		{"container policy Always overrides pod Never", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = &always
		}), st(terminated("a", 0)), st(running("a")), false},
		{"container policy OnFailure after failure", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = &onFailure
		}), st(terminated("a", 3)), st(running("a")), false},
		{"container policy Never overrides pod Always", podWith(func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = &never
		}), st(terminated("a", 3)), st(running("a")), true},
		{"restart rule on exit code", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		}), st(terminated("a", 42)), st(running("a")), false},
		{"restart rule not matching", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{42}}}}
		}), st(terminated("a", 42)), st(running("a")), true},
		{"restart-all rule of another container", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[1].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{7}}}}
		}), st(terminated("a", 0), terminated("b", 7)), st(running("a"), running("b")), false},
		{"restart-all rule not matching", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[1].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{7}}}}
		}), st(terminated("a", 0), terminated("b", 8)), st(running("a"), running("b")), true},
		{"restart all containers in place", podWith(policy(v1.RestartPolicyNever)), st(terminated("a", 0)),
			&v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running("a")},
				Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}, false},
		{"init container: terminated back to running refused", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "i"}}
		}), &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("i", 0)}},
			&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{running("i")}}, true},
		{"init container: sidecar may restart", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "i", RestartPolicy: &always}}
		}), &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("i", 0)}},
			&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{running("i")}}, false},
		{"init container: OnFailure after failure allowed", podWith(func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			p.Spec.InitContainers = []v1.Container{{Name: "i"}}
		}), &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("i", 1)}},
			&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{running("i")}}, false},
		{"init container status not in spec", podWith(nil),
			&v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{terminated("ghost", 0)}}, &v1.PodStatus{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckContainerStateTransition(tc.pod, tc.old, tc.new)
			if tc.illegal != errors.Is(err, ErrIllegalTransition) || (!tc.illegal && err != nil) {
				t.Errorf("error = %v, want illegal %v", err, tc.illegal)
			}
		})
	}
	if err := CheckContainerStateTransition(nil, nil, nil); !errors.Is(err, ErrNilPod) {
		t.Errorf("nil pod: %v", err)
	}
}

func TestCacheSet(t *testing.T) {
	now := t0.Add(time.Hour)
	later := now.Add(time.Minute)
	pod := podWith(nil)
	readyTrue := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: "example.com/gate", Status: v1.ConditionTrue}}}

	c := newCache()
	changed, err := c.set(pod, *readyTrue.DeepCopy(), &pod.Status, setIfChanged, now)
	if err != nil || !changed {
		t.Fatalf("first set: %v %v", changed, err)
	}
	e := c.entries["u1"]
	if e.version != 1 || !e.queued || e.lane != laneStatus || e.status.StartTime == nil || !e.status.StartTime.Time.Equal(now) {
		t.Errorf("entry after first set: %+v", e)
	}
	if got := e.status.Conditions[0].LastTransitionTime.Time; !got.Equal(now) {
		t.Errorf("Ready LastTransitionTime = %v, want now", got)
	}
	if got := e.status.Conditions[1].LastTransitionTime; !got.IsZero() {
		t.Errorf("pod-owned condition stamped: %v", got)
	}

	// Identical (pod-owned conditions aside): skipped.
	same := *readyTrue.DeepCopy()
	same.Conditions[1].Status = v1.ConditionFalse
	if changed, _ := c.set(pod, same, nil, setIfChanged, later); changed {
		t.Error("identical status made a new version")
	}
	// Forced: new version, LastTransitionTime and StartTime kept; the status equals the
	// cached one, which stands for it.
	first := e.status
	if changed, _ := c.set(pod, *readyTrue.DeepCopy(), nil, setForced, later); !changed || e.version != 2 {
		t.Errorf("forced set: changed %v version %d", changed, e.version)
	}
	if e.status != first {
		t.Error("a forced version equal to the cached status did not keep the cached status")
	}
	if got := e.status.Conditions[0].LastTransitionTime.Time; !got.Equal(now) {
		t.Errorf("unchanged Ready got a new LastTransitionTime %v", got)
	}
	if !e.status.StartTime.Time.Equal(now) {
		t.Errorf("StartTime changed to %v", e.status.StartTime)
	}
	// Ready flips: new LastTransitionTime.
	notReady := *readyTrue.DeepCopy()
	notReady.Conditions[0].Status = v1.ConditionFalse
	c.set(pod, notReady, nil, setIfChanged, later)
	if got := e.status.Conditions[0].LastTransitionTime.Time; !got.Equal(later) {
		t.Errorf("flipped Ready LastTransitionTime = %v, want %v", got, later)
	}
	// Finished sticks for a non-static pod; a forced status that differs is stored.
	c.set(pod, v1.PodStatus{Phase: v1.PodFailed}, nil, setFinished, later)
	failed := e.status
	c.set(pod, v1.PodStatus{Phase: v1.PodFailed, Message: "x"}, nil, setForced, later)
	if !e.podIsFinished {
		t.Error("podIsFinished was reset")
	}
	if e.status == failed || e.status.Message != "x" {
		t.Errorf("a forced status that differs was not stored: %+v", e.status)
	}
	// A higher observed generation is kept.
	c.set(pod, v1.PodStatus{Phase: v1.PodFailed, ObservedGeneration: 5}, nil, setForced, later)
	c.set(pod, v1.PodStatus{Phase: v1.PodFailed, ObservedGeneration: 3}, nil, setForced, later)
	if e.status.ObservedGeneration != 5 {
		t.Errorf("ObservedGeneration = %d, want 5", e.status.ObservedGeneration)
	}
	if q := c.takeQueue(); len(q) != 1 || e.queued {
		t.Errorf("queue = %v (queued %v), want the UID once", q, e.queued)
	}
}

func TestNormalizeStatus(t *testing.T) {
	frac := metav1.NewTime(t0.Add(500 * time.Millisecond))
	long := string(make([]byte, MaxTerminationMessageBytes))
	pod := podWith(func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "z"}, {Name: "a"}} })
	s := v1.PodStatus{
		StartTime:             &frac,
		Conditions:            []v1.PodCondition{{Type: v1.PodReady, LastTransitionTime: frac, LastProbeTime: frac}},
		InitContainerStatuses: []v1.ContainerStatus{{Name: "a"}, {Name: "z"}},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: long, StartedAt: frac, FinishedAt: frac}}},
			{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: frac}}},
		},
	}
	NormalizeStatus(pod, &s)
	whole := metav1.NewTime(t0)
	want := v1.PodStatus{
		StartTime:             &whole,
		Conditions:            []v1.PodCondition{{Type: v1.PodReady, LastTransitionTime: whole, LastProbeTime: whole}},
		InitContainerStatuses: []v1.ContainerStatus{{Name: "z"}, {Name: "a"}},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: whole}}},
			{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: long[:MaxTerminationMessageBytes/4], StartedAt: whole, FinishedAt: whole}}},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("normalized (-want +got):\n%s", diff)
	}
	NormalizeStatus(nil, nil) // no panic
}

func TestReadinessConditionsNilInput(t *testing.T) {
	want := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonUnknownContainerStatuses}
	if diff := cmp.Diff(want, ContainersReadyCondition(nil, nil)); diff != "" {
		t.Errorf("ContainersReady (-want +got):\n%s", diff)
	}
	if got := PodReadyCondition(nil, nil); got.Status != v1.ConditionFalse {
		t.Errorf("Ready = %+v", got)
	}
}

func TestReadinessConditions(t *testing.T) {
	pod := podWith(func(p *v1.Pod) {
		p.Generation = 2
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	})
	ready := func(name string, r bool) v1.ContainerStatus { return v1.ContainerStatus{Name: name, Ready: r} }
	tests := []struct {
		name      string
		status    v1.PodStatus
		cr, ready v1.PodCondition
	}{
		{"no statuses", v1.PodStatus{},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonUnknownContainerStatuses, ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonUnknownContainerStatuses, ObservedGeneration: 2}},
		{"one unready, one unknown", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{ready("a", false)}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unknown status: [b], containers with unready status: [a]", ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unknown status: [b], containers with unready status: [a]", ObservedGeneration: 2}},
		{"two unready", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{ready("a", false), ready("b", false)}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unready status: [a b]", ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unready status: [a b]", ObservedGeneration: 2}},
		{"two unknown", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unknown status: [a b]", ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonContainersNotReady,
				Message: "containers with unknown status: [a b]", ObservedGeneration: 2}},
		{"ready containers, gate missing", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{ready("a", true), ready("b", true)}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue, ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady,
				Message: `corresponding condition of pod readiness gate "example.com/gate" does not exist.`, ObservedGeneration: 2}},
		{"all ready", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{ready("a", true), ready("b", true)},
			Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue, ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, ObservedGeneration: 2}},
		{"succeeded", v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{ready("a", false), ready("b", false)}},
			v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodCompleted, ObservedGeneration: 2},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonPodCompleted, ObservedGeneration: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.cr, ContainersReadyCondition(pod, &tc.status)); diff != "" {
				t.Errorf("ContainersReady (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ready, PodReadyCondition(pod, &tc.status)); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
		})
	}
}

// conditionEqual compares PodCondition field by field: fail when the API grows a field.
func TestConditionEqualCoversEveryField(t *testing.T) {
	if n := reflect.TypeFor[v1.PodCondition]().NumField(); n != 7 {
		t.Fatalf("v1.PodCondition has %d fields; update conditionEqual", n)
	}
	a := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, Reason: "r", Message: "m", ObservedGeneration: 1,
		LastProbeTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}
	muts := []func(c *v1.PodCondition){
		func(c *v1.PodCondition) { c.Type = v1.ContainersReady },
		func(c *v1.PodCondition) { c.Status = v1.ConditionFalse },
		func(c *v1.PodCondition) { c.Reason = "x" },
		func(c *v1.PodCondition) { c.Message = "x" },
		func(c *v1.PodCondition) { c.ObservedGeneration = 2 },
		func(c *v1.PodCondition) { c.LastProbeTime = metav1.NewTime(t0.Add(time.Second)) },
		func(c *v1.PodCondition) { c.LastTransitionTime = metav1.NewTime(t0.Add(time.Second)) },
	}
	b := a
	if !patch.ConditionEqual(&a, &b) {
		t.Fatal("equal conditions differ")
	}
	for i, mut := range muts {
		b := a
		mut(&b)
		if patch.ConditionEqual(&a, &b) {
			t.Errorf("mutation %d not detected", i)
		}
	}
}

func TestFuncsAdapters(t *testing.T) {
	ctx := t.Context()
	var p StatusPatcherFuncs
	if _, err := p.GetPod(ctx, "n", "p"); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("GetPod: %v", err)
	}
	if _, err := p.PatchPodStatus(ctx, "n", "p", nil); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("PatchPodStatus: %v", err)
	}
	if err := p.DeletePod(ctx, "n", "p", "u"); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("DeletePod: %v", err)
	}
	var l PodLookupFuncs
	if _, ok := l.GetPodByUID("u"); ok {
		t.Error("GetPodByUID found a pod")
	}
	if _, ok := l.GetMirrorPodByPod(&v1.Pod{}); ok {
		t.Error("GetMirrorPodByPod found a pod")
	}
	called := 0
	p = StatusPatcherFuncs{
		GetPodFunc:         func(context.Context, string, string) (*v1.Pod, error) { called++; return nil, nil },
		PatchPodStatusFunc: func(context.Context, string, string, []byte) (*v1.Pod, error) { called++; return nil, nil },
		DeletePodFunc:      func(context.Context, string, string, types.UID) error { called++; return nil },
	}
	_, _ = p.GetPod(ctx, "n", "p")
	_, _ = p.PatchPodStatus(ctx, "n", "p", nil)
	_ = p.DeletePod(ctx, "n", "p", "u")
	if called != 3 {
		t.Errorf("called %d functions, want 3", called)
	}
}

// notReadyMessage writes what the kubelet's fmt.Sprintf("containers with ... status: %s",
// names) parts joined with ", " give.
func TestNotReadyMessage(t *testing.T) {
	for _, tc := range []struct {
		unknown, unready []string
	}{
		{nil, []string{"a"}},
		{[]string{"a"}, nil},
		{[]string{"a", "b c"}, []string{"d", "", "e"}},
		{[]string{""}, []string{"x"}},
		{[]string{"a", "b", "c", "d", "e", "f"}, []string{"long-container-name-1", "long-container-name-2", "g", "h", "i"}},
	} {
		var parts []string
		if len(tc.unknown) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unknown status: %s", tc.unknown))
		}
		if len(tc.unready) > 0 {
			parts = append(parts, fmt.Sprintf("containers with unready status: %s", tc.unready))
		}
		if got, want := notReadyMessage(tc.unknown, tc.unready), strings.Join(parts, ", "); got != want {
			t.Errorf("notReadyMessage(%q, %q) = %q, want %q", tc.unknown, tc.unready, got, want)
		}
	}
}

// A sync's outcome is logged with the pod's keys: a failure at Error with its reason and
// error, the others at Debug (nothing at all when the logger does not take Debug).
func TestLogOutcome(t *testing.T) {
	pod := podWith(nil)
	end := func(r reason, err error) End {
		return End{Pod: pod, Version: 3, Outcome: r.String(), Err: err, reason: r}
	}
	for _, tc := range []struct {
		name  string
		level slog.Level
		o     End
		want  string
	}{
		{"synced at debug", slog.LevelDebug, end(reasonSynced, nil),
			`level=DEBUG msg="status synced" pod=ns/p podUID=u1 version=3` + "\n"},
		{"synced at info", slog.LevelInfo, end(reasonSynced, nil), ""},
		{"failed", slog.LevelInfo, end(reasonDeleteFailed, errors.New("boom")),
			`level=ERROR msg="status sync failed; will retry" pod=ns/p podUID=u1 version=3 reason=delete-failed err=boom` + "\n"},
		{"unknown reason", slog.LevelDebug, end(reason(99), nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: tc.level,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				}})
			m := &Manager{log: slog.New(h)}
			m.logOutcome(tc.o)
			if b.String() != tc.want {
				t.Errorf("logged %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// statusEqualByKubelet compares field by field what the kubelet compares (every field
// semantically, the kubelet's conditions by type, other conditions not at all): its
// verdict is that of equality.Semantic on copies with the conditions cleared, after the
// conditions' check.
func TestStatusEqualByKubelet(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() v1.PodStatus {
		start := metav1.NewTime(at)
		return v1.PodStatus{
			Phase: v1.PodRunning, StartTime: &start, PodIP: "10.0.0.1",
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: "example.com/gate", Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true,
				State:     v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}},
				Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(s *v1.PodStatus)
		want   bool
	}{
		{"same", func(*v1.PodStatus) {}, true},
		{"other client's condition differs", func(s *v1.PodStatus) { s.Conditions[1].Status = v1.ConditionFalse }, true},
		{"kubelet's condition differs", func(s *v1.PodStatus) { s.Conditions[0].Status = v1.ConditionFalse }, false},
		{"phase", func(s *v1.PodStatus) { s.Phase = v1.PodFailed }, false},
		{"pod IP", func(s *v1.PodStatus) { s.PodIP = "10.0.0.2" }, false},
		{"start time same instant elsewhere", func(s *v1.PodStatus) {
			st := metav1.NewTime(at.In(time.FixedZone("x", 3600)))
			s.StartTime = &st
		}, true},
		{"start time later", func(s *v1.PodStatus) {
			st := metav1.NewTime(at.Add(time.Second))
			s.StartTime = &st
		}, false},
		{"no start time", func(s *v1.PodStatus) { s.StartTime = nil }, false},
		{"empty, not nil, lists", func(s *v1.PodStatus) { s.HostIPs, s.InitContainerStatuses = []v1.HostIP{}, []v1.ContainerStatus{} }, true},
		{"container started elsewhere, same instant", func(s *v1.PodStatus) {
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(at.In(time.FixedZone("y", -7200)))
		}, true},
		{"container not ready", func(s *v1.PodStatus) { s.ContainerStatuses[0].Ready = false }, false},
		{"same quantity written otherwise", func(s *v1.PodStatus) {
			s.ContainerStatuses[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("1000m")
		}, true},
		{"other quantity", func(s *v1.PodStatus) {
			s.ContainerStatuses[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(&b)
			got := statusEqualByKubelet(&a, &b)
			x, y := a, b
			x.Conditions, y.Conditions = nil, nil
			ref := kubeletConditionsEqual(a.Conditions, b.Conditions) && kubeletConditionsEqual(b.Conditions, a.Conditions) &&
				equality.Semantic.DeepEqual(x, y)
			if got != tc.want || got != ref {
				t.Errorf("statusEqualByKubelet = %v, want %v (equality.Semantic on copies: %v)", got, tc.want, ref)
			}
			if back := statusEqualByKubelet(&b, &a); back != got {
				t.Errorf("not symmetric: %v one way, %v the other", got, back)
			}
		})
	}
}

// prepare's startTime: the old status's when it has one, else the new status's own, else
// now; never the old status's pointer unless the new status had it (a stored status is
// never written through).
func TestPrepareStartTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	start := at(-time.Hour)
	for _, tc := range []struct {
		name     string
		old, new *metav1.Time
		want     time.Time
	}{
		{"none anywhere", nil, nil, now},
		{"old's kept", at(-time.Hour), nil, now.Add(-time.Hour)},
		{"old's wins over the new one", at(-time.Hour), at(-time.Minute), now.Add(-time.Hour)},
		{"new one without an old one", nil, at(-time.Minute), now.Add(-time.Minute)},
		{"zero old, zero new", &metav1.Time{}, &metav1.Time{}, now},
		{"zero old, new one", &metav1.Time{}, at(-time.Minute), now.Add(-time.Minute)},
		{"the old one itself", start, start, now.Add(-time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(nil)
			old := &v1.PodStatus{StartTime: tc.old}
			oldBefore := old.DeepCopy()
			nv, err := prepare(pod, &v1.PodStatus{StartTime: tc.new}, old, current{}, setIfChanged, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := nv.status.StartTime; got == nil || !got.Time.Equal(tc.want) {
				t.Errorf("startTime %v, want %v", got, tc.want)
			}
			if tc.old != nil && tc.new != tc.old && nv.status.StartTime == tc.old {
				t.Error("startTime is the old status's pointer")
			}
			if diff := cmp.Diff(oldBefore, old); diff != "" {
				t.Errorf("old status changed:\n%s", diff)
			}
		})
	}
}

// statusToKeep: the entry shares the server's status once the server has exactly it (the
// pod's own object only), and takes its own copy back when the server copy it shares is
// replaced by one that differs.
func TestStatusToKeep(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	status := func() v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodRunning, StartTime: &at,
			Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{running("a")}}
	}
	server := func(f func(p *v1.Pod)) *v1.Pod {
		return keepServer(podWith(func(p *v1.Pod) {
			p.Status = status()
			if f != nil {
				f(p)
			}
		}))
	}
	own := status()
	shared := server(nil)
	const (
		keepOwn     = "own"    // nil: the entry keeps the snapshot's status
		keepServers = "server" // the new server copy's status
		keepCopy    = "copy"   // a copy of the snapshot's status, of its own
	)
	for _, tc := range []struct {
		name   string
		s      snapshot
		server *v1.Pod
		want   string
	}{
		{"server unknown", snapshot{uid: "u1", status: &own}, nil, keepOwn},
		{"server has exactly it", snapshot{uid: "u1", status: &own}, server(nil), keepServers},
		{"server has it, times elsewhere and empty lists", snapshot{uid: "u1", status: &own}, server(func(p *v1.Pod) {
			st := metav1.NewTime(at.In(time.FixedZone("x", 3600)))
			p.Status.StartTime, p.Status.HostIPs = &st, []v1.HostIP{}
		}), keepServers},
		{"another pod's copy (a mirror pod)", snapshot{uid: "u1", status: &own}, server(func(p *v1.Pod) { p.UID = "m1" }), keepOwn},
		{"another client's condition on the server", snapshot{uid: "u1", status: &own}, server(func(p *v1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
		}), keepOwn},
		{"phase held back", snapshot{uid: "u1", status: &own}, server(func(p *v1.Pod) { p.Status.Phase = v1.PodPending }), keepOwn},
		{"shared, the same copy again (no call made)", snapshot{uid: "u1", status: &shared.Status, server: shared}, shared, keepOwn},
		{"shared, replaced by an equal copy", snapshot{uid: "u1", status: &shared.Status, server: shared}, server(nil), keepServers},
		{"shared, replaced by a differing copy", snapshot{uid: "u1", status: &shared.Status, server: shared},
			server(func(p *v1.Pod) { p.Status.Phase = v1.PodPending }), keepCopy},
		{"shared, the server now unknown", snapshot{uid: "u1", status: &shared.Status, server: shared}, nil, keepCopy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.s.status.DeepCopy()
			got := statusToKeep(&tc.s, tc.server)
			switch tc.want {
			case keepOwn:
				if got != nil {
					t.Errorf("statusToKeep = %p, want nil (the snapshot's)", got)
				}
			case keepServers:
				if got != &tc.server.Status {
					t.Errorf("statusToKeep = %p, want the server copy's status %p", got, &tc.server.Status)
				}
			case keepCopy:
				if got == nil || got == tc.s.status || tc.server != nil && got == &tc.server.Status || !equality.Semantic.DeepEqual(got, before) ||
					&got.ContainerStatuses[0] == &tc.s.status.ContainerStatuses[0] {
					t.Errorf("statusToKeep = %+v, want a copy of the snapshot's status of its own", got)
				}
			}
			if diff := cmp.Diff(before, tc.s.status); diff != "" {
				t.Errorf("the snapshot's status changed:\n%s", diff)
			}
		})
	}
}

// TestSameServerState: the node's object stands for the entry's copy of the server's pod
// only when it says the same to a sync: UID, deletion, mirror annotation and status.
func TestSameServerState(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	base := func(f func(p *v1.Pod)) *v1.Pod {
		return podWith(func(p *v1.Pod) {
			p.ResourceVersion = "5"
			p.Status = v1.PodStatus{Phase: v1.PodRunning, StartTime: &at, ContainerStatuses: []v1.ContainerStatus{running("a")}}
			if f != nil {
				f(p)
			}
		})
	}
	server := base(nil)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"the same state (an older resourceVersion, as the config merge keeps on a Reconcile)", base(func(p *v1.Pod) { p.ResourceVersion = "4" }), true},
		{"times in another zone", base(func(p *v1.Pod) {
			st := metav1.NewTime(at.In(time.FixedZone("x", 3600)))
			p.Status.StartTime = &st
		}), true},
		{"the copy itself", server, false},
		{"nil", nil, false},
		{"another status", base(func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }), false},
		{"another UID", base(func(p *v1.Pod) { p.UID = "u2" }), false},
		{"deleted on one side", base(withDeletion), false},
		{"a mirror pod on one side", base(func(p *v1.Pod) { p.Annotations[ConfigMirrorAnnotationKey] = "h" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameServerState(server, tc.pod); got != tc.want {
				t.Errorf("sameServerState = %v, want %v", got, tc.want)
			}
		})
	}
	if sameServerState(nil, server) {
		t.Error("sameServerState(nil, pod) = true, want false")
	}
}

// TestEntryTakeServer: the node's object replaces the entry's copy of the server's pod
// only if the entry still holds that copy, and the entry's status follows only if it was
// the copy's.
func TestEntryTakeServer(t *testing.T) {
	own := &v1.PodStatus{Phase: v1.PodRunning}
	for _, tc := range []struct {
		name                     string
		sharedStatus, replaced   bool // the entry's status is the copy's; a sync replaced the copy
		wantServer, wantFollowed bool
	}{
		{"shared status", true, false, true, true},
		{"own status (newer, not written yet)", false, false, true, false},
		{"copy replaced meanwhile", true, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, pod, other := podWith(nil), podWith(nil), podWith(nil)
			e := &entry{pod: pod, status: own, server: server}
			if tc.sharedStatus {
				e.status = &server.Status
			}
			if tc.replaced {
				e.server = other
			}
			before, held := e.status, e.server
			e.takeServer(server, pod)
			if got := e.server == pod; got != tc.wantServer {
				t.Errorf("server copy is the pod: %v, want %v", got, tc.wantServer)
			}
			if !tc.wantServer && e.server != held {
				t.Error("the entry's server copy changed")
			}
			switch {
			case tc.wantFollowed && e.status != &pod.Status:
				t.Error("the entry's status is not the pod's, though it was the replaced copy's")
			case !tc.wantFollowed && e.status != before:
				t.Error("the entry's status changed")
			}
		})
	}
}
