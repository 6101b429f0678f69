package node

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
)

// Reasons and messages of generated container statuses (the kubelet's).
const (
	// ReasonContainerCreating is the waiting reason of a container of a pod without
	// init containers that has no status in the runtime yet.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPodInitializing is the waiting reason of a container (init, regular or
	// ephemeral) of a pod with init containers that has no status in the runtime yet.
	ReasonPodInitializing = "PodInitializing"
	// ReasonContainerStatusUnknown is the terminated reason (exit code 137) of a
	// container that was running and can no longer be found in the runtime.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	// ReasonCompleted is the terminated reason of a container that exited 0 when the
	// runtime gave none (what containerd and CRI-O report).
	ReasonCompleted = "Completed"
	// ReasonError is the terminated reason of a container that exited non-zero when
	// the runtime gave none (what containerd and CRI-O report).
	ReasonError = "Error"

	msgUnknownTerminated    = "The container could not be located when the pod was terminated"
	msgUnknownDeleted       = "The container could not be located when the pod was deleted.  The container used to be Running"
	msgRestartingAll        = "The container is removed because RestartAllContainers in place"
	msgInitAssumedCompleted = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"
	exitCodeUnknown         = 137
	defaultContainerIDType  = "podlife://"
)

// ProbeKind names a probe whose results feed a container status.
type ProbeKind int

const (
	// ProbeStartup is the startup probe: it decides status.started.
	ProbeStartup ProbeKind = iota
	// ProbeReadiness is the readiness probe: it decides status.ready.
	ProbeReadiness
	// ProbeLiveness is the liveness probe: its failure has the container killed and
	// started again (Prober.KillContainer, then SyncPod).
	ProbeLiveness
)

// String returns "startup", "readiness" or "liveness" (the kubelet's probe type names).
func (k ProbeKind) String() string {
	switch k {
	case ProbeStartup:
		return "startup"
	case ProbeReadiness:
		return "readiness"
	case ProbeLiveness:
		return "liveness"
	default:
		return fmt.Sprintf("ProbeKind(%d)", int(k))
	}
}

// ContainerStatuses converts the runtime status into the API statuses of the spec's
// init containers (init true, in spec order) or regular containers (init false,
// sorted by name as the kubelet sorts them), the kubelet's
// convertToAPIContainerStatuses followed by its prober's UpdatePodStatus (Ready,
// Started). old is the pod's last status (usually opts.OldStatus); only its
// statuses of that kind, and its conditions, are read. rs may be nil; a nil pod has
// no statuses (nil). Nothing passed in is modified. See GenerateAPIStatus for the rules.
func ContainerStatuses(pod *v1.Pod, rs *pleg.PodStatus, old v1.PodStatus, init bool, opts GenerateOptions) []v1.ContainerStatus {
	if pod == nil {
		return nil
	}
	restarting := shouldAllContainersRestart(pod, rs, &old)
	hasInit := len(pod.Spec.InitContainers) > 0
	if init {
		out := convertStatuses(pod, rs, old.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true, restarting, &opts, nil)
		applyProbes(pod, nil, out, &opts)
		return out
	}
	out := convertStatuses(pod, rs, old.ContainerStatuses, pod.Spec.Containers, hasInit, false, restarting, &opts, nil)
	applyProbes(pod, out, nil, &opts)
	return out
}

// containerIDType is the type prefix of API container IDs, ending in "://".
func containerIDType(prefix string) string {
	switch {
	case prefix == "":
		return defaultContainerIDType
	case !strings.HasSuffix(prefix, "://"):
		return prefix + "://"
	}
	return prefix
}

// containerIDOf returns the API form (idType, as containerIDType returns it, then id) of
// a runtime container ID, given as known when it equals known (the container's ID in its
// old status), so that a container keeps one ID string from sync to sync instead of a new
// one each time.
func containerIDOf(idType, id, known string) string {
	if id == "" || strings.Contains(id, "://") {
		return id
	}
	if len(known) == len(idType)+len(id) && strings.HasPrefix(known, idType) && strings.HasSuffix(known, id) {
		return known
	}
	return idType + id
}

// convertStatuses is the kubelet's convertToAPIContainerStatuses for containers (the
// spec's init, regular or ephemeral containers), without the prober's part.
//
// It builds one status per distinct container name in the slice it returns (a valid
// pod has no two containers of one name; the last one of a name gives its default
// status): no status is allocated on its own and copied afterwards. That slice is buf,
// empty with room for a status per container, or allocated when buf is nil.
func convertStatuses(pod *v1.Pod, rs *pleg.PodStatus, previous []v1.ContainerStatus, containers []v1.Container,
	hasInit, isInit, restarting bool, opts *GenerateOptions, buf []v1.ContainerStatus) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	// oldStatus returns the container's old status (read only), nil if none.
	oldStatus := func(name string) *v1.ContainerStatus { return lastStatus(previous, name) }

	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}
	statuses := buf
	if statuses == nil {
		statuses = make([]v1.ContainerStatus, 0, len(containers))
	}
	// status returns the status of the container named name, nil if no container has it.
	status := func(name string) *v1.ContainerStatus {
		if i := statusIndex(statuses, name); i >= 0 {
			return &statuses[i]
		}
		return nil
	}
	for i := range containers {
		c := &containers[i]
		st := status(c.Name)
		if st == nil {
			statuses = append(statuses, v1.ContainerStatus{})
			st = &statuses[len(statuses)-1]
		}
		if rs.FindContainerStatusByName(c.Name) != nil {
			// The runtime's newest instance gives its status (below): only the name now.
			*st = v1.ContainerStatus{Name: c.Name}
			continue
		}
		o := oldStatus(c.Name)
		if o != nil && o.State.Terminated != nil {
			o.DeepCopyInto(st)
			continue
		}
		*st = v1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			State:        v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}},
			VolumeMounts: volumeMountStatuses(c),
		}
		if o != nil {
			st.RestartCount = o.RestartCount
			o.LastTerminationState.DeepCopyInto(&st.LastTerminationState)
		}
	}

	// A container that ran and vanished from the runtime.
	for i := range containers {
		c := &containers[i]
		if rs.FindContainerStatusByName(c.Name) != nil {
			continue
		}
		o := oldStatus(c.Name)
		if o == nil {
			continue
		}
		st := status(c.Name)
		if restarting && o.State.Waiting == nil {
			st.State.Waiting = &v1.ContainerStateWaiting{Reason: ReasonRestartingAllContainers, Message: msgRestartingAll}
			st.State.Terminated = nil
			st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
				Reason: ReasonRestartingAllContainers, Message: msgRestartingAll, ExitCode: exitCodeUnknown,
			}
			st.RestartCount = o.RestartCount + 1
			continue
		}
		if o.State.Terminated != nil || o.State.Running == nil {
			continue
		}
		if st.State.Waiting == nil || st.State.Waiting.Reason != defaultReason || st.LastTerminationState.Terminated != nil {
			continue
		}
		st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: msgUnknownDeleted, ExitCode: exitCodeUnknown,
		}
		if pod.DeletionTimestamp == nil {
			st.RestartCount++
		}
	}

	// The two newest instances of each container: the newest gives the status, the
	// one before it the last termination state. taken counts the instances taken per
	// status (on the stack for the pods of a usual size).
	idType := containerIDType(opts.ContainerIDPrefix)
	var takenBuf [8]uint8
	taken := takenBuf[:0]
	if len(statuses) > len(takenBuf) {
		taken = make([]uint8, len(statuses))
	}
	taken = taken[:len(statuses)]
	for _, cs := range runtimeStatusesNewestFirst(rs) {
		j := statusIndex(statuses, cs.Name)
		if j < 0 || taken[j] >= 2 {
			continue
		}
		o := oldStatus(cs.Name)
		if taken[j] == 0 {
			st := &statuses[j]
			convertRuntimeStatus(st, cs, o, restarting, idType)
			if cs.State == pleg.ContainerStateRunning && o != nil && o.Started != nil {
				started := *o.Started
				st.Started = &started
			}
		} else {
			statuses[j].LastTerminationState = runtimeState(cs, o, restarting, containerIDOf(idType, cs.ID, ""))
		}
		taken[j]++
	}

	// Containers to be (re)started: an init container assumed done, or the reason its
	// last start failed.
	for i := range containers {
		c := &containers[i]
		st := status(c.Name)
		if isInit {
			s := rs.FindContainerStatusByName(c.Name)
			if s != nil && s.State == pleg.ContainerStateExited && s.ExitCode == 0 {
				continue
			}
			if s == nil && !isRestartableInitContainer(c) && hasAnyRegularContainerCreated(pod, rs) &&
				st.State.Waiting != nil {
				st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: ReasonCompleted, Message: msgInitAssumedCompleted,
				}}
				continue
			}
		}
		if !shouldContainerBeRestarted(c, pod, rs) || opts.StartFailure == nil {
			continue
		}
		reason, message, ok := opts.StartFailure(c.Name)
		if !ok {
			continue
		}
		if st.State.Terminated != nil {
			st.LastTerminationState = st.State
		}
		st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: message}}
	}

	if !isInit {
		slices.SortFunc(statuses, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
		return statuses
	}
	if len(statuses) == len(containers) {
		return statuses // in spec order
	}
	// Init containers sharing a name: each gets a copy of the name's status, in spec
	// order (a copy of its own: a later in-place write, setStarted's, must touch one).
	out := make([]v1.ContainerStatus, len(containers))
	for i := range containers {
		status(containers[i].Name).DeepCopyInto(&out[i])
	}
	return out
}

// statusIndex returns the index of the status named name, or -1.
func statusIndex(statuses []v1.ContainerStatus, name string) int {
	for i := range statuses {
		if statuses[i].Name == name {
			return i
		}
	}
	return -1
}

// convertRuntimeStatus makes *st the status of one runtime instance; old is the
// container's last API status (nil if none), read only: the result shares no memory
// with it (strings aside). idType is the API container IDs' type (containerIDType).
func convertRuntimeStatus(st *v1.ContainerStatus, cs *pleg.ContainerStatus, old *v1.ContainerStatus, restarting bool, idType string) {
	known := ""
	if old != nil {
		known = old.ContainerID
	}
	cid := containerIDOf(idType, cs.ID, known)
	*st = v1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.RestartCount),
		Image:        cs.Image,
		ImageID:      cs.ImageID,
		ContainerID:  cid,
		State:        runtimeState(cs, old, restarting, cid),
	}
	if old == nil {
		return
	}
	st.VolumeMounts = copyVolumeMounts(old.VolumeMounts)
	st.RestartCount = max(st.RestartCount, old.RestartCount)
	// A restart of all containers removes the old instance: carry its end over.
	if old.ContainerID != cid && old.State.Terminated != nil {
		st.LastTerminationState.Terminated = old.State.Terminated.DeepCopy()
	} else if old.LastTerminationState.Terminated != nil {
		st.LastTerminationState.Terminated = old.LastTerminationState.Terminated.DeepCopy()
	}
	switch {
	case cs.State == pleg.ContainerStateRunning && old.State.Terminated != nil && old.RestartCount >= int32(cs.RestartCount):
		st.RestartCount = old.RestartCount + 1
	case cs.State == pleg.ContainerStateUnknown && old.State.Running != nil:
		st.RestartCount = old.RestartCount + 1
	}
}

// runtimeState is the API state of one runtime instance whose API container ID is cid;
// old is the container's last API status (nil if none), read only.
func runtimeState(cs *pleg.ContainerStatus, old *v1.ContainerStatus, restarting bool, cid string) v1.ContainerState {
	switch {
	case cs.State == pleg.ContainerStateRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}}
	case cs.State == pleg.ContainerStateExited:
		reason := cs.Reason
		if reason == "" {
			reason = ReasonCompleted
			if cs.ExitCode != 0 {
				reason = ReasonError
			}
		}
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode:    int32(cs.ExitCode),
			Reason:      reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: cid,
		}}
	case cs.State == pleg.ContainerStateUnknown && old != nil && old.State.Running != nil:
		// It ran and its end is unknown: report it terminated, never waiting, so a
		// run-once container is not started twice.
		reason := ReasonContainerStatusUnknown
		if restarting {
			reason = ReasonRestartingAllContainers
		}
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, Message: msgUnknownTerminated, ExitCode: exitCodeUnknown}}
	default: // created, or unknown and not known to have run
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
	}
}

// copyVolumeMounts deep-copies volume mount statuses (nil stays nil), their
// RecursiveReadOnly values in one allocation (a single mount and its value in one).
func copyVolumeMounts(ms []v1.VolumeMountStatus) []v1.VolumeMountStatus {
	if ms == nil {
		return nil
	}
	if len(ms) == 1 {
		return new(oneMount).set(ms[0], ms[0].RecursiveReadOnly)
	}
	out := make([]v1.VolumeMountStatus, len(ms))
	copy(out, ms)
	var modes []v1.RecursiveReadOnlyMode
	for i := range out {
		if m := out[i].RecursiveReadOnly; m != nil {
			if modes == nil {
				modes = make([]v1.RecursiveReadOnlyMode, 0, len(ms)-i)
			}
			modes = append(modes, *m)
			out[i].RecursiveReadOnly = &modes[len(modes)-1]
		}
	}
	return out
}

// oneMount is the volume mount status of a container with a single mount (the usual
// case: its service account token) and the RecursiveReadOnly value it points to, in one
// allocation instead of two.
type oneMount struct {
	status [1]v1.VolumeMountStatus
	mode   v1.RecursiveReadOnlyMode
}

// set makes m hold st, its RecursiveReadOnly a copy of *mode (nil: none), and returns
// the status as a slice of one.
func (m *oneMount) set(st v1.VolumeMountStatus, mode *v1.RecursiveReadOnlyMode) []v1.VolumeMountStatus {
	m.status[0] = st
	m.status[0].RecursiveReadOnly = nil
	if mode != nil {
		m.mode = *mode
		m.status[0].RecursiveReadOnly = &m.mode
	}
	return m.status[:]
}

// runtimeStatusesNewestFirst returns the runtime's container instances (nil ones
// dropped), newest created first; instances created at the same time keep their order.
// Read only: it is rs.ContainerStatuses itself when that is in this order already.
func runtimeStatusesNewestFirst(rs *pleg.PodStatus) []*pleg.ContainerStatus {
	if rs == nil {
		return nil
	}
	newestFirst := func(a, b *pleg.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) }
	if !slices.Contains(rs.ContainerStatuses, nil) && slices.IsSortedFunc(rs.ContainerStatuses, newestFirst) {
		return rs.ContainerStatuses
	}
	out := make([]*pleg.ContainerStatus, 0, len(rs.ContainerStatuses))
	for _, cs := range rs.ContainerStatuses {
		if cs != nil {
			out = append(out, cs)
		}
	}
	slices.SortStableFunc(out, newestFirst)
	return out
}

// volumeMountStatuses lists the container's volume mounts as the kubelet reports
// them. The runtime is taken not to support recursive read-only mounts, so a
// read-only mount reports RecursiveReadOnly Disabled.
func volumeMountStatuses(c *v1.Container) []v1.VolumeMountStatus {
	if len(c.VolumeMounts) == 0 {
		return nil
	}
	if len(c.VolumeMounts) == 1 {
		m := &c.VolumeMounts[0]
		var mode *v1.RecursiveReadOnlyMode
		if m.ReadOnly {
			disabled := v1.RecursiveReadOnlyDisabled
			mode = &disabled // not moved to the heap: set copies the value
		}
		return new(oneMount).set(v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}, mode)
	}
	out := make([]v1.VolumeMountStatus, len(c.VolumeMounts))
	var modes []v1.RecursiveReadOnlyMode
	for i, m := range c.VolumeMounts {
		out[i] = v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			if modes == nil {
				modes = make([]v1.RecursiveReadOnlyMode, 0, len(c.VolumeMounts)-i)
			}
			modes = append(modes, v1.RecursiveReadOnlyDisabled)
			out[i].RecursiveReadOnly = &modes[len(modes)-1]
		}
	}
	return out
}

// shouldContainerBeRestarted is the kubelet's ShouldContainerBeRestarted: never for a
// deleted pod; always when the container has no instance or its newest is created or
// unknown; never while it runs; else as its restart policy says for its exit code.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, rs *pleg.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	s := rs.FindContainerStatusByName(c.Name)
	if s == nil {
		return true
	}
	switch s.State {
	case pleg.ContainerStateRunning:
		return false
	case pleg.ContainerStateExited:
		return ContainerShouldRestart(c, &pod.Spec, int32(s.ExitCode))
	default:
		return true
	}
}

// hasAnyRegularContainerCreated reports whether the newest instance of some regular
// container is created, running or exited.
func hasAnyRegularContainerCreated(pod *v1.Pod, rs *pleg.PodStatus) bool {
	for i := range pod.Spec.Containers {
		s := rs.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s == nil {
			continue
		}
		switch s.State {
		case pleg.ContainerStateCreated, pleg.ContainerStateRunning, pleg.ContainerStateExited:
			return true
		}
	}
	return false
}

// hasAnyActiveRegularContainerStarted stands in for the kubelet's
// HasAnyActiveRegularContainerStarted (a regular container of the current sandbox
// exists). pleg statuses do not say which sandbox a container belongs to: with
// sandboxes, the newest must be ready and the container created no earlier than it;
// a runtime without sandboxes counts any instance of a regular container.
func hasAnyActiveRegularContainerStarted(spec *v1.PodSpec, rs *pleg.PodStatus) bool {
	if rs == nil {
		return false
	}
	var sandbox *pleg.SandboxStatus
	if len(rs.SandboxStatuses) > 0 {
		sandbox = rs.SandboxStatuses[0]
		if sandbox == nil || sandbox.State != pleg.SandboxReady {
			return false
		}
	}
	for _, cs := range rs.ContainerStatuses {
		if cs == nil || podfacts.ContainerByName(spec.Containers, cs.Name) == nil {
			continue
		}
		if sandbox == nil || sandbox.CreatedAt.IsZero() || cs.CreatedAt.IsZero() || !cs.CreatedAt.Before(sandbox.CreatedAt) {
			return true
		}
	}
	return false
}

// shouldAllContainersRestart is the kubelet's ShouldAllContainersRestart: the old
// status has AllContainersRestarting True, or the newest runtime instance or the old
// API status of an init or regular container exited with a code whose restart rule
// says RestartAllContainers.
func shouldAllContainersRestart(pod *v1.Pod, rs *pleg.PodStatus, old *v1.PodStatus) bool {
	for _, c := range old.Conditions {
		if c.Type == v1.AllContainersRestarting && c.Status == v1.ConditionTrue {
			return true
		}
	}
	if !allContainersCouldRestart(&pod.Spec) {
		return false // no rule can trigger: the usual pod, without a look at its statuses
	}
	triggers := func(c *v1.Container, exitCode int32) bool {
		rule, ok := matchingRestartRule(c, exitCode)
		return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
	}
	check := func(c *v1.Container) bool {
		if s := rs.FindContainerStatusByName(c.Name); s != nil && s.State == pleg.ContainerStateExited && triggers(c, int32(s.ExitCode)) {
			return true
		}
		for _, list := range [][]v1.ContainerStatus{old.InitContainerStatuses, old.ContainerStatuses} {
			if st, ok := findStatus(list, c.Name); ok {
				// The kubelet indexes init statuses first and lets regular ones
				// override a clash of names; names are unique in a valid pod.
				if st.State.Terminated != nil && triggers(c, st.State.Terminated.ExitCode) {
					return true
				}
			}
		}
		return false
	}
	for i := range pod.Spec.InitContainers {
		if check(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if check(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

// allContainersCouldRestart reports whether some init or regular container has a
// RestartAllContainers rule.
func allContainersCouldRestart(spec *v1.PodSpec) bool {
	for _, cs := range [...][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].RestartPolicyRules {
				if cs[i].RestartPolicyRules[j].Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// applyProbes sets Started and Ready of the statuses as the kubelet's prober manager
// (UpdatePodStatus) does, from the probe results opts.ProbeResult reports.
func applyProbes(pod *v1.Pod, regular, init []v1.ContainerStatus, opts *GenerateOptions) {
	result := func(st *v1.ContainerStatus, kind ProbeKind) (success, known bool) {
		if opts.ProbeResult == nil {
			return false, false
		}
		return opts.ProbeResult(st.Name, st.ContainerID, kind)
	}
	started := func(c *v1.Container, st *v1.ContainerStatus) bool {
		if st.State.Running == nil {
			return false
		}
		if ok, known := result(st, ProbeStartup); known {
			return ok
		}
		if st.Started != nil && *st.Started {
			return true
		}
		return c == nil || c.StartupProbe == nil
	}
	ready := func(c *v1.Container, st *v1.ContainerStatus) bool {
		if st.State.Running == nil {
			return false
		}
		if ok, known := result(st, ProbeReadiness); known && ok {
			return true
		}
		return c == nil || c.ReadinessProbe == nil
	}
	for i := range regular {
		st := &regular[i]
		c := podfacts.ContainerByName(pod.Spec.Containers, st.Name)
		s := started(c, st)
		setStarted(st, s)
		if s {
			st.Ready = ready(c, st)
		}
	}
	for i := range init {
		st := &init[i]
		c := podfacts.ContainerByName(pod.Spec.InitContainers, st.Name)
		s := started(c, st)
		setStarted(st, s)
		if !isRestartableInitContainer(c) {
			if t := st.State.Terminated; t != nil && t.ExitCode == 0 {
				st.Ready = true
			}
			continue
		}
		if s {
			st.Ready = ready(c, st)
		}
	}
}

// setStarted sets st.Started to started, in place when st has a Started of its own
// already (every status convertStatuses builds owns what it points to).
func setStarted(st *v1.ContainerStatus, started bool) {
	if st.Started != nil {
		*st.Started = started
		return
	}
	st.Started = &started
}
