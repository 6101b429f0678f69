package statusmgr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StatusPatch builds the strategic merge patch that turns oldStatus (the server's) into
// newStatus, for the pod's status subresource. It is computed field by field, without
// encoding either status whole:
//   - the patch always carries metadata.uid = uid, which the API server treats as a
//     precondition: a pod recreated under the same name (another UID) is never patched;
//   - a status field that is semantically equal on both sides is left out; a field that
//     became empty is sent as null; a changed object field is replaced whole
//     ("$patch":"replace"); a changed list is replaced whole (lists with a merge key through
//     a {"$patch":"replace"} element); inside a value sent whole, a member the server
//     decodes to the same value when it is absent (false, 0, "", an empty list) is left
//     out (a pointer to such a value is kept);
//   - conditions are patched element by element (merge key "type"): only changed or new
//     conditions and deletions are sent, so conditions another client wrote since oldStatus
//     was read are kept by the server; "$setElementOrder/conditions" is added only when the
//     server's merge would otherwise leave them in another order than newStatus.
//
// unchanged is true when the statuses are equal; patch then carries only the UID and need
// not be sent. Applied with strategicpatch.StrategicMergePatch to a pod whose status is
// oldStatus, patch gives a pod whose status is newStatus.
func StatusPatch(uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	if oldStatus == nil || newStatus == nil {
		return nil, false, fmt.Errorf("%w: nil status", ErrNilPod)
	}
	var b bytes.Buffer
	b.Grow(256)
	b.WriteString(`{"metadata":{"uid":`)
	if err := writeJSON(&b, string(uid)); err != nil {
		return nil, false, err
	}
	b.WriteString(`},"status":{`)
	fields := 0
	ov := reflect.ValueOf(oldStatus).Elem()
	nv := reflect.ValueOf(newStatus).Elem()
	t := ov.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		if name == "conditions" {
			n, err := writeConditionsPatch(&b, fields > 0, oldStatus.Conditions, newStatus.Conditions)
			if err != nil {
				return nil, false, err
			}
			fields += n
			continue
		}
		of, nf := ov.Field(i), nv.Field(i)
		if fieldEqual(of, nf) {
			continue
		}
		if fields > 0 {
			b.WriteByte(',')
		}
		fields++
		writeKey(&b, name)
		if err := writeFieldValue(&b, f, of, nf); err != nil {
			return nil, false, err
		}
	}
	if fields == 0 {
		b.Truncate(0)
		b.WriteString(`{"metadata":{"uid":`)
		_ = writeJSON(&b, string(uid))
		b.WriteString(`}}`)
		return b.Bytes(), true, nil
	}
	b.WriteString(`}}`)
	return b.Bytes(), false, nil
}

// writeFieldValue writes the patch value of a changed field: null when it became empty, a
// replace directive for objects and merge-keyed lists, else the new value.
func writeFieldValue(b *bytes.Buffer, f reflect.StructField, of, nf reflect.Value) error {
	if isEmptyValue(nf) {
		b.WriteString("null")
		return nil
	}
	if writeScalar(b, nf) {
		return nil
	}
	var v bytes.Buffer
	if err := writeValue(&v, nf); err != nil {
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

// writeScalar writes strings, integers, booleans and metav1.Time values as encoding/json
// would, without reflection's boxing; it reports false for anything else.
func writeScalar(b *bytes.Buffer, v reflect.Value) bool {
	if v.Kind() != reflect.Struct && v.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return writeSimpleString(b, v.String())
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

// writeSimpleString writes s as a JSON string if it needs no escaping (printable ASCII
// other than quote, backslash and the characters encoding/json escapes for HTML), and
// reports whether it did.
func writeSimpleString(b *bytes.Buffer, s string) bool {
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

// writeConditionsPatch writes the conditions part of the patch (after a comma if sep) and
// returns how many top-level keys it wrote (0, 1 or 2).
func writeConditionsPatch(b *bytes.Buffer, sep bool, oldConds, newConds []v1.PodCondition) (int, error) {
	var elems [][]byte
	var patched []v1.PodConditionType // types of the non-delete elements, in patch order
	for i := range newConds {
		nc := &newConds[i]
		base := &v1.PodCondition{Type: nc.Type} // a new condition: only its set fields
		if j := findCondition(oldConds, nc.Type); j >= 0 {
			base = &oldConds[j]
			if conditionEqual(base, nc) {
				continue
			}
		}
		data, err := conditionDiff(base, nc)
		if err != nil {
			return 0, err
		}
		elems = append(elems, data)
		patched = append(patched, nc.Type)
	}
	for i := range oldConds {
		if findCondition(newConds, oldConds[i].Type) >= 0 {
			continue
		}
		var e bytes.Buffer
		e.WriteString(`{"$patch":"delete","type":`)
		if err := writeJSON(&e, string(oldConds[i].Type)); err != nil {
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
			if err := writeJSON(b, string(newConds[i].Type)); err != nil {
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

// mergedOrderMatches reports whether the server's strategic merge of a conditions patch
// without an order directive yields newConds' order. The merge (apimachinery's
// normalizeElementOrder) keeps the server-only elements in server order and the patched
// ones in patch order, and interleaves the two lists: a server-only element goes first when
// both it and the next patched element are in the server's list and it comes earlier
// there; otherwise the patched element goes first. patched lists the types of the patch's
// elements (deletions excluded), in patch order.
func mergedOrderMatches(oldConds, newConds []v1.PodCondition, patched []v1.PodConditionType) bool {
	var serverOnly []v1.PodConditionType
	for i := range oldConds {
		t := oldConds[i].Type
		if findCondition(newConds, t) >= 0 && !slices.Contains(patched, t) {
			serverOnly = append(serverOnly, t)
		}
	}
	if len(serverOnly)+len(patched) != len(newConds) {
		return false // duplicates or another oddity: be explicit
	}
	i, j := 0, 0
	for k := range newConds {
		var next v1.PodConditionType
		switch {
		case i >= len(serverOnly):
			next, j = patched[j], j+1
		case j >= len(patched):
			next, i = serverOnly[i], i+1
		default:
			li, ri := findCondition(oldConds, serverOnly[i]), findCondition(oldConds, patched[j])
			if li >= 0 && ri >= 0 && li < ri {
				next, i = serverOnly[i], i+1
			} else {
				next, j = patched[j], j+1
			}
		}
		if next != newConds[k].Type {
			return false
		}
	}
	return true
}

// conditionDiff encodes the changed fields of one condition, keyed by its type; a field
// that became empty is null so that the server drops it.
func conditionDiff(oc, nc *v1.PodCondition) ([]byte, error) {
	var e bytes.Buffer
	e.WriteString(`{"type":`)
	if err := writeJSON(&e, string(nc.Type)); err != nil {
		return nil, err
	}
	ov := reflect.ValueOf(oc).Elem()
	nv := reflect.ValueOf(nc).Elem()
	t := ov.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" || name == "type" {
			continue
		}
		of, nf := ov.Field(i), nv.Field(i)
		if fieldEqual(of, nf) {
			continue
		}
		e.WriteByte(',')
		writeKey(&e, name)
		if err := writeFieldValue(&e, f, of, nf); err != nil {
			return nil, err
		}
	}
	e.WriteByte('}')
	return e.Bytes(), nil
}

// fieldEqual compares two values of one status field semantically (as
// equality.Semantic.DeepEqual does: nil and empty lists and maps are equal, quantities and
// times by value), with fast paths for scalars and times.
func fieldEqual(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Struct:
		if a.Type() == reflect.TypeFor[metav1.Time]() {
			ta, tb := a.Interface().(metav1.Time), b.Interface().(metav1.Time)
			return ta.Equal(&tb)
		}
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return equality.Semantic.DeepEqual(a.Interface(), b.Interface())
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func writeKey(b *bytes.Buffer, name string) {
	b.WriteByte('"')
	b.WriteString(name) // json tag names are plain identifiers
	b.WriteString(`":`)
}

func writeJSON(b *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncode, err)
	}
	b.Write(data)
	return nil
}

// isEmptyValue is encoding/json's omitempty test, plus zero metav1.Time-like structs
// (which encode as null).
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	case reflect.Struct:
		return v.IsZero()
	}
	return false
}

// writeValue writes v as JSON for a patch value that replaces (or fills) a field whole,
// leaving out every struct member the server would decode to the same value if absent: a
// nil pointer, slice or map, an empty slice or map (equal to nil, semantically), and a
// zero value of any other type (false, 0, "", a zero time, an empty struct). A non-nil
// pointer is always written, even to a zero value (a *bool false is not nil). Types with
// their own JSON encoding (quantities and the like), maps and byte slices are encoded by
// encoding/json. An error wraps ErrEncode.
func writeValue(b *bytes.Buffer, v reflect.Value) error {
	if writeScalar(b, v) {
		return nil
	}
	switch {
	case v.Kind() != reflect.Pointer && v.Type().Implements(reflect.TypeFor[json.Marshaler]()),
		v.Kind() == reflect.Map,
		v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return writeJSON(b, v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeValue(b, v.Elem())
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
			if err := writeValue(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		if err := writeMembers(b, v, &first); err != nil {
			return err
		}
		b.WriteByte('}')
		return nil
	}
	return writeJSON(b, v.Interface())
}

// writeMembers writes the members of struct v that writeValue keeps (an embedded struct's
// inline), each after a comma unless *first.
func writeMembers(b *bytes.Buffer, v reflect.Value, first *bool) error {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			if err := writeMembers(b, fv, first); err != nil {
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
		writeKey(b, name)
		if err := writeValue(b, fv); err != nil {
			return err
		}
	}
	return nil
}

// omitted reports whether a struct member decodes to v when absent (see writeValue).
func omitted(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}
