package config

import (
	"hash/maphash"
	"unsafe"

	v1 "k8s.io/api/core/v1"
)

// This file keeps a source's slots and the two shortcuts of a listing that let an
// unchanged informer pod cost no read beyond its header: the pointer rule (which slot an
// input pod is, without hashing its UID) and the name claims (the duplicate-name filter
// without hashing names already known).

// add stores e as a new slot and returns its index. The caller fills it with listed.
func (st *sourceState) add(e *entry) int {
	st.slots = append(st.slots, slot{e: e})
	j := len(st.slots) - 1
	st.byUID[e.pod.UID] = j
	return j
}

// listed records that ref, whose full name hashes to nameHash, was listed for slot j in
// the Apply numbered gen: its resourceVersion and identifying strings, and (with ptrs)
// its address in byPtr in place of the previous input's.
func (st *sourceState) listed(j int, ref *v1.Pod, nameHash, gen uint64, ptrs bool) {
	sl := &st.slots[j]
	sl.gen, sl.version = gen, ref.ResourceVersion
	sl.uid, sl.namespace, sl.name, sl.nameHash = ref.UID, ref.Namespace, ref.Name, nameHash
	if !ptrs {
		return
	}
	if p := uintptr(unsafe.Pointer(ref)); sl.ptr != p {
		st.forgetPtr(j)
		sl.ptr = p
	}
	st.byPtr[sl.ptr] = j
}

// forgetPtr drops the byPtr entry of slot j's address, unless another slot has it now
// (an address reused).
func (st *sourceState) forgetPtr(j int) {
	if i, ok := st.byPtr[st.slots[j].ptr]; ok && i == j {
		delete(st.byPtr, st.slots[j].ptr)
	}
}

// pointerBackoff is the number of Sets that skip the pointer rule after it found too few
// pods (see judgePointers).
const pointerBackoff = 8

// judgePointers decides after a trusted Set whether the next ones use the pointer rule.
// It pays when inputs repeat, as an informer's objects do, and costs a lookup and two map
// writes per pod when every listing brings new objects. So a Set that used it, after a Set
// that kept byPtr, and found fewer than half of its known pods (ptrs, hits, known) turns it
// off for pointerBackoff Sets (an informer's relist, which brings new objects once, costs
// those Sets the rule); then one Set keeps byPtr again and the next is judged.
func (st *sourceState) judgePointers(ptrs bool, hits, known int) {
	switch {
	case !ptrs:
		st.ptrsOff--
	case st.ptrsKept && 2*hits < known:
		st.ptrsOff = pointerBackoff
		clear(st.byPtr)
	}
	st.ptrsKept = ptrs && st.ptrsOff == 0
}

// removeAt drops slot j from the source, moving the last slot into its place.
func (st *sourceState) removeAt(j int) {
	delete(st.byUID, st.slots[j].uid)
	st.forgetPtr(j)
	last := len(st.slots) - 1
	if j != last {
		moved := st.slots[last]
		st.slots[j] = moved
		st.byUID[moved.uid] = j
		if i, ok := st.byPtr[moved.ptr]; ok && i == last {
			st.byPtr[moved.ptr] = j
		}
	}
	st.slots[last] = slot{} // no references kept past the length
	st.slots = st.slots[:last]
}

// unchangedListing applies the pointer rule to ref, an input pod of a trusted listing: it
// returns the index of the slot whose input a Set last listed at ref's address, and true if
// ref carries the very strings of the slot's last listed input, by whatever op (the string
// data and length of its UID, namespace, name and non-empty resourceVersion). The slot
// keeps those strings alive, so their data cannot have been reused: equal data and length
// mean equal values, so ref is the slot's pod with the resourceVersion last listed, which
// the resourceVersion shortcut calls unchanged, and its full name hashes to the slot's
// nameHash. The address only finds the slot; a different object at a reused address, or one
// changed in place, fails the comparison (or passes it only when it carries the same
// values) and is looked up by UID. Only ref's header is read: the strings' data is not.
func (st *sourceState) unchangedListing(ref *v1.Pod) (int, bool) {
	j, ok := st.byPtr[uintptr(unsafe.Pointer(ref))]
	if !ok {
		return 0, false
	}
	sl := &st.slots[j]
	return j, ref.ResourceVersion != "" && sameString(ref.ResourceVersion, sl.version) &&
		sameString(string(ref.UID), string(sl.uid)) &&
		sameString(ref.Name, sl.name) && sameString(ref.Namespace, sl.namespace)
}

// sameString reports whether a and b are the same bytes in memory: same data pointer and
// length (so equal; equal strings at different addresses are not the same).
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// nameClaims is the duplicate-name filter of one update: an open-addressing set of the
// full names claimed so far, each entry the hash of a name and the index of the input pod
// that claimed it. Hashes of the names of known pods come from their slots, so claiming an
// unchanged pod's name reads no string; two names with the same hash are told apart by
// comparing the pods' names, so the filter is exact.
type nameClaims struct {
	seed maphash.Seed
	// table has a power-of-two length at least twice the update's pods, so it is at most
	// half full and every probe ends.
	table []nameClaim
}

// nameClaim is one claimed name: its hash and the input index + 1 (0: an empty entry).
type nameClaim struct {
	hash  uint64
	index int
}

// hash returns the hash of p's full name.
func (c *nameClaims) hash(p *v1.Pod) uint64 {
	return maphash.String(c.seed, p.Name) ^ maphash.String(c.seed, p.Namespace)*0x9e3779b97f4a7c15
}

// reset empties the set, sized for an update of n pods.
func (c *nameClaims) reset(n int) {
	size := 8
	for size < 2*n {
		size *= 2
	}
	if cap(c.table) < size {
		c.table = make([]nameClaim, size)
		return
	}
	c.table = c.table[:size]
	clear(c.table)
}

// claim records the full name of pods[i], which hashes to h, and reports whether an
// earlier pod of pods has claimed it already.
func (c *nameClaims) claim(pods []*v1.Pod, i int, h uint64) (taken bool) {
	mask := uint64(len(c.table) - 1)
	for k := h & mask; ; k = (k + 1) & mask {
		e := &c.table[k]
		if e.index == 0 {
			*e = nameClaim{hash: h, index: i + 1}
			return false
		}
		if e.hash == h {
			if p := pods[e.index-1]; p.Name == pods[i].Name && p.Namespace == pods[i].Namespace {
				return true
			}
		}
	}
}

// warmHeaders reads the header of every pod (the lengths of its name and resourceVersion)
// and returns a sum of what it read. Input pods are mostly out of the cache; in this loop
// the reads do not depend on each other, so the processor has many of them under way at
// once, and the lookups of the pointer rule, which take turns with them otherwise, find
// the headers in the cache.
func warmHeaders(pods []*v1.Pod) (sum int) {
	for _, p := range pods {
		if p != nil {
			sum += len(p.Name) + len(p.ResourceVersion)
		}
	}
	return sum
}
