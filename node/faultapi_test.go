package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// faults draws fault decisions: each key (a verb and the pod it is for) has its own
// stream, derived from the seed and how often the key was drawn, so that a pod's faults do
// not depend on how the other pods' calls interleave. Safe for concurrent use.
type faults struct {
	seed uint64
	mu   sync.Mutex
	n    map[string]uint64
}

func newFaults(seed uint64) *faults { return &faults{seed: seed, n: map[string]uint64{}} }

// draw returns the next value in [0, 1) of key's stream and a generator for the details.
func (f *faults) draw(key string) (float64, *rand.Rand) {
	f.mu.Lock()
	i := f.n[key]
	f.n[key] = i + 1
	f.mu.Unlock()
	h := fnv.New64a()
	h.Write([]byte(key))
	r := rand.New(rand.NewPCG(f.seed, h.Sum64()^(i*0x9e3779b97f4a7c15)))
	return r.Float64(), r
}

// Kinds of violations the checker reports.
const (
	vPatchNoUID        = "patch-without-uid"
	vDeleteNoUID       = "delete-without-uid"
	vUnseenUID         = "call-for-a-uid-never-read-under-that-name"
	vStaleLoop         = "keeps-targeting-a-replaced-pod"
	vDeleteNotDeleted  = "final-delete-of-a-pod-nobody-deleted"
	vDeleteNotTerminal = "final-delete-before-terminal-phase"
	vDeleteRunning     = "final-delete-while-containers-run"
	vDeletedTwice      = "deleted-twice"
	vTerminalRegressed = "terminal-phase-regressed"
	vTerminalRunning   = "terminal-phase-while-containers-run"
	vPhaseDisagrees    = "phase-disagrees-with-runtime"
	vExitCodeDisagrees = "exit-code-disagrees-with-runtime"
	vStuck             = "pod-left-on-the-server"
	vNotRemovedOnce    = "deleted-pod-not-removed-exactly-once"
	vRuntimeLeftover   = "runtime-pod-left"
	vRunNotReturned    = "run-did-not-return"
	vRunError          = "run-error"
)

// violation is one broken invariant, as the checker saw it.
type violation struct {
	At     time.Time
	Kind   string
	Pod    string
	UID    types.UID
	Detail string
}

func (v violation) String() string {
	return fmt.Sprintf("%s %s %s (%s): %s", v.At.Format("15:04:05.000"), v.Kind, v.Pod, v.UID, v.Detail)
}

// maxStaleAttempts bounds the calls one UID may make on a name that holds another pod:
// each is refused by the UID precondition and makes the status manager read the pod
// again, after which it forgets the status.
const maxStaleAttempts = 10

// uidState is what the checker knows of one pod incarnation (UID) on the server.
type uidState struct {
	key           types.NamespacedName
	pod           *v1.Pod // as created (spec, annotations)
	phase         v1.PodPhase
	terminal      bool
	deleting      bool // a deletionTimestamp was set
	finalDeletes  int  // removed by DeletePod
	userRemoved   int  // removed by a user's delete (grace 0, or a terminal pod)
	staleAttempts int
}

// call is the StatusPatcher call in flight through faultAPI (at most one: callSem).
type call struct {
	verb     statusmgrtest.Verb
	uid      types.UID // DeletePod's precondition, or the patch's metadata.uid
	hasUID   bool
	beforeEr error // a fault injected before applying
}

// faultAPI is the node's StatusPatcher in the fault test: it injects faults into the calls
// of a statusmgrtest.FakeAPI, before applying (the call fails, nothing changed) or after
// (the change is made, the call fails), and checks every call and every change of the
// server against the invariants of the pod lifecycle, recording violations.
type faultAPI struct {
	api    *statusmgrtest.FakeAPI
	mem    *plegtest.Runtime // the runtime's ground truth
	faults *faults
	rate   float64 // share of calls that fail

	// callSem (a semaphore of one) serializes the applying of calls, so the reactor
	// (which runs on the calling goroutine) knows the call in
	// flight: cur. It is a channel, not a mutex, and never held while an injected delay
	// runs: the status manager calls from several writers at once, and a writer parked
	// on a mutex would stop a synctest bubble's clock.
	callSem chan struct{}
	cur     call

	mu         sync.Mutex // guards everything below; never held while calling FakeAPI
	server     map[types.NamespacedName]*v1.Pod
	uids       map[types.UID]*uidState
	seen       map[types.NamespacedName]map[types.UID]bool // UIDs the node got in answers or from its API source, per name
	violations []violation
	stats      map[string]int
	// trace, if set, hears of every call and change (pod name, description).
	trace func(name, msg string)
}

var _ statusmgr.StatusPatcher = (*faultAPI)(nil)

func newFaultAPI(api *statusmgrtest.FakeAPI, mem *plegtest.Runtime, f *faults, rate float64) *faultAPI {
	fa := &faultAPI{api: api, mem: mem, faults: f, rate: rate, callSem: make(chan struct{}, 1),
		server: map[types.NamespacedName]*v1.Pod{}, uids: map[types.UID]*uidState{},
		seen: map[types.NamespacedName]map[types.UID]bool{}, stats: map[string]int{}}
	api.SetObserver(fa.observe)
	api.SetReactor(fa.react)
	return fa
}

func (fa *faultAPI) violate(kind string, key types.NamespacedName, uid types.UID, format string, args ...any) {
	fa.violations = append(fa.violations, violation{At: time.Now(), Kind: kind, Pod: key.String(), UID: uid,
		Detail: fmt.Sprintf(format, args...)})
}

// Violations returns the violations recorded so far.
func (fa *faultAPI) Violations() []violation {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	return slices.Clone(fa.violations)
}

func (fa *faultAPI) count(what string) {
	fa.mu.Lock()
	fa.stats[what]++
	fa.mu.Unlock()
}

// fault decides the fault of one call: nil, or an error to return before applying
// (before=true) or after. Timeouts take a few seconds of (virtual) time.
func (fa *faultAPI) fault(verb statusmgrtest.Verb, key types.NamespacedName) (err error, before bool, delay time.Duration) {
	x, r := fa.faults.draw("api/" + string(verb) + "/" + key.String())
	if x >= fa.rate {
		return nil, false, 0
	}
	gr := v1.Resource("pods")
	switch r.IntN(5) {
	case 0:
		err = apierrors.NewInternalError(errors.New("injected: etcd leader changed"))
	case 1:
		err = apierrors.NewConflict(gr, key.Name, errors.New("injected: the object has been modified"))
	case 2:
		err = apierrors.NewTooManyRequests("injected: slow down", 1)
	case 3:
		err = apierrors.NewTimeoutError("injected: request timed out before it was applied", 1)
		delay = time.Duration(1+r.IntN(2)) * 250 * time.Millisecond
	case 4:
		fa.count("fault/api/" + string(verb) + "/after")
		return fmt.Errorf("injected: applied, then the answer was lost: %w", context.DeadlineExceeded), false,
			time.Duration(1+r.IntN(2)) * 250 * time.Millisecond
	}
	fa.count("fault/api/" + string(verb) + "/before")
	return err, true, delay
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do runs one call through FakeAPI with its fault; apply makes the call and returns the
// pod it answered with (nil for DeletePod).
func (fa *faultAPI) do(ctx context.Context, c call, key types.NamespacedName, apply func() (*v1.Pod, error)) (*v1.Pod, error) {
	ferr, before, delay := fa.fault(c.verb, key)
	if before {
		c.beforeEr = ferr
		if err := sleepCtx(ctx, delay); err != nil {
			return nil, err
		}
	}
	select {
	case fa.callSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fa.cur = c
	pod, err := apply()
	fa.cur = call{}
	<-fa.callSem
	if before {
		return nil, err // the reactor returned the injected error
	}
	if ferr != nil {
		if err := sleepCtx(ctx, delay); err != nil {
			return nil, err
		}
		return nil, ferr
	}
	if err == nil && pod != nil {
		fa.mu.Lock()
		if fa.seen[key] == nil {
			fa.seen[key] = map[types.UID]bool{}
		}
		fa.seen[key][pod.UID] = true
		fa.mu.Unlock()
	}
	return pod, err
}

// GetPod reads the pod.
func (fa *faultAPI) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	return fa.do(ctx, call{verb: statusmgrtest.Get}, types.NamespacedName{Namespace: namespace, Name: name},
		func() (*v1.Pod, error) { return fa.api.GetPod(ctx, namespace, name) })
}

// PatchPodStatus patches the pod's status.
func (fa *faultAPI) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	var meta struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(patch, &meta)
	c := call{verb: statusmgrtest.Patch, uid: meta.Metadata.UID, hasUID: meta.Metadata.UID != ""}
	return fa.do(ctx, c, types.NamespacedName{Namespace: namespace, Name: name},
		func() (*v1.Pod, error) { return fa.api.PatchPodStatus(ctx, namespace, name, patch) })
}

// DeletePod is the node's final delete.
func (fa *faultAPI) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	_, err := fa.do(ctx, call{verb: statusmgrtest.Delete, uid: uid, hasUID: uid != ""}, types.NamespacedName{Namespace: namespace, Name: name},
		func() (*v1.Pod, error) { return nil, fa.api.DeletePod(ctx, namespace, name, uid) })
	return err
}

// react checks the call in flight against the server as it is just before the call is
// applied (it runs on the calling goroutine, with no lock held, so it reads the server
// itself: the observer may not have heard of the latest changes yet) and returns the
// fault to inject before applying.
func (fa *faultAPI) react(verb statusmgrtest.Verb, namespace, name string) error {
	c := fa.cur
	key := types.NamespacedName{Namespace: namespace, Name: name}
	obj, _ := fa.api.Pod(namespace, name)
	fa.mu.Lock()
	defer fa.mu.Unlock()
	fa.stats["call/"+string(verb)]++
	if fa.trace != nil {
		fa.trace(name, fmt.Sprintf("call %s uid=%s injected=%v", verb, c.uid, c.beforeEr))
	}
	if verb == statusmgrtest.Get {
		return c.beforeEr
	}
	if !c.hasUID {
		kind := vPatchNoUID
		if verb == statusmgrtest.Delete {
			kind = vDeleteNoUID
		}
		fa.violate(kind, key, "", "%s without a UID precondition", verb)
		return c.beforeEr
	}
	switch {
	case obj == nil:
		fa.stats["call/"+string(verb)+"/gone"]++
	case obj.UID != c.uid:
		// The name holds another pod (recreated): legitimate only if the node read this
		// UID under this name before (its copy is stale; the precondition refuses the
		// call and the node re-reads), and not over and over.
		fa.stats["call/"+string(verb)+"/stale-uid"]++
		if !fa.seen[key][c.uid] {
			fa.violate(vUnseenUID, key, c.uid, "%s for UID %s on the server's pod %s; the node never read %s under this name",
				verb, c.uid, obj.UID, c.uid)
		}
		if st := fa.uids[c.uid]; st != nil {
			st.staleAttempts++
			if st.staleAttempts == maxStaleAttempts+1 {
				fa.violate(vStaleLoop, key, c.uid, "more than %d %s/patch calls for UID %s on a name now holding %s",
					maxStaleAttempts, verb, c.uid, obj.UID)
			}
		}
	case verb == statusmgrtest.Delete:
		fa.checkFinalDelete(key, obj)
	}
	return c.beforeEr
}

// checkFinalDelete checks a DeletePod aimed at obj, the server's pod with the UID.
func (fa *faultAPI) checkFinalDelete(key types.NamespacedName, obj *v1.Pod) {
	if obj.DeletionTimestamp == nil {
		fa.violate(vDeleteNotDeleted, key, obj.UID, "final delete of a pod without a deletionTimestamp (phase %s)", obj.Status.Phase)
	}
	if !statusmgr.IsTerminalPhase(obj.Status.Phase) {
		fa.violate(vDeleteNotTerminal, key, obj.UID, "final delete while the server's phase is %q", obj.Status.Phase)
	}
	if fa.mem.IsRunning(obj.UID) {
		fa.violate(vDeleteRunning, key, obj.UID, "final delete while a container of the pod runs in the runtime")
	}
	fa.checkAgainstRuntime(key, obj)
}

// checkAgainstRuntime checks a terminal pod's phase and container exit codes against the
// runtime's ground truth: the node's rule (node.PodPhase for a terminal pod,
// statusmgr.TerminatedStatus) is Succeeded exactly when every container of the spec ran and
// its last instance exited 0; anything else (a container that never ran, one that exited
// non-zero or was killed) is Failed.
func (fa *faultAPI) checkAgainstRuntime(key types.NamespacedName, obj *v1.Pod) {
	if !statusmgr.IsTerminalPhase(obj.Status.Phase) {
		return
	}
	rs, err := fa.mem.PodStatus(context.Background(), obj.UID, obj.Name, obj.Namespace)
	if err != nil {
		return
	}
	want, why := v1.PodSucceeded, "every container exited 0"
	for _, c := range obj.Spec.Containers {
		cs := rs.FindContainerStatusByName(c.Name)
		switch {
		case cs == nil:
			want, why = v1.PodFailed, fmt.Sprintf("container %s never ran", c.Name)
		case cs.State == pleg.ContainerStateRunning:
			fa.violate(vTerminalRunning, key, obj.UID, "phase %s while container %s runs", obj.Status.Phase, c.Name)
			return
		case cs.ExitCode != 0 && want == v1.PodSucceeded:
			want, why = v1.PodFailed, fmt.Sprintf("container %s exited %d", c.Name, cs.ExitCode)
		}
		if cs == nil {
			continue
		}
		for _, s := range obj.Status.ContainerStatuses {
			if s.Name == c.Name && strings.HasSuffix(s.ContainerID, "://"+cs.ID) {
				if t := s.State.Terminated; t != nil && int(t.ExitCode) != cs.ExitCode {
					fa.violate(vExitCodeDisagrees, key, obj.UID, "container %s: exit code %d on the server, %d in the runtime",
						c.Name, t.ExitCode, cs.ExitCode)
				}
			}
		}
	}
	if obj.Status.Phase != want {
		fa.violate(vPhaseDisagrees, key, obj.UID, "phase %s, want %s: %s", obj.Status.Phase, want, why)
	}
}

// observe sees every change of the server, in order, under FakeAPI's lock.
func (fa *faultAPI) observe(c statusmgrtest.Change) {
	p := c.Pod
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if fa.trace != nil {
		fa.trace(p.Name, fmt.Sprintf("change %s uid=%s phase=%s deleting=%v: %s", c.Verb, p.UID, p.Status.Phase, p.DeletionTimestamp != nil, c.Detail))
	}
	st := fa.uids[p.UID]
	if st == nil {
		st = &uidState{key: key, pod: p}
		fa.uids[p.UID] = st
	}
	removed := false
	switch {
	case c.Verb == "final-delete":
		st.finalDeletes++
		removed = true
		if st.finalDeletes > 1 {
			fa.violate(vDeletedTwice, key, p.UID, "final delete number %d", st.finalDeletes)
		}
	case c.Verb == "delete" && strings.HasPrefix(c.Detail, "deleted at once"):
		st.userRemoved++
		removed = true
	}
	if removed {
		delete(fa.server, key)
		return
	}
	fa.server[key] = p
	// The node's API source watches this server: the pod stored under the name is what it
	// delivers, and the status manager patches a pod from its source without reading it
	// first (the precondition refuses a stale copy).
	if fa.seen[key] == nil {
		fa.seen[key] = map[types.UID]bool{}
	}
	fa.seen[key][p.UID] = true
	if p.DeletionTimestamp != nil {
		st.deleting = true
	}
	if st.terminal && p.Status.Phase != st.phase {
		fa.violate(vTerminalRegressed, key, p.UID, "phase %s -> %s (%s)", st.phase, p.Status.Phase, c.Detail)
	}
	if !st.terminal && statusmgr.IsTerminalPhase(p.Status.Phase) {
		st.terminal = true
		fa.checkAgainstRuntime(key, p)
	}
	st.phase = p.Status.Phase
}

// checkEnd checks the end state, once every pod was deleted and time has passed: nothing is
// left on the server, and every pod incarnation was removed exactly once (by the node's
// final delete, or at once by the user's delete of a terminal or force-deleted pod).
func (fa *faultAPI) checkEnd() {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(fa.server))
	for k := range fa.server {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		p := fa.server[k]
		state := "not deleted"
		if p.DeletionTimestamp != nil {
			state = fmt.Sprintf("Terminating since %s (grace %ds)", p.DeletionTimestamp.Format("15:04:05"), *p.DeletionGracePeriodSeconds)
		}
		fa.violate(vStuck, k, p.UID, "%s, phase %s", state, p.Status.Phase)
	}
	uids := make([]types.UID, 0, len(fa.uids))
	for u := range fa.uids {
		uids = append(uids, u)
	}
	slices.Sort(uids)
	for _, u := range uids {
		st := fa.uids[u]
		if n := st.finalDeletes + st.userRemoved; n != 1 {
			fa.violate(vNotRemovedOnce, st.key, u, "removed %d times (%d final deletes), want once", n, st.finalDeletes)
		}
	}
}

// summary returns the counters, sorted.
func (fa *faultAPI) summary() string {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	final, user := 0, 0
	for _, st := range fa.uids {
		final += st.finalDeletes
		user += st.userRemoved
	}
	keys := make([]string, 0, len(fa.stats))
	for k := range fa.stats {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d pod incarnations, %d final deletes, %d removed by the user;", len(fa.uids), final, user)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, fa.stats[k])
	}
	return b.String()
}
