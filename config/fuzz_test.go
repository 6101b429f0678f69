package config

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// naiveStore restates Store's rules as plainly as possible: deep copies everywhere,
// reflect.DeepEqual through naiveCheckAndUpdatePod, linear filters. With trustVersions it
// also restates the resourceVersion shortcut (StoreConfig.TrustResourceVersions).
type naiveStore struct {
	pods map[string]map[types.UID]*v1.Pod
	seen map[string]bool
	// trustVersions: an "api" pod listed with the non-empty resourceVersion of the
	// version of its UID last listed (versions) is unchanged.
	trustVersions bool
	versions      map[types.UID]string
}

func newNaiveStore(trustVersions bool) *naiveStore {
	return &naiveStore{pods: map[string]map[types.UID]*v1.Pod{}, seen: map[string]bool{},
		trustVersions: trustVersions, versions: map[types.UID]string{}}
}

func (n *naiveStore) apply(u PodUpdate, now string) (Changes, bool) {
	if u.Op < Set || u.Op >= Reconcile || u.Source == "" {
		return Changes{}, false
	}
	if n.pods[u.Source] == nil {
		n.pods[u.Source] = map[types.UID]*v1.Pod{}
	}
	pods := n.pods[u.Source]
	var c Changes
	if u.Op == Remove {
		for _, p := range u.Pods {
			if p == nil || p.UID == "" {
				continue
			}
			if stored, ok := pods[p.UID]; ok {
				delete(pods, p.UID)
				c.Removes = append(c.Removes, stored.DeepCopy())
			}
		}
		return c, true
	}
	var valid, kept []*v1.Pod
	for _, p := range u.Pods {
		if p != nil && p.UID != "" {
			valid = append(valid, p)
		}
	}
	names := map[string]bool{}
	uids := map[types.UID]bool{}
	for _, p := range valid {
		full := p.Name + "_" + p.Namespace
		if names[full] {
			continue
		}
		names[full] = true
		if uids[p.UID] {
			continue
		}
		uids[p.UID] = true
		kept = append(kept, p)
	}
	for _, p := range kept {
		ref := p.DeepCopy()
		if ref.Annotations == nil {
			ref.Annotations = map[string]string{}
		}
		ref.Annotations[ConfigSourceAnnotationKey] = u.Source
		stored, ok := pods[ref.UID]
		if u.Source == "api" {
			last := n.versions[ref.UID]
			n.versions[ref.UID] = ref.ResourceVersion
			if ok && n.trustVersions && ref.ResourceVersion != "" && ref.ResourceVersion == last {
				continue
			}
		}
		if !ok {
			ref.Annotations[ConfigFirstSeenAnnotationKey] = now
			pods[ref.UID] = ref
			c.Adds = append(c.Adds, ref.DeepCopy())
			continue
		}
		up, rec, del := naiveCheckAndUpdatePod(stored, ref)
		switch {
		case up:
			c.Updates = append(c.Updates, stored.DeepCopy())
		case rec:
			c.Reconciles = append(c.Reconciles, stored.DeepCopy())
		case del:
			c.Deletes = append(c.Deletes, stored.DeepCopy())
		}
	}
	if u.Op == Set {
		for uid, stored := range pods {
			if !uids[uid] {
				delete(pods, uid)
				c.Removes = append(c.Removes, stored.DeepCopy())
			}
		}
		sortPods(c.Removes)
		n.seen[u.Source] = true
	}
	return c, true
}

func (n *naiveStore) list(source string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range n.pods[source] {
		out = append(out, p.DeepCopy())
	}
	sortPods(out)
	return out
}

// fuzzReader hands out bytes, then zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

// fuzzPod builds a small pod from a few bytes, over a small universe of names, UIDs and
// contents so that collisions, duplicates and no-op changes are frequent.
func fuzzPod(r *fuzzReader) *v1.Pod {
	shape := r.next()
	if shape%17 == 0 {
		return nil
	}
	uid := types.UID(fmt.Sprintf("uid-%d", shape%5))
	if shape%13 == 0 {
		uid = ""
	}
	p := newPod(fmt.Sprintf("n%d", r.next()%4), uid)
	if shape&0x20 != 0 {
		p.Namespace = "other"
	}
	content := r.next()
	switch content % 4 {
	case 1:
		p.Labels = nil
	case 2:
		p.Labels = map[string]string{}
	case 3:
		p.Labels = map[string]string{"v": fmt.Sprint(content % 3)}
	}
	if content&0x04 != 0 {
		p.Status.Phase = v1.PodFailed
	}
	if content&0x08 != 0 {
		p.DeletionTimestamp = ts(int64(content>>6) + 1)
		p.DeletionGracePeriodSeconds = i64(int64(content&0x10) * 2)
	}
	if content&0x20 != 0 {
		p.Annotations = map[string]string{"a": fmt.Sprint(content >> 7)}
		if content&0x40 != 0 {
			p.Annotations[ConfigSourceAnnotationKey] = "bogus"
			p.Annotations[ConfigMirrorAnnotationKey] = "m"
		}
	}
	if content&0x80 != 0 {
		p.Spec.Containers[0].Image = "busybox:2"
	}
	if v := r.next() % 3; v > 0 {
		p.ResourceVersion = fmt.Sprint(v)
	}
	return p
}

// FuzzMerge drives a Store and the naive model with the same random updates and checks
// that Merge never panics, never modifies its input, puts each pod in at most one
// category, and agrees with the model on the changes, the stored pods and SeenSource:
// by default against the kubelet's rules alone, and with TrustResourceVersions against
// them with the resourceVersion shortcut. Each runs with deep copies (the store must not
// notice scribbling over what it returned) and with shared pods (the store must never
// write to a pod it returned: every one keeps the contents it was returned with). An
// update may list the previous update's objects again (and one of them twice), as an
// informer does, which the pointer rule recognises without reading them.
func FuzzMerge(f *testing.F) {
	f.Add([]byte{0, 0, 2, 1, 1, 0, 2, 2, 8})
	f.Add([]byte{0, 0, 3, 1, 1, 0, 6, 1, 0, 1, 2, 4, 0, 0, 1, 1, 1, 8, 0, 0, 0})
	f.Add([]byte{1, 1, 2, 0x21, 0, 0xff, 0x22, 3, 0x0c, 4, 1, 1, 0x21, 0, 0, 5, 0, 1, 1, 0, 0})
	f.Add([]byte{0, 0, 4, 17, 0, 0, 13, 1, 1, 2, 2, 0x48, 7, 2, 0x28})
	// A returned pod changed by the next merge (shared pods: copy on write).
	f.Add([]byte("012\"20000112"))
	// The same objects listed again (the pointer rule), then with a new version of one
	// and one of them twice.
	f.Add([]byte{0, 0, 3, 1, 0, 1, 2, 1, 1, 0x40, 0, 0, 0xc0, 0, 1, 1, 0, 0x21})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, trust := range []bool{false, true} {
			for _, shared := range []bool{false, true} {
				t.Run(fmt.Sprintf("TrustResourceVersions=%v/shared=%v", trust, shared), func(t *testing.T) { fuzzMerge(t, data, trust, shared) })
			}
		}
	})
}

func fuzzMerge(t *testing.T, data []byte, trust, shared bool) {
	r := &fuzzReader{b: data}
	clk := clocktesting.NewFakePassiveClock(t0)
	s := NewStoreWithConfig(StoreConfig{Clock: clk, TrustResourceVersions: trust, SharedPods: shared})
	var handedOut keptPods // with shared pods: everything returned so far
	model := newNaiveStore(trust)
	sources := []string{"api", "file", ""}
	var last []*v1.Pod // the previous update's pods
	for step := 0; len(r.b) > 0 && step < 64; step++ {
		clk.SetTime(clk.Now().Add(time.Second))
		now := clk.Now().Format(SeenTimeLayout)
		opByte := r.next()
		u := PodUpdate{Op: Op(opByte % 8), Source: sources[r.next()%3]}
		// The same objects again, as an informer lists them (the pointer rule), and one
		// of them twice.
		if opByte&0x40 != 0 {
			u.Pods = append(u.Pods, last...)
		}
		if opByte&0x80 != 0 && len(last) > 0 {
			u.Pods = append(u.Pods, last[0])
		}
		for range r.next() % 6 {
			u.Pods = append(u.Pods, fuzzPod(r))
		}
		last = u.Pods
		var before []*v1.Pod
		for _, p := range u.Pods {
			before = append(before, p.DeepCopy())
		}
		got, _, err := s.Apply(u)
		want, ok := model.apply(u, now)
		if (err == nil) != ok {
			t.Fatalf("step %d (%v from %q): error %v, model valid %v", step, u.Op, u.Source, err, ok)
		}
		if diff := cmp.Diff(before, u.Pods); diff != "" {
			t.Fatalf("step %d: input modified (-before +after):\n%s", step, diff)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("step %d (%v from %q): changes (-model +store):\n%s", step, u.Op, u.Source, diff)
		}
		seen := map[types.UID]bool{}
		for _, cat := range [][]*v1.Pod{got.Adds, got.Updates, got.Deletes, got.Removes, got.Reconciles} {
			for _, p := range cat {
				if seen[p.UID] {
					t.Fatalf("step %d: %s in two categories", step, p.UID)
				}
				seen[p.UID] = true
			}
		}
		for _, src := range sources[:2] {
			stored := s.Pods(src)
			if diff := cmp.Diff(model.list(src), stored); diff != "" {
				t.Fatalf("step %d: source %q stored (-model +store):\n%s", step, src, diff)
			}
			if shared {
				handedOut.keep(stored...)
			}
			if s.SeenSource(src) != model.seen[src] {
				t.Fatalf("step %d: SeenSource(%q) = %v, model %v", step, src, s.SeenSource(src), model.seen[src])
			}
		}
		for _, cat := range [][]*v1.Pod{got.Adds, got.Updates, got.Deletes, got.Removes, got.Reconciles} {
			if shared {
				handedOut.keep(cat...)
				continue
			}
			// Scribble over what was returned: the store must not notice.
			for _, p := range cat {
				p.Spec.Containers[0].Image = "scribbled"
				p.Annotations["scribbled"] = "1"
			}
		}
		if msg := handedOut.changed(); msg != "" {
			t.Fatalf("step %d: a pod the store returned was modified: %s", step, msg)
		}
	}
}
