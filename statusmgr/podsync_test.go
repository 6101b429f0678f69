package statusmgr_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
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
	m.Annotations[statusmgr.ConfigSourceAnnotationKey] = statusmgr.APISource
	m.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "hash"
	return m
}

func staticPod(name string, uid types.UID) *v1.Pod {
	p := testPod(name, uid)
	p.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
	return p
}

func failedStatus() v1.PodStatus {
	s := runningStatus(false)
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
	pod := testPod("p", "u1")
	del := deleting(pod)
	running := runningStatus(true)
	onServer := serverPod(pod, "", running) // the server already has the status
	stale := serverPod(pod, "", v1.PodStatus{Phase: v1.PodPending})
	terminalDeleting := serverPod(del, "", failedStatus())
	static := staticPod("s", "s1")
	mirror := serverPod(mirrorOf(static, "m1"), "", running)
	// fromSource is the node agent's pod as its source (the API server) delivered it.
	fromSource := pod.DeepCopy()
	fromSource.ResourceVersion = "7"
	sourceRunning := serverPod(fromSource, "", running)
	staticWithVersion := static.DeepCopy()
	staticWithVersion.ResourceVersion = "7"

	// ans answers a GET or PATCH with a copy of the pod (with its status as the server
	// would have it after the patch when st is set).
	ans := func(p *v1.Pod) statusmgr.Answer { return statusmgr.Answer{Pod: p.DeepCopy()} }
	fail := func(err error) statusmgr.Answer { return statusmgr.Answer{Err: err} }
	ok := statusmgr.Answer{}

	type want struct {
		calls       []string
		result      statusmgr.Result
		reason      statusmgr.Reason
		sent        bool
		server      bool // Outcome.Server set
		errIs       []error
		conflictErr bool
		stats       statusmgr.Stats // outcome's
	}
	tests := []struct {
		name    string
		in      statusmgr.PodSyncInput
		answers []statusmgr.Answer
		want    want
	}{
		{
			name:    "unknown server copy: read, patch",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(stale), ans(onServer)},
			want:    want{calls: []string{"get", "patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name: "server already has it: no call",
			in:   statusmgr.PodSyncInput{Pod: pod, Status: running, CouldRunContainers: true, Server: onServer},
			want: want{result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source: patched against its copy, its resourceVersion the precondition, no read",
			in:      statusmgr.PodSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(onServer)},
			want:    want{calls: []string{"patch rv=7"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, copy stale: Conflict, read, patch (not counted as a retry)",
			in:      statusmgr.PodSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true},
			answers: []statusmgr.Answer{fail(errConflict), ans(stale), ans(onServer)},
			want:    want{calls: []string{"patch rv=7", "get", "patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, recreated: Conflict, read, forgotten",
			in:      statusmgr.PodSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true},
			answers: []statusmgr.Answer{fail(errConflict), ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"patch rv=7", "get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonRecreated,
				stats: statusmgr.Stats{Recreated: 1}},
		},
		{
			name:    "pod from the source already shows the status: read to decide",
			in:      statusmgr.PodSyncInput{Pod: sourceRunning, Status: running, CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(onServer)},
			want:    want{calls: []string{"get"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "pod from the source, server copy known: patched against the server's copy",
			in:      statusmgr.PodSyncInput{Pod: fromSource, Status: running, CouldRunContainers: true, Server: stale},
			answers: []statusmgr.Answer{ans(onServer)},
			want:    want{calls: []string{"patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "static pod with a resourceVersion: its mirror is read first",
			in:      statusmgr.PodSyncInput{Pod: staticWithVersion, Status: runningStatus(false), Target: statusmgr.TargetMirror, MirrorUID: "m1", CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(mirror), ans(mirror)},
			want:    want{calls: []string{"get", "patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "not found: gone",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running},
			answers: []statusmgr.Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonGone,
				stats: statusmgr.Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "no pod and no error is not found",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running},
			answers: []statusmgr.Answer{ok},
			want: want{calls: []string{"get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonGone,
				stats: statusmgr.Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "not found but still desired: kept",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, Desired: true},
			answers: []statusmgr.Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonNotFoundDesired,
				stats: statusmgr.Stats{NotFounds: 1}},
		},
		{
			name:    "static pod, mirror not created yet: kept",
			in:      statusmgr.PodSyncInput{Pod: static, Status: running, Target: statusmgr.TargetMirror},
			answers: []statusmgr.Answer{fail(errNotFound)},
			want: want{calls: []string{"get"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonNoMirror,
				stats: statusmgr.Stats{NotFounds: 1, NoMirror: 1}},
		},
		{
			name: "static pod, the lookup has no mirror: no call",
			in:   statusmgr.PodSyncInput{Pod: static, Status: running, Target: statusmgr.TargetNoMirror},
			want: want{result: statusmgr.ResultKept, reason: statusmgr.ReasonNoMirror, stats: statusmgr.Stats{NoMirror: 1}},
		},
		{
			name:    "static pod without lookup, the server's pod is no mirror: kept",
			in:      statusmgr.PodSyncInput{Pod: static, Status: running, Target: statusmgr.TargetMirror},
			answers: []statusmgr.Answer{ans(serverPod(static, "x", running))},
			want: want{calls: []string{"get"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonNoMirror,
				stats: statusmgr.Stats{NoMirror: 1}},
		},
		{
			name:    "static pod: its mirror is patched",
			in:      statusmgr.PodSyncInput{Pod: static, Status: runningStatus(false), Target: statusmgr.TargetMirror, MirrorUID: "m1", CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(mirror), ans(mirror)},
			want:    want{calls: []string{"get", "patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name: "static pod, cached mirror of another UID: read again before deciding",
			in: statusmgr.PodSyncInput{Pod: static, Status: running, Target: statusmgr.TargetMirror, MirrorUID: "m2",
				Server: mirror, CouldRunContainers: true},
			answers: []statusmgr.Answer{ans(serverPod(mirrorOf(static, "m2"), "", running))},
			want:    want{calls: []string{"get"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "another UID: recreated, never touched",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running},
			answers: []statusmgr.Answer{ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonRecreated,
				stats: statusmgr.Stats{Recreated: 1}},
		},
		{
			name:    "patch conflict: read again, patch again",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, Server: stale, MaxConflictRetries: 2, CouldRunContainers: true},
			answers: []statusmgr.Answer{fail(errConflict), ans(stale), ans(onServer)},
			want:    want{calls: []string{"patch", "get", "patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "patch conflicts beyond the retries: kept, the error returned",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, Server: stale, MaxConflictRetries: 1},
			answers: []statusmgr.Answer{fail(errConflict), ans(stale), fail(errConflict)},
			want: want{calls: []string{"patch", "get", "patch"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonFailed,
				errIs: []error{statusmgr.ErrAPI}, conflictErr: true, stats: statusmgr.Stats{Conflicts: 1}},
		},
		{
			name:    "patch fails: kept",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, Server: stale},
			answers: []statusmgr.Answer{fail(errInternal)},
			want: want{calls: []string{"patch"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonFailed,
				errIs: []error{statusmgr.ErrAPI}, stats: statusmgr.Stats{Errors: 1}},
		},
		{
			name:    "patch answers no pod: kept",
			in:      statusmgr.PodSyncInput{Pod: pod, Status: running, Server: stale},
			answers: []statusmgr.Answer{ok},
			want: want{calls: []string{"patch"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonFailed,
				errIs: []error{statusmgr.ErrAPI}, stats: statusmgr.Stats{Errors: 1}},
		},
		{
			name:    "finished and deleting: terminal status, then the delete",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: serverPod(del, "", running)},
			answers: []statusmgr.Answer{ans(terminalDeleting), ok},
			want: want{calls: []string{"patch", "delete u1"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonDeleted,
				sent: true, stats: statusmgr.Stats{Deleted: 1}},
		},
		{
			name:    "containers could run: the terminal phase waits, no delete",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, CouldRunContainers: true, Server: serverPod(del, "", running)},
			answers: []statusmgr.Answer{ans(serverPod(del, "", running))},
			want:    want{calls: []string{"patch"}, result: statusmgr.ResultWritten, reason: statusmgr.ReasonSynced, sent: true, server: true},
		},
		{
			name:    "copy predates the deletion: read again, then delete",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: serverPod(pod, "", failedStatus())},
			answers: []statusmgr.Answer{ans(terminalDeleting), ok},
			want: want{calls: []string{"get", "delete u1"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonDeleted,
				sent: true, stats: statusmgr.Stats{Deleted: 1}},
		},
		{
			name:    "delete conflict: read again, same UID: delete again",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []statusmgr.Answer{fail(errConflict), ans(terminalDeleting), ok},
			want: want{calls: []string{"delete u1", "get", "delete u1"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonDeleted,
				sent: true, stats: statusmgr.Stats{Deleted: 1}},
		},
		{
			name:    "delete conflict: read again, another UID: forgotten",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []statusmgr.Answer{fail(errConflict), ans(serverPod(pod, "u2", running))},
			want: want{calls: []string{"delete u1", "get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonRecreated,
				sent: true, stats: statusmgr.Stats{Recreated: 1}},
		},
		{
			name:    "delete conflict: read again, gone: forgotten",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, MaxConflictRetries: 2},
			answers: []statusmgr.Answer{fail(errConflict), fail(errNotFound)},
			want: want{calls: []string{"delete u1", "get"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonGone,
				sent: true, stats: statusmgr.Stats{NotFounds: 1, Gone: 1}},
		},
		{
			name:    "delete fails: kept, read again by the next sync",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting},
			answers: []statusmgr.Answer{fail(errInternal)},
			want: want{calls: []string{"delete u1"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonDeleteFailed,
				sent: true, errIs: []error{statusmgr.ErrAPI}, stats: statusmgr.Stats{Errors: 1}},
		},
		{
			name:    "delete not found while desired: kept, read again by the next sync",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting, Desired: true},
			answers: []statusmgr.Answer{fail(errNotFound)},
			want: want{calls: []string{"delete u1"}, result: statusmgr.ResultKept, reason: statusmgr.ReasonDeleteFailed,
				sent: true, stats: statusmgr.Stats{NotFounds: 1}},
		},
		{
			name:    "delete not found: gone",
			in:      statusmgr.PodSyncInput{Pod: del, Status: failedStatus(), Finished: true, Server: terminalDeleting},
			answers: []statusmgr.Answer{fail(errNotFound)},
			want: want{calls: []string{"delete u1"}, result: statusmgr.ResultForgotten, reason: statusmgr.ReasonGone,
				sent: true, stats: statusmgr.Stats{NotFounds: 1, Gone: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := statusmgr.NewPodSync(tc.in)
			var calls []string
			var a statusmgr.Answer
			answers := tc.answers
			st := ps.Step(a, epoch)
			for !st.Done() {
				c := string(st.Call.Verb)
				if st.Call.Verb == statusmgr.VerbDelete {
					c += " " + string(st.Call.UID)
				}
				if st.Call.Verb == statusmgr.VerbPatch {
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
				st = ps.Step(a, epoch)
			}
			if len(answers) != 0 {
				t.Errorf("%d answers left over; calls %v", len(answers), calls)
			}
			o := st.Outcome
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
			if again := ps.Step(statusmgr.Answer{}, epoch); !again.Done() || fmt.Sprint(again.Outcome) != fmt.Sprint(o) {
				t.Errorf("a step after the end = %+v, want the outcome again", again)
			}
		})
	}
}

func TestTargetOf(t *testing.T) {
	pod, static := testPod("p", "u1"), staticPod("s", "s1")
	m := mirrorOf(static, "m1")
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		mirror *v1.Pod
		found  bool
		want   statusmgr.Target
		uid    types.UID
	}{
		{"a pod from the API", pod, nil, true, statusmgr.TargetPod, ""},
		{"static, the lookup's mirror", static, m, true, statusmgr.TargetMirror, "m1"},
		{"static, no lookup: any mirror", static, nil, true, statusmgr.TargetMirror, ""},
		{"static, the lookup has none", static, nil, false, statusmgr.TargetNoMirror, ""},
	} {
		if got, uid := statusmgr.TargetOf(tc.pod, tc.mirror, tc.found); got != tc.want || uid != tc.uid {
			t.Errorf("%s: TargetOf = %v %q, want %v %q", tc.name, got, uid, tc.want, tc.uid)
		}
	}
}
