package kube

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/statusmgr"
)

// Sentinel errors of the package; every error it makes wraps one of them.
var (
	// ErrNilClient is returned when a client is required and nil.
	ErrNilClient = errors.New("kube: nil client")
	// ErrInvalidArgument is returned for an empty namespace, name, UID or node name.
	ErrInvalidArgument = errors.New("kube: invalid argument")
)

// Patcher is a statusmgr.StatusPatcher over client-go. Create it with NewPatcher; it is safe
// for concurrent use.
type Patcher struct {
	client kubernetes.Interface

	goneForbidden, forbidden atomic.Uint64
}

// PatcherStats counts the Forbidden answers a Patcher had, for tests and metrics.
type PatcherStats struct {
	// GoneForbidden counts GETs the Node authorizer refused for a pod it no longer relates
	// to the node, confirmed gone by a list of the node's pods of that name, and returned
	// as NotFound.
	GoneForbidden uint64
	// Forbidden counts every other Forbidden answer, returned as it is (an RBAC or
	// admission refusal: a configuration mistake that must show).
	Forbidden uint64
}

// Stats returns the Patcher's counters.
func (p *Patcher) Stats() PatcherStats {
	return PatcherStats{GoneForbidden: p.goneForbidden.Load(), Forbidden: p.forbidden.Load()}
}

var (
	_ statusmgr.StatusPatcher = (*Patcher)(nil)
	_ statusmgr.StatusUpdater = (*Patcher)(nil)
)

// NewPatcher returns a Patcher that calls the API through client.
func NewPatcher(client kubernetes.Interface) (*Patcher, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	return &Patcher{client: client}, nil
}

// GetPod returns the server's pod namespace/name. The Node authorizer's Forbidden for a
// pod it relates to no node of the caller's becomes NotFound once a list confirms it (see
// the package doc); every other Forbidden is returned as it is.
func (p *Patcher) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	if namespace == "" || name == "" {
		return nil, fmt.Errorf("%w: empty namespace or name", ErrInvalidArgument)
	}
	pod, err := p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return pod, nil
	}
	node, ok := nodeAuthorizerDenial(err)
	if !ok {
		return nil, p.count(err)
	}
	// Confirm with the one list a node may make, narrowed to the name: the authorizer's
	// graph lags the pod store, so the pod may still be there, bound to this node.
	list, lerr := p.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("metadata.name", name),
			fields.OneTermEqualSelector("spec.nodeName", node)).String()})
	switch {
	case lerr != nil:
		return nil, p.count(errors.Join(err, fmt.Errorf("kube: confirming %s/%s is gone: %w", namespace, name, lerr)))
	case len(list.Items) > 0:
		return &list.Items[0], nil
	}
	p.goneForbidden.Add(1)
	nf := apierrors.NewNotFound(v1.Resource("pods"), name)
	nf.ErrStatus.Message = fmt.Sprintf("%s (the Node authorizer answered Forbidden and no pod of node %s has the name: %v)",
		nf.ErrStatus.Message, node, err)
	return nil, nf
}

// nodeAuthorizerRefusal is how the Node authorizer words its refusal of a GET of an object
// its graph does not connect to the node (plugin/pkg/auth/authorizer/node, 1.37): a pod
// that no longer exists, or is bound elsewhere.
var nodeAuthorizerRefusal = regexp.MustCompile(`no relationship found between node '([^']+)' and this object`)

// nodeAuthorizerDenial reports whether err is the Node authorizer's Forbidden for an
// object unrelated to the node, and the node's name.
func nodeAuthorizerDenial(err error) (string, bool) {
	if !apierrors.IsForbidden(err) {
		return "", false
	}
	m := nodeAuthorizerRefusal.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// count counts a Forbidden answer and returns err unchanged.
func (p *Patcher) count(err error) error {
	if apierrors.IsForbidden(err) {
		p.forbidden.Add(1)
	}
	return err
}

// UpdatePodStatus replaces the pod's status through the status subresource's update
// (UpdateStatus), guarded by pod's resourceVersion and UID: the call of
// statusmgr.Config.UpdateStatus (a statusmgr.StatusUpdater).
func (p *Patcher) UpdatePodStatus(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil || pod.Namespace == "" || pod.Name == "" {
		return nil, fmt.Errorf("%w: a pod without a namespace or name", ErrInvalidArgument)
	}
	out, err := p.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return nil, p.count(err)
	}
	return out, nil
}

// PatchPodStatus applies patch, a strategic merge patch, to the pod's status subresource
// and returns the patched pod.
func (p *Patcher) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	if namespace == "" || name == "" {
		return nil, fmt.Errorf("%w: empty namespace or name", ErrInvalidArgument)
	}
	pod, err := p.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, p.count(err)
	}
	return pod, nil
}

// DeletePod deletes the pod with grace period 0, on the condition that it still has uid.
func (p *Patcher) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	if namespace == "" || name == "" || uid == "" {
		return fmt.Errorf("%w: empty namespace, name or UID", ErrInvalidArgument)
	}
	err := p.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil {
		return p.count(err)
	}
	return nil
}

var _ node.MirrorPodClient = (*Patcher)(nil)

// CreateMirrorPod creates the mirror pod of a static pod (node.NewMirrorPod made it), as
// the kubelet's mirror client does: owned by its Node object (the NodeRestriction
// admission plugin lets a node create only pods owned by itself), which must exist (an
// agent that registers no Node gets the GET's error); one that exists already is not an
// error.
func (p *Patcher) CreateMirrorPod(ctx context.Context, mirror *v1.Pod) error {
	if mirror == nil || mirror.Namespace == "" || mirror.Name == "" || mirror.Spec.NodeName == "" {
		return fmt.Errorf("%w: a mirror pod without namespace, name or node name", ErrInvalidArgument)
	}
	n, err := p.client.CoreV1().Nodes().Get(ctx, mirror.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube: the mirror pod of %s/%s: getting its node: %w", mirror.Namespace, mirror.Name, p.count(err))
	}
	owned := mirror.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID, Controller: ptr.To(true)}}
	_, err = p.client.CoreV1().Pods(owned.Namespace).Create(ctx, owned, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return p.count(err)
	}
	return nil
}

// DeleteMirrorPod deletes a mirror pod with grace 0, on the condition that it still has
// uid (the kubelet's mirror client); one that is gone is not an error.
func (p *Patcher) DeleteMirrorPod(ctx context.Context, namespace, name string, uid types.UID) error {
	if err := p.DeletePod(ctx, namespace, name, uid); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
