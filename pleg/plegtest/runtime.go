// Package plegtest provides an in-memory container runtime for tests and demos: Runtime
// implements pleg.RuntimeService, and its methods give a PodSyncer something real to drive.
//
// Pods have one sandbox and any number of containers. Containers start, run, exit on their
// own after a while (RunFor), receive a stop signal, run a preStop hook that takes time,
// exit some time after the signal (StopDelay) or are killed when the stop timeout runs out.
//
// The runtime starts no goroutine: every state change is computed from the clock when the
// runtime is read or driven, so it works the same on the real clock, a fake clock
// (k8s.io/utils/clock/testing) and in a testing/synctest bubble. Only KillPod blocks: it
// waits on the clock until every container of the pod has exited, or its context ends.
package plegtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/pleg"
)

// Errors of the Runtime, checked with errors.Is.
var (
	ErrInvalidPod = errors.New("plegtest: invalid pod")
	ErrNoSuchPod  = errors.New("plegtest: no such pod")
)

// Exit codes and reasons the runtime reports.
const (
	// ExitCodeKilled is the exit code of a container killed when its stop timeout ran out.
	ExitCodeKilled = 137
	ReasonKilled   = "Error"
	ReasonExited   = "Completed"
)

// ContainerSpec describes how one container behaves.
type ContainerSpec struct {
	Name  string
	Image string
	// RunFor, when positive, makes the container exit on its own (with ExitCode) after
	// running that long; zero runs until stopped.
	RunFor time.Duration
	// ExitCode is the code of an exit on its own (RunFor) or after a stop signal.
	ExitCode int
	// PreStop is how long the container's preStop hook runs once it is asked to stop; the
	// stop signal follows the hook. Zero means no hook.
	PreStop time.Duration
	// StopDelay is how long the container takes to exit after the stop signal. A negative
	// value ignores the signal: the container is killed when its stop timeout runs out.
	StopDelay time.Duration
}

// PodSpec describes a pod for StartPod.
type PodSpec struct {
	UID        types.UID
	Name       string
	Namespace  string
	Containers []ContainerSpec
	// RestartExited restarts exited containers on StartPod (restartPolicy Always; for
	// OnFailure set it only when the exit code was non-zero).
	RestartExited bool
}

// Runtime is an in-memory container runtime. Safe for concurrent use: calls about different
// pods run in parallel, each holding its shard's world lock for reading and its pod's lock
// (and, briefly, its shard's lock, to find, add or remove it); ListPods waits for them and
// holds them off while it lists. The zero value is not usable; call NewRuntime.
type Runtime struct {
	// shards hold the pods and status errors by a hash of the UID with seed, so that
	// finding, adding or removing a pod rarely waits for another call. They come first,
	// so that each is on cache lines of its own (see podShard.pad).
	shards [podShards]podShard
	seed   maphash.Seed
	clock  clock.Clock
	// listed is ListPods' buffer of the pods in creation order (every shard's world held
	// for writing).
	listed []*pod
	// mu guards listErr.
	mu      sync.Mutex
	listErr error

	// The counters, written by calls on every core, are last: away from the fields
	// every call reads.

	// nextID numbers the IDs of sandboxes and containers (and the pods' IPs).
	nextID atomic.Int64
	// added numbers the pods in the order they were added (pod.seq).
	added atomic.Int64
	// listCalls counts the ListPods calls (Calls).
	listCalls atomic.Int64
}

// podShards is how many shards hold a runtime's pods.
const podShards = 64

// podShard holds the pods and the status errors of the UIDs that hash to it.
type podShard struct {
	// world is held for writing by ListPods (every shard's), so that a list is one
	// instant of every pod, and for reading by every other call about one of the shard's
	// pods; those lock the pod (pod.mu) to read or change its state. A lock per shard, so
	// that calls about different pods write no memory in common.
	world sync.RWMutex
	// mu guards the fields below; it is held only to read or change them.
	mu      sync.Mutex
	pods    map[types.UID]*pod
	statErr map[types.UID]error
	// statusCalls counts the PodStatus calls about the shard's UIDs (Calls).
	statusCalls int
	// order holds the shard's pods in the order they were added, for stable listings; a
	// removed pod stays in it (no longer in pods, marked removed) until compact drops it,
	// so removing a pod does not scan the others. removed counts those.
	order   []*pod
	removed int
	// pad makes a shard two cache lines, so that locking one does not slow its
	// neighbours.
	pad [40]byte
}

// shard returns the shard of uid.
func (r *Runtime) shard(uid types.UID) *podShard {
	return &r.shards[maphash.String(r.seed, string(uid))%podShards]
}

// Calls counts the RuntimeService calls the runtime answered.
type Calls struct {
	ListPods, PodStatus int
}

type pod struct {
	uid             types.UID
	name, namespace string
	createdAt       time.Time
	ip              string
	// seq orders the pods by when they were added (Runtime.added).
	seq int64

	// removed is set by RemovePod: no longer in its shard.
	removed atomic.Bool
	// mu guards the fields below (see podShard.world).
	mu         sync.Mutex
	sandboxes  []*sandbox // newest first
	containers []*container
	// firstSandbox and firstContainer hold the first of each, and sandbox0 and
	// container0 are those first ones, in the pod's memory: a pod with one sandbox and
	// one container is one allocation.
	firstSandbox   [1]*sandbox
	firstContainer [1]*container
	sandbox0       sandbox
	container0     container
}

type sandbox struct {
	id        string
	createdAt time.Time
	attempt   uint32
	ready     bool
}

type container struct {
	spec                             ContainerSpec
	id                               string
	restartCount                     int
	createdAt, startedAt, finishedAt time.Time
	running                          bool
	exitCode                         int
	reason                           string
	// exitAt is when the container exits on its own (RunFor, or signal + hook + delay);
	// zero when it would run forever.
	exitAt time.Time
	// killAt is when the stop timeout runs out; zero before any stop request.
	killAt time.Time
	// signalled: a stop was requested (hook started).
	signalled bool
}

// NewRuntime returns an empty runtime on clk (nil means the real clock).
func NewRuntime(clk clock.Clock) *Runtime {
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Runtime{clock: clk, seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i] = podShard{pods: make(map[types.UID]*pod), statErr: make(map[types.UID]error)}
	}
	return r
}

var _ pleg.RuntimeService = (*Runtime)(nil)

// newIDs reserves the IDs of a sandbox (if sandbox) and of n containers, in that order,
// and makes them, and the IP of a new pod if ip, in one string: the IP of a pod created
// after k IDs were given out, and "kind-000042" IDs (see idBlock).
func (r *Runtime) newIDs(ip, sandbox bool, n int) (podIP string, ids idBlock) {
	if sandbox {
		n++
	}
	first := r.nextID.Add(int64(n)) - int64(n) + 1
	var b strings.Builder
	b.Grow(16 + n*18)
	var num [20]byte
	if ip {
		k := first - 1
		b.WriteString("10.88.")
		b.Write(strconv.AppendInt(num[:0], (k/250)%250, 10))
		b.WriteByte('.')
		b.Write(strconv.AppendInt(num[:0], k%250+1, 10))
	}
	ipLen := b.Len()
	for i := range int64(n) {
		kind := "container"
		if sandbox && i == 0 {
			kind = "sandbox"
		}
		b.WriteString(kind)
		b.WriteByte('-')
		digits := strconv.AppendInt(num[:0], first+i, 10)
		for range idDigits - len(digits) {
			b.WriteByte('0')
		}
		b.Write(digits)
	}
	all := b.String()
	return all[:ipLen], idBlock{ids: all[ipLen:], next: first}
}

// idDigits is how many digits an ID number has at least (zero-padded).
const idDigits = 6

// idBlock hands out, in order, the IDs newIDs made, each a substring of one string.
type idBlock struct {
	ids  string
	next int64
}

// take returns the next ID, of the kind it was made for.
func (ib *idBlock) take(kind string) string {
	digits := 1
	for k := ib.next; k >= 10; k /= 10 {
		digits++
	}
	n := len(kind) + 1 + max(idDigits, digits)
	id := ib.ids[:n]
	ib.ids, ib.next = ib.ids[n:], ib.next+1
	return id
}

// advance applies every exit and kill due at now. Callers hold p.mu (see podShard.world).
func (p *pod) advance(now time.Time) {
	for _, c := range p.containers {
		if !c.running {
			continue
		}
		switch {
		case !c.exitAt.IsZero() && !c.exitAt.After(now) && (c.killAt.IsZero() || !c.killAt.Before(c.exitAt)):
			c.running, c.finishedAt, c.exitCode, c.reason = false, c.exitAt, c.spec.ExitCode, ReasonExited
		case !c.killAt.IsZero() && !c.killAt.After(now):
			c.running, c.finishedAt, c.exitCode, c.reason = false, c.killAt, ExitCodeKilled, ReasonKilled
		}
	}
}

// nextChange returns the earliest future exit or kill, or zero when none is scheduled.
func (p *pod) nextChange() time.Time {
	var next time.Time
	for _, c := range p.containers {
		if !c.running {
			continue
		}
		for _, t := range []time.Time{c.exitAt, c.killAt} {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

func (p *pod) running() bool {
	for _, c := range p.containers {
		if c.running {
			return true
		}
	}
	return false
}

// StartPod creates the pod's sandbox if it has no ready one and starts every container of the
// spec that has no running instance: one never started, or (with RestartExited) one that
// exited, as a new instance with a higher restart count. It is idempotent, as SyncPod must be.
func (r *Runtime) StartPod(_ context.Context, spec PodSpec) error {
	if spec.UID == "" || spec.Name == "" {
		return fmt.Errorf("%w: UID %q, name %q", ErrInvalidPod, spec.UID, spec.Name)
	}
	sh := r.shard(spec.UID)
	sh.world.RLock()
	defer sh.world.RUnlock()
	sh.mu.Lock()
	p := sh.pods[spec.UID]
	if p != nil {
		sh.mu.Unlock()
		p.mu.Lock()
		defer p.mu.Unlock()
		r.start(p, spec, r.clock.Now())
		return nil
	}
	// A new pod is added locked (no other call has it yet, so locking it never waits)
	// and started before it is unlocked, so that no call sees it half started.
	now := r.clock.Now()
	p = &pod{uid: spec.UID, name: spec.Name, namespace: spec.Namespace, createdAt: now, seq: r.added.Add(1)}
	p.sandboxes, p.containers = p.firstSandbox[:0], p.firstContainer[:0]
	p.mu.Lock()
	defer p.mu.Unlock()
	sh.pods[spec.UID] = p
	sh.order = append(sh.order, p)
	sh.mu.Unlock()
	r.start(p, spec, now)
	return nil
}

// find returns the shard's pod uid, nil if unknown.
func (sh *podShard) find(uid types.UID) *pod {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.pods[uid]
}

// start is StartPod on p at now; a new pod (without IP) gets its IP. Callers hold p.mu
// (see podShard.world), or p is not yet in its shard.
func (r *Runtime) start(p *pod, spec PodSpec, now time.Time) {
	p.advance(now)
	newSandbox := len(p.sandboxes) == 0 || !p.sandboxes[0].ready
	var buf [8]int
	starting := buf[:0] // the spec's containers to start, by index
	for i, cs := range spec.Containers {
		latest := p.latest(cs.Name)
		if latest != nil && (latest.running || !spec.RestartExited) {
			continue
		}
		if slices.ContainsFunc(starting, func(j int) bool { return spec.Containers[j].Name == cs.Name }) {
			continue // started by an earlier entry of the same name
		}
		starting = append(starting, i)
	}
	if !newSandbox && len(starting) == 0 && p.ip != "" {
		return
	}
	ip, ids := r.newIDs(p.ip == "", newSandbox, len(starting))
	if p.ip == "" {
		p.ip = ip
	}
	if newSandbox {
		sb := &p.sandbox0
		if len(p.sandboxes) > 0 {
			sb = new(sandbox)
		}
		*sb = sandbox{id: ids.take("sandbox"), createdAt: now, ready: true, attempt: uint32(len(p.sandboxes))}
		p.sandboxes = slices.Insert(p.sandboxes, 0, sb)
	}
	for _, i := range starting {
		cs := spec.Containers[i]
		latest := p.latest(cs.Name)
		c := &p.container0
		if len(p.containers) > 0 {
			c = new(container)
		}
		*c = container{spec: cs, id: ids.take("container"), createdAt: now, startedAt: now, running: true}
		if latest != nil {
			c.restartCount = latest.restartCount + 1
		}
		if cs.RunFor > 0 {
			c.exitAt = now.Add(cs.RunFor)
		}
		p.containers = slices.Insert(p.containers, 0, c)
	}
}

// latest returns the newest instance of the named container, or nil.
func (p *pod) latest(name string) *container {
	for _, c := range p.containers {
		if c.spec.Name == name {
			return c
		}
	}
	return nil
}

// KillPod stops every running container of the pod and then its sandbox, and blocks until
// they have stopped or ctx ends. A container not yet asked to stop runs its preStop hook, then
// gets the stop signal and exits StopDelay later; whatever still runs gracePeriod after this
// call is killed. A later call with a shorter period brings the kill forward (a longer one
// never postpones it). An unknown pod is already stopped. It returns ctx.Err() when ctx ends
// first, leaving the containers on their way to stopping.
func (r *Runtime) KillPod(ctx context.Context, uid types.UID, gracePeriod time.Duration) error {
	sh := r.shard(uid)
	sh.world.RLock()
	p := sh.find(uid)
	var stopped bool
	var wait time.Duration
	var killAt time.Time
	if p != nil {
		now := r.clock.Now()
		killAt = now.Add(max(gracePeriod, 0))
		stopped, wait = p.stopStep(now, killAt)
	}
	sh.world.RUnlock()
	for p != nil && !stopped {
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		sh.world.RLock()
		stopped, wait = p.stopStep(r.clock.Now(), killAt)
		sh.world.RUnlock()
	}
	return nil
}

// stopStep is one step of KillPod at now: it requests the stop of p and reports whether
// p stopped (or was removed meanwhile: nothing left to stop), else how long until its
// next change. Callers hold p's shard's world for reading (see podShard.world).
func (p *pod) stopStep(now, killAt time.Time) (stopped bool, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed.Load() {
		return true, 0
	}
	p.advance(now)
	p.requestStop(now, killAt)
	if !p.running() {
		for _, sb := range p.sandboxes {
			sb.ready = false
		}
		return true, 0
	}
	return false, p.nextChange().Sub(now)
}

// requestStop signals every running container not yet asked to stop (its preStop hook starts
// now) and brings every running container's kill forward to killAt. Callers hold p.mu.
func (p *pod) requestStop(now, killAt time.Time) { p.requestStopOf(now, killAt, "") }

// requestStopOf is requestStop for the container with ID id only ("" for every
// container). Callers hold p.mu.
func (p *pod) requestStopOf(now, killAt time.Time, id string) {
	for _, c := range p.containers {
		if !c.running || (id != "" && c.id != id) {
			continue
		}
		if !c.signalled {
			c.signalled = true
			if c.spec.StopDelay >= 0 {
				exit := now.Add(c.spec.PreStop + c.spec.StopDelay)
				if c.exitAt.IsZero() || exit.Before(c.exitAt) {
					c.exitAt = exit
				}
			}
		}
		if c.killAt.IsZero() || killAt.Before(c.killAt) {
			c.killAt = killAt
		}
	}
	p.advance(now)
}

// KillContainer stops one running container of the pod, by its ID, as KillPod stops
// each (its preStop hook, the stop signal, StopDelay, the kill gracePeriod after this
// call), and blocks until it has exited or ctx ends; the pod's sandbox and other
// containers are left alone, and StartPod restarts it as it restarts any exited
// container. An unknown pod or container, or one that no longer runs, is already
// stopped. It returns ctx.Err() when ctx ends first.
func (r *Runtime) KillContainer(ctx context.Context, uid types.UID, id string, gracePeriod time.Duration) error {
	sh := r.shard(uid)
	killAt := r.clock.Now().Add(max(gracePeriod, 0))
	for {
		sh.world.RLock()
		p := sh.find(uid)
		stopped, wait := true, time.Duration(0)
		if p != nil {
			stopped, wait = p.stopContainerStep(r.clock.Now(), killAt, id)
		}
		sh.world.RUnlock()
		if stopped {
			return nil
		}
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// stopContainerStep is one step of KillContainer at now. Callers hold p's shard's world
// for reading.
func (p *pod) stopContainerStep(now, killAt time.Time, id string) (stopped bool, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed.Load() || id == "" {
		return true, 0
	}
	p.advance(now)
	p.requestStopOf(now, killAt, id)
	for _, c := range p.containers {
		if c.id == id && c.running {
			return false, p.nextChange().Sub(now)
		}
	}
	return true, 0
}

// RemovePod removes the pod and everything of it from the runtime (the kubelet's cleanup of a
// terminated pod's containers and sandbox). Running containers are removed too.
func (r *Runtime) RemovePod(uid types.UID) {
	sh := r.shard(uid)
	sh.world.RLock()
	defer sh.world.RUnlock()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p := sh.pods[uid]
	if p == nil {
		return
	}
	delete(sh.pods, uid)
	p.removed.Store(true)
	if sh.removed++; sh.removed > len(sh.order)/2 {
		sh.compact()
	}
}

// compact drops the removed pods from sh.order. Callers hold sh.mu.
func (sh *podShard) compact() {
	sh.order = slices.DeleteFunc(sh.order, func(p *pod) bool { return p.removed.Load() })
	if len(sh.order) == 0 {
		sh.order = nil // a burst does not pin memory
	}
	sh.removed = 0
}

// SetListError makes ListPods fail with err (nil restores it).
func (r *Runtime) SetListError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listErr = err
}

// SetPodStatusError makes PodStatus of uid fail with err (nil restores it).
func (r *Runtime) SetPodStatusError(uid types.UID, err error) {
	sh := r.shard(uid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err == nil {
		delete(sh.statErr, uid)
		return
	}
	sh.statErr[uid] = err
}

// Calls returns how many RuntimeService calls the runtime answered.
func (r *Runtime) Calls() Calls {
	c := Calls{ListPods: int(r.listCalls.Load())}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		c.PodStatus += sh.statusCalls
		sh.mu.Unlock()
	}
	return c
}

// IsRunning reports whether any container of the pod runs.
func (r *Runtime) IsRunning(uid types.UID) bool {
	sh := r.shard(uid)
	sh.world.RLock()
	defer sh.world.RUnlock()
	p := sh.find(uid)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(r.clock.Now())
	return p.running()
}

// ListPods returns every pod (all=false: those with a running container or a ready sandbox),
// in creation order, as fresh values. The list's pods and containers are carved from one
// allocation of each kind. It waits for the calls in progress and holds off new ones: the
// list is one instant of every pod.
func (r *Runtime) ListPods(_ context.Context, all bool) ([]*pleg.Pod, error) {
	for i := range r.shards {
		r.shards[i].world.Lock()
	}
	defer func() {
		for i := range r.shards {
			r.shards[i].world.Unlock()
		}
	}()
	r.listCalls.Add(1)
	r.mu.Lock()
	err := r.listErr
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	now := r.clock.Now()
	order := r.creationOrder()
	n, parts := 0, 0
	for _, p := range order {
		p.advance(now)
		if all || p.active() {
			n++
			parts += len(p.sandboxes) + len(p.containers)
		}
	}
	pods, out := make([]pleg.Pod, n), make([]*pleg.Pod, n)
	cs, ptrs := make([]pleg.Container, parts), make([]*pleg.Container, parts)
	for i := range cs {
		ptrs[i] = &cs[i]
	}
	i := 0
	for _, p := range order {
		if !all && !p.active() {
			continue
		}
		rp := &pods[i]
		*rp = pleg.Pod{ID: p.uid, Name: p.name, Namespace: p.namespace, CreatedAt: p.createdAt}
		if len(p.sandboxes) > 0 {
			rp.Sandboxes, cs, ptrs = ptrs[:len(p.sandboxes):len(p.sandboxes)], cs[len(p.sandboxes):], ptrs[len(p.sandboxes):]
			for j, sb := range p.sandboxes {
				st := pleg.ContainerStateExited
				if sb.ready {
					st = pleg.ContainerStateRunning
				}
				*rp.Sandboxes[j] = pleg.Container{ID: sb.id, State: st}
			}
		}
		if len(p.containers) > 0 {
			rp.Containers, cs, ptrs = ptrs[:len(p.containers):len(p.containers)], cs[len(p.containers):], ptrs[len(p.containers):]
			for j, c := range p.containers {
				st := pleg.ContainerStateExited
				if c.running {
					st = pleg.ContainerStateRunning
				}
				*rp.Containers[j] = pleg.Container{ID: c.id, Name: c.spec.Name, Image: c.spec.Image, State: st}
			}
		}
		out[i] = rp
		i++
	}
	clear(order) // the buffer must not keep removed pods alive
	return out, nil
}

// creationOrder returns every pod, in the order they were added, in r.listed. Callers
// hold every shard's world for writing.
func (r *Runtime) creationOrder() []*pod {
	order := r.listed[:0]
	for i := range r.shards {
		for _, p := range r.shards[i].order {
			if !p.removed.Load() {
				order = append(order, p)
			}
		}
	}
	slices.SortFunc(order, func(a, b *pod) int { return cmp.Compare(a.seq, b.seq) })
	r.listed = order
	return order
}

// active reports whether a container runs or a sandbox is ready.
func (p *pod) active() bool {
	return p.running() || slices.ContainsFunc(p.sandboxes, func(sb *sandbox) bool { return sb.ready })
}

// PodStatus returns the pod's detailed status, observed now (TimeStamp); an unknown pod has
// an empty status. The status of a pod with at most one sandbox and one container is one
// allocation, and its IPs another.
func (r *Runtime) PodStatus(_ context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	sh := r.shard(uid)
	sh.world.RLock()
	defer sh.world.RUnlock()
	sh.mu.Lock()
	sh.statusCalls++
	err, p := sh.statErr[uid], sh.pods[uid]
	sh.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := r.clock.Now()
	p.advance(now)
	b := new(statusBlock)
	st := &b.status
	*st = pleg.PodStatus{ID: uid, Name: name, Namespace: namespace, TimeStamp: now}
	if len(p.sandboxes) > 0 && p.sandboxes[0].ready {
		// Not in the block: a later status of the stopped pod keeps these IPs (the
		// relister's cache does), which must not keep this whole status alive.
		st.IPs = []string{p.ip}
	}
	st.SandboxStatuses = carve(len(p.sandboxes), &b.sandbox, &b.sandboxPtr)
	for i, sb := range p.sandboxes {
		state := pleg.SandboxNotReady
		if sb.ready {
			state = pleg.SandboxReady
		}
		*st.SandboxStatuses[i] = pleg.SandboxStatus{ID: sb.id, State: state, CreatedAt: sb.createdAt, Attempt: sb.attempt, IP: p.ip}
	}
	st.ContainerStatuses = carve(len(p.containers), &b.container, &b.containerPtr)
	for i, c := range p.containers {
		cs := st.ContainerStatuses[i]
		*cs = pleg.ContainerStatus{ID: c.id, Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image,
			CreatedAt: c.createdAt, StartedAt: c.startedAt, RestartCount: c.restartCount}
		if c.running {
			cs.State = pleg.ContainerStateRunning
		} else {
			cs.State, cs.FinishedAt, cs.ExitCode, cs.Reason = pleg.ContainerStateExited, c.finishedAt, c.exitCode, c.reason
		}
	}
	return st, nil
}

// statusBlock is a status with room for the parts of a pod with one sandbox and one
// container, allocated at once.
type statusBlock struct {
	status       pleg.PodStatus
	sandbox      pleg.SandboxStatus
	sandboxPtr   [1]*pleg.SandboxStatus
	container    pleg.ContainerStatus
	containerPtr [1]*pleg.ContainerStatus
}

// carve returns n pointers to zero values: one and its pointer the block's, more from one
// allocation of each kind; nil for none.
func carve[T any](n int, one *T, ptr *[1]*T) []*T {
	switch n {
	case 0:
		return nil
	case 1:
		ptr[0] = one
		return ptr[:]
	}
	values, ptrs := make([]T, n), make([]*T, n)
	for i := range values {
		ptrs[i] = &values[i]
	}
	return ptrs
}
