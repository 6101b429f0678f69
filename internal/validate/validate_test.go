package validate

import (
	"fmt"
	"io"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

type ptrImpl struct{}

func (*ptrImpl) String() string { return "p" }

type funcImpl func()

func (funcImpl) String() string { return "f" }

type mapImpl map[string]int

func (mapImpl) String() string { return "m" }

type sliceImpl []int

func (sliceImpl) String() string { return "s" }

type chanImpl chan int

func (chanImpl) String() string { return "c" }

type valueImpl struct{}

func (valueImpl) String() string { return "v" }

func TestIsNil(t *testing.T) {
	var nilStringer fmt.Stringer
	var nilWriter io.Writer
	x := 1
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"untyped nil", nil, true},
		{"nil interface variable", nilStringer, true},
		{"nil pointer", (*ptrImpl)(nil), true},
		{"nil func", funcImpl(nil), true},
		{"nil map", mapImpl(nil), true},
		{"nil slice", sliceImpl(nil), true},
		{"nil chan", chanImpl(nil), true},
		{"nil unsafe pointer", unsafe.Pointer(nil), true},
		{"non-nil pointer", &ptrImpl{}, false},
		{"non-nil func", funcImpl(func() {}), false},
		{"empty map", mapImpl{}, false},
		{"empty slice", sliceImpl{}, false},
		{"open chan", make(chanImpl), false},
		{"struct value", valueImpl{}, false},
		{"zero int", 0, false},
		{"unsafe pointer", unsafe.Pointer(&x), false},
		{"nil writer", nilWriter, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsNil(tc.v); got != tc.want {
				t.Errorf("IsNil(%#v) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}

func TestTypedNils(t *testing.T) {
	var s fmt.Stringer = (*ptrImpl)(nil)
	var unset fmt.Stringer
	got := TypedNils(
		Field{"A", s},
		Field{"B", unset},
		Field{"C", valueImpl{}},
		Field{"D", funcImpl(nil)},
		Field{"E", &ptrImpl{}},
	)
	want := []string{"A is a nil *validate.ptrImpl", "D is a nil validate.funcImpl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TypedNils (-want +got):\n%s", diff)
	}
}
