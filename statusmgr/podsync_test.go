package statusmgr

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// serverPod is the server's copy of pod p with status st (and the UID uid when not "").
func serverPod(p *v1.Pod, uid types.UID, st v1.PodStatus) *v1.Pod {
	s := p.DeepCopy()
	if uid != "" {
		s.UID = uid
	}
	s.Status = st
	return s
}

func mirrorOf(p *v1.Pod, uid types.UID) *v1.Pod {
	m := p.DeepCopy()
	m.UID = uid
	m.Annotations[ConfigSourceAnnotationKey] = APISource
	m.Annotations[ConfigMirrorAnnotationKey] = "hash"
	return m
}

func staticPod(name string, uid types.UID) *v1.Pod {
	p := psPod(name, uid)
	p.Annotations[ConfigSourceAnnotationKey] = "file"
	return p
}

func failedStatus() v1.PodStatus {
	s := psRunningStatus(false)
	s.Phase = v1.PodFailed
	s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}
	return s
}

var (
	errInternal = apierrors.NewInternalError(errors.New("down"))
	errNotFound = apierrors.NewNotFound(v1.Resource("pods"), "p")
	errConflict = apierrors.NewConflict(v1.Resource("pods"), "p", errors.New("changed"))
)

// TestPodSyncSteps drives the pure per-pod sync with scripted answers: each case lists the
// answers the API gives, in order, and checks the calls the machine asks for and its outcome.
func TestPodSyncSteps(t *testing.T) {
	pod := psPod("p", "u1")
	del := psDeleting(pod)
	running := psRunningStatus(true)
	onServer := serverPod(pod, "", running) // the server already has the status
	stale := serverPod(pod, "", v1.PodStatus{Phase: v1.PodPending})
	terminalDeleting := serverPod(del, "", failedStatus())
	static := staticPod("s", "s1")
	mirror := serverPod(mirrorOf(static, "m1"), "", running)
	// fromSource is the node agent's pod as its source (the API server) delivered it.
	fromSource := pod.DeepCopy()
	fromSource.ResourceVersion = "7"
	sourceRunning := serverPod(fromSource, "", running)
	onServerV8 := sourceRunning.DeepCopy() // the answer of a later write
	onServerV8.ResourceVersion = "8"
	runningNotReady := psRunningStatus(false)
	delFromSource := psDeleting(sourceRunning)
	delFromSource.ResourceVersion = "9"
	staticWithVersion := static.DeepCopy()
	staticWithVersion.ResourceVersion = "7"

	// ans answers a GET or PATCH with a copy of the pod (with its status as the server
	// would have it after the patch when st is set).
	ans := func(p *v1.Pod) Answer { return Answer{Pod: p.DeepCopy()} }
	fail := func(err error) Answer { return Answer{Err: err} }
	ok := Answer{}

	type want struct {
		calls       []string
		result      result
		reason      reason
		sent        bool
		server      bool // Outcome.Server set
		errIs       []error
		conflictErr bool
		stats       Stats // outcome's
	}
	tests := []struct {
		name    string
		in      podSyncInput
		answers []Answer
		want    want
	}{
		{
			name:    "unknown server copy: read, patch",
			in:      podSyncInput{Pod: pod, Status: running, CouldRunContainers: true},
			answers: []Answer{ans(stale), ans(onServer)},
			want:    want{calls: []string{"get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name: "server already has it: no call",
			in:   podSyncInput{Pod: pod, Status: running, CouldRunContainers: true, Server: onServer},
			want: want{result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source: patched against its copy, its resourceVersion the precondition, no read",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"patch rv=7"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, copy stale: Conflict, read, patch (not counted as a retry)",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true},
			answers: []Answer{fail(errConflict), ans(stale), ans(onServer)},
			want:    want{calls: []string{"patch rv=7", "get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, recreated: Conflict, read, forgotten",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true},
			answers: []Answer{fail(errConflict), ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"patch rv=7", "get"}, result: resultForgotten, reason: reasonRecreated,
				stats: Stats{Recreated: 1}},
		},
		{
			name:    "UpdateStatus: the source's copy with the status, updated, no read",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true, Update: true},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"update rv=7 Running"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "UpdateStatus, copy stale: Conflict, read, patch",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true, Update: true},
			answers: []Answer{fail(errConflict), ans(stale), ans(onServer)},
			want:    want{calls: []string{"update rv=7 Running", "get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "UpdateStatus, the source already shows the status: read to decide, nothing sent",
			in:      podSyncInput{Pod: sourceRunning, Source: sourceRunning, Status: running, CouldRunContainers: true, Update: true},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"get"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "UpdateStatus, a later write (the last answer's copy kept): patched against it, as without",
			in:      podSyncInput{Pod: delFromSource, Source: delFromSource, Server: onServerV8, Status: runningNotReady, CouldRunContainers: true, Update: true},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "UpdateStatus without a source copy: read, patch",
			in:      podSyncInput{Pod: pod, Status: running, CouldRunContainers: true, Update: true},
			answers: []Answer{ans(stale), ans(onServer)},
			want:    want{calls: []string{"get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "UpdateStatus failing: kept, the error the update's",
			in:      podSyncInput{Pod: fromSource, Source: fromSource, Status: running, CouldRunContainers: true, Update: true},
			answers: []Answer{fail(errInternal)},
			want: want{calls: []string{"update rv=7 Running"}, result: resultKept, reason: reasonFailed,
				stats: Stats{Errors: 1}, errIs: []error{ErrAPI}},
		},
		{
			name:    "pod with a resourceVersion but no source copy (no PodLookup): read first",
			in:      podSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true},
			answers: []Answer{ans(stale), ans(onServer)},
			want:    want{calls: []string{"get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source already shows the status: read to decide",
			in:      podSyncInput{Pod: sourceRunning, Source: sourceRunning, Status: running, CouldRunContainers: true},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"get"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, server copy known: patched against the server's copy",
			in:      podSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true, Server: stale},
			answers: []Answer{ans(onServer)},
			want:    want{calls: []string{"patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "static pod with a resourceVersion: its mirror is read first",
			in:      podSyncInput{Pod: staticWithVersion, Status: psRunningStatus(false), Target: targetMirror, MirrorUID: "m1", CouldRunContainers: true},
			answers: []Answer{ans(mirror), ans(mirror)},
			want:    want{calls: []string{"get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "not found: gone",
			in:      podSyncInput{Pod: pod, Status: running},
			answers: []Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: resultForgotten, reason: reasonGone,
				stats: Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "no pod and no error is not found",
			in:      podSyncInput{Pod: pod, Status: running},
			answers: []Answer{ok},
			want: want{calls: []string{"get"}, result: resultForgotten, reason: reasonGone,
				stats: Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "not found but still desired: kept",
			in:      podSyncInput{Pod: pod, Status: running, Desired: true},
			answers: []Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: resultKept, reason: reasonNotFoundDesired,
				stats: Stats{NotFounds: 1}},
		},
		{
			name:    "static pod, mirror not created yet: kept",
			in:      podSyncInput{Pod: static, Status: running, Target: targetMirror},
			answers: []Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: resultKept, reason: reasonNoMirror,
				stats: Stats{NotFounds: 1, NoMirror: 1}},
		},
		{
			name: "static pod, the lookup has no mirror: no call",
			in:   podSyncInput{Pod: static, Status: running, Target: targetNoMirror},
			want: want{result: resultKept, reason: reasonNoMirror, stats: Stats{NoMirror: 1}},
		},
		{
			name:    "static pod without lookup, the server's pod is no mirror: kept",
			in:      podSyncInput{Pod: static, Status: running, Target: targetMirror},
			answers: []Answer{ans(serverPod(static, "x", running))},
			want: want{calls: []string{"get"}, result: resultKept, reason: reasonNoMirror,
				stats: Stats{NoMirror: 1}},
		},
		{
			name:    "static pod: its mirror is patched",
			in:      podSyncInput{Pod: static, Status: psRunningStatus(false), Target: targetMirror, MirrorUID: "m1", CouldRunContainers: true},
			answers: []Answer{ans(mirror), ans(mirror)},
			want:    want{calls: []string{"get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name: "static pod, cached mirror of another UID: read again before deciding",
			in: podSyncInput{Pod: static, Status: running, Target: targetMirror, MirrorUID: "m2",
				Server: mirror, CouldRunContainers: true},
			answers: []Answer{ans(serverPod(mirrorOf(static, "m2"), "", running))},
			want:    want{calls: []string{"get"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "another UID: recreated, never touched",
			in:      podSyncInput{Pod: pod, Status: running},
			answers: []Answer{ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"get"}, result: resultForgotten, reason: reasonRecreated,
				stats: Stats{Recreated: 1}},
		},
		{
			name:    "patch conflict: read again, patch again",
			in:      podSyncInput{Pod: pod, Status: running, Server: stale, MaxConflictRetries: 2, CouldRunContainers: true},
			answers: []Answer{fail(errConflict), ans(stale), ans(onServer)},
			want:    want{calls: []string{"patch", "get", "patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "patch conflicts beyond the retries: kept, the error returned",
			in:      podSyncInput{Pod: pod, Status: running, Server: stale, MaxConflictRetries: 1},
			answers: []Answer{fail(errConflict), ans(stale), fail(errConflict)},
			want: want{calls: []string{"patch", "get", "patch"}, result: resultKept, reason: reasonFailed,
				errIs: []error{ErrAPI}, conflictErr: true, stats: Stats{Conflicts: 1}},
		},
		{
			name:    "patch fails: kept",
			in:      podSyncInput{Pod: pod, Status: running, Server: stale},
			answers: []Answer{fail(errInternal)},
			want: want{calls: []string{"patch"}, result: resultKept, reason: reasonFailed,
				errIs: []error{ErrAPI}, stats: Stats{Errors: 1}},
		},
		{
			name:    "patch answers no pod: kept",
			in:      podSyncInput{Pod: pod, Status: running, Server: stale},
			answers: []Answer{ok},
			want: want{calls: []string{"patch"}, result: resultKept, reason: reasonFailed,
				errIs: []error{ErrAPI}, stats: Stats{Errors: 1}},
		},
		{
			name:    "finished and deleting: terminal status, then the delete",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: serverPod(del, "", running)},
			answers: []Answer{ans(terminalDeleting), ok},
			want: want{calls: []string{"patch", "delete u1"}, result: resultForgotten, reason: reasonDeleted,
				sent: true, stats: Stats{Deleted: 1}},
		},
		{
			name:    "containers could run: the terminal phase waits, no delete",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, CouldRunContainers: true, Server: serverPod(del, "", running)},
			answers: []Answer{ans(serverPod(del, "", running))},
			want:    want{calls: []string{"patch"}, result: resultWritten, reason: reasonSynced, sent: true, server: true},
		},
		{
			name:    "copy predates the deletion: read again, then delete",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: serverPod(pod, "", failedStatus())},
			answers: []Answer{ans(terminalDeleting), ok},
			want: want{calls: []string{"get", "delete u1"}, result: resultForgotten, reason: reasonDeleted,
				sent: true, stats: Stats{Deleted: 1}},
		},
		{
			name:    "delete conflict: read again, same UID: delete again",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []Answer{fail(errConflict), ans(terminalDeleting), ok},
			want: want{calls: []string{"delete u1", "get", "delete u1"}, result: resultForgotten, reason: reasonDeleted,
				sent: true, stats: Stats{Deleted: 1}},
		},
		{
			name:    "delete conflict: read again, another UID: forgotten",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []Answer{fail(errConflict), ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"delete u1", "get"}, result: resultForgotten, reason: reasonRecreated,
				sent: true, stats: Stats{Recreated: 1}},
		},
		{
			name:    "delete conflict: read again, gone: forgotten",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []Answer{fail(errConflict), fail(errNotFound)},
			want: want{calls: []string{"delete u1", "get"}, result: resultForgotten, reason: reasonGone,
				sent: true, stats: Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "delete fails: kept, read again by the next sync",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting},
			answers: []Answer{fail(errInternal)},
			want: want{calls: []string{"delete u1"}, result: resultKept, reason: reasonDeleteFailed,
				sent: true, errIs: []error{ErrAPI}, stats: Stats{Errors: 1}},
		},
		{
			name:    "delete not found while desired: kept, read again by the next sync",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, Desired: true},
			answers: []Answer{fail(errNotFound)},
			want: want{calls: []string{"delete u1"}, result: resultKept, reason: reasonDeleteFailed,
				sent: true, stats: Stats{NotFounds: 1}},
		},
		{
			name: "no pod: the first step ends it",
			in:   podSyncInput{},
			want: want{result: resultKept, reason: reasonFailed, stats: Stats{Invalid: 1}, errIs: []error{ErrNilPod}},
		},
		{
			name:    "delete not found: gone",
			in:      podSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting},
			answers: []Answer{fail(errNotFound)},
			want: want{calls: []string{"delete u1"}, result: resultForgotten, reason: reasonGone,
				sent: true, stats: Stats{NotFounds: 1, Gone: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := podSyncOf(tc.in)
			var calls []string
			var a Answer
			answers := tc.answers
			st := ps.Step(a, psEpoch)
			for !st.Done() {
				c := string(st.Call.Verb)
				if st.Call.Verb == VerbDelete {
					c += " " + string(st.Call.UID)
				}
				if st.Call.Verb == VerbUpdate {
					c += fmt.Sprintf(" rv=%s %s", st.Call.Pod.ResourceVersion, st.Call.Pod.Status.Phase)
				}
				if st.Call.Verb == VerbPatch {
					var patch struct {
						Metadata struct {
							UID             types.UID `json:"uid"`
							ResourceVersion string    `json:"resourceVersion"`
						} `json:"metadata"`
					}
					if err := json.Unmarshal(st.Call.Patch, &patch); err != nil || patch.Metadata.UID == "" {
						t.Errorf("patch %s: %v, uid %q", st.Call.Patch, err, patch.Metadata.UID)
					}
					if patch.Metadata.ResourceVersion != "" {
						c += " rv=" + patch.Metadata.ResourceVersion
					}
				}
				if st.Call.Namespace != "default" || st.Call.Name != tc.in.Pod.Name {
					t.Errorf("call %s for %s/%s", c, st.Call.Namespace, st.Call.Name)
				}
				calls = append(calls, c)
				if len(answers) == 0 {
					t.Fatalf("calls %v: no answer scripted for %s", calls, c)
				}
				a, answers = answers[0], answers[1:]
				st = ps.Step(a, psEpoch)
			}
			if len(answers) != 0 {
				t.Errorf("%d answers left over; calls %v", len(answers), calls)
			}
			o := st.outcome
			got := want{calls: calls, result: o.Result, reason: o.Reason, sent: o.Sent, server: o.Server != nil,
				stats: o.Stats, errIs: tc.want.errIs, conflictErr: apierrors.IsConflict(o.Err)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, e := range tc.want.errIs {
				if !errors.Is(o.Err, e) {
					t.Errorf("error %v does not wrap %v", o.Err, e)
				}
			}
			if (o.Err != nil) != (len(tc.want.errIs) > 0) {
				t.Errorf("error %v", o.Err)
			}
			if again := ps.Step(Answer{}, psEpoch); !again.Done() || fmt.Sprint(again.outcome) != fmt.Sprint(o) {
				t.Errorf("a step after the end = %+v, want the outcome again", again)
			}
		})
	}
}

func TestTargetOf(t *testing.T) {
	pod, static := psPod("p", "u1"), staticPod("s", "s1")
	m := mirrorOf(static, "m1")
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		mirror *v1.Pod
		found  bool
		want   target
		uid    types.UID
	}{
		{"a pod from the API", pod, nil, true, targetPod, ""},
		{"static, the lookup's mirror", static, m, true, targetMirror, "m1"},
		{"static, no lookup: any mirror", static, nil, true, targetMirror, ""},
		{"static, the lookup has none", static, nil, false, targetNoMirror, ""},
	} {
		if got, uid := targetOf(tc.pod, tc.mirror, tc.found); got != tc.want || uid != tc.uid {
			t.Errorf("%s: targetOf = %v %q, want %v %q", tc.name, got, uid, tc.want, tc.uid)
		}
	}
}

// The helpers below are manager_test.go's and statusmgrtest's (an internal test cannot
// import them).

var psEpoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func psPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: uid,
			Annotations: map[string]string{ConfigSourceAnnotationKey: APISource},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "c", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func psDeleting(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	ts := metav1.NewTime(psEpoch)
	grace := int64(30)
	p.DeletionTimestamp = &ts
	p.DeletionGracePeriodSeconds = &grace
	return p
}

// psRunningStatus is statusmgrtest's "running" (ready) or "notready" status.
func psRunningStatus(ready bool) v1.PodStatus { return statustest.Running(ready, psEpoch) }
