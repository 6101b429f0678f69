package config_test

// Parity of config.CheckAndUpdatePod with KUBELET-BEHAVIOR.md §4 (checkAndUpdatePod),
// kubelet 1.37, and with DESIGN.md's decisions for it. One table case per stated rule,
// consequence, example and history note that applies to the current version; each name
// cites the rule. §5 (Store.Merge and the Mux) is in parity_merge_test.go, which shares the
// helpers below.

import (
	"maps"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/config"
)

const (
	kSource = config.ConfigSourceAnnotationKey
	kMirror = config.ConfigMirrorAnnotationKey
	kSeen   = config.ConfigFirstSeenAnnotationKey
	kHash   = config.ConfigHashAnnotationKey
)

// isParityLocal reports whether k is one of §4's ignored annotation keys, spelled out as
// the doc does (config.hash is not one).
func isParityLocal(k string) bool {
	switch k {
	case "kubernetes.io/config.source", "kubernetes.io/config.mirror", "kubernetes.io/config.seen":
		return true
	}
	return false
}

const paritySeen0 = "2026-11-26T01:00:00.000000000Z"

func pI64(v int64) *int64 { return &v }

func pTime(sec int64) *metav1.Time {
	t := metav1.Unix(sec, 0)
	return &t
}

// parityExisting is a pod as a store holds it: with the local annotations and every kind of
// metadata §4 says is or is not copied.
func parityExisting() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "uid-1", ResourceVersion: "10", Generation: 1,
			CreationTimestamp: metav1.Unix(50, 0),
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{kSource: "api", kSeen: paritySeen0, "team": "a"},
			Finalizers:        []string{"example.com/f"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-1"}},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: v1.PodSpec{
			NodeName: "node1", TerminationGracePeriodSeconds: pI64(30),
			Containers: []v1.Container{{Name: "c", Image: "nginx:1"}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// parityRef is the same pod as the API server sends it: without local annotations.
func parityRef() *v1.Pod {
	p := parityExisting()
	p.Annotations = map[string]string{"team": "a"}
	return p
}

// parityTook applies §4 outcome 2 literally to e, given r as it was before the call: ref's
// config.seen becomes existing's ("" if none); existing takes Spec, Labels,
// DeletionTimestamp, DeletionGracePeriodSeconds, Generation and Status; its annotations
// become ref's with each local key that existing had laid over them.
func parityTook(e, r *v1.Pod) {
	ann := maps.Clone(r.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kSeen] = e.Annotations[kSeen]
	for k, v := range e.Annotations {
		if isParityLocal(k) {
			ann[k] = v
		}
	}
	e.Spec, e.Labels = r.Spec, r.Labels
	e.DeletionTimestamp, e.DeletionGracePeriodSeconds = r.DeletionTimestamp, r.DeletionGracePeriodSeconds
	e.Generation, e.Status = r.Generation, r.Status
	e.Annotations = ann
}

type checkResult struct{ Update, Reconcile, GracefulDelete bool }

// kubeletCheck restates §4's decision literally with reflect.DeepEqual: the oracle every
// table case's expectation must agree with.
func kubeletCheck(e, r *v1.Pod) checkResult {
	annEqual := func(existing, ref map[string]string) bool { // §4 annotation comparison
		for k, v := range ref {
			if ev, ok := existing[k]; !isParityLocal(k) && (!ok || ev != v) {
				return false
			}
		}
		for k := range existing {
			if _, ok := ref[k]; !isParityLocal(k) && !ok {
				return false
			}
		}
		return true
	}
	if reflect.DeepEqual(e.Spec, r.Spec) && reflect.DeepEqual(e.Labels, r.Labels) &&
		reflect.DeepEqual(e.DeletionTimestamp, r.DeletionTimestamp) &&
		reflect.DeepEqual(e.DeletionGracePeriodSeconds, r.DeletionGracePeriodSeconds) && annEqual(e.Annotations, r.Annotations) {
		return checkResult{Reconcile: !reflect.DeepEqual(e.Status, r.Status)}
	}
	return checkResult{Update: r.DeletionTimestamp == nil, GracefulDelete: r.DeletionTimestamp != nil}
}

// withCPU gives the pod's container a CPU request.
func withCPU(p *v1.Pod, q resource.Quantity) {
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: q}
}

func TestParityCheckAndUpdatePod(t *testing.T) {
	var (
		none      = checkResult{}
		update    = checkResult{Update: true}
		reconcile = checkResult{Reconcile: true}
		gDelete   = checkResult{GracefulDelete: true}
	)
	for _, k := range []string{kSource, kMirror, kSeen} {
		if !isParityLocal(k) {
			t.Fatalf("§4 annotations 1: exported key %q is not one of the doc's local keys", k)
		}
	}
	if isParityLocal(kHash) || kHash != "kubernetes.io/config.hash" {
		t.Fatalf("§4 annotations 1: config.hash key %q", kHash)
	}
	cases := []struct {
		name string
		ex   func(e *v1.Pod) // changes to parityExisting
		ref  func(r *v1.Pod) // changes to parityRef
		want checkResult
		// wantAnn, if set, is existing's annotations afterwards, spelled out.
		wantAnn map[string]string
		// wantRefAnn, if set, is ref's annotations afterwards, spelled out.
		wantRefAnn map[string]string
		// after, if set, checks more; oldAnn is existing's annotation map before the call.
		after func(t *testing.T, oldAnn map[string]string, e, r *v1.Pod)
	}{
		// Semantic difference: Spec, Labels, DeletionTimestamp, DeletionGracePeriodSeconds,
		// annotations without the local keys.
		{name: "§4 semantic: a Spec difference is a difference",
			ref: func(r *v1.Pod) { r.Spec.Containers[0].Image = "nginx:2" }, want: update},
		{name: "§4 semantic: Spec is compared with DeepEqual: the same quantity in another form (1 vs 1000m) is a difference",
			ex: func(e *v1.Pod) { withCPU(e, resource.MustParse("1")) }, ref: func(r *v1.Pod) { withCPU(r, resource.MustParse("1000m")) }, want: update},
		{name: "§4 semantic: Spec is compared with DeepEqual: equal quantities parsed separately are equal",
			ex: func(e *v1.Pod) { withCPU(e, resource.MustParse("500m")) }, ref: func(r *v1.Pod) { withCPU(r, resource.MustParse("500m")) }, want: none},
		{name: "§4 semantic: a Labels difference is a difference",
			ref: func(r *v1.Pod) { r.Labels["app"] = "other" }, want: update},
		{name: "§4 semantic: nil and empty labels differ under DeepEqual",
			ex: func(e *v1.Pod) { e.Labels = nil }, ref: func(r *v1.Pod) { r.Labels = map[string]string{} }, want: update,
			after: func(t *testing.T, _ map[string]string, e, _ *v1.Pod) {
				if e.Labels == nil {
					t.Error("existing.Labels is nil, want ref's empty map")
				}
			}},
		{name: "§4 semantic: empty and nil labels differ under DeepEqual",
			ex: func(e *v1.Pod) { e.Labels = map[string]string{} }, ref: func(r *v1.Pod) { r.Labels = nil }, want: update},
		{name: "§4 semantic: nil and empty slices in the spec differ under DeepEqual",
			ex: func(e *v1.Pod) { e.Spec.Tolerations = nil }, ref: func(r *v1.Pod) { r.Spec.Tolerations = []v1.Toleration{} }, want: update},
		{name: "§4 semantic: DeletionTimestamp set is a difference",
			ref: func(r *v1.Pod) { r.DeletionTimestamp = pTime(100) }, want: gDelete},
		{name: "§4 semantic: DeletionTimestamp compared by value, not pointer",
			ex: func(e *v1.Pod) { e.DeletionTimestamp = pTime(100) }, ref: func(r *v1.Pod) { r.DeletionTimestamp = pTime(100) }, want: none},
		{name: "§4 semantic: a different DeletionTimestamp value is a difference",
			ex: func(e *v1.Pod) { e.DeletionTimestamp = pTime(100) }, ref: func(r *v1.Pod) { r.DeletionTimestamp = pTime(200) }, want: gDelete},
		{name: "§4 semantic: DeletionGracePeriodSeconds compared by value, not pointer",
			ex:  func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) { r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30) }, want: none},
		{name: "§4 semantic: DeletionGracePeriodSeconds set is a difference",
			ref: func(r *v1.Pod) { r.DeletionGracePeriodSeconds = pI64(30) }, want: update},

		// Annotation comparison.
		{name: "§4 annotations 1: config.source is ignored",
			ref: func(r *v1.Pod) { r.Annotations[kSource] = "file" }, want: none},
		{name: "§4 annotations 1: config.mirror is ignored",
			ref: func(r *v1.Pod) { r.Annotations[kMirror] = "mirror-hash" }, want: none},
		{name: "§4 annotations 1: config.seen is ignored",
			ref: func(r *v1.Pod) { r.Annotations[kSeen] = "2000-01-01T00:00:00.000000000Z" }, want: none},
		{name: "§4 annotations 1: local keys only in existing are ignored",
			ex: func(e *v1.Pod) { e.Annotations[kMirror] = "m" }, want: none},
		{name: "§4 annotations 1: config.hash is not ignored (changed)",
			ex: func(e *v1.Pod) { e.Annotations[kHash] = "h1" }, ref: func(r *v1.Pod) { r.Annotations[kHash] = "h2" }, want: update},
		{name: "§4 annotations 1: config.hash is not ignored (only in ref)",
			ref: func(r *v1.Pod) { r.Annotations[kHash] = "h1" }, want: update},
		{name: "§4 annotations 1: config.hash is not ignored (only in existing)",
			ex: func(e *v1.Pod) { e.Annotations[kHash] = "h1" }, want: update},
		{name: "§4 annotations 2: a nil ref map counts as empty",
			ex: func(e *v1.Pod) { delete(e.Annotations, "team") }, ref: func(r *v1.Pod) { r.Annotations = nil }, want: none},
		{name: "§4 annotations 2: an empty ref map equals existing with only local keys",
			ex: func(e *v1.Pod) { delete(e.Annotations, "team") }, ref: func(r *v1.Pod) { r.Annotations = map[string]string{} }, want: none},
		{name: "§4 annotations 3: nil ref annotations vs existing with only local keys (mirror too) is equal",
			ex:  func(e *v1.Pod) { e.Annotations = map[string]string{kSource: "file", kSeen: paritySeen0, kMirror: "m"} },
			ref: func(r *v1.Pod) { r.Annotations = nil }, want: none},
		{name: "§4 annotations 3: a non-local key of ref missing in existing is a difference",
			ref: func(r *v1.Pod) { r.Annotations["new"] = "v" }, want: update},
		{name: "§4 annotations 3: a non-local key of ref with another value is a difference",
			ref: func(r *v1.Pod) { r.Annotations["team"] = "b" }, want: update},
		{name: "§4 annotations 3: a stale non-local key of existing is a difference",
			ex: func(e *v1.Pod) { e.Annotations["stale"] = "x" }, want: update,
			wantAnn: map[string]string{kSource: "api", kSeen: paritySeen0, "team": "a"}},
		{name: "§4 annotations 3: nil ref vs existing with a non-local key is a difference",
			ref: func(r *v1.Pod) { r.Annotations = nil }, want: update,
			wantAnn: map[string]string{kSource: "api", kSeen: paritySeen0}, wantRefAnn: map[string]string{kSeen: paritySeen0}},
		{name: "DESIGN: nil existing annotations are tolerated and count as empty",
			ex: func(e *v1.Pod) { e.Annotations = nil }, ref: func(r *v1.Pod) { r.Annotations = map[string]string{kSource: "api"} }, want: none},
		{name: "DESIGN: nil annotations on both sides are equal",
			ex: func(e *v1.Pod) { e.Annotations = nil }, ref: func(r *v1.Pod) { r.Annotations = nil }, want: none},
		{name: "DESIGN: nil existing annotations with a difference give existing ref's keys and an empty config.seen",
			ex: func(e *v1.Pod) { e.Annotations = nil }, want: update,
			wantAnn: map[string]string{"team": "a", kSeen: ""}, wantRefAnn: map[string]string{"team": "a", kSeen: ""}},

		// Outcome 1: no semantic difference.
		{name: "§4 outcome 1: a status difference alone is a reconcile and existing takes ref's status",
			ref: func(r *v1.Pod) { r.Status.Phase = v1.PodFailed }, want: reconcile},
		{name: "§4 outcome 1: a reconcile copies nothing but Status (not Generation, ResourceVersion, Finalizers, OwnerReferences)",
			ref: func(r *v1.Pod) {
				r.Status.Phase = v1.PodFailed
				r.Generation, r.ResourceVersion = 2, "11"
				r.Finalizers, r.OwnerReferences = nil, nil
			}, want: reconcile},
		{name: "§4 outcome 1: a status difference in a nil vs empty slice is a reconcile",
			ex: func(e *v1.Pod) { e.Status.Conditions = nil }, ref: func(r *v1.Pod) { r.Status.Conditions = []v1.PodCondition{} }, want: reconcile},
		{name: "§4 outcome 1: no difference at all leaves existing untouched",
			want: none},
		{name: "§4 outcome 1: a reconcile leaves existing's annotations and ref untouched",
			ref: func(r *v1.Pod) { r.Status.Phase = v1.PodSucceeded; r.Annotations[kSeen] = "ref's own" }, want: reconcile,
			wantAnn: map[string]string{kSource: "api", kSeen: paritySeen0, "team": "a"}, wantRefAnn: map[string]string{"team": "a", kSeen: "ref's own"}},

		// Outcome 2: a semantic difference.
		{name: "§4 outcome 2: ref's config.seen is overwritten with existing's",
			ref: func(r *v1.Pod) { r.Labels["v"] = "2"; r.Annotations[kSeen] = "ref's own" }, want: update,
			wantRefAnn: map[string]string{"team": "a", kSeen: paritySeen0}},
		{name: "§4 outcome 2: existing without config.seen gives ref an empty string",
			ex: func(e *v1.Pod) { delete(e.Annotations, kSeen) }, ref: func(r *v1.Pod) { r.Labels["v"] = "2"; r.Annotations[kSeen] = "ref's own" }, want: update,
			wantRefAnn: map[string]string{"team": "a", kSeen: ""}, wantAnn: map[string]string{"team": "a", kSource: "api", kSeen: ""}},
		{name: "§4 outcome 2: nil ref annotations are made non-nil before config.seen is set (the kubelet panics)",
			ex: func(e *v1.Pod) { delete(e.Annotations, "team") }, ref: func(r *v1.Pod) { r.Annotations = nil; r.Labels["v"] = "2" }, want: update,
			wantRefAnn: map[string]string{kSeen: paritySeen0}, wantAnn: map[string]string{kSource: "api", kSeen: paritySeen0}},
		{name: "§4 outcome 2: existing takes Spec, Labels, DeletionTimestamp, DeletionGracePeriodSeconds, Generation and Status",
			ref: func(r *v1.Pod) {
				r.Spec.Containers[0].Image = "nginx:2"
				r.Labels = map[string]string{"app": "web", "v": "2"}
				r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30)
				r.Generation = 7
				r.Status.Phase = v1.PodFailed
			}, want: gDelete,
			after: func(t *testing.T, _ map[string]string, e, _ *v1.Pod) {
				if e.Spec.Containers[0].Image != "nginx:2" || e.Labels["v"] != "2" || e.DeletionTimestamp == nil ||
					*e.DeletionGracePeriodSeconds != 30 || e.Generation != 7 || e.Status.Phase != v1.PodFailed {
					t.Errorf("existing did not take every field: %+v", e)
				}
			}},
		{name: "§4 outcome 2: existing's annotations become ref's, plus existing's local keys",
			ref: func(r *v1.Pod) { r.Annotations = map[string]string{"team": "b", "x": "y"} }, want: update,
			wantAnn: map[string]string{"team": "b", "x": "y", kSource: "api", kSeen: paritySeen0}},
		{name: "§4 outcome 2: local keys of existing always win",
			ex: func(e *v1.Pod) { e.Annotations[kMirror] = "m1" },
			ref: func(r *v1.Pod) {
				r.Annotations = map[string]string{"team": "b", kSource: "file", kSeen: "ref's own", kMirror: "m2"}
			}, want: update,
			wantAnn: map[string]string{"team": "b", kSource: "api", kSeen: paritySeen0, kMirror: "m1"}},
		{name: "§4 outcome 2: a local key that only ref has survives from ref",
			ref: func(r *v1.Pod) { r.Annotations["team"] = "b"; r.Annotations[kMirror] = "m" }, want: update,
			wantAnn: map[string]string{"team": "b", kSource: "api", kSeen: paritySeen0, kMirror: "m"}},
		{name: "§4 outcome 2: config.source only in ref survives from ref when existing has none",
			ex: func(e *v1.Pod) { delete(e.Annotations, kSource) }, ref: func(r *v1.Pod) { r.Annotations["team"] = "b"; r.Annotations[kSource] = "file" }, want: update,
			wantAnn: map[string]string{"team": "b", kSource: "file", kSeen: paritySeen0}},
		{name: "§4 outcome 2: existing's annotations become a new map (the old one is not written)",
			ref: func(r *v1.Pod) { r.Annotations["team"] = "b" }, want: update,
			after: func(t *testing.T, oldAnn map[string]string, e, r *v1.Pod) {
				if diff := cmp.Diff(map[string]string{kSource: "api", kSeen: paritySeen0, "team": "a"}, oldAnn); diff != "" {
					t.Errorf("the old annotation map was modified (-want +got):\n%s", diff)
				}
				e.Annotations["probe"] = "x"
				if _, ok := r.Annotations["probe"]; ok {
					t.Error("existing's new annotation map is ref's map")
				}
			}},
		{name: "§4 outcome 2: not copied: Name, Namespace, UID, ResourceVersion, Finalizers, OwnerReferences, ManagedFields, CreationTimestamp",
			ref: func(r *v1.Pod) {
				r.Labels["v"] = "2"
				r.Name, r.Namespace, r.UID, r.ResourceVersion = "other", "other-ns", "uid-2", "99"
				r.Finalizers, r.OwnerReferences, r.ManagedFields = nil, nil, nil
				r.CreationTimestamp = metav1.Unix(999, 0)
			}, want: update,
			after: func(t *testing.T, _ map[string]string, e, _ *v1.Pod) {
				want := parityExisting().ObjectMeta
				got := e.ObjectMeta
				want.Labels, want.Annotations = nil, nil
				got.Labels, got.Annotations = nil, nil
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("metadata other than labels and annotations changed (-want +got):\n%s", diff)
				}
			}},
		{name: "§4 outcome 2: ref with a DeletionTimestamp is a graceful delete",
			ref: func(r *v1.Pod) { r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30) }, want: gDelete},
		{name: "§4 outcome 2: ref without a DeletionTimestamp is an update",
			ref: func(r *v1.Pod) { r.Spec.ActiveDeadlineSeconds = pI64(5) }, want: update},

		// Consequences.
		{name: "§4 consequence: a label change of a deleting pod is another graceful delete",
			ex: func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) {
				r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30)
				r.Labels["v"] = "2"
			}, want: gDelete},
		{name: "§4 consequence: a spec change of a deleting pod is another graceful delete",
			ex: func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) {
				r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30)
				r.Spec.Containers[0].Image = "nginx:2"
			}, want: gDelete},
		{name: "§4 consequence: deletion grace 30 to 0 of a deleting pod is another graceful delete",
			ex:  func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) { r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(0) }, want: gDelete},
		{name: "§4 consequence: a status-only change of a deleting pod is a reconcile",
			ex: func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) {
				r.DeletionTimestamp, r.DeletionGracePeriodSeconds = pTime(100), pI64(30)
				r.Status.Phase = v1.PodFailed
			}, want: reconcile},
		{name: "§4 consequence: clearing the DeletionTimestamp is an update",
			ex:  func(e *v1.Pod) { e.DeletionTimestamp, e.DeletionGracePeriodSeconds = pTime(100), pI64(30) },
			ref: func(r *v1.Pod) { r.DeletionTimestamp, r.DeletionGracePeriodSeconds = nil, nil }, want: update},
		{name: "§4 consequence: a ResourceVersion change alone produces nothing",
			ref: func(r *v1.Pod) { r.ResourceVersion = "11" }, want: none},
		{name: "§4 consequence: a Generation change alone produces nothing",
			ref: func(r *v1.Pod) { r.Generation = 2 }, want: none},
		{name: "§4 consequence: a finalizers change alone produces nothing",
			ref: func(r *v1.Pod) { r.Finalizers = append(r.Finalizers, "example.com/g") }, want: none},
		{name: "§4 consequence: an ownerReferences change alone produces nothing",
			ref: func(r *v1.Pod) { r.OwnerReferences = nil }, want: none},
		{name: "§4 consequence: spec and status changed together give an update and the status is copied",
			ref: func(r *v1.Pod) { r.Spec.Containers[0].Image = "nginx:2"; r.Status.Phase = v1.PodFailed }, want: update,
			after: func(t *testing.T, _ map[string]string, e, _ *v1.Pod) {
				if e.Status.Phase != v1.PodFailed {
					t.Errorf("status not copied: phase %q", e.Status.Phase)
				}
			}},

		// Rule 4: mirror and static pods are not special-cased.
		{name: "§4 rule 4: a mirror pod's spec change is an ordinary update",
			ex:  func(e *v1.Pod) { e.Annotations[kMirror] = "m" },
			ref: func(r *v1.Pod) { r.Annotations[kMirror] = "m"; r.Spec.Containers[0].Image = "nginx:2" }, want: update},
		{name: "§4 rule 4: a static pod's (source file) spec change is an ordinary update",
			ex:  func(e *v1.Pod) { e.Annotations[kSource] = "file"; e.Annotations[kHash] = "h" },
			ref: func(r *v1.Pod) { r.Annotations[kHash] = "h"; r.Spec.Containers[0].Image = "nginx:2" }, want: update,
			wantAnn: map[string]string{kSource: "file", kSeen: paritySeen0, kHash: "h", "team": "a"}},
		{name: "§4 rule 4: a mirror pod's status change is an ordinary reconcile",
			ex:  func(e *v1.Pod) { e.Annotations[kMirror] = "m" },
			ref: func(r *v1.Pod) { r.Annotations[kMirror] = "m"; r.Status.Phase = v1.PodSucceeded }, want: reconcile},

		// Rule 5: ref is modified.
		{name: "§4 rule 5: ref gets the config.seen value (callers must not rely on ref)",
			ref: func(r *v1.Pod) { r.Spec.Containers[0].Image = "nginx:2" }, want: update,
			wantRefAnn: map[string]string{"team": "a", kSeen: paritySeen0}},

		// History.
		{name: "§4 history: Generation is copied on a semantic difference (1.34+)",
			ref: func(r *v1.Pod) { r.Generation = 5; r.Labels["v"] = "2" }, want: update,
			after: func(t *testing.T, _ map[string]string, e, _ *v1.Pod) {
				if e.Generation != 5 {
					t.Errorf("Generation %d, want 5", e.Generation)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, r := parityExisting(), parityRef()
			if tc.ex != nil {
				tc.ex(e)
			}
			if tc.ref != nil {
				tc.ref(r)
			}
			if diff := cmp.Diff(kubeletCheck(e, r), tc.want); diff != "" {
				t.Fatalf("the case's expectation disagrees with §4 stated with reflect.DeepEqual (-§4 +case):\n%s", diff)
			}
			wantE, wantR := e.DeepCopy(), r.DeepCopy()
			switch tc.want {
			case update, gDelete:
				parityTook(wantE, r.DeepCopy())
				if wantR.Annotations == nil {
					wantR.Annotations = map[string]string{}
				}
				wantR.Annotations[kSeen] = e.Annotations[kSeen]
			case reconcile:
				wantE.Status = *r.Status.DeepCopy()
			}
			oldAnn := e.Annotations
			u, rc, gd := config.CheckAndUpdatePod(e, r)
			if diff := cmp.Diff(tc.want, checkResult{u, rc, gd}); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantE, e); diff != "" {
				t.Errorf("existing afterwards (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantR, r); diff != "" {
				t.Errorf("ref afterwards (-want +got):\n%s", diff)
			}
			if tc.wantAnn != nil {
				if diff := cmp.Diff(tc.wantAnn, e.Annotations); diff != "" {
					t.Errorf("existing's annotations (-want +got):\n%s", diff)
				}
			}
			if tc.wantRefAnn != nil {
				if diff := cmp.Diff(tc.wantRefAnn, r.Annotations); diff != "" {
					t.Errorf("ref's annotations (-want +got):\n%s", diff)
				}
			}
			if tc.after != nil {
				tc.after(t, oldAnn, e, r)
			}
		})
	}
}

// TestParityCheckAndUpdatePodNil: the kubelet dereferences both pods; podlife never panics.
func TestParityCheckAndUpdatePodNil(t *testing.T) {
	cases := []struct {
		name   string
		ex, rf *v1.Pod
	}{
		{name: "DESIGN: nil existing gives nothing, no panic", rf: parityRef()},
		{name: "DESIGN: nil ref gives nothing, no panic", ex: parityExisting()},
		{name: "DESIGN: both nil give nothing, no panic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before *v1.Pod
			if tc.ex != nil {
				before = tc.ex.DeepCopy()
			}
			u, rc, gd := config.CheckAndUpdatePod(tc.ex, tc.rf)
			if diff := cmp.Diff(checkResult{}, checkResult{u, rc, gd}); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if tc.ex != nil {
				if diff := cmp.Diff(before, tc.ex); diff != "" {
					t.Errorf("existing modified (-want +got):\n%s", diff)
				}
			}
		})
	}
}
