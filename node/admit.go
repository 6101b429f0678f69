package node

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/internal/podfacts"
)

// ReasonRejected is the reason of the EventConfig reported for a pod that
// Config.Admit refused; its Message is the handler's reason and message.
const ReasonRejected = "Rejected"

// NodeShutdownNotAdmittedReason and NodeShutdownNotAdmittedMessage are the admit result of a new pod once
// Shutdown started (the kubelet's nodeshutdown manager's): the pod ends Failed with
// them, as any refused pod.
const (
	NodeShutdownNotAdmittedReason  = "NodeShutdown"
	NodeShutdownNotAdmittedMessage = "Pod was rejected as the node is shutting down."
)

// admitPod runs Config.Admit for a pod of a config ADD (the kubelet's
// HandlePodAdditions and canAdmitPod), from the loop, outside every lock. A pod that
// termination was already requested for, or that is terminal, is not admitted again. A
// refused pod gets no pod worker: its status is set Failed with the handler's reason and
// message (the kubelet's rejectPod), a Warning event with that reason is recorded, and
// false is returned.
func (n *Node) admitPod(ctx context.Context, p *v1.Pod) bool {
	shutdown := n.shuttingDown.Load()
	if (len(n.cfg.Admit) == 0 && !shutdown) || podfacts.IsTerminalPhase(p.Status.Phase) || n.workers.IsPodTerminationRequested(p.UID) {
		return true
	}
	hctx, end := n.withLoopCall(ctx)
	r := admission.Admit(hctx, n.cfg.Admit, &admission.Attributes{Pod: p, OtherPods: n.activePods()})
	end()
	if r.Admit && n.shuttingDown.Load() {
		// The kubelet's nodeshutdown manager, its last admit handler.
		r = admission.Result{Reason: NodeShutdownNotAdmittedReason, Message: NodeShutdownNotAdmittedMessage}
	}
	if r.Admit {
		return true
	}
	n.log.InfoContext(ctx, "pod admission denied", append(podKeys(p, ""), "reason", r.Reason, "message", r.Message)...)
	n.recordEvent(p, v1.EventTypeWarning, r.Reason, "%s", r.Message)
	if err := n.status.SetPodStatus(p, admission.RejectedStatus(p, r.Reason, r.Message)); err != nil {
		n.emit(Event{Kind: EventError, Pod: p, Reason: ReasonFailedSync, Err: err})
	}
	n.emit(Event{Kind: EventConfig, Op: config.Add, Pod: p, Reason: ReasonRejected, Message: r.Reason + ": " + r.Message})
	return false
}

// activePods are the desired pods that are admitted and alive (the kubelet's
// GetActivePods): not known to have terminated, and not terminal (on the server or in
// the status manager, where a refused pod's Failed is) unless still terminating. Mirror
// pods are not desired pods.
func (n *Node) activePods() []*v1.Pod {
	desired, _, _ := n.pods.snapshot()
	active := desired[:0]
	for _, p := range desired {
		if !n.isPodInactive(p) {
			active = append(active, p)
		}
	}
	return active
}

// isPodInactive is the kubelet's isPodInactive.
func (n *Node) isPodInactive(p *v1.Pod) bool {
	if n.workers.IsPodKnownTerminated(p.UID) {
		return true
	}
	return n.isAdmittedPodTerminal(p) && !n.workers.IsPodTerminationRequested(p.UID)
}

// isAdmittedPodTerminal is the kubelet's: the source's phase or the status manager's is
// terminal (the latter holds a refused pod's Failed before the server has it).
func (n *Node) isAdmittedPodTerminal(p *v1.Pod) bool {
	if podfacts.IsTerminalPhase(p.Status.Phase) {
		return true
	}
	s, ok := n.status.PodStatusView(p.UID)
	return ok && podfacts.IsTerminalPhase(s.Phase)
}
