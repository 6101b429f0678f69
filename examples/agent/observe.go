package agent

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	if p, ok := a.pod(uid); ok {
		a.observe(k, p, format, args...)
		return
	}
	if a.cfg.Observer == nil {
		return
	}
	a.cfg.Observer(Step{Since: a.clock.Since(a.started), Kind: k, Pod: string(uid), UID: uid, Detail: fmt.Sprintf(format, args...)})
}

// observedPatcher reports the status manager's API calls.
type observedPatcher struct{ a *Agent }

func (o observedPatcher) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	return o.a.server.GetPod(ctx, namespace, name)
}

func (o observedPatcher) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	p, err := o.a.server.PatchPodStatus(ctx, namespace, name, patch)
	if err != nil {
		o.a.observe(KindStatus, &v1.Pod{ObjectMeta: metaOf(namespace, name)}, "patch failed: %v", err)
		return p, err
	}
	o.a.observe(KindStatus, p, "patched status: phase %s (%d bytes)", p.Status.Phase, len(patch))
	return p, nil
}

func (o observedPatcher) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	err := o.a.server.DeletePod(ctx, namespace, name, uid)
	p := &v1.Pod{ObjectMeta: metaOf(namespace, name)}
	p.UID = uid
	if err != nil {
		o.a.observe(KindDelete, p, "final delete failed: %v", err)
		return err
	}
	o.a.observe(KindDelete, p, "deleted from the API (grace 0, UID precondition %s)", uid)
	return nil
}
