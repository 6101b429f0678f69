// Package validate holds the checks the constructors of podlife share. It keeps no state.
package validate

import (
	"fmt"
	"reflect"
)

// IsNil reports whether v is nil, or an interface value whose dynamic value is a nil
// pointer, map, func, chan, slice, unsafe pointer or interface (a "typed nil": not equal
// to nil, yet calling a method on it usually crashes).
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice,
		reflect.UnsafePointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Field is one interface-typed field of a configuration: its name and its value.
type Field struct {
	Name  string
	Value any
}

// TypedNils returns one problem, such as "Cache is a nil *pleg.Cache", for each field
// whose value is not nil but holds a nil value (IsNil). Nil fields are left to the
// caller: they are often optional.
func TypedNils(fields ...Field) []string {
	var out []string
	for _, f := range fields {
		if f.Value != nil && IsNil(f.Value) {
			out = append(out, fmt.Sprintf("%s is a nil %T", f.Name, f.Value))
		}
	}
	return out
}
