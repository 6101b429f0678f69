package patch

// This file is Reference, the reflective encoder (see the package documentation).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Reference is Status as it was before its typed code: reflective throughout,
// with the same rules (see Status). It is the reference the typed code's output is
// compared with, byte for byte.
func Reference(uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	if oldStatus == nil || newStatus == nil {
		return nil, false, fmt.Errorf("%w: nil status", ErrNilStatus)
	}
	var b bytes.Buffer
	b.Grow(256)
	b.WriteString(`{"metadata":{"uid":`)
	if err := refWriteJSON(&b, string(uid)); err != nil {
		return nil, false, err
	}
	b.WriteString(`},"status":{`)
	fields := 0
	ov := reflect.ValueOf(oldStatus).Elem()
	nv := reflect.ValueOf(newStatus).Elem()
	for _, jf := range statusFields() {
		f, name := jf.f, jf.name
		if name == "conditions" {
			n, err := refWriteConditionsPatch(&b, fields > 0, oldStatus.Conditions, newStatus.Conditions)
			if err != nil {
				return nil, false, err
			}
			fields += n
			continue
		}
		of, nf := ov.Field(f.Index[0]), nv.Field(f.Index[0])
		if refFieldEqual(of, nf) {
			continue
		}
		if fields > 0 {
			b.WriteByte(',')
		}
		fields++
		refWriteKey(&b, name)
		if err := refWriteFieldValue(&b, f, of, nf); err != nil {
			return nil, false, err
		}
	}
	if fields == 0 {
		b.Truncate(0)
		b.WriteString(`{"metadata":{"uid":`)
		_ = refWriteJSON(&b, string(uid))
		b.WriteString(`}}`)
		return b.Bytes(), true, nil
	}
	b.WriteString(`}}`)
	return b.Bytes(), false, nil
}

// refWriteFieldValue writes the patch value of a changed field: null when it became empty, a
// replace directive for objects and merge-keyed lists, else the new value.
func refWriteFieldValue(b *bytes.Buffer, f reflect.StructField, of, nf reflect.Value) error {
	if isEmptyValue(nf) {
		b.WriteString("null")
		return nil
	}
	if refWriteScalar(b, nf) {
		return nil
	}
	var v bytes.Buffer
	if err := refWriteValue(&v, nf); err != nil {
		return fmt.Errorf("status field %s: %w", f.Name, err) // err wraps ErrEncode
	}
	data := v.Bytes()
	switch {
	case len(data) >= 2 && data[0] == '[' && strings.Contains(f.Tag.Get("patchStrategy"), "merge"):
		b.WriteString(`[{"$patch":"replace"}`)
		if len(data) > 2 {
			b.WriteByte(',')
		}
		b.Write(data[1:])
	case len(data) >= 2 && data[0] == '{' && !isEmptyValue(of):
		// (When the old value is empty the object is sent as is: the server's strategic
		// merge drops a replace directive on an absent map field.)
		b.WriteString(`{"$patch":"replace"`)
		if len(data) > 2 {
			b.WriteByte(',')
		}
		b.Write(data[1:])
	default:
		b.Write(data)
	}
	return nil
}

// refWriteScalar writes strings, integers, booleans and metav1.Time values as encoding/json
// would, without reflection's boxing; it reports false for anything else.
func refWriteScalar(b *bytes.Buffer, v reflect.Value) bool {
	if v.Kind() != reflect.Struct && v.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return refWriteSimpleString(b, v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.Write(strconv.AppendInt(b.AvailableBuffer(), v.Int(), 10))
		return true
	case reflect.Bool:
		b.Write(strconv.AppendBool(b.AvailableBuffer(), v.Bool()))
		return true
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[metav1.Time]() {
			t := v.Interface().(metav1.Time)
			b.WriteByte('"')
			b.Write(t.UTC().AppendFormat(b.AvailableBuffer(), time.RFC3339))
			b.WriteByte('"')
			return true
		}
	}
	return false
}

// refWriteSimpleString writes s as a JSON string if it needs no escaping (printable ASCII
// other than quote, backslash and the characters encoding/json escapes for HTML), and
// reports whether it did.
func refWriteSimpleString(b *bytes.Buffer, s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return true
}

// refWriteConditionsPatch writes the conditions part of the patch (after a comma if sep) and
// returns how many top-level keys it wrote (0, 1 or 2).
func refWriteConditionsPatch(b *bytes.Buffer, sep bool, oldConds, newConds []v1.PodCondition) (int, error) {
	var elems [][]byte
	var patched []v1.PodConditionType // types of the non-delete elements, in patch order
	for i := range newConds {
		nc := &newConds[i]
		base := &v1.PodCondition{Type: nc.Type} // a new condition: only its set fields
		if j := conditionIndex(oldConds, nc.Type); j >= 0 {
			base = &oldConds[j]
			if ConditionEqual(base, nc) {
				continue
			}
		}
		data, err := refConditionDiff(base, nc)
		if err != nil {
			return 0, err
		}
		elems = append(elems, data)
		patched = append(patched, nc.Type)
	}
	for i := range oldConds {
		if conditionIndex(newConds, oldConds[i].Type) >= 0 {
			continue
		}
		var e bytes.Buffer
		e.WriteString(`{"$patch":"delete","type":`)
		if err := refWriteJSON(&e, string(oldConds[i].Type)); err != nil {
			return 0, err
		}
		e.WriteByte('}')
		elems = append(elems, e.Bytes())
	}
	reorder := !mergedOrderMatches(oldConds, newConds, patched)
	if len(elems) == 0 && !reorder {
		return 0, nil
	}
	keys := 0
	if reorder {
		if sep {
			b.WriteByte(',')
		}
		sep = true
		keys++
		b.WriteString(`"$setElementOrder/conditions":[`)
		for i := range newConds {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"type":`)
			if err := refWriteJSON(b, string(newConds[i].Type)); err != nil {
				return 0, err
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	if len(elems) > 0 {
		if sep {
			b.WriteByte(',')
		}
		keys++
		b.WriteString(`"conditions":[`)
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(e)
		}
		b.WriteByte(']')
	}
	return keys, nil
}

// refConditionDiff encodes the changed fields of one condition, keyed by its type; a field
// that became empty is null so that the server drops it.
func refConditionDiff(oc, nc *v1.PodCondition) ([]byte, error) {
	var e bytes.Buffer
	e.WriteString(`{"type":`)
	if err := refWriteJSON(&e, string(nc.Type)); err != nil {
		return nil, err
	}
	ov := reflect.ValueOf(oc).Elem()
	nv := reflect.ValueOf(nc).Elem()
	for _, jf := range refConditionFields() {
		f, name := jf.f, jf.name
		if name == "type" {
			continue
		}
		of, nf := ov.Field(f.Index[0]), nv.Field(f.Index[0])
		if refFieldEqual(of, nf) {
			continue
		}
		e.WriteByte(',')
		refWriteKey(&e, name)
		if err := refWriteFieldValue(&e, f, of, nf); err != nil {
			return nil, err
		}
	}
	e.WriteByte('}')
	return e.Bytes(), nil
}

// refFieldEqual compares two values of one status field semantically (as
// equality.Semantic.DeepEqual does: nil and empty lists and maps are equal, quantities and
// times by value), with fast paths for scalars and times.
func refFieldEqual(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Struct:
		if a.Type() == reflect.TypeFor[metav1.Time]() {
			return ref(a).(*metav1.Time).Equal(ref(b).(*metav1.Time))
		}
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return equality.Semantic.DeepEqual(ref(a), ref(b))
}

// refConditionFields are the JSON fields of PodCondition, in order, listed once (reflect's
// Field allocates on every call); the status's are statusFields.
var refConditionFields = sync.OnceValue(func() []jsonField { return jsonFields(reflect.TypeFor[v1.PodCondition]()) })

func refWriteKey(b *bytes.Buffer, name string) {
	b.WriteByte('"')
	b.WriteString(name) // json tag names are plain identifiers
	b.WriteString(`":`)
}

func refWriteJSON(b *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncode, err)
	}
	b.Write(data)
	return nil
}

// refWriteValue writes v as JSON for a patch value that replaces (or fills) a field whole,
// leaving out every struct member the server would decode to the same value if absent: a
// nil pointer, slice or map, an empty slice or map (equal to nil, semantically), and a
// zero value of any other type (false, 0, "", a zero time, an empty struct). A non-nil
// pointer is always written, even to a zero value (a *bool false is not nil). Types with
// their own JSON encoding (quantities and the like), maps and byte slices are encoded by
// encoding/json. An error wraps ErrEncode.
func refWriteValue(b *bytes.Buffer, v reflect.Value) error {
	if refWriteScalar(b, v) {
		return nil
	}
	switch {
	case v.Kind() != reflect.Pointer && v.Type().Implements(reflect.TypeFor[json.Marshaler]()),
		v.Kind() == reflect.Map,
		v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return refWriteJSON(b, v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return refWriteValue(b, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := refWriteValue(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		if err := refWriteMembers(b, v, &first); err != nil {
			return err
		}
		b.WriteByte('}')
		return nil
	}
	return refWriteJSON(b, v.Interface())
}

// refWriteMembers writes the members of struct v that refWriteValue keeps (an embedded struct's
// inline), each after a comma unless *first.
func refWriteMembers(b *bytes.Buffer, v reflect.Value, first *bool) error {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			if err := refWriteMembers(b, fv, first); err != nil {
				return err
			}
			continue
		}
		name := jsonName(f)
		if name == "" || omitted(fv) {
			continue
		}
		if !*first {
			b.WriteByte(',')
		}
		*first = false
		refWriteKey(b, name)
		if err := refWriteValue(b, fv); err != nil {
			return err
		}
	}
	return nil
}
