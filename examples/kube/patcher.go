package kube

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

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
}

var _ statusmgr.StatusPatcher = (*Patcher)(nil)

// NewPatcher returns a Patcher that calls the API through client.
func NewPatcher(client kubernetes.Interface) (*Patcher, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	return &Patcher{client: client}, nil
}

// GetPod returns the server's pod namespace/name. A Forbidden answer becomes NotFound (see
// the package doc).
func (p *Patcher) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	if namespace == "" || name == "" {
		return nil, fmt.Errorf("%w: empty namespace or name", ErrInvalidArgument)
	}
	pod, err := p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, mapError(err, name)
	}
	return pod, nil
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
		return nil, mapError(err, name)
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
		return mapError(err, name)
	}
	return nil
}

// mapError turns a Forbidden into a NotFound that keeps the original message, and returns
// every other error unchanged.
func mapError(err error, name string) error {
	if apierrors.IsForbidden(err) {
		nf := apierrors.NewNotFound(v1.Resource("pods"), name)
		nf.ErrStatus.Message = fmt.Sprintf("%s (the server answered Forbidden: %v)", nf.ErrStatus.Message, err)
		return nf
	}
	return err
}
