package podworker

import "k8s.io/apimachinery/pkg/types"

// The queries below have the kubelet's meanings. "Synced" means SyncKnownPods was called
// at least once: from then on a pod the Machine does not know is known not to run.

// IsPodKnownTerminated reports whether the pod is known and terminated (no container
// runs: SyncTerminatingPod returned nil). Unknown pods are not.
func (m *Machine) IsPodKnownTerminated(uid types.UID) bool {
	st, ok := m.pods[uid]
	return ok && st.isTerminated()
}

// CouldHaveRunningContainers reports whether containers of the pod may run: a known pod
// until it is terminated; an unknown pod until SyncKnownPods was first called.
func (m *Machine) CouldHaveRunningContainers(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return !st.isTerminated()
	}
	return !m.podsSynced
}

// ShouldPodBeFinished reports whether the pod finished (SyncTerminatedPod returned nil);
// an unknown pod counts as finished once SyncKnownPods was first called.
func (m *Machine) ShouldPodBeFinished(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.finished
	}
	return m.podsSynced
}

// IsPodTerminationRequested reports whether termination of the known pod was requested
// (the pod may still be setting up). Unknown pods are not terminating; cleanup loops
// should use ShouldPodContainersBeTerminating.
func (m *Machine) IsPodTerminationRequested(uid types.UID) bool {
	st, ok := m.pods[uid]
	return ok && st.isTerminationRequested()
}

// ShouldPodContainersBeTerminating reports whether the pod's containers must be stopped:
// for a known pod, once its worker observed the termination (SyncPod will never run
// again, so no new container starts); an unknown pod once SyncKnownPods was first called.
func (m *Machine) ShouldPodContainersBeTerminating(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.terminationStarted
	}
	return m.podsSynced
}

// ShouldPodRuntimeBeRemoved reports whether the pod's runtime objects (sandboxes,
// exited containers) may be removed: a known pod once terminated; an unknown pod once
// SyncKnownPods was first called.
func (m *Machine) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.isTerminated()
	}
	return m.podsSynced
}

// ShouldPodContentBeRemoved reports whether the pod's content on disk (volumes) may be
// removed: a known pod that was evicted, or deleted and terminated; an unknown pod once
// SyncKnownPods was first called.
func (m *Machine) ShouldPodContentBeRemoved(uid types.UID) bool {
	if st, ok := m.pods[uid]; ok {
		return st.evicted || (st.deleted && st.isTerminated())
	}
	return m.podsSynced
}
