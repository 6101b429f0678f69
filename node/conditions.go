package node

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/statusmgr"
)

// Reasons and messages of the generated pod conditions (the kubelet's
// status/generate.go and kubetypes constants); those the status manager also sets are
// its constants.
const (
	// ReasonUnknownContainerStatuses: the status lists no container at all.
	ReasonUnknownContainerStatuses = statusmgr.ReasonUnknownContainerStatuses
	// ReasonPodCompleted: the pod Succeeded.
	ReasonPodCompleted = statusmgr.ReasonPodCompleted
	// ReasonPodFailed: the pod Failed.
	ReasonPodFailed = statusmgr.ReasonPodFailed
	// ReasonContainersNotReady: a container is not ready or has no status.
	ReasonContainersNotReady = statusmgr.ReasonContainersNotReady
	// ReasonContainersNotInitialized: an init container has not completed (or a
	// sidecar has not started).
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	// ReasonReadinessGatesNotReady: the containers are ready, a readiness gate is not.
	ReasonReadinessGatesNotReady = statusmgr.ReasonReadinessGatesNotReady
	// ReasonPodSandboxNotReady: PodReadyToStartContainers is False.
	ReasonPodSandboxNotReady = "PodSandboxNotReady"
	// ReasonRestartAllContainersStarted: AllContainersRestarting is True.
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"

	msgNoPodSandbox        = "no pod sandbox exists"
	msgMultipleSandboxes   = "multiple pod sandboxes are ready and need to be reconciled"
	msgSandboxNotReady     = "pod sandbox is not ready"
	msgSandboxNoIPAddress  = "pod sandbox has no IP address"
	msgRestartAllContainer = "container exited with restart policy rule"
)

// PodConditions returns the conditions of the status GenerateAPIStatus builds, in the
// kubelet's order: the conditions of pod.Status the kubelet does not own (readiness
// gates and the like), the resize conditions of opts.OldStatus (dropped once
// opts.PodIsTerminal), DisruptionTarget of opts.OldStatus (pod.Status when zero), then the kubelet's own:
// PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled (always
// True) and, when some container has a RestartAllContainers rule,
// AllContainersRestarting. status must hold the phase and the container statuses
// already (as GenerateAPIStatus has them: Ready and Started set); rs is the runtime
// status (nil: nothing exists). The generated conditions carry pod.Generation as
// observedGeneration and a lastTransitionTime kept from opts.OldStatus while their
// status is unchanged, else opts.Now (left zero when Now is zero). A nil pod or status
// has none (nil).
func PodConditions(pod *v1.Pod, rs *pleg.PodStatus, status *v1.PodStatus, opts GenerateOptions) []v1.PodCondition {
	if pod == nil || status == nil {
		return nil
	}
	return podConditions(pod, rs, status, oldStatusOf(pod, &opts), &opts, nil)
}

// podConditions is PodConditions with the old status resolved (oldStatusOf), read only,
// building the conditions in buf, empty with room for conditionCount's number of them
// (nil: a slice of that capacity is allocated).
func podConditions(pod *v1.Pod, rs *pleg.PodStatus, status, old *v1.PodStatus, opts *GenerateOptions, buf []v1.PodCondition) []v1.PodCondition {
	couldRestart := allContainersCouldRestart(&pod.Spec)
	conds := buf
	if conds == nil {
		conds = make([]v1.PodCondition, 0, conditionCount(pod, old, opts.PodIsTerminal, couldRestart))
	}
	for _, c := range pod.Status.Conditions {
		if !statusmgr.IsKubeletOwnedCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	if !opts.PodIsTerminal {
		for _, c := range old.Conditions {
			if isResizeCondition(c.Type) {
				conds = append(conds, c)
			}
		}
	}
	if i := conditionIndex(old.Conditions, v1.DisruptionTarget); i >= 0 {
		if j := conditionIndex(conds, v1.DisruptionTarget); j >= 0 {
			conds[j] = old.Conditions[i]
		} else {
			conds = append(conds, old.Conditions[i])
		}
	}

	stamp := func(c v1.PodCondition) v1.PodCondition {
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = transitionTime(old, c, opts.Now)
		return c
	}
	conds = append(conds, stamp(readyToStartContainersCondition(pod, rs)))
	conds = append(conds, stamp(initializedCondition(pod, old, status)))
	// Ready and ContainersReady are the status manager's own rules (readiness gates are
	// looked up in the conditions built so far).
	view := v1.PodStatus{Phase: status.Phase, Conditions: conds,
		InitContainerStatuses: status.InitContainerStatuses, ContainerStatuses: status.ContainerStatuses}
	conds = append(conds, stamp(statusmgr.PodReadyCondition(pod, &view)))
	conds = append(conds, stamp(statusmgr.ContainersReadyCondition(pod, &view)))
	conds = append(conds, stamp(v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue}))
	if couldRestart {
		c := allContainersRestartingCondition(pod, rs, old, status.Phase)
		c.LastTransitionTime = transitionTime(old, c, opts.Now)
		conds = append(conds, c)
	}
	return conds
}

// conditionCount is the length of PodConditions' result at most: the conditions it keeps
// from pod.Status and old, and the kubelet's own (five, AllContainersRestarting the sixth
// when couldRestart, allContainersCouldRestart's answer).
func conditionCount(pod *v1.Pod, old *v1.PodStatus, podIsTerminal, couldRestart bool) int {
	n := 5
	if couldRestart {
		n++
	}
	if conditionIndex(old.Conditions, v1.DisruptionTarget) >= 0 {
		n++
	}
	for i := range pod.Status.Conditions {
		if !statusmgr.IsKubeletOwnedCondition(pod.Status.Conditions[i].Type) {
			n++
		}
	}
	if !podIsTerminal {
		for i := range old.Conditions {
			if isResizeCondition(old.Conditions[i].Type) {
				n++
			}
		}
	}
	return n
}

// isResizeCondition reports whether t is PodResizePending or PodResizeInProgress.
func isResizeCondition(t v1.PodConditionType) bool {
	return t == v1.PodResizePending || t == v1.PodResizeInProgress
}

// transitionTime is the old condition's lastTransitionTime when its status is
// unchanged, else now.
func transitionTime(old *v1.PodStatus, c v1.PodCondition, now time.Time) metav1.Time {
	if i := conditionIndex(old.Conditions, c.Type); i >= 0 && old.Conditions[i].Status == c.Status {
		return old.Conditions[i].LastTransitionTime
	}
	if now.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(now)
}

// conditionIndex returns the index of the condition of type t, or -1.
func conditionIndex(conds []v1.PodCondition, t v1.PodConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// readyToStartContainersCondition is True when the runtime needs no new sandbox (the
// kubelet's PodSandboxChanged): the newest sandbox is the only ready one and, unless
// the pod uses the host's network, has an IP. The kubelet also compares the
// sandbox's network namespace mode, which pleg does not report.
func readyToStartContainersCondition(pod *v1.Pod, rs *pleg.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: ReasonPodSandboxNotReady}
	if rs == nil || len(rs.SandboxStatuses) == 0 || rs.SandboxStatuses[0] == nil {
		c.Message = msgNoPodSandbox
		return c
	}
	readyCount := 0
	for _, sb := range rs.SandboxStatuses {
		if sb != nil && sb.State == pleg.SandboxReady {
			readyCount++
		}
	}
	newest := rs.SandboxStatuses[0]
	switch {
	case readyCount > 1:
		c.Message = msgMultipleSandboxes
	case newest.State != pleg.SandboxReady:
		c.Message = msgSandboxNotReady
	case !pod.Spec.HostNetwork && newest.IP == "":
		c.Message = msgSandboxNoIPAddress
	default:
		return v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
	}
	return c
}

// initializedCondition is the kubelet's GeneratePodInitializedCondition: True when
// every init container completed (a sidecar: started), when the pod Succeeded with
// every init container known (reason PodCompleted), when a regular container has run,
// or (RestartAllContainersOnContainerExits) when the old status said True already.
//
// A container's status is looked up in status's init container statuses, then its
// regular ones.
func initializedCondition(pod *v1.Pod, old, status *v1.PodStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	init, regular := status.InitContainerStatuses, status.ContainerStatuses
	if init == nil && regular == nil && len(pod.Spec.InitContainers) > 0 {
		c.Status = v1.ConditionFalse
		c.Reason = ReasonUnknownContainerStatuses
		return c
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		st, ok := findStatus(init, ic.Name)
		if !ok {
			st, ok = findStatus(regular, ic.Name)
		}
		switch {
		case !ok:
			unknown = append(unknown, ic.Name)
		case isRestartableInitContainer(ic):
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, ic.Name)
			}
		case !st.Ready:
			incomplete = append(incomplete, ic.Name)
		}
	}
	if status.Phase == v1.PodSucceeded && len(unknown) == 0 {
		c.Reason = ReasonPodCompleted
		return c
	}
	if hasAnyRegularContainerStarted(&pod.Spec, init) || hasAnyRegularContainerStarted(&pod.Spec, regular) {
		return c
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) == 0 {
		return c
	}
	if i := conditionIndex(old.Conditions, v1.PodInitialized); i >= 0 && old.Conditions[i].Status == v1.ConditionTrue {
		return c
	}
	c.Status = v1.ConditionFalse
	c.Reason = ReasonContainersNotInitialized
	c.Message = strings.Join(msgs, ", ")
	return c
}

// allContainersRestartingCondition is the kubelet's
// GenerateAllContainersRestartingCondition: True while a restart of all containers
// was triggered and some init or regular container still has an instance in the
// runtime; False (PodCompleted, PodFailed) for a terminal pod. It carries no
// observedGeneration, as the kubelet's.
func allContainersRestartingCondition(pod *v1.Pod, rs *pleg.PodStatus, old *v1.PodStatus, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		c.Reason = ReasonPodCompleted
	case phase == v1.PodFailed:
		c.Reason = ReasonPodFailed
	case !shouldAllContainersRestart(pod, rs, old):
	case allContainersRemoved(pod, rs):
	default:
		c.Status = v1.ConditionTrue
		c.Reason = ReasonRestartAllContainersStarted
		c.Message = msgRestartAllContainer
	}
	return c
}

// allContainersRemoved reports whether no init or regular container has an instance
// in the runtime.
func allContainersRemoved(pod *v1.Pod, rs *pleg.PodStatus) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if rs.FindContainerStatusByName(cs[i].Name) != nil {
				return false
			}
		}
	}
	return true
}
