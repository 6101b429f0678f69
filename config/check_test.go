package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const seenT0 = "2026-11-26T00:00:00.000000000Z"

func i64(v int64) *int64 { return &v }

func ts(sec int64) *metav1.Time {
	t := metav1.Unix(sec, 0)
	return &t
}

// storedPod is a small pod as the store holds it: with the local annotations.
func storedPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "uid-1", ResourceVersion: "10", Generation: 1,
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				ConfigSourceAnnotationKey: "api", ConfigFirstSeenAnnotationKey: seenT0, "team": "a",
			},
		},
		Spec:   v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// apiPod is the same pod as the API server sends it: without the local annotations.
func apiPod() *v1.Pod {
	p := storedPod()
	p.Annotations = map[string]string{"team": "a"}
	return p
}

func TestCheckAndUpdatePod(t *testing.T) {
	type flags struct{ Update, Reconcile, GracefulDelete bool }
	cases := []struct {
		name string
		// existing and ref start as storedPod() and apiPod(); these edit them.
		editExisting func(*v1.Pod)
		editRef      func(*v1.Pod)
		want         flags
		// wantExisting edits storedPod() into the expected existing afterwards.
		wantExisting func(*v1.Pod)
		// wantRefSeen is ref's config.seen afterwards ("-" for absent).
		wantRefSeen string
	}{
		{name: "identical: nothing", wantRefSeen: "-"},
		{
			name:         "status only: reconcile, status copied and nothing else",
			editRef:      func(p *v1.Pod) { p.Status.Phase = v1.PodFailed; p.ResourceVersion = "11"; p.Generation = 2 },
			want:         flags{Reconcile: true},
			wantExisting: func(p *v1.Pod) { p.Status.Phase = v1.PodFailed },
			wantRefSeen:  "-",
		},
		{
			name: "label change: update, meaningful fields copied, not resourceVersion or finalizers",
			editRef: func(p *v1.Pod) {
				p.Labels = map[string]string{"app": "web2"}
				p.ResourceVersion = "11"
				p.Generation = 2
				p.Finalizers = []string{"f"}
			},
			want: flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Labels = map[string]string{"app": "web2"}
				p.Generation = 2
			},
			wantRefSeen: seenT0,
		},
		{
			name:    "spec and status together: update, status copied too",
			editRef: func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:2"; p.Status.Phase = v1.PodSucceeded },
			want:    flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Spec.Containers[0].Image = "nginx:2"
				p.Status.Phase = v1.PodSucceeded
			},
			wantRefSeen: seenT0,
		},
		{
			name:    "deletionTimestamp and grace set: graceful delete",
			editRef: func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(30) },
			want:    flags{GracefulDelete: true},
			wantExisting: func(p *v1.Pod) {
				p.DeletionTimestamp = ts(100)
				p.DeletionGracePeriodSeconds = i64(30)
			},
			wantRefSeen: seenT0,
		},
		{
			name:         "deleting pod, label change: another graceful delete",
			editExisting: func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(30) },
			editRef: func(p *v1.Pod) {
				p.DeletionTimestamp = ts(100)
				p.DeletionGracePeriodSeconds = i64(30)
				p.Labels = map[string]string{"app": "x"}
			},
			want: flags{GracefulDelete: true},
			wantExisting: func(p *v1.Pod) {
				p.DeletionTimestamp = ts(100)
				p.DeletionGracePeriodSeconds = i64(30)
				p.Labels = map[string]string{"app": "x"}
			},
			wantRefSeen: seenT0,
		},
		{
			name:         "deleting pod, grace 30 to 0: graceful delete",
			editExisting: func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(30) },
			editRef:      func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(0) },
			want:         flags{GracefulDelete: true},
			wantExisting: func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(0) },
			wantRefSeen:  seenT0,
		},
		{
			name:         "deleting pod, status only: reconcile",
			editExisting: func(p *v1.Pod) { p.DeletionTimestamp = ts(100); p.DeletionGracePeriodSeconds = i64(30) },
			editRef: func(p *v1.Pod) {
				p.DeletionTimestamp = ts(100)
				p.DeletionGracePeriodSeconds = i64(30)
				p.Status.Phase = v1.PodFailed
			},
			want: flags{Reconcile: true},
			wantExisting: func(p *v1.Pod) {
				p.DeletionTimestamp = ts(100)
				p.DeletionGracePeriodSeconds = i64(30)
				p.Status.Phase = v1.PodFailed
			},
			wantRefSeen: "-",
		},
		{
			name:         "deletionTimestamp cleared: update",
			editExisting: func(p *v1.Pod) { p.DeletionTimestamp = ts(100) },
			want:         flags{Update: true},
			wantRefSeen:  seenT0,
		},
		{
			name: "resourceVersion, generation, finalizers, ownerReferences alone: nothing",
			editRef: func(p *v1.Pod) {
				p.ResourceVersion = "99"
				p.Generation = 5
				p.Finalizers = []string{"f"}
				p.OwnerReferences = []metav1.OwnerReference{{Name: "rs"}}
			},
			wantRefSeen: "-",
		},
		{
			name:         "labels nil against empty: update",
			editRef:      func(p *v1.Pod) { p.Labels = map[string]string{} },
			want:         flags{Update: true},
			wantExisting: func(p *v1.Pod) { p.Labels = map[string]string{} },
			wantRefSeen:  seenT0,
		},
		{
			name:         "spec slice nil against empty: update",
			editRef:      func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{} },
			want:         flags{Update: true},
			wantExisting: func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{} },
			wantRefSeen:  seenT0,
		},
		{
			name:         "nil ref annotations against only local keys: equal",
			editExisting: func(p *v1.Pod) { delete(p.Annotations, "team") },
			editRef:      func(p *v1.Pod) { p.Annotations = nil },
			wantExisting: func(p *v1.Pod) { delete(p.Annotations, "team") },
			wantRefSeen:  "-",
		},
		{
			name: "local keys differ (source, mirror, seen): nothing",
			editRef: func(p *v1.Pod) {
				p.Annotations[ConfigSourceAnnotationKey] = "file"
				p.Annotations[ConfigMirrorAnnotationKey] = "x"
				p.Annotations[ConfigFirstSeenAnnotationKey] = "later"
			},
			wantRefSeen: "later",
		},
		{
			name:    "config.hash is not ignored: update",
			editRef: func(p *v1.Pod) { p.Annotations[ConfigHashAnnotationKey] = "h2" },
			want:    flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Annotations[ConfigHashAnnotationKey] = "h2"
			},
			wantRefSeen: seenT0,
		},
		{
			name:         "stale annotation in existing: update, and it is gone",
			editExisting: func(p *v1.Pod) { p.Annotations["old"] = "1" },
			want:         flags{Update: true},
			wantRefSeen:  seenT0,
		},
		{
			name:    "nil ref annotations with a change: ref gets a map with existing's seen",
			editRef: func(p *v1.Pod) { p.Annotations = nil; p.Labels = nil },
			want:    flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Labels = nil
				delete(p.Annotations, "team")
			},
			wantRefSeen: seenT0,
		},
		{
			name:         "existing without seen: both get an empty seen",
			editExisting: func(p *v1.Pod) { delete(p.Annotations, ConfigFirstSeenAnnotationKey) },
			editRef:      func(p *v1.Pod) { p.Labels = nil },
			want:         flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Labels = nil
				p.Annotations[ConfigFirstSeenAnnotationKey] = ""
			},
			wantRefSeen: "",
		},
		{
			name: "local keys: existing's win, one only ref has survives",
			editRef: func(p *v1.Pod) {
				p.Labels = nil
				p.Annotations[ConfigSourceAnnotationKey] = "file"
				p.Annotations[ConfigMirrorAnnotationKey] = "m"
			},
			want: flags{Update: true},
			wantExisting: func(p *v1.Pod) {
				p.Labels = nil
				p.Annotations[ConfigMirrorAnnotationKey] = "m"
			},
			wantRefSeen: seenT0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			existing, ref := storedPod(), apiPod()
			if c.editExisting != nil {
				c.editExisting(existing)
			}
			if c.editRef != nil {
				c.editRef(ref)
			}
			var got flags
			got.Update, got.Reconcile, got.GracefulDelete = CheckAndUpdatePod(existing, ref)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			want := storedPod()
			if c.editExisting != nil && c.wantExisting == nil && got == (flags{}) {
				c.editExisting(want)
			}
			if c.wantExisting != nil {
				c.wantExisting(want)
			}
			if diff := cmp.Diff(want, existing); diff != "" {
				t.Errorf("existing afterwards (-want +got):\n%s", diff)
			}
			seen, ok := ref.Annotations[ConfigFirstSeenAnnotationKey]
			if !ok {
				seen = "-"
			}
			if seen != c.wantRefSeen {
				t.Errorf("ref's config.seen = %q, want %q", seen, c.wantRefSeen)
			}
		})
	}
}

func TestCheckAndUpdatePodNil(t *testing.T) {
	for _, c := range []struct {
		name          string
		existing, ref *v1.Pod
	}{
		{"nil existing", nil, apiPod()},
		{"nil ref", storedPod(), nil},
		{"both nil", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, r, d := CheckAndUpdatePod(c.existing, c.ref)
			if u || r || d {
				t.Errorf("got (%v, %v, %v), want all false", u, r, d)
			}
		})
	}
}

// TestCheckAndUpdatePodMatchesReflect checks the compiled comparisons against a naive
// CheckAndUpdatePod built on reflect.DeepEqual, on random mutations.
func TestCheckAndUpdatePodMatchesNaive(t *testing.T) {
	r := newRand(3)
	for i := range 5000 {
		existing := richPod()
		existing.Annotations[ConfigFirstSeenAnnotationKey] = seenT0
		ref := existing.DeepCopy()
		for range r.IntN(3) {
			mutate(r, reflectValue(ref))
		}
		if ref.Annotations == nil {
			ref.Annotations = map[string]string{}
		}
		nExisting, nRef := existing.DeepCopy(), ref.DeepCopy()
		wu, wr, wd := naiveCheckAndUpdatePod(nExisting, nRef)
		gu, gr, gd := CheckAndUpdatePod(existing, ref)
		if [3]bool{wu, wr, wd} != [3]bool{gu, gr, gd} {
			t.Fatalf("iteration %d: got %v, naive %v", i, [3]bool{gu, gr, gd}, [3]bool{wu, wr, wd})
		}
		if diff := cmp.Diff(nExisting, existing); diff != "" {
			t.Fatalf("iteration %d: existing (-naive +got):\n%s", i, diff)
		}
	}
}
