package statusmgr

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// Verb names one of the StatusPatcher's calls.
type Verb string

// The StatusPatcher's calls.
const (
	VerbGet    Verb = "get"    // GetPod
	VerbPatch  Verb = "patch"  // PatchPodStatus
	VerbDelete Verb = "delete" // DeletePod
	VerbUpdate Verb = "update" // StatusUpdater.UpdatePodStatus (Config.UpdateStatus)
)

// Call is a StatusPatcher call a Machine asks its runner to make (Ready.Call).
type Call struct {
	// Verb is the call; "" when the write is done (see Ready).
	Verb            Verb
	Namespace, Name string
	// Patch is PatchPodStatus's patch (VerbPatch).
	Patch []byte
	// Pod is UpdatePodStatus's pod (VerbUpdate): the node agent's copy of the server's pod
	// with the status to write; read only.
	Pod *v1.Pod
	// UID is DeletePod's UID precondition (VerbDelete).
	UID types.UID
}

// Answer is what the StatusPatcher returned for a Call, handed back to Machine.Answer: the
// pod (GetPod, PatchPodStatus; read only from then on, the Machine may keep it) and the
// error.
type Answer struct {
	Pod *v1.Pod
	Err error
}

// Target says which of the server's pods a sync may write.
type target int

const (
	// targetPod: the pod's own object (a pod from the API server): the server's pod must
	// have the pod's UID.
	targetPod target = iota
	// targetMirror: a static pod's mirror pod. The server's pod must be a mirror pod, with
	// podSyncInput.MirrorUID if that is set (the PodLookup's mirror pod), else any.
	targetMirror
	// targetNoMirror: a static pod whose mirror pod the PodLookup does not know: nothing is
	// written until it does.
	targetNoMirror
)

// String returns "pod", "mirror" or "no-mirror".
func (t target) String() string {
	switch t {
	case targetPod:
		return "pod"
	case targetMirror:
		return "mirror"
	case targetNoMirror:
		return "no-mirror"
	}
	return fmt.Sprintf("Target(%d)", int(t))
}

// targetOf is the target of a sync of pod's status: targetPod for a pod that is not
// static; for a static pod targetMirror, with the UID of mirror when the PodLookup found
// one (found), or of any mirror pod when there is no PodLookup (mirror nil, found true);
// targetNoMirror when the PodLookup has no mirror pod for it (found false).
func targetOf(pod *v1.Pod, mirror *v1.Pod, found bool) (target, types.UID) {
	switch {
	case !IsStaticPod(pod):
		return targetPod, ""
	case !found:
		return targetNoMirror, ""
	case mirror == nil:
		return targetMirror, ""
	}
	return targetMirror, mirror.UID
}

// podSyncInput is what one sync of one pod starts from: a version of the pod's status and
// what the runner knows (its copy of the server's pod, what its callbacks answered).
type podSyncInput struct {
	// Pod is the node agent's pod (its namespace, name, UID, annotations and
	// deletionTimestamp are used). Required.
	Pod *v1.Pod
	// Source is the node agent's current copy of the pod as its source delivered it (the
	// PodLookup's pod of this UID; nil without a PodLookup). With a resourceVersion (a pod
	// from the API server, targetPod) and Server nil, the sync patches against it instead
	// of reading the pod first, with its resourceVersion as the patch's precondition (a
	// stale copy gives a Conflict, which reads the pod and tries again without counting
	// against MaxConflictRetries). Without a PodLookup the manager cannot tell a fresh
	// copy from the one a caller kept, so it reads the pod first, as the kubelet does.
	Source *v1.Pod
	// Status is the version to write (normalized, as the Manager stores it).
	Status v1.PodStatus
	// Finished is true once TerminatePod has run for the pod (CanBeDeleted's
	// podIsFinished).
	Finished bool
	// CouldRunContainers is MergePodStatusAt's couldHaveRunningContainers: while true, a
	// terminal phase is not written.
	CouldRunContainers bool
	// Server is the runner's copy of the server's pod from its last call; nil when unknown:
	// the sync reads the pod first. It needs only the pod's identity, resourceVersion,
	// generation, deletion, mirror annotation and status (what the Manager passes may hold
	// no more than those).
	Server *v1.Pod
	// Target and MirrorUID say which server pod may be written (targetOf).
	Target    target
	MirrorUID types.UID
	// Desired is true when the node agent still has the pod (its PodLookup says so): a
	// NotFound then keeps the status for the next full sync instead of forgetting it.
	Desired bool
	// MaxConflictRetries is how often a Conflict makes the sync re-read the pod and try
	// again before it gives up (the status stays pending).
	MaxConflictRetries int
	// Update: a write against the Source's copy is a status update (VerbUpdate) instead
	// of a patch (Config.UpdateStatus).
	Update bool
}

// Result is how a sync of one pod ended.
type result int

const (
	// resultWritten: the version is on the server (written now, or it was already there),
	// and the pod was not deleted.
	resultWritten result = iota
	// resultKept: the version is not on the server (or the final delete failed); the status
	// stays pending for the next full sync.
	resultKept
	// resultForgotten: the status is forgotten: the pod was deleted, is gone, or its name
	// belongs to another pod.
	resultForgotten
)

// String returns "written", "kept" or "forgotten".
func (r result) String() string {
	switch r {
	case resultWritten:
		return "written"
	case resultKept:
		return "kept"
	case resultForgotten:
		return "forgotten"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Reason says why a sync ended as it did.
type reason int

const (
	// reasonSynced: the server has the version (resultWritten).
	reasonSynced reason = iota
	// reasonNoMirror: a static pod without a mirror pod on the server (resultKept).
	reasonNoMirror
	// reasonNotFoundDesired: the server has no such pod but the node agent still has it;
	// the answer may predate the pod (resultKept).
	reasonNotFoundDesired
	// reasonFailed: a call failed, or the patch could not be built (resultKept; see
	// outcome.Err).
	reasonFailed
	// reasonDeleteFailed: the status is on the server but the final delete failed; the
	// next sync reads the pod again and decides (resultKept; see outcome.Err).
	reasonDeleteFailed
	// reasonDeleted: the final delete succeeded (resultForgotten).
	reasonDeleted
	// reasonGone: the server has no such pod (resultForgotten).
	reasonGone
	// reasonRecreated: the server's pod of that name is another pod (resultForgotten).
	reasonRecreated
)

var reasonNames = [...]string{"synced", "no-mirror", "not-found-desired", "failed", "delete-failed",
	"deleted", "gone", "recreated"}

// String returns the reason in a few words ("synced", "deleted", ...).
func (r reason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// outcome is the end of a sync of one pod: what the runner records.
type outcome struct {
	Result result
	Reason reason
	// Sent is true when the version reached the server (it may then be forgotten, or its
	// delete have failed).
	Sent bool
	// Server is the server's pod as the sync last saw it (resultWritten); nil when unknown.
	Server *v1.Pod
	// Err is the error of a failed call or patch (reasonFailed, reasonDeleteFailed); it
	// wraps ErrAPI (and the call's error) or ErrEncode, or ErrNilPod for a sync without
	// a pod (see podSyncOf).
	Err error
	// Stats are the counters the outcome adds (for resultForgotten, only if the status is
	// still the one the sync started from).
	Stats Stats
}

// podStep is what a podSync does next: a call to make, or, once Call.Verb is "", the end.
type podStep struct {
	Call    Call
	outcome outcome
	// Stats are the counters this step adds: the call just answered, a Conflict retried.
	stats Stats
}

// Done reports whether the sync is over (its outcome is set).
func (s podStep) Done() bool { return s.Call.Verb == "" }

// podSync is one sync of one pod's status, the Machine's per-pod decisions: which server
// pod it may write (the pod's UID, a static pod's mirror), the merge with the server's
// status, whether to patch, re-reading the pod after a Conflict (at most
// MaxConflictRetries times) or when the copy at hand predates a deletion, the final delete
// once CanBeDeleted holds, and what a failed call means (NotFound: gone, unless the node
// agent still has the pod; after a failed delete the pod is read again and only NotFound
// or another UID forgets the status).
//
// It does no IO, reads no clock and starts no goroutine: Step takes the answer to the last
// call and the time, and returns the next call or the end. The Machine keeps one per write
// in flight (StartWrite, Answer).
type podSync struct {
	in podSyncInput
	// waiting is the call whose answer the next Step takes ("" before the first Step).
	waiting Verb
	patchN  int // bytes of the patch in flight
	done    bool
	out     outcome
	// server is the server's pod as last seen (nil: unknown, read it).
	server *v1.Pod
	// refreshed is true once server comes from a read (or write) of this sync.
	refreshed bool
	// borrowed is true while server is the node agent's pod (podSyncInput.Pod), a copy no
	// call of this manager returned: a patch against it carries its resourceVersion.
	borrowed bool
	// sent is true once the version is on the server.
	sent      bool
	conflicts int
	// calls sums the Stats of the steps so far.
	calls Stats

	// snap is the cache's snapshot the write started from (its entry nil for a podSync
	// of podSyncOf).
	snap snapshot
	// started is true once the runner handed in the write's facts (Machine.StartWrite).
	started bool
	// settled is true once settle set keptServer and keptStatus.
	settled    bool
	keptServer *v1.Pod
	keptStatus *v1.PodStatus
}

// settle decides, once the sync is done and unless its status is forgotten, what the
// cache entry keeps of it: keptServer, the server's copy (keepServer of the last answer's
// pod, or the snapshot's own copy when no call answered another), and keptStatus
// (statusToKeep). Pure on the sync's own state: a runner calls it without its lock.
func (p *podSync) settle() {
	if p.settled || !p.done || p.out.Result == resultForgotten {
		return
	}
	p.settled = true
	p.keptServer = p.out.Server
	if p.keptServer != p.snap.server { // a call answered with another copy (or none)
		p.keptServer = keepServer(p.keptServer)
	}
	p.keptStatus = statusToKeep(&p.snap, p.keptServer)
}

// podSyncOf returns the machine of one sync starting from in. A sync without a pod
// (in.Pod nil) makes no call: its first Step ends it, resultKept and reasonFailed, with an
// Err wrapping ErrNilPod.
func podSyncOf(in podSyncInput) *podSync {
	ps := newPodSync(in)
	return &ps
}

// newPodSync is podSyncOf's machine, as a value.
func newPodSync(in podSyncInput) podSync {
	return podSync{in: in, server: in.Server}
}

// Step takes the answer to the call the previous Step asked for (ignored on the first
// Step) and the time now (for the conditions' transition times), and returns the next call
// or, once the sync is done, its outcome. Steps after the end repeat the outcome.
func (p *podSync) Step(a Answer, now time.Time) podStep {
	if p.done {
		return podStep{outcome: p.out}
	}
	st := p.step(a, now)
	p.calls.add(st.stats)
	return st
}

func (p *podSync) step(a Answer, now time.Time) podStep {
	var st podStep
	verb := p.waiting
	p.waiting = ""
	switch verb {
	case "":
		if p.in.Pod == nil {
			return p.finish(st, outcome{Result: resultKept, Reason: reasonFailed, Stats: Stats{Invalid: 1},
				Err: fmt.Errorf("%w: podSyncInput.Pod is required", ErrNilPod)})
		}
		if p.in.Target == targetNoMirror {
			return p.finish(st, outcome{Result: resultKept, Reason: reasonNoMirror, Stats: Stats{NoMirror: 1}})
		}
		if src := p.in.Source; p.in.Target == targetPod && src != nil && src.UID == p.in.Pod.UID &&
			src.ResourceVersion != "" && p.server == nil {
			// The source's copy of the pod stands in for a GET; its resourceVersion guards
			// the write.
			p.server, p.borrowed = src, true
		}
	case VerbGet:
		st.stats.Gets++
		if a.Err == nil && a.Pod == nil {
			a.Err = apierrors.NewNotFound(v1.Resource("pods"), p.in.Pod.Name)
		}
		if a.Err != nil {
			return p.failed(st, VerbGet, a.Err)
		}
		p.server, p.refreshed = a.Pod, true
	case VerbPatch, VerbUpdate:
		if verb == VerbPatch {
			st.stats.Patches++
			st.stats.PatchBytes += p.patchN
		} else {
			st.stats.Updates++
		}
		if a.Err == nil && a.Pod == nil {
			a.Err = fmt.Errorf("%w: %s returned neither a pod nor an error", ErrAPI, verb)
		}
		// (Tested for an error first: IsConflict allocates even for nil.)
		if a.Err != nil && p.borrowed && apierrors.IsConflict(a.Err) {
			// The source's copy was stale (or the pod another): read it, as a sync
			// without that copy does first.
			st.stats.Conflicts++
			p.server, p.borrowed = nil, false
			break
		}
		if a.Err != nil && apierrors.IsConflict(a.Err) && p.conflicts < p.in.MaxConflictRetries {
			p.conflicts++
			st.stats.Conflicts++
			p.server = nil // read it again
			break
		}
		if a.Err != nil {
			return p.failed(st, verb, a.Err)
		}
		p.server, p.refreshed, p.sent, p.borrowed = a.Pod, true, true, false
		return p.afterWrite(st)
	case VerbDelete:
		st.stats.Deletes++
		if a.Err == nil {
			return p.finish(st, outcome{Result: resultForgotten, Reason: reasonDeleted, Stats: Stats{Deleted: 1}})
		}
		if apierrors.IsConflict(a.Err) && p.conflicts < p.in.MaxConflictRetries {
			// The UID precondition failed or the object changed: the pod may have been
			// recreated, or not. Never guess: read it again; only NotFound or another UID
			// forgets the status, the same UID is deleted again.
			p.conflicts++
			st.stats.Conflicts++
			p.server = nil
			break
		}
		o := p.failure(VerbDelete, a.Err)
		if o.Result == resultKept {
			o.Reason = reasonDeleteFailed
		}
		return p.finish(st, o)
	}
	return p.decide(st, now)
}

// decide writes the version to the server's pod at hand (read first if unknown).
func (p *podSync) decide(st podStep, now time.Time) podStep {
	if p.server == nil {
		p.borrowed = false
		return p.call(st, Call{Verb: VerbGet})
	}
	server := p.server
	static := p.in.Target != targetPod
	if static && p.in.MirrorUID == "" && !IsMirrorPod(server) {
		// Without a lookup, a static pod's status waits for a mirror pod of its name.
		return p.finish(st, outcome{Result: resultKept, Reason: reasonNoMirror, Stats: Stats{NoMirror: 1}})
	}
	want := p.in.Pod.UID
	if static {
		want = p.in.MirrorUID
	}
	if (want != "" && server.UID != want) || (static && !IsMirrorPod(server)) {
		if !p.refreshed {
			p.server = nil // decide on a fresh read only
			return p.call(st, Call{Verb: VerbGet})
		}
		return p.finish(st, outcome{Result: resultForgotten, Reason: reasonRecreated, Stats: Stats{Recreated: 1}})
	}
	if p.borrowed && p.in.Update {
		merged, unchanged := mergedStatus(server, &p.in.Status, p.in.CouldRunContainers, now)
		if !unchanged {
			up := *server // the source's copy (shared, read only) with the status to write
			up.Status = merged
			return p.call(st, Call{Verb: VerbUpdate, Pod: &up})
		}
		return p.readInstead(st)
	}
	body, unchanged, err := mergedStatusPatch(server, &p.in.Status, p.in.CouldRunContainers, now, nil)
	if err != nil {
		return p.finish(st, outcome{Result: resultKept, Reason: reasonFailed, Stats: Stats{Errors: 1},
			Err: fmt.Errorf("pod %s/%s: %w", p.in.Pod.Namespace, p.in.Pod.Name, err)})
	}
	if p.borrowed && unchanged {
		return p.readInstead(st)
	}
	if !unchanged {
		if p.borrowed {
			body = patch.WithResourceVersion(body, server.UID, server.ResourceVersion)
		}
		p.patchN = len(body)
		return p.call(st, Call{Verb: VerbPatch, Patch: body})
	}
	p.sent = true
	return p.afterWrite(st)
}

// readInstead drops a borrowed copy that shows nothing to write: the sync decides on the
// server's own copy, read now.
func (p *podSync) readInstead(st podStep) podStep {
	p.server, p.borrowed = nil, false
	return p.call(st, Call{Verb: VerbGet})
}

// afterWrite runs once the server has the version: the final delete, or a fresh read when
// the copy at hand predates a deletion the node agent saw, or the end.
func (p *podSync) afterWrite(st podStep) podStep {
	server := p.server
	if CanBeDeleted(server, p.in.Status, p.in.Finished) {
		return p.call(st, Call{Verb: VerbDelete, UID: server.UID})
	}
	if p.in.Finished && !p.refreshed && p.in.Target == targetPod && p.in.Pod.DeletionTimestamp != nil && server.DeletionTimestamp == nil {
		// The copy at hand predates the deletion: read the pod again.
		p.server = nil
		return p.call(st, Call{Verb: VerbGet})
	}
	return p.finish(st, outcome{Result: resultWritten, Reason: reasonSynced, Sent: true, Server: server})
}

// failed ends the sync after a failed call.
func (p *podSync) failed(st podStep, verb Verb, err error) podStep {
	return p.finish(st, p.failure(verb, err))
}

// failure is the outcome of a failed call: NotFound forgets the status (the pod is gone)
// unless the pod is a static pod's mirror not created yet or the node agent still has the
// pod; anything else keeps the status, unknown server copy, for the next full sync.
func (p *podSync) failure(verb Verb, err error) outcome {
	if apierrors.IsNotFound(err) {
		switch {
		case p.in.Target != targetPod && verb == VerbGet:
			// A static pod's mirror pod may not exist yet: keep the status for later.
			return outcome{Result: resultKept, Reason: reasonNoMirror, Stats: Stats{NotFounds: 1, NoMirror: 1}}
		case p.in.Desired:
			// The node still has the pod: the server's answer is older than the pod (a node
			// identity's authorizer may not know a just-bound pod yet) or the pod was deleted
			// and its removal has not reached the node. Keep the status, as the kubelet
			// does, for the next full sync; RemoveOrphanedStatuses drops it once it is gone.
			return outcome{Result: resultKept, Reason: reasonNotFoundDesired, Stats: Stats{NotFounds: 1}}
		}
		return outcome{Result: resultForgotten, Reason: reasonGone, Stats: Stats{NotFounds: 1, Gone: 1}}
	}
	o := outcome{Result: resultKept, Reason: reasonFailed,
		Err: fmt.Errorf("%w: %s pod %s/%s: %w", ErrAPI, verb, p.in.Pod.Namespace, p.in.Pod.Name, err)}
	if apierrors.IsConflict(err) {
		o.Stats.Conflicts = 1
	} else {
		o.Stats.Errors = 1
	}
	return o
}

func (p *podSync) call(st podStep, c Call) podStep {
	c.Namespace, c.Name = p.in.Pod.Namespace, p.in.Pod.Name
	p.waiting = c.Verb
	st.Call = c
	return st
}

func (p *podSync) finish(st podStep, o outcome) podStep {
	o.Sent = o.Sent || p.sent // whatever came after, the version is on the server
	p.done, p.out = true, o
	st.outcome = o
	return st
}

// add adds every counter of d to s.
func (s *Stats) add(d Stats) {
	s.Gets += d.Gets
	s.Patches += d.Patches
	s.Updates += d.Updates
	s.Deletes += d.Deletes
	s.PatchBytes += d.PatchBytes
	s.Conflicts += d.Conflicts
	s.NotFounds += d.NotFounds
	s.Errors += d.Errors
	s.Refused += d.Refused
	s.Invalid += d.Invalid
	s.Recreated += d.Recreated
	s.Gone += d.Gone
	s.Deleted += d.Deleted
	s.Orphaned += d.Orphaned
	s.NoMirror += d.NoMirror
	s.Reconciled += d.Reconciled
}
