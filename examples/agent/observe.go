package agent

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Kind classifies a Step.
type Kind string

// The kinds of step the agent reports.
const (
	KindConfig       Kind = "config"
	KindWork         Kind = "work"
	KindWorker       Kind = "worker"
	KindPLEG         Kind = "pleg"
	KindStatus       Kind = "status"
	KindDelete       Kind = "delete"
	KindRuntime      Kind = "runtime"
	KindHousekeeping Kind = "housekeeping"
	KindError        Kind = "error"
	KindAPI          Kind = "api"
)

// Step is one observed step of the lifecycle.
type Step struct {
	// Since is the time since the agent started, on its clock.
	Since time.Duration
	Kind  Kind
	// Pod is namespace/name, or the UID when only that is known, or "".
	Pod    string
	UID    types.UID
	Detail string
}

// String formats the step as one timeline line.
func (s Step) String() string {
	return fmt.Sprintf("%9.3fs  %-12s %-22s %s", s.Since.Seconds(), s.Kind, s.Pod, s.Detail)
}

func (a *Agent) observe(k Kind, p *v1.Pod, format string, args ...any) {
	if a.cfg.Observer == nil {
		return
	}
	s := Step{Since: a.clock.Since(a.started), Kind: k, Detail: fmt.Sprintf(format, args...)}
	if p != nil {
		s.Pod, s.UID = p.Namespace+"/"+p.Name, p.UID
	}
	a.cfg.Observer(s)
}

func (a *Agent) observeUID(k Kind, uid types.UID, format string, args ...any) {
	if a.node == nil {
		return
	}
	if p, ok := a.node.Pod(uid); ok {
		a.observe(k, p, format, args...)
		return
	}
	if a.cfg.Observer == nil {
		return
	}
	a.cfg.Observer(Step{Since: a.clock.Since(a.started), Kind: k, Pod: string(uid), UID: uid, Detail: fmt.Sprintf(format, args...)})
}

// observeServer turns the server's changes into steps.
func (a *Agent) observeServer(c statusmgrtest.Change) {
	k := KindAPI
	switch c.Verb {
	case "patch":
		k = KindStatus
	case "final-delete":
		k = KindDelete
	}
	detail := c.Detail
	if k == KindStatus {
		detail += killNote(c.Pod)
	}
	a.observe(k, c.Pod, "%s", detail)
}

// ExitCodeKilled is the exit code of a container killed with SIGKILL (128 + 9), as the
// kubelet reports a container killed when its grace period ran out.
const ExitCodeKilled = 137

// killNote names, for a status line, the pod's containers that were killed (exit code 137):
// "at the end of the grace period" when the pod was being deleted, which is when a kill
// means the container ignored its stop signal.
func killNote(p *v1.Pod) string {
	if p == nil {
		return ""
	}
	var note string
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.ExitCode != ExitCodeKilled {
			continue
		}
		when := ""
		if p.DeletionTimestamp != nil {
			when = " at the end of the grace period"
		}
		note += fmt.Sprintf("; container %s killed%s (exit code %d)", cs.Name, when, t.ExitCode)
	}
	return note
}

// onEvent turns the node's events into steps.
func (a *Agent) onEvent(e node.Event) {
	if a.cfg.Observer == nil {
		return
	}
	k := map[node.EventKind]Kind{node.EventConfig: KindConfig, node.EventPLEG: KindPLEG, node.EventWork: KindWork,
		node.EventHousekeeping: KindHousekeeping, node.EventRuntime: KindRuntime, node.EventError: KindError}[e.Kind]
	detail := e.Message
	switch e.Kind {
	case node.EventConfig:
		detail = configDetail(e.Op, e.Pod)
		if e.Reason == node.ReasonRejected {
			detail += " rejected: " + e.Message
		}
	case node.EventError:
		detail = fmt.Sprintf("%s: %v", e.Reason, e.Err)
	}
	if e.Pod != nil {
		a.observe(k, e.Pod, "%s", detail)
		return
	}
	a.observeUID(k, e.UID, "%s", detail)
}

// configDetail is the timeline text of a config op.
func configDetail(op config.Op, p *v1.Pod) string {
	switch op {
	case config.Add:
		return "ADD"
	case config.Update:
		return "UPDATE"
	case config.Delete:
		grace := int64(-1)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return fmt.Sprintf("DELETE (graceful, %ds)", grace)
	case config.Remove:
		return "REMOVE"
	case config.Reconcile:
		return fmt.Sprintf("RECONCILE (phase %s)", p.Status.Phase)
	}
	return op.String()
}

func (a *Agent) onTransition(t podworker.Transition) {
	a.observeUID(KindWorker, t.UID, "%s -> %s", t.From, t.To)
}
