package apitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/internal/podfacts"
)

// errModified is the API server's reason for a Conflict on a stale resourceVersion.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// NotFound returns the API server's NotFound error for the pod name.
func NotFound(name string) error { return apierrors.NewNotFound(v1.Resource("pods"), name) }

// Conflict returns the API server's Conflict error for the pod name, with reason err.
func Conflict(name string, err error) error {
	return apierrors.NewConflict(v1.Resource("pods"), name, err)
}

// Create stores a new pod as the API server does: the defaults of DefaultPod, a
// generated UID if it has none, a creation timestamp, generation 1, and a status reset to
// phase Pending with the pod's QoS class (and, for a pod with scheduling gates, the
// PodScheduled False SchedulingGated condition): the status passed in is dropped. A pod
// with the same namespace and name gives AlreadyExists; a nil pod or one without a name,
// BadRequest. It returns a copy; pod is not modified.
func (s *Server) Create(pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil || pod.Name == "" {
		return nil, apierrors.NewBadRequest("apitest: a pod needs a name")
	}
	s.mu.Lock()
	if _, ok := s.pods[key(pod.Namespace, pod.Name)]; ok {
		s.mu.Unlock()
		return nil, apierrors.NewAlreadyExists(v1.Resource("pods"), pod.Name)
	}
	p := pod.DeepCopy()
	if p.UID == "" {
		s.uids++
		p.UID = types.UID(fmt.Sprintf("uid-%04d", s.uids))
	}
	p.CreationTimestamp = metav1.NewTime(s.clock.Now())
	prepareForCreate(p, p.CreationTimestamp)
	s.store(Added, p, "create", "created")
	out := p.DeepCopy()
	s.mu.Unlock()
	s.deliver()
	return out, nil
}

// prepareForCreate does to a new pod what the API server does on create: the defaults,
// generation 1, the status reset to phase Pending with the QoS class and the
// SchedulingGated condition (k8s.io/kubernetes pkg/registry/core/pod/strategy.go
// PrepareForCreate; the pod-level resources' defaults and the feature-gated mutations of
// affinity, topology spread and AppArmor are not done).
// now stamps the condition's lastTransitionTime.
func prepareForCreate(p *v1.Pod, now metav1.Time) {
	DefaultPod(p)
	p.Generation = 1
	p.Status = v1.PodStatus{Phase: v1.PodPending}
	if len(p.Spec.SchedulingGates) > 0 {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse,
			Reason: v1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates",
			LastTransitionTime: now}}
	}
	p.Status.QOSClass = podfacts.QOSClass(p)
}

// Get returns a deep copy of the stored pod, or NotFound.
func (s *Server) Get(namespace, name string) (*v1.Pod, error) {
	if p, ok := s.Pod(namespace, name); ok {
		return p, nil
	}
	return nil, NotFound(name)
}

// PatchStatus applies patch, a strategic merge patch, to the pod through the status
// subresource, as the API server does (see the package doc), and returns a copy of the
// result. The patch is applied outside the Server's lock, so patches of different pods
// run in parallel; the result is stored only if the pod did not change meanwhile (else the
// patch is applied again to the new version).
func (s *Server) PatchStatus(namespace, name string, patch []byte) (*v1.Pod, error) {
	s.mu.Lock()
	p := s.pods[key(namespace, name)]
	s.mu.Unlock()
	for {
		if p == nil {
			return nil, NotFound(name)
		}
		np, err := applyStatusPatch(p, patch)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if cur := s.pods[key(namespace, name)]; cur != p {
			p = cur // changed meanwhile: apply the patch to the new version
			s.mu.Unlock()
			continue
		}
		s.store(Modified, np, "patch", fmt.Sprintf("patched status: phase %s (%d bytes)", np.Status.Phase, len(patch)))
		out := np.DeepCopy()
		s.mu.Unlock()
		s.deliver()
		return out, nil
	}
}

// UpdateStatus replaces the status of the pod pod names with pod.Status through the status
// subresource's update, as the API server does: pod's UID and resourceVersion, if set, must
// be the stored pod's (else Conflict; the resourceVersion is required as the API server's
// optimistic concurrency has it for a status update of a pod: an empty one is a BadRequest
// here); everything but the status comes from the stored pod. It returns a copy of the
// result; pod is not modified.
func (s *Server) UpdateStatus(pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil {
		return nil, apierrors.NewBadRequest("no pod")
	}
	if pod.ResourceVersion == "" {
		return nil, apierrors.NewBadRequest("metadata.resourceVersion: Invalid value: 0x0: must be specified for an update")
	}
	s.mu.Lock()
	p := s.pods[key(pod.Namespace, pod.Name)]
	if p == nil {
		s.mu.Unlock()
		return nil, NotFound(pod.Name)
	}
	if pod.UID != "" && pod.UID != p.UID {
		s.mu.Unlock()
		return nil, Conflict(p.Name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", pod.UID, p.UID))
	}
	if pod.ResourceVersion != p.ResourceVersion {
		s.mu.Unlock()
		return nil, Conflict(p.Name, errModified)
	}
	np := withMeta(p)
	pod.Status.DeepCopyInto(&np.Status)
	s.store(Modified, np, "update", fmt.Sprintf("updated status: phase %s", np.Status.Phase))
	out := np.DeepCopy()
	s.mu.Unlock()
	s.deliver()
	return out, nil
}

// applyStatusPatch returns the new version of p with the status patch applied (p is not
// modified): the status, labels, annotations and finalizers come from the patched object,
// the rest from p. The Server's lock need not be held: stored pods are never modified in
// place.
func applyStatusPatch(p *v1.Pod, patch []byte) (*v1.Pod, error) {
	var pre struct {
		Metadata struct {
			UID             types.UID `json:"uid"`
			ResourceVersion string    `json:"resourceVersion"`
			// The metadata a status patch may change, if the patch has any.
			Labels      json.RawMessage `json:"labels"`
			Annotations json.RawMessage `json:"annotations"`
			Finalizers  json.RawMessage `json:"finalizers"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &pre); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid patch: %v", err))
	}
	meta := pre.Metadata
	if meta.UID != "" && meta.UID != p.UID {
		return nil, Conflict(p.Name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", meta.UID, p.UID))
	}
	if meta.ResourceVersion != "" && meta.ResourceVersion != p.ResourceVersion {
		return nil, Conflict(p.Name, errModified)
	}
	// The spec is reset by the status subresource, and the metadata other than labels,
	// annotations and finalizers: only what may change is patched.
	orig := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: p.Status}
	changesMeta := meta.Labels != nil || meta.Annotations != nil || meta.Finalizers != nil
	if changesMeta {
		orig.ObjectMeta = p.ObjectMeta
	}
	data, err := json.Marshal(orig)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, err := strategicpatch.StrategicMergePatch(data, patch, v1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot apply patch: %v", err))
	}
	var patched v1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched pod: %v", err))
	}
	np := withMeta(p)
	if changesMeta {
		np.Labels, np.Annotations, np.Finalizers = patched.Labels, patched.Annotations, patched.Finalizers
	}
	np.Status = patched.Status
	return np, nil
}

// Delete deletes the pod as the API server does with opts (see the package doc). It
// returns the pod as it was when removed, or nil when the object stays (a graceful
// delete, or one that changed nothing). The removed pod is the Server's last version of
// it, not a copy: read it, do not modify it.
func (s *Server) Delete(namespace, name string, opts metav1.DeleteOptions) (*v1.Pod, error) {
	return s.delete(namespace, name, opts, "delete")
}

// FinalDelete is Delete with grace 0 and the UID precondition uid, the node agent's final
// delete of a pod it has stopped; the observer hears of it as "final-delete", and
// FinalDeleted lists the pod. The removed pod is not a copy: read it, do not modify it.
func (s *Server) FinalDelete(namespace, name string, uid types.UID) (*v1.Pod, error) {
	grace := int64(0)
	return s.delete(namespace, name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}}, "final-delete")
}

func (s *Server) delete(namespace, name string, opts metav1.DeleteOptions, verb string) (*v1.Pod, error) {
	s.mu.Lock()
	removed, err := s.deleteLocked(namespace, name, opts, verb)
	s.mu.Unlock()
	s.deliver()
	return removed, err
}

func (s *Server) deleteLocked(namespace, name string, opts metav1.DeleteOptions, verb string) (*v1.Pod, error) {
	cur, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, NotFound(name)
	}
	if pre := opts.Preconditions; pre != nil {
		if pre.UID != nil && *pre.UID != cur.UID {
			return nil, Conflict(name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, cur.UID))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != cur.ResourceVersion {
			return nil, Conflict(name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, cur.ResourceVersion))
		}
	}
	grace, remove := s.deleteGrace(cur, opts.GracePeriodSeconds)
	switch {
	case remove:
		// A new object, as for every write: cur may still be on its way to the observer
		// and the watchers (deliver reads it without the lock), so it is never modified.
		gone := withMeta(cur)
		detail := "deleted at once (grace 0)"
		if verb == "final-delete" {
			detail = fmt.Sprintf("deleted from the API (grace 0, UID precondition %s)", cur.UID)
			s.finalDeleted = append(s.finalDeleted, gone)
		}
		s.store(Deleted, gone, verb, detail)
		return gone, nil
	case grace == nil:
		return nil, nil // a graceful delete is pending already
	}
	p := withMeta(cur)
	ts := metav1.NewTime(s.clock.Now().Add(time.Duration(*grace) * time.Second))
	if cur.DeletionTimestamp != nil {
		// Shortening: the deadline moves back by the difference, never into the past.
		ts = metav1.NewTime(cur.DeletionTimestamp.Add(time.Duration(*grace-*cur.DeletionGracePeriodSeconds) * time.Second))
		if now := metav1.NewTime(s.clock.Now()); ts.Before(&now) {
			ts, grace = now, new(int64(1))
		}
	}
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, grace
	s.store(Modified, p, verb, gracefulDetail(*grace))
	return nil, nil
}

// deleteGrace decides a delete of cur with the requested grace period (nil: none given):
// remove the object now, or set (or shorten to) the returned grace period, or (neither)
// leave a pending graceful delete as it is.
func (s *Server) deleteGrace(cur *v1.Pod, requested *int64) (grace *int64, remove bool) {
	if requested != nil && *requested < 0 {
		requested = new(int64(1)) // a negative grace period counts as 1 s
	}
	if cur.DeletionTimestamp != nil {
		old := cur.DeletionGracePeriodSeconds
		switch {
		case old == nil || *old == 0:
			return nil, true // a graceful delete that never finished: delete now
		case requested == nil || *requested >= *old:
			return nil, false // only a shorter grace period changes anything
		case *requested == 0:
			return nil, true
		}
		return requested, false
	}
	g := podfacts.TerminationGracePeriodSeconds(&cur.Spec)
	if requested != nil {
		g = *requested
	}
	if g < 0 {
		g = 1
	}
	if cur.Spec.NodeName == "" || cur.Status.Phase == v1.PodSucceeded || cur.Status.Phase == v1.PodFailed || g == 0 {
		return nil, true
	}
	return &g, false
}

func gracefulDetail(grace int64) string {
	return fmt.Sprintf("graceful delete: deletionTimestamp set, grace %ds", grace)
}
