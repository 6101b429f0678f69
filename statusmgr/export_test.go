package statusmgr

import v1 "k8s.io/api/core/v1"

// Test-only access to the per-pod sync machine, which is not part of the API, for the
// external tests (package statusmgr_test).

var (
	TargetOfForTest     = targetOf
	TargetPodForTest    = targetPod
	ResultKeptForTest   = resultKept
	ReasonFailedForTest = reasonFailed
)

// NewPodSyncForTest is the PodSync of a sync of pod's status (a PodSync no Manager made).
func NewPodSyncForTest(pod *v1.Pod) *PodSync { return podSyncOf(podSyncInput{Pod: pod}) }

// InputPodForTest is the pod the sync works from.
func (p *PodSync) InputPodForTest() *v1.Pod { return p.in.Pod }

// OutcomeForTest is the step's outcome (once Done).
func (s Step) OutcomeForTest() outcome { return s.outcome }
