package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Source yields the pods bound to a node: Watch returns the pods bound to it now and a
// channel of every later change, in order, closed once ctx ends. The agent sends the
// initial pods to the node as a Set and each event as an incremental op (Added: Add,
// Modified: Update, Deleted: Remove). statusmgrtest.FakeAPI and kube.Source satisfy it.
type Source = nodetest.Watcher

var _ Source = (*statusmgrtest.FakeAPI)(nil)

// named is a pod of which only the namespace and name are known, for observe.
func named(namespace, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// observingPatcher reports the status manager's writes to the Observer when no in-memory
// server does.
type observingPatcher struct {
	next statusmgr.StatusPatcher
	a    *Agent
}

func (o observingPatcher) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	p, err := o.next.GetPod(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		o.a.observe(KindStatus, named(namespace, name), "get: the pod is gone (%v)", err)
	case err != nil:
		o.a.observe(KindStatus, named(namespace, name), "get failed: %v", err)
	}
	return p, err
}

func (o observingPatcher) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	p, err := o.next.PatchPodStatus(ctx, namespace, name, patch)
	switch {
	case apierrors.IsNotFound(err):
		// Deleted meanwhile (a force delete): the status manager forgets the status.
		o.a.observe(KindStatus, named(namespace, name), "patch: the pod is gone (%v)", err)
		return p, err
	case err != nil:
		o.a.observe(KindStatus, named(namespace, name), "patch failed: %v", err)
		return p, err
	}
	o.a.observe(KindStatus, p, "patched status: phase %s (%d bytes)%s", p.Status.Phase, len(patch), killNote(p))
	return p, nil
}

func (o observingPatcher) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	err := o.next.DeletePod(ctx, namespace, name, uid)
	detail := "final delete (grace 0)"
	if err != nil {
		detail = fmt.Sprintf("final delete failed: %v", err)
	}
	o.a.observeUID(KindDelete, uid, "%s", detail)
	return err
}
