package prober

import (
	"container/heap"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Machine holds every probe of the node's containers and decides, as the kubelet's
// probe workers do, when each one is due and what each one's result is. It is pure and
// not safe for concurrent use: it reads no clock, never blocks and starts nothing; the
// time is an argument of every method that needs it. The zero value is not usable; call
// NewMachine.
type Machine struct {
	// start is when the agent started: a probe added within its first period of it
	// waits a random part of the period first (the kubelet's jitter on restart).
	start time.Time
	// rand returns a number in [0, 1) for that jitter; nil means no jitter.
	rand func() float64
	pods map[types.UID]*podProbes
	// due holds every probe waiting for its next run, earliest first; a probe in
	// flight is not in it.
	due probeHeap
	seq uint64
}

// NewMachine returns a machine for an agent that started at start. rand, when not nil,
// returns a uniform random number in [0, 1): a probe added less than one period after
// start is first run after a random part of its period (rand's share of it), as the
// kubelet spreads its probes after a restart; later probes run at once.
func NewMachine(start time.Time, rand func() float64) *Machine {
	return &Machine{start: start, rand: rand, pods: make(map[types.UID]*podProbes)}
}

// podProbes are one pod's probes.
type podProbes struct {
	pod        *v1.Pod
	containers map[string]*containerProbes
}

// containerProbes are one container's probes and its current instance.
type containerProbes struct {
	spec *v1.Container
	inst Instance
	// probes are the container's probes by Kind; nil where the spec has none.
	probes [3]*probe
}

// started reports whether the container's current instance started: it has no startup
// probe, or that probe succeeded for it (the kubelet's isContainerStarted).
func (c *containerProbes) started() bool {
	s := c.probes[Startup]
	return s == nil || (s.hasResult && s.result == Success)
}

// probe is the state of one probe (the kubelet's worker).
type probe struct {
	key  Key
	c    *containerProbes
	spec *v1.Probe
	// result is the current result for c.inst.ID; hasResult false means none (no
	// instance seen yet, or its result was removed).
	result    Result
	hasResult bool
	// last and run count the identical outcomes in a row (the kubelet's lastResult and
	// resultRun).
	last Result
	run  int
	// onHold: a liveness failure or a startup result was set; the probe does not run
	// again until the container has a new instance.
	onHold bool
	// tick is the ticker's tick the next run answers (runs stay on the ticks of the
	// first one, every period); next is when it is due (tick, or later when the run of
	// the previous tick ended after it); index its place in the heap (-1 when not in it); inFlight
	// the seq of the run in flight (0: none).
	tick     time.Time
	next     time.Time
	index    int
	inFlight uint64
}

// SetPod adds the probes of pod's containers and restartable init containers that the
// machine does not have yet (the kubelet's AddPod) and records the containers' current
// instances (what the kubelet's workers read from the pod status at each run). A new
// instance (another ID) resets its container's probes: each gets its kind's initial
// result (readiness Failure, liveness Success, startup Unknown) and is no longer on
// hold; an instance that does not run has Failure. It returns the results that changed.
// The pod replaces the one the machine held (probes are immutable in a pod's spec).
func (m *Machine) SetPod(pod *v1.Pod, instances []Instance, now time.Time) []Change {
	if pod == nil {
		return nil
	}
	pp := m.pods[pod.UID]
	if pp == nil {
		pp = &podProbes{containers: make(map[string]*containerProbes)}
		m.pods[pod.UID] = pp
	}
	pp.pod = pod
	add := func(c *v1.Container) {
		if c.StartupProbe == nil && c.ReadinessProbe == nil && c.LivenessProbe == nil {
			return
		}
		cp := pp.containers[c.Name]
		if cp == nil {
			cp = &containerProbes{}
			pp.containers[c.Name] = cp
		}
		cp.spec = c
		for k := Startup; k <= Liveness; k++ {
			spec := specOf(c, k)
			if spec == nil || cp.probes[k] != nil {
				if cp.probes[k] != nil {
					cp.probes[k].spec = spec
				}
				continue
			}
			p := &probe{key: Key{PodUID: pod.UID, Container: c.Name, Kind: k}, c: cp, spec: spec, index: -1}
			p.next = now
			if per := period(spec); m.rand != nil && now.Sub(m.start) < per {
				p.next = now.Add(time.Duration(m.rand() * float64(per)))
			}
			p.tick = p.next
			cp.probes[k] = p
			heap.Push(&m.due, p)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	var changes []Change
	for _, in := range instances {
		cp := pp.containers[in.Name]
		if cp == nil || in.ID == "" {
			continue
		}
		if in.ID != cp.inst.ID {
			cp.inst = in
			for _, p := range cp.probes {
				if p != nil {
					p.onHold = false
					changes = p.set(initial(p.key.Kind), changes)
				}
			}
		}
		cp.inst = in
		if !in.Running {
			for _, p := range cp.probes {
				if p != nil {
					changes = p.set(Failure, changes)
				}
			}
		}
	}
	return changes
}

// set makes r the probe's result for its container's instance, appending the change
// to changes when it is one.
func (p *probe) set(r Result, changes []Change) []Change {
	if p.hasResult && p.result == r {
		return changes
	}
	p.result, p.hasResult = r, true
	return append(changes, Change{Key: p.key, ContainerID: p.c.inst.ID, Result: r})
}

// RemovePod forgets the pod's probes and their results (the kubelet's RemovePod); a
// run in flight is ignored when reported.
func (m *Machine) RemovePod(uid types.UID) {
	pp := m.pods[uid]
	if pp == nil {
		return
	}
	for _, cp := range pp.containers {
		for k, p := range cp.probes {
			if p != nil {
				m.drop(p)
				cp.probes[k] = nil
			}
		}
	}
	delete(m.pods, uid)
}

// StopLivenessAndStartup forgets the pod's liveness and startup probes and their
// results (the kubelet's StopLivenessAndStartup, for a terminating pod: no container of
// it is restarted for a probe any more); readiness probes go on.
func (m *Machine) StopLivenessAndStartup(uid types.UID) {
	pp := m.pods[uid]
	if pp == nil {
		return
	}
	for _, cp := range pp.containers {
		for _, k := range []Kind{Liveness, Startup} {
			if p := cp.probes[k]; p != nil {
				m.drop(p)
				cp.probes[k] = nil
			}
		}
	}
}

// CleanupPods forgets the probes of every pod keep refuses (the kubelet's CleanupPods).
func (m *Machine) CleanupPods(keep func(types.UID) bool) {
	for uid := range m.pods {
		if !keep(uid) {
			m.RemovePod(uid)
		}
	}
}

// drop takes p out of the heap and forgets its run in flight.
func (m *Machine) drop(p *probe) {
	if p.index >= 0 {
		heap.Remove(&m.due, p.index)
	}
	p.inFlight = 0
}

// Result returns the current result of a probe and the container instance it is for;
// ok is false when the probe has none (no such probe, or no instance seen yet).
func (m *Machine) Result(key Key) (containerID string, r Result, ok bool) {
	pp := m.pods[key.PodUID]
	if pp == nil || key.Kind < Startup || key.Kind > Liveness {
		return "", Unknown, false
	}
	cp := pp.containers[key.Container]
	if cp == nil {
		return "", Unknown, false
	}
	p := cp.probes[key.Kind]
	if p == nil || !p.hasResult {
		return "", Unknown, false
	}
	return cp.inst.ID, p.result, true
}

// Len returns the number of probes the machine holds.
func (m *Machine) Len() int {
	n := 0
	for _, pp := range m.pods {
		for _, cp := range pp.containers {
			for _, p := range cp.probes {
				if p != nil {
					n++
				}
			}
		}
	}
	return n
}

// NextDue returns when the earliest probe waiting is due; ok is false when none waits.
func (m *Machine) NextDue() (at time.Time, ok bool) {
	if len(m.due) == 0 {
		return time.Time{}, false
	}
	return m.due[0].next, true
}

// Due returns the probes to run now (appended to buf), each then in flight until
// Report. A probe due that must not run now is skipped to its next period, as the
// kubelet's worker returns early from its tick: its container has no running instance
// or it is on hold; its container started less than initialDelaySeconds ago (whole
// seconds); a liveness or readiness probe before the container started; a startup
// probe after.
func (m *Machine) Due(now time.Time, buf []Probe) []Probe {
	for len(m.due) > 0 && !m.due[0].next.After(now) {
		p := heap.Pop(&m.due).(*probe)
		if !p.shouldRun(now) {
			p.reschedule(now)
			heap.Push(&m.due, p)
			continue
		}
		m.seq++
		p.inFlight = m.seq
		buf = append(buf, Probe{Key: p.key, ContainerID: p.c.inst.ID, Pod: m.pods[p.key.PodUID].pod,
			Container: p.c.spec, Spec: p.spec, Timeout: timeout(p.spec), seq: m.seq})
	}
	return buf
}

// shouldRun reports whether p runs when due at now (the checks of the kubelet's doProbe
// before it calls the prober).
func (p *probe) shouldRun(now time.Time) bool {
	in := p.c.inst
	if in.ID == "" || p.onHold || !in.Running {
		return false
	}
	if int32(now.Sub(in.StartedAt).Seconds()) < p.spec.InitialDelaySeconds {
		return false
	}
	if p.key.Kind == Startup {
		return !p.c.started()
	}
	return p.c.started()
}

// reschedule sets p's next run as a ticker of its period would give it after the run
// of its current tick ended at now: its next tick, or now when ticks passed during the
// run (one of them waits in the ticker's channel; the others are dropped, not made up).
func (p *probe) reschedule(now time.Time) {
	per := period(p.spec)
	t := p.tick.Add(per)
	if t.After(now) {
		p.tick, p.next = t, t
		return
	}
	p.tick = t.Add(now.Sub(t) / per * per) // the last tick passed
	p.next = now
}

// Report takes the outcome of a run Due returned, at now: ok false means the probe
// could not be run (an error: the outcome is thrown away, as the kubelet does). A run
// of a probe removed, or of an instance replaced, since is ignored. An outcome becomes
// the result once it repeated successThreshold (Success) or failureThreshold (Failure)
// times in a row; a liveness Failure or any startup result puts the probe on hold. It
// returns the results that changed (at most one).
func (m *Machine) Report(run Probe, outcome Result, ok bool, now time.Time) []Change {
	p := m.find(run.Key)
	if p == nil || p.inFlight != run.seq || run.seq == 0 {
		return nil
	}
	p.inFlight = 0
	p.reschedule(now)
	heap.Push(&m.due, p)
	if !ok || run.ContainerID != p.c.inst.ID || p.onHold || !p.c.inst.Running {
		return nil
	}
	if outcome == Unknown {
		outcome = Failure // the kubelet's prober: unknown without an error fails
	}
	if p.last == outcome {
		p.run++
	} else {
		p.last, p.run = outcome, 1
	}
	if (outcome == Failure && p.run < int(p.spec.FailureThreshold)) ||
		(outcome == Success && p.run < int(p.spec.SuccessThreshold)) {
		return nil
	}
	changes := p.set(outcome, nil)
	if (p.key.Kind == Liveness && outcome == Failure) || p.key.Kind == Startup {
		p.onHold = true
		p.run = 0
	}
	return changes
}

// find returns the probe of key, or nil.
func (m *Machine) find(key Key) *probe {
	pp := m.pods[key.PodUID]
	if pp == nil || key.Kind < Startup || key.Kind > Liveness {
		return nil
	}
	cp := pp.containers[key.Container]
	if cp == nil {
		return nil
	}
	return cp.probes[key.Kind]
}

// probeHeap orders probes by their next run.
type probeHeap []*probe

func (h probeHeap) Len() int           { return len(h) }
func (h probeHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h probeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *probeHeap) Push(x any) {
	p := x.(*probe)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *probeHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	p.index = -1
	*h = old[:len(old)-1]
	return p
}
