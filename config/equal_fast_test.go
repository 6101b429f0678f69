//go:build !podlife_simple

package config

import (
	"math"
	"reflect"
	"testing"
	"unsafe"
)

// The tests of the compiled comparators themselves (equal_fast.go); the simple twin has none.

func TestCompiledEqualOddKinds(t *testing.T) {
	eq := compileEqual(reflect.TypeFor[odd]())
	fn := func() {}
	nan := math.NaN()
	cases := []struct {
		name string
		a, b odd
	}{
		{"zero", odd{}, odd{}},
		{"float", odd{F: 1}, odd{F: 2}},
		{"NaN differs from itself", odd{F: nan}, odd{F: nan}},
		{"complex", odd{C: 1i}, odd{C: 1i}},
		{"array", odd{A: [2]int8{1, 2}}, odd{A: [2]int8{1, 3}}},
		{"interface same", odd{I: "x"}, odd{I: "x"}},
		{"interface different dynamic types", odd{I: int32(1)}, odd{I: int64(1)}},
		{"interface nil vs value", odd{}, odd{I: 0}},
		{"func nil", odd{}, odd{}},
		{"func non-nil", odd{Fn: fn}, odd{Fn: fn}},
		{"int map", odd{M: map[int]string{1: "a"}}, odd{M: map[int]string{1: "a"}}},
		{"int map nil vs empty", odd{M: map[int]string{}}, odd{}},
		{"bytes nil vs empty", odd{B: []byte{}}, odd{}},
		{"bytes", odd{B: []byte("ab")}, odd{B: []byte("ac")}},
		{"uint", odd{U: 1}, odd{U: 1}},
		{"recursive", odd{N: &odd{N: &odd{U: 1}}}, odd{N: &odd{N: &odd{U: 1}}}},
		{"recursive differs deep", odd{N: &odd{N: &odd{U: 1}}}, odd{N: &odd{N: &odd{U: 2}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := reflect.DeepEqual(&c.a, &c.b)
			if got := eq(unsafe.Pointer(&c.a), unsafe.Pointer(&c.b), nil); got != want {
				t.Errorf("compiled %v, reflect.DeepEqual %v", got, want)
			}
		})
	}
}

func TestCompiledEqualDoesNotAllocate(t *testing.T) {
	a := richPod()
	b := a.DeepCopy()
	var tmp scratch
	allocs := testing.AllocsPerRun(100, func() {
		if !specEqual(a, b, &tmp) || !statusEqual(a, b, &tmp) || !deletionTimestampEqual(a, b) {
			t.Fatal("deep copies differ")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per comparison, want 0", allocs)
	}
}
