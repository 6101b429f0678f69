package config

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Errors reported for dropped pods (in Drop.Err) and for invalid updates (from Apply and
// the Mux). Check them with errors.Is.
var (
	// ErrNilPod: a nil entry in PodUpdate.Pods.
	ErrNilPod = errors.New("config: nil pod")
	// ErrEmptyUID: a pod without metadata.uid.
	ErrEmptyUID = errors.New("config: pod without UID")
	// ErrDuplicateName: a pod whose full name (name_namespace) an earlier pod of the same
	// update already has. The first one wins, as in the kubelet.
	ErrDuplicateName = errors.New("config: duplicate pod full name in one update")
	// ErrDuplicateUID: a pod whose UID an earlier pod of the same update already has. The
	// first one wins (the kubelet would process both).
	ErrDuplicateUID = errors.New("config: duplicate pod UID in one update")
	// ErrUnknownOp: a PodUpdate whose Op is none of the constants.
	ErrUnknownOp = errors.New("config: unknown op")
	// ErrInvalidOp: a PodUpdate whose Op exists but is not valid as input (Reconcile).
	ErrInvalidOp = errors.New("config: op not valid as input")
	// ErrEmptySource: a PodUpdate without a Source.
	ErrEmptySource = errors.New("config: update without source")
)

// Drop is one pod of an update that Apply left out, and why.
type Drop struct {
	// Source is the update's source.
	Source string
	// Index is the pod's position in PodUpdate.Pods.
	Index int
	// Pod is the dropped input itself (not a copy; nil for ErrNilPod).
	Pod *v1.Pod
	// Err wraps ErrNilPod, ErrEmptyUID, ErrDuplicateName or ErrDuplicateUID.
	Err error
}

// Store holds the pods of every source, as the kubelet's podStorage does, and classifies
// each update against them.
//
// A Store is not safe for concurrent use; Mux wraps one with a lock. Its only notion of
// time is the clock that stamps the first-seen annotation.
//
// Memory contract: pods passed in are only read, and the store keeps references into them
// (spec, labels, status and so on are shared, not copied), so the caller must not modify a
// pod after passing it, as with an informer's objects. By default every pod the store
// returns is a deep copy sharing no memory with the store or the inputs, so a receiver may
// modify it freely; with StoreConfig.SharedPods it is the store's own object, read-only
// (see there). Pods are returned only when they changed; an unchanged pod costs a
// comparison and no allocation.
//
// By default (NewStore, the zero StoreConfig) every pod of a known UID is compared field
// by field, as the kubelet's merge does, whatever its resourceVersion. With
// StoreConfig.TrustResourceVersions, an "api" pod with an unchanged resourceVersion costs
// not even the comparison, and an unchanged "api" pod listed as the same object again not
// even a lookup by UID (see there).
type Store struct {
	clock clock.PassiveClock
	// trustVersions enables the resourceVersion shortcut for APISource (see StoreConfig).
	trustVersions bool
	// shared: returned pods are the stored objects, never written again (see StoreConfig).
	shared  bool
	sources map[string]*sourceState
	// gen numbers Apply calls; an entry touched by the current call carries its number.
	gen uint64
	// claims is the duplicate-name filter, reused by every Apply.
	claims nameClaims
	// tmp is scratch space for comparisons.
	tmp scratch
	// warmth sums what warmHeaders read, so that the reads are not compiled away.
	warmth int
}

// sourceState is one source's pods.
type sourceState struct {
	// slots are the stored pods, in no particular order. Invariant: no two share a UID;
	// every stored pod carries the config.source and config.seen annotations.
	slots []slot
	// byUID maps every stored pod's UID to its index in slots.
	byUID map[types.UID]int
	// byPtr maps the address of an input pod to the index of the slot a Set last listed
	// it for: a hint for the pointer rule (see unchangedListing), kept for APISource when the
	// store trusts resourceVersions and ptrsOff is 0, nil or empty otherwise. Invariant:
	// byPtr[p] == i only if slots[i].ptr == p.
	byPtr map[uintptr]int
	// ptrsOff is the number of Sets left that neither use nor keep byPtr, and ptrsKept
	// tells that the last Set kept it (see judgePointers).
	ptrsOff  int
	ptrsKept bool
	// seen is true once a Set of the source has been merged.
	seen bool
}

// slot is a stored pod: the entry, and what every listing of the pod reads and writes,
// kept in the source's slice so that a pod listed unchanged costs the slot's memory and not
// the entry's (the difference shows at thousands of pods).
type slot struct {
	e *entry
	// gen is the Store.gen of the last Apply that listed the pod.
	gen uint64
	// version is the resourceVersion of the input pod last listed (not the stored pod's,
	// which keeps the first one, as in the kubelet).
	version string
	// uid, namespace and name are the input pod last listed's, and nameHash is
	// nameClaims.hash of its full name. The slot keeps the strings alive, so an input
	// whose strings have the same data and length carries the same values (see
	// unchangedListing).
	uid             types.UID
	namespace, name string
	nameHash        uint64
	// ptr is the address of the input pod a Set last listed, if byPtr is kept (0
	// otherwise); the strings above may be those of a later Add, Update or Delete.
	// It is not a reference: the store does not keep its inputs alive.
	ptr uintptr
}

// entry is one stored pod.
type entry struct {
	// pod is the store's object, held inline (one allocation per stored pod). The Pod
	// struct and its Annotations map belong to the store; everything else it references
	// may be shared with an input pod and is never written through. With shared pods it
	// is handed out and never written again: a change replaces the whole entry.
	pod v1.Pod
	// annFrom is the annotation map of the input pod that pod's annotations were last
	// built from or found equal to (apart from local keys). Inputs are not modified after
	// being passed, so an input carrying this very map has equal annotations.
	annFrom map[string]string
}

// sameMap reports whether a and b are the same non-nil map.
func sameMap(a, b map[string]string) bool {
	return a != nil && b != nil && *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// APISource is the API server's source name, the kubelet's "api": the one source whose
// resourceVersions a Store may trust (see StoreConfig.TrustResourceVersions).
const APISource = "api"

// StoreConfig configures a Store made by NewStoreWithConfig. The zero value gives
// NewStore's store, which classifies exactly as the kubelet.
type StoreConfig struct {
	// Clock stamps first-seen times. nil means the real clock.
	Clock clock.PassiveClock
	// TrustResourceVersions turns on the resourceVersion shortcut and the pointer rule for
	// APISource, for a source that is the API server. Without it (the zero value, and
	// NewStore) every listed pod of a known UID is compared field by field, as the
	// kubelet's merge does.
	//
	// The shortcut: the API server changes a pod's resourceVersion on every write, so a
	// pod from APISource whose resourceVersion is non-empty and equal to that of the
	// version of the same UID last listed is unchanged, at the cost of a string
	// comparison instead of a walk through spec, labels, annotations and status. Pods of
	// other sources, and pods with an empty resourceVersion, are always compared. The
	// trade: a source that sends APISource pods with an unchanged resourceVersion but
	// changed contents (a test fixture, say) gets nothing for those changes: no Update,
	// Delete or Reconcile. Turn it on only for the API server's pods.
	//
	// The pointer rule makes the shortcut cheaper for an informer, which lists an unchanged
	// pod as the same object every time and never modifies it: an APISource pod of a Set at
	// the address of the one a Set last listed for a UID that carries the very same UID, name,
	// namespace and resourceVersion strings as its last listing (the same memory, not only
	// equal contents) is that pod with that resourceVersion, unchanged, found without hashing
	// its UID or name and without reading more than its header. It trusts exactly what the
	// shortcut trusts: a pod modified in place after being passed (which the memory contract
	// forbids) is noticed when its resourceVersion, UID, name or namespace changed, and other
	// changes under the same resourceVersion are not, as with the shortcut alone. The store
	// keeps the addresses as numbers, so it keeps no input alive; a source whose Sets bring
	// new objects every time (fewer than half of its pods found by the rule) does without the
	// rule for the next 8 Sets. Add, Update and Delete, a watch's new objects, never use it.
	TrustResourceVersions bool
	// SharedPods makes the store return its own pods instead of deep copies: every pod in
	// Changes and from Pods is the stored object, shared with the store, with every
	// receiver of the same pod and (spec, labels, status and the other fields the store
	// keeps references to) with the input it came from, so it must be treated as
	// read-only, as the kubelet treats its pods. The store never writes to a pod it has
	// returned: a change of a stored pod makes a new Pod struct (copy on write), which
	// costs one shallow copy (and a new annotation map when annotations changed) instead
	// of a deep copy, and the pods returned earlier keep the old version.
	SharedPods bool
}

// NewStore returns an empty store that stamps first-seen times from the real clock and
// compares every pod as the kubelet's merge does (no resourceVersion shortcut; see
// StoreConfig.TrustResourceVersions).
func NewStore() *Store { return NewStoreWithConfig(StoreConfig{}) }

// NewStoreWithClock returns an empty store that stamps first-seen times from c (the real
// clock if c is nil) and compares every pod as NewStore's does.
func NewStoreWithClock(c clock.PassiveClock) *Store {
	return NewStoreWithConfig(StoreConfig{Clock: c})
}

// NewStoreWithConfig returns an empty store configured by cfg.
func NewStoreWithConfig(cfg StoreConfig) *Store {
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Store{clock: c, trustVersions: cfg.TrustResourceVersions, shared: cfg.SharedPods, sources: map[string]*sourceState{},
		claims: nameClaims{seed: maphash.MakeSeed()}}
}

// SeenSource reports whether a Set of source has been merged.
func (s *Store) SeenSource(source string) bool {
	st := s.sources[source]
	return st != nil && st.seen
}

// Merge is Apply without the report: dropped pods and invalid updates (which change
// nothing) are left out of the result.
func (s *Store) Merge(u PodUpdate) Changes {
	c, _, _ := s.Apply(u)
	return c
}

// Apply folds one update of one source into the store and returns what changed, the pods
// it left out, and an error (wrapping ErrUnknownOp, ErrInvalidOp or ErrEmptySource) if the
// update as a whole is invalid, in which case nothing changes.
//
//   - Set: the listed pods become the source's pods. Pods new to the source are Adds
//     (stamped with the source and the first-seen time), known pods are classified by
//     CheckAndUpdatePod into Updates, Deletes or Reconciles (or nothing; with
//     StoreConfig.TrustResourceVersions, an APISource pod with the non-empty
//     resourceVersion last listed is nothing), and stored pods
//     not listed are Removes. The source counts as seen afterwards.
//   - Add, Update, Delete: the listed pods are upserted and classified like Set's; other
//     pods stay. The op itself does not matter (an Update of an unknown pod is an Add).
//   - Remove: the listed UIDs are dropped and returned as Removes, in input order;
//     unknown UIDs are ignored. Content does not matter.
//   - Reconcile, or any other value: invalid.
//
// Before anything else, nil pods and pods without a UID are dropped, and (except for
// Remove) so is every pod whose full name or UID an earlier pod of the update has. A
// dropped pod counts as not listed, so a Set that drops a stored pod's only copy removes
// it.
func (s *Store) Apply(u PodUpdate) (Changes, []Drop, error) {
	switch {
	case !u.Op.valid():
		return Changes{}, nil, fmt.Errorf("%w: %d from source %q", ErrUnknownOp, int(u.Op), u.Source)
	case u.Op == Reconcile:
		return Changes{}, nil, fmt.Errorf("%w: %v from source %q", ErrInvalidOp, u.Op, u.Source)
	case u.Source == "":
		return Changes{}, nil, fmt.Errorf("%w (op %v)", ErrEmptySource, u.Op)
	}
	st := s.sources[u.Source]
	if st == nil {
		// Sized for the first update, which is usually the source's whole list.
		st = &sourceState{slots: make([]slot, 0, len(u.Pods)), byUID: make(map[types.UID]int, len(u.Pods))}
		s.sources[u.Source] = st
	}
	s.gen++
	if u.Op == Remove {
		return s.remove(st, u)
	}
	return s.upsert(st, u)
}

// upsert handles Set, Add, Update and Delete.
func (s *Store) upsert(st *sourceState, u PodUpdate) (Changes, []Drop, error) {
	var (
		c     Changes
		drops []Drop
		seen  string // the first-seen stamp, formatted once per call when needed
		// trusted: an unchanged non-empty resourceVersion means an unchanged pod.
		trusted = s.trustVersions && u.Source == APISource
	)
	// ptrs: the pointer rule is used and byPtr kept; hits counts the pods it found, and
	// others the other listed pods stored before. Only a Set uses it: the pods of Add,
	// Update and Delete come from a watch, a new object every time, which the rule
	// would never find and whose addresses would cost a lookup and two map writes per pod.
	// The simple twin (build tag podlife_simple) never uses it.
	ptrs := fastPaths && trusted && st.ptrsOff == 0 && u.Op == Set
	hits, others := 0, 0
	if ptrs && st.byPtr == nil {
		st.byPtr = make(map[uintptr]int, len(u.Pods))
	}
	s.claims.reset(len(u.Pods))
	if ptrs {
		s.warmth += warmHeaders(u.Pods)
	}
	allNew := len(st.slots) == 0 // every listed pod is an Add: size Adds once
	for i, ref := range u.Pods {
		if ptrs {
			if j, ok := st.unchangedListing(ref); ok {
				sl := &st.slots[j]
				// A slot listed already by this update was listed by this very object
				// (byPtr holds the address of the last listing), so the claim of its
				// name, not its UID, tells the duplicate.
				if s.claims.claim(u.Pods, i, sl.nameHash) {
					drops = append(drops, duplicateName(u.Source, i, ref))
					continue
				}
				sl.gen = s.gen
				hits++
				continue
			}
		}
		if err := checkPod(ref); err != nil {
			drops = append(drops, Drop{Source: u.Source, Index: i, Pod: ref, Err: err})
			continue
		}
		h := s.claims.hash(ref)
		if s.claims.claim(u.Pods, i, h) {
			drops = append(drops, duplicateName(u.Source, i, ref))
			continue
		}
		j, known := st.byUID[ref.UID]
		if known && st.slots[j].gen == s.gen {
			drops = append(drops, duplicateUID(u.Source, i, ref))
			continue
		}
		if !known {
			if seen == "" {
				seen = s.clock.Now().Format(SeenTimeLayout)
			}
			e := &entry{pod: *ref, annFrom: ref.Annotations}
			stamp(&e.pod, u.Source, seen)
			j = st.add(e)
			st.listed(j, ref, h, s.gen, ptrs)
			if allNew && c.Adds == nil {
				c.Adds = make([]*v1.Pod, 0, len(u.Pods)-i)
			}
			c.Adds = append(c.Adds, s.out(e))
			continue
		}
		others++
		sl := &st.slots[j]
		unchanged := trusted && ref.ResourceVersion != "" && ref.ResourceVersion == sl.version
		st.listed(j, ref, h, s.gen, ptrs)
		if unchanged {
			continue
		}
		e := sl.e
		op, changed := classify(&e.pod, ref, &s.tmp, sameMap(e.annFrom, ref.Annotations))
		e.annFrom = ref.Annotations
		if !changed {
			continue
		}
		if s.shared {
			// Copy on write: the stored pod may be held by receivers.
			cp := *e
			e = &cp
			sl.e = e
		}
		take(&e.pod, ref, op)
		out := s.out(e)
		switch op {
		case Update:
			c.Updates = append(c.Updates, out)
		case Delete:
			c.Deletes = append(c.Deletes, out)
		default:
			c.Reconciles = append(c.Reconciles, out)
		}
	}
	if u.Op == Set {
		// Backwards, so that removeAt only moves slots already looked at.
		for j := len(st.slots) - 1; j >= 0; j-- {
			if sl := &st.slots[j]; sl.gen != s.gen {
				c.Removes = append(c.Removes, s.out(sl.e))
				st.removeAt(j)
			}
		}
		sortPods(c.Removes)
		st.seen = true
		if fastPaths && trusted {
			st.judgePointers(ptrs, hits, hits+others)
		}
	}
	return c, drops, nil
}

// duplicateName is the Drop of pods[index], whose full name an earlier pod of the update has.
func duplicateName(source string, index int, ref *v1.Pod) Drop {
	return Drop{Source: source, Index: index, Pod: ref,
		Err: fmt.Errorf("%w: %s_%s (uid %s)", ErrDuplicateName, ref.Name, ref.Namespace, ref.UID)}
}

// duplicateUID is the Drop of pods[index], whose UID an earlier pod of the update has.
func duplicateUID(source string, index int, ref *v1.Pod) Drop {
	return Drop{Source: source, Index: index, Pod: ref,
		Err: fmt.Errorf("%w: %s (%s_%s)", ErrDuplicateUID, ref.UID, ref.Name, ref.Namespace)}
}

// remove handles Remove.
func (s *Store) remove(st *sourceState, u PodUpdate) (Changes, []Drop, error) {
	var (
		c     Changes
		drops []Drop
	)
	for i, ref := range u.Pods {
		if err := checkPod(ref); err != nil {
			drops = append(drops, Drop{Source: u.Source, Index: i, Pod: ref, Err: err})
			continue
		}
		if j, ok := st.byUID[ref.UID]; ok {
			c.Removes = append(c.Removes, s.out(st.slots[j].e))
			st.removeAt(j)
		}
	}
	return c, drops, nil
}

// out returns the pod to hand out for e: the stored object itself with shared pods, else
// a deep copy.
func (s *Store) out(e *entry) *v1.Pod {
	if s.shared {
		return &e.pod
	}
	return e.pod.DeepCopy()
}

// checkPod returns why a pod cannot be stored at all, or nil.
func checkPod(p *v1.Pod) error {
	if p == nil {
		return ErrNilPod
	}
	if p.UID == "" {
		return fmt.Errorf("%w: %s_%s", ErrEmptyUID, p.Name, p.Namespace)
	}
	return nil
}

// stamp makes p, a shallow copy of a pod new to a source, the store's object: it gets an
// annotation map of its own, with the source and the first-seen time added.
func stamp(p *v1.Pod, source, seen string) {
	ann := make(map[string]string, len(p.Annotations)+2)
	maps.Copy(ann, p.Annotations)
	ann[ConfigSourceAnnotationKey] = source
	ann[ConfigFirstSeenAnnotationKey] = seen
	p.Annotations = ann
}

// sortPods orders pods by namespace, name and UID.
func sortPods(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
}

// Pods returns the pods stored for source (deep copies, or the stored objects with
// StoreConfig.SharedPods), sorted by namespace, name and UID (nil if there are none).
func (s *Store) Pods(source string) []*v1.Pod {
	st := s.sources[source]
	if st == nil || len(st.slots) == 0 {
		return nil
	}
	out := make([]*v1.Pod, 0, len(st.slots))
	for _, sl := range st.slots {
		out = append(out, s.out(sl.e))
	}
	sortPods(out)
	return out
}
