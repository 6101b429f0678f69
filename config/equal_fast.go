//go:build !podlife_simple

package config

import (
	"reflect"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file holds the fast paths of the merge: an exact, allocation-free stand-in for
// reflect.DeepEqual on the parts of a pod that CheckAndUpdatePod compares, and
// fastPaths, which turns on the pointer rule (listing.go). Its simple twin,
// equal_simple.go, is built instead with the build tag podlife_simple (see the package
// documentation).

// fastPaths: the pointer rule (unchangedListing) and its cache-warming loop
// (warmHeaders) are used; false in the simple twin.
const fastPaths = true

//
// The kubelet compares pods with reflect.DeepEqual on struct values, which boxes the spec
// and the status on the heap for every pod of every update and grows a "visited" map as it
// goes. An equalFunc is compiled once per type from reflect.Type into a tree of closures
// that walk two values through unsafe pointers; struct fields of string, bool, integer,
// pointer and slice kinds are compared inline, and a struct whose identical bytes imply
// deep equality is first compared byte for byte (a pod's spec copied by value, a
// metav1.Time). It gives exactly reflect.DeepEqual's answer for acyclic values (which
// pods are: no type of the pod API is recursive):
//
//   - nil and empty slices and maps differ; a nil and a non-nil pointer differ;
//   - pointers, slices and maps that share their memory are equal without looking further
//     (reflect.DeepEqual takes the same short cut);
//   - floats compare with == (so NaN differs from itself unless shared);
//   - unexported fields (resource.Quantity's, time.Time's) are compared like exported ones;
//   - maps other than string-to-string, interfaces, funcs and channels are handed to
//     reflect.DeepEqual itself, through pointers so that nothing is boxed.
//
// The compiled functions are built once, on first use, from constant type information and
// never change; they hold no state. equal_test.go checks them against
// reflect.DeepEqual on random mutations of pods.

// equalFunc reports whether the two values of one type at a and b are deeply equal. tmp
// is scratch space for map values (nil: allocate when needed); a caller that is not
// concurrent, like a Store, passes its own to avoid the allocation.
type equalFunc func(a, b unsafe.Pointer, tmp *scratch) bool

// scratch is where map values are copied to be compared.
type scratch struct {
	q [2]resource.Quantity
}

// podEqualFuncs are the compiled comparators of the parts of a pod that are compared.
type podEqualFuncs struct {
	spec, status, timePtr equalFunc
}

// podEqual compiles the comparators on first use (about half a millisecond) rather than at
// program start; the result never changes.
var podEqual = sync.OnceValue(func() *podEqualFuncs {
	return &podEqualFuncs{
		spec:    compileEqual(reflect.TypeFor[v1.PodSpec]()),
		status:  compileEqual(reflect.TypeFor[v1.PodStatus]()),
		timePtr: compileEqual(reflect.TypeFor[*metav1.Time]()),
	}
})

// specEqual reports whether reflect.DeepEqual(a.Spec, b.Spec) holds.
func specEqual(a, b *v1.Pod, tmp *scratch) bool {
	return podEqual().spec(unsafe.Pointer(&a.Spec), unsafe.Pointer(&b.Spec), tmp)
}

// statusEqual reports whether reflect.DeepEqual(a.Status, b.Status) holds.
func statusEqual(a, b *v1.Pod, tmp *scratch) bool {
	return podEqual().status(unsafe.Pointer(&a.Status), unsafe.Pointer(&b.Status), tmp)
}

// deletionTimestampEqual reports whether reflect.DeepEqual(a.DeletionTimestamp,
// b.DeletionTimestamp) holds.
func deletionTimestampEqual(a, b *v1.Pod) bool {
	return podEqual().timePtr(unsafe.Pointer(&a.DeletionTimestamp), unsafe.Pointer(&b.DeletionTimestamp), nil)
}

// int64PtrEqual is reflect.DeepEqual on two *int64.
func int64PtrEqual(a, b *int64) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return *a == *b
}

// stringMapEqual is reflect.DeepEqual on two map[string]string.
func stringMapEqual(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	if len(a) == 0 || *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b)) {
		return true
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || va != vb {
			return false
		}
	}
	return true
}

// compileEqual builds the equalFunc of t. Recursive types are supported through a cell
// filled in once the type's function is built.
func compileEqual(t reflect.Type) equalFunc {
	return (&equalCompiler{done: map[reflect.Type]*equalFunc{}, roots: map[reflect.Type]bool{t: true}}).compile(t)
}

type equalCompiler struct {
	done  map[reflect.Type]*equalFunc
	roots map[reflect.Type]bool
}

func (c *equalCompiler) compile(t reflect.Type) equalFunc {
	if cell, ok := c.done[t]; ok {
		if *cell != nil {
			return *cell
		}
		// t is being compiled further up: a recursive type. Go through the cell, which
		// is filled in before anything is compared.
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return (*cell)(a, b, tmp) }
	}
	cell := new(equalFunc)
	c.done[t] = cell
	f := c.build(t)
	*cell = f
	return f
}

func (c *equalCompiler) build(t reflect.Type) equalFunc {
	switch t.Kind() {
	case reflect.Bool:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*bool)(a) == *(*bool)(b) }
	case reflect.Int:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*int)(a) == *(*int)(b) }
	case reflect.Int8:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*int8)(a) == *(*int8)(b) }
	case reflect.Int16:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*int16)(a) == *(*int16)(b) }
	case reflect.Int32:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*int32)(a) == *(*int32)(b) }
	case reflect.Int64:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*int64)(a) == *(*int64)(b) }
	case reflect.Uint:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uint)(a) == *(*uint)(b) }
	case reflect.Uint8:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uint8)(a) == *(*uint8)(b) }
	case reflect.Uint16:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uint16)(a) == *(*uint16)(b) }
	case reflect.Uint32:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uint32)(a) == *(*uint32)(b) }
	case reflect.Uint64:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uint64)(a) == *(*uint64)(b) }
	case reflect.Uintptr:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*uintptr)(a) == *(*uintptr)(b) }
	case reflect.Float32:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*float32)(a) == *(*float32)(b) }
	case reflect.Float64:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*float64)(a) == *(*float64)(b) }
	case reflect.Complex64:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*complex64)(a) == *(*complex64)(b) }
	case reflect.Complex128:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*complex128)(a) == *(*complex128)(b) }
	case reflect.String:
		return func(a, b unsafe.Pointer, tmp *scratch) bool { return *(*string)(a) == *(*string)(b) }
	case reflect.Pointer:
		elem := c.compile(t.Elem())
		return func(a, b unsafe.Pointer, tmp *scratch) bool {
			pa, pb := *(*unsafe.Pointer)(a), *(*unsafe.Pointer)(b)
			if pa == pb {
				return true
			}
			if pa == nil || pb == nil {
				return false
			}
			return elem(pa, pb, tmp)
		}
	case reflect.Slice:
		return c.buildSlice(t)
	case reflect.Array:
		elem, size, n := c.compile(t.Elem()), t.Elem().Size(), uintptr(t.Len())
		return func(a, b unsafe.Pointer, tmp *scratch) bool {
			for i := uintptr(0); i < n; i++ {
				if !elem(unsafe.Add(a, i*size), unsafe.Add(b, i*size), tmp) {
					return false
				}
			}
			return true
		}
	case reflect.Struct:
		return c.buildStruct(t)
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			// Any map whose key and value are string kinds has map[string]string's
			// layout and hashing.
			return func(a, b unsafe.Pointer, tmp *scratch) bool {
				return stringMapEqual(*(*map[string]string)(a), *(*map[string]string)(b))
			}
		}
		if t.Key().Kind() == reflect.String && t.Elem() == reflect.TypeFor[resource.Quantity]() {
			// v1.ResourceList and its kin.
			return quantityMapEqual(c.compile(t.Elem()))
		}
	}
	// Other maps, interfaces, funcs, channels and unsafe pointers: reflect.DeepEqual
	// itself, given pointers to the values so that nothing is copied or boxed.
	return func(a, b unsafe.Pointer, tmp *scratch) bool {
		return reflect.DeepEqual(reflect.NewAt(t, a).Interface(), reflect.NewAt(t, b).Interface())
	}
}

// quantityMapEqual returns reflect.DeepEqual on maps from a string kind to
// resource.Quantity, given the compiled comparator of Quantity.
func quantityMapEqual(eq equalFunc) equalFunc {
	return func(a, b unsafe.Pointer, tmp *scratch) bool {
		ma, mb := *(*map[string]resource.Quantity)(a), *(*map[string]resource.Quantity)(b)
		if (ma == nil) != (mb == nil) || len(ma) != len(mb) {
			return false
		}
		if len(ma) == 0 || *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b) {
			return true
		}
		for k, va := range ma {
			vb, ok := mb[k]
			if !ok || !quantityEqualVia(eq, va, vb, tmp) {
				return false
			}
		}
		return true
	}
}

// quantityEqualVia compares two quantities copied out of maps. The copies go to tmp (a
// fresh one if tmp is nil) rather than to the stack, since taking their addresses for a
// call through a function value would move them to the heap on every call.
func quantityEqualVia(eq equalFunc, va, vb resource.Quantity, tmp *scratch) bool {
	if tmp == nil {
		tmp = new(scratch)
	}
	tmp.q[0], tmp.q[1] = va, vb
	ok := eq(unsafe.Pointer(&tmp.q[0]), unsafe.Pointer(&tmp.q[1]), nil)
	tmp.q = [2]resource.Quantity{}
	return ok
}

// bitwiseImpliesDeepEqual reports whether two values of t with identical bytes are
// always deeply equal. That holds unless t holds, inline (not behind a pointer, slice or
// map, whose identical addresses DeepEqual accepts without looking), a float or complex
// number (NaN is not equal to itself), a func (non-nil funcs are never deeply equal) or an
// interface (whose dynamic value may be a NaN).
func bitwiseImpliesDeepEqual(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Func, reflect.Interface:
		return false
	case reflect.Array:
		return t.Len() == 0 || bitwiseImpliesDeepEqual(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !bitwiseImpliesDeepEqual(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// hasReferences reports whether t holds, inline, a pointer, slice or map: something a
// deep copy gives a new address. A time's *time.Location does not count: copies share it.
func hasReferences(t reflect.Type) bool {
	if t == reflect.TypeFor[*time.Location]() {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.UnsafePointer, reflect.Chan:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasReferences(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasReferences(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

func (c *equalCompiler) buildSlice(t reflect.Type) equalFunc {
	elem, size := c.compile(t.Elem()), t.Elem().Size()
	return func(a, b unsafe.Pointer, tmp *scratch) bool {
		sa, sb := (*sliceHeader)(a), (*sliceHeader)(b)
		if (sa.data == nil) != (sb.data == nil) || sa.len != sb.len {
			return false
		}
		if sa.data == sb.data {
			return true
		}
		for i := 0; i < sa.len; i++ {
			off := uintptr(i) * size
			if !elem(unsafe.Add(sa.data, off), unsafe.Add(sb.data, off), tmp) {
				return false
			}
		}
		return true
	}
}

// How a struct field is compared: the common cases inline, the rest through eq.
const (
	fieldCall   uint8 = iota // eq(a, b, tmp)
	fieldString              // == on strings
	fieldBits8               // == on 1, 2, 4 or 8 bytes of bools or integers (never floats)
	fieldBits16
	fieldBits32
	fieldBits64
	fieldPointer // equal pointers short-cut, one nil differs, else eq on the pointees
	fieldSlice   // nil, length and shared-array short cuts, else eq on the slice
)

// structField is one field of a compiled struct.
type structField struct {
	off  uintptr
	how  uint8
	elem equalFunc // the pointee's for fieldPointer, the field's own for fieldSlice and fieldCall
}

func (c *equalCompiler) buildStruct(t reflect.Type) equalFunc {
	fields := make([]structField, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Size() == 0 {
			continue // zero-size fields are always equal
		}
		sf := structField{off: f.Offset}
		switch k := f.Type.Kind(); {
		case k == reflect.String:
			sf.how = fieldString
		case k == reflect.Bool || (k >= reflect.Int && k <= reflect.Uintptr):
			sf.how = map[uintptr]uint8{1: fieldBits8, 2: fieldBits16, 4: fieldBits32, 8: fieldBits64}[f.Type.Size()]
		case k == reflect.Pointer:
			sf.how, sf.elem = fieldPointer, c.compile(f.Type.Elem())
		case k == reflect.Slice:
			sf.how, sf.elem = fieldSlice, c.compile(f.Type)
		default:
			sf.how, sf.elem = fieldCall, c.compile(f.Type)
		}
		fields = append(fields, sf)
	}
	// A first comparison of the raw bytes pays off where it usually succeeds: for the
	// roots (a pod's spec or status copied by value still shares everything) and for
	// structs without references (metav1.Time, most conditions), which deep copies
	// reproduce byte for byte. Elsewhere a deep copy's fresh addresses make it fail.
	size := int(t.Size())
	bitwise := bitwiseImpliesDeepEqual(t) && (c.roots[t] || !hasReferences(t))
	return func(a, b unsafe.Pointer, tmp *scratch) bool {
		if bitwise && unsafe.String((*byte)(a), size) == unsafe.String((*byte)(b), size) {
			return true
		}
		for i := range fields {
			f := &fields[i]
			pa, pb := unsafe.Add(a, f.off), unsafe.Add(b, f.off)
			switch f.how {
			case fieldString:
				if *(*string)(pa) != *(*string)(pb) {
					return false
				}
			case fieldBits8:
				if *(*uint8)(pa) != *(*uint8)(pb) {
					return false
				}
			case fieldBits16:
				if *(*uint16)(pa) != *(*uint16)(pb) {
					return false
				}
			case fieldBits32:
				if *(*uint32)(pa) != *(*uint32)(pb) {
					return false
				}
			case fieldBits64:
				if *(*uint64)(pa) != *(*uint64)(pb) {
					return false
				}
			case fieldPointer:
				qa, qb := *(*unsafe.Pointer)(pa), *(*unsafe.Pointer)(pb)
				if qa == qb {
					continue
				}
				if qa == nil || qb == nil || !f.elem(qa, qb, tmp) {
					return false
				}
			case fieldSlice:
				sa, sb := (*sliceHeader)(pa), (*sliceHeader)(pb)
				if sa.data == sb.data && sa.len == sb.len {
					continue // shared (or both nil)
				}
				if !f.elem(pa, pb, tmp) {
					return false
				}
			default:
				if !f.elem(pa, pb, tmp) {
					return false
				}
			}
		}
		return true
	}
}
