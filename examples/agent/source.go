package agent

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/statusmgr"
)

// Source feeds the pods bound to a node: Run sends them to out as config.PodUpdates of
// the API source until ctx ends (a config.Set for every full list, then an Add, Update or
// Remove per change), waiting for out or ctx on every send, and returns nil then.
// kube.Source is one; WatchSource adapts an in-memory API server (statusmgrtest.FakeAPI).
type Source interface {
	Run(ctx context.Context, nodeName string, out chan<- config.PodUpdate) error
}

// WatchSource returns the Source of w, a node's pods and their watch events
// (statusmgrtest.FakeAPI is one): the pods as a Set, then each event as an incremental op
// (nodetest.FeedAPI's).
func WatchSource(w nodetest.Watcher) Source { return watchSource{w} }

type watchSource struct{ w nodetest.Watcher }

func (s watchSource) Run(ctx context.Context, nodeName string, out chan<- config.PodUpdate) error {
	if s.w == nil {
		return errors.New("agent: WatchSource of a nil Watcher")
	}
	return nodetest.FeedAPI(ctx, channelUpdater(out), s.w, nodeName)
}

// channelUpdater sends each update on the channel (a nodetest.Updater).
type channelUpdater chan<- config.PodUpdate

func (c channelUpdater) Update(ctx context.Context, u config.PodUpdate) error {
	select {
	case c <- u:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

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

// mirroringPatcher is an observingPatcher over a patcher that keeps mirror pods.
type mirroringPatcher struct {
	observingPatcher
	node.MirrorPodClient
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

// UpdatePodStatus forwards to the patcher's UpdatePodStatus (agent.New checked it has one
// when Config.UpdateStatus is set).
func (o observingPatcher) UpdatePodStatus(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	u, ok := o.next.(statusmgr.StatusUpdater)
	if !ok {
		return nil, fmt.Errorf("agent: %T is not a statusmgr.StatusUpdater", o.next)
	}
	p, err := u.UpdatePodStatus(ctx, pod)
	switch {
	case apierrors.IsNotFound(err):
		o.a.observe(KindStatus, pod, "update: the pod is gone (%v)", err)
		return p, err
	case err != nil:
		o.a.observe(KindStatus, pod, "status update failed: %v", err)
		return p, err
	}
	o.a.observe(KindStatus, p, "updated status: phase %s%s", p.Status.Phase, killNote(p))
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
