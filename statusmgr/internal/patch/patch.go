package patch

// This file is the typed encoder: Status, the typed patchers and comparisons of the
// status fields, the reflective fallback for the others, and the JSON writers they share
// with Reference. Append, the entry point under Status, is in encoder_fast.go (this
// encoder) or encoder_simple.go (Reference, build tag podlife_simple).

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Status builds the strategic merge patch that turns oldStatus (the server's) into
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
// The fields a pod status carries (phase, reasons, IPs, start time, QoS class, conditions,
// container statuses and their states) are compared and written by typed code; every
// other field, and every member the typed code does not name (one a later k8s.io/api adds),
// by reflection, with the same rules.
//
// unchanged is true when the statuses are equal; patch then carries only the UID and need
// not be sent. Applied with strategicpatch.StrategicMergePatch to a pod whose status is
// oldStatus, patch gives a pod whose status is newStatus. Built with the tag
// podlife_simple, the patch is Reference's (the same bytes, see the package
// documentation).
func Status(uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	if oldStatus == nil || newStatus == nil {
		return nil, false, fmt.Errorf("%w: nil status", ErrNilStatus)
	}
	scratch := GetBuffer()
	if patch, unchanged, err = Append((*scratch)[:0], uid, oldStatus, newStatus); err == nil {
		*scratch = patch
		patch = slices.Clone(patch)
	}
	PutBuffer(scratch)
	return patch, unchanged, err
}

// appendTyped is Append by the typed encoder (statuses not nil).
func appendTyped(b []byte, uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	b = append(b, `{"metadata":{"uid":`...)
	b = appendString(b, string(uid))
	b = append(b, `},"status":{`...)
	patchers := statusPatchers()
	for i := range patchers {
		p := &patchers[i]
		if b, err = p.patch(b, &p.field, oldStatus, newStatus); err != nil {
			return nil, false, err
		}
	}
	if unchanged = b[len(b)-1] == '{'; unchanged {
		return append(b[:len(b)-len(`,"status":{`)], '}'), true, nil
	}
	return append(b, `}}`...), false, nil
}

// WithResourceVersion returns patch, a patch of Append for uid, with rv as
// its metadata.resourceVersion after the UID: the API server applies it only to that
// version of the pod (else Conflict). patch is extended in place when it has room.
func WithResourceVersion(patch []byte, uid types.UID, rv string) []byte {
	at := len(`{"metadata":{"uid":`) + len(appendString(nil, string(uid)))
	return insertString(patch, at, string(appendString(append([]byte(nil), `,"resourceVersion":`...), rv)))
}

// patchBuffers keeps scratch buffers between patches: a patch is built in one and copied
// out at its exact size; comparisons (statusFieldsEqual, the full sync's reconcile) use
// one without copying. (Everything below appends to a local slice: no write barriers.)
var patchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// GetBuffer returns a scratch buffer of patchBuffers (for Append); give it back with
// PutBuffer.
func GetBuffer() *[]byte { return patchBuffers.Get().(*[]byte) }

// PutBuffer returns a scratch buffer of GetBuffer to the pool, unless it grew beyond
// maxPooledPatch.
func PutBuffer(scratch *[]byte) {
	if cap(*scratch) <= maxPooledPatch {
		patchBuffers.Put(scratch)
	}
}

// maxPooledPatch is the largest scratch buffer kept for reuse.
const maxPooledPatch = 64 << 10

// Sentinel errors, wrapped by the errors of Status and Append. statusmgr exports ErrEncode
// as its own.
var (
	// ErrEncode is returned when a status patch cannot be encoded.
	ErrEncode = errors.New("statusmgr: cannot encode status patch")
	// ErrNilStatus is returned by Status for a nil status.
	ErrNilStatus = errors.New("statusmgr: nil status")
)

// conditionIndex returns the index of the condition of type t in conds, -1 if none.
func conditionIndex(conds []v1.PodCondition, t v1.PodConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// appendKey appends the member name of an object, after a comma unless it is the first
// (the object or list was just opened).
func appendKey(b []byte, name string) []byte {
	b = appendSep(b)
	b = append(b, '"')
	b = append(b, name...) // json tag names are plain identifiers
	return append(b, `":`...)
}

// appendSep appends a comma unless b is empty or ends an object's or a list's opening.
func appendSep(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if c := b[len(b)-1]; c != '{' && c != '[' {
		b = append(b, ',')
	}
	return b
}

// appendNull appends JSON's null.
func appendNull(b []byte) []byte { return append(b, "null"...) }

// appendString appends s as encoding/json does (escaping HTML characters).
func appendString(b []byte, s string) []byte {
	if !isSimpleString(s) {
		data, _ := json.Marshal(s) // a string always encodes
		return append(b, data...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendTime appends t as metav1.Time's JSON encoding does (RFC 3339 in UTC), even when
// zero.
func appendTime(b []byte, t *metav1.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// isSimpleString reports whether s needs no escaping in JSON: printable ASCII other than
// quote, backslash and the characters encoding/json escapes for HTML.
func isSimpleString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !simpleByte[s[i]] {
			return false
		}
	}
	return true
}

// simpleByte holds the bytes isSimpleString allows.
var simpleByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// insertString inserts s into b at offset at.
func insertString(b []byte, at int, s string) []byte {
	b = append(b, s...)
	copy(b[at+len(s):], b[at:len(b)-len(s)])
	copy(b[at:], s)
	return b
}

// statusPatchFunc writes the patch of one status field, f, if it changed.
type statusPatchFunc func(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error)

// statusPatcher patches one status field.
type statusPatcher struct {
	field jsonField
	patch statusPatchFunc
	// equal compares the field directly (equal.go); nil: by patch (its patcher writes
	// nothing).
	equal statusEqualFunc
}

// typedStatusFields are the status fields written by typed code, by JSON name.
var typedStatusFields = map[string]statusPatchFunc{
	"observedGeneration":         intField(func(s *v1.PodStatus) int64 { return s.ObservedGeneration }),
	"phase":                      stringField(func(s *v1.PodStatus) string { return string(s.Phase) }),
	"conditions":                 patchConditions,
	"message":                    stringField(func(s *v1.PodStatus) string { return s.Message }),
	"reason":                     stringField(func(s *v1.PodStatus) string { return s.Reason }),
	"nominatedNodeName":          stringField(func(s *v1.PodStatus) string { return s.NominatedNodeName }),
	"hostIP":                     stringField(func(s *v1.PodStatus) string { return s.HostIP }),
	"hostIPs":                    ipsField(func(s *v1.PodStatus) []v1.HostIP { return s.HostIPs }),
	"podIP":                      stringField(func(s *v1.PodStatus) string { return s.PodIP }),
	"podIPs":                     ipsField(func(s *v1.PodStatus) []v1.PodIP { return s.PodIPs }),
	"startTime":                  patchStartTime,
	"initContainerStatuses":      containerStatusesField(func(s *v1.PodStatus) []v1.ContainerStatus { return s.InitContainerStatuses }),
	"containerStatuses":          containerStatusesField(func(s *v1.PodStatus) []v1.ContainerStatus { return s.ContainerStatuses }),
	"qosClass":                   stringField(func(s *v1.PodStatus) string { return string(s.QOSClass) }),
	"ephemeralContainerStatuses": containerStatusesField(func(s *v1.PodStatus) []v1.ContainerStatus { return s.EphemeralContainerStatuses }),
	"resize":                     stringField(func(s *v1.PodStatus) string { return string(s.Resize) }),
	"allocatedResources":         patchAllocatedResources,
	"resources":                  patchResources,
}

// statusFields are the JSON fields of PodStatus, in order, listed once (reflect's Field
// allocates on every call).
var statusFields = sync.OnceValue(func() []jsonField { return jsonFields(reflect.TypeFor[v1.PodStatus]()) })

// statusPatchers are the patchers of the JSON fields of PodStatus, in order: the typed
// ones, else patchByReflection.
var statusPatchers = sync.OnceValue(func() []statusPatcher {
	var out []statusPatcher
	for _, f := range statusFields() {
		p := typedStatusFields[f.name]
		if p == nil {
			p = patchByReflection
		}
		out = append(out, statusPatcher{field: f, patch: p, equal: statusEqual(f)})
	}
	return out
})

// patchByReflection patches a status field that has no typed code.
func patchByReflection(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
	i := f.f.Index[0]
	of, nf := reflect.ValueOf(o).Elem().Field(i), reflect.ValueOf(n).Elem().Field(i)
	if fieldEqual(of, nf) {
		return b, nil
	}
	return writeFieldValue(appendKey(b, f.name), f.f, of, nf)
}

// stringField patches a string status field: its new value, null when it became empty.
func stringField(get func(*v1.PodStatus) string) statusPatchFunc {
	return func(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
		if os, ns := get(o), get(n); os != ns {
			b = appendKey(b, f.name)
			if ns == "" {
				b = appendNull(b)
			} else {
				b = appendString(b, ns)
			}
		}
		return b, nil
	}
}

// intField patches an integer status field: its new value, null when it became 0.
func intField(get func(*v1.PodStatus) int64) statusPatchFunc {
	return func(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
		if ov, nv := get(o), get(n); ov != nv {
			b = appendKey(b, f.name)
			if nv == 0 {
				b = appendNull(b)
			} else {
				b = strconv.AppendInt(b, nv, 10)
			}
		}
		return b, nil
	}
}

// ipsField patches a list of IPs (merge key "ip"): replaced whole when it changed.
func ipsField[T v1.HostIP | v1.PodIP](get func(*v1.PodStatus) []T) statusPatchFunc {
	return func(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
		os, ns := get(o), get(n)
		if slices.Equal(os, ns) {
			return b, nil
		}
		b = appendKey(b, f.name)
		if len(ns) == 0 {
			b = appendNull(b)
			return b, nil
		}
		b = append(b, `[{"$patch":"replace"}`...)
		for _, ip := range ns {
			b = append(b, ",{"...)
			if ip := v1.PodIP(ip).IP; ip != "" {
				b = appendKey(b, "ip")
				b = appendString(b, ip)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
		return b, nil
	}
}

// patchStartTime patches startTime: the new time, null when it became nil.
func patchStartTime(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
	if o.StartTime == nil && n.StartTime == nil ||
		o.StartTime != nil && n.StartTime != nil && timeEqual(o.StartTime, n.StartTime) {
		return b, nil
	}
	b = appendKey(b, f.name)
	if n.StartTime == nil {
		b = appendNull(b)
	} else {
		b = appendTime(b, n.StartTime)
	}
	return b, nil
}

// patchAllocatedResources patches the pod's allocatedResources: replaced whole when it
// changed, null when it became empty.
func patchAllocatedResources(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
	if resourceListEqual(o.AllocatedResources, n.AllocatedResources) {
		return b, nil
	}
	b = appendKey(b, f.name)
	if len(n.AllocatedResources) == 0 {
		return appendNull(b), nil
	}
	start := len(b)
	return replaceObject(appendResourceList(b, n.AllocatedResources), start, len(o.AllocatedResources) == 0), nil
}

// patchResources patches the pod's resources: replaced whole when they changed, null when
// they became nil.
func patchResources(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
	if ptrEqual(o.Resources, n.Resources, requirementsEqual) {
		return b, nil
	}
	b = appendKey(b, f.name)
	if n.Resources == nil {
		return appendNull(b), nil
	}
	start := len(b)
	b, err := appendRequirements(b, n.Resources)
	if err != nil {
		return b, fmt.Errorf("status field %s: %w", f.f.Name, err) // err wraps ErrEncode
	}
	return replaceObject(b, start, o.Resources == nil), nil
}

// replaceObject makes the object written from offset start replace the server's whole
// (a "$patch":"replace" directive), unless the old value was empty: the server's strategic
// merge drops a replace directive on an absent field.
func replaceObject(b []byte, start int, oldEmpty bool) []byte {
	if oldEmpty {
		return b
	}
	return insertString(b, start+1, `"$patch":"replace"`+commaIf(len(b)-start > 2))
}

// timeEqual compares times as equality.Semantic does.
func timeEqual(a, b *metav1.Time) bool { return a.UTC() == b.UTC() }

// isZeroTime reports whether t is the zero value (as reflect's IsZero: a zero instant in
// another location is not).
func isZeroTime(t *metav1.Time) bool { return t.Time == time.Time{} }

// patchConditions writes the conditions part of the patch: "$setElementOrder/conditions"
// when needed, then the changed and new conditions (their changed members) and deletions.
func patchConditions(b []byte, _ *jsonField, o, n *v1.PodStatus) ([]byte, error) {
	oldConds, newConds := o.Conditions, n.Conditions
	if sameConditions(oldConds, newConds) {
		return b, nil
	}
	var patchedBuf [8]v1.PodConditionType
	patched := patchedBuf[:0] // types of the changed or new conditions, in newConds' order
	for i := range newConds {
		if j := conditionIndex(oldConds, newConds[i].Type); j < 0 || conditionChanged(&oldConds[j], &newConds[i]) {
			patched = append(patched, newConds[i].Type)
		}
	}
	deleted := false // some old condition is gone
	for i := range oldConds {
		deleted = deleted || conditionIndex(newConds, oldConds[i].Type) < 0
	}
	reorder := !mergedOrderMatches(oldConds, newConds, patched)
	if reorder {
		b = appendKey(b, "$setElementOrder/conditions")
		b = append(b, '[')
		for i := range newConds {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendString(b, string(newConds[i].Type))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(patched) == 0 && !deleted {
		return b, nil
	}
	b = appendKey(b, "conditions")
	b = append(b, '[')
	for i := range newConds {
		nc := &newConds[i]
		base := &noCondition // a new condition: only its set members
		if j := conditionIndex(oldConds, nc.Type); j >= 0 {
			if base = &oldConds[j]; !conditionChanged(base, nc) {
				continue
			}
		}
		var err error
		if b, err = writeConditionDiff(appendSep(b), base, nc); err != nil {
			return b, err
		}
	}
	for i := range oldConds {
		if conditionIndex(newConds, oldConds[i].Type) >= 0 {
			continue
		}
		b = append(appendSep(b), `{"$patch":"delete","type":`...)
		b = appendString(b, string(oldConds[i].Type))
		b = append(b, '}')
	}
	b = append(b, ']')
	return b, nil
}

// sameConditions reports whether the lists hold the same conditions in the same order, of
// distinct types (then nothing is patched, deleted or reordered): the common case,
// decided in one pass.
func sameConditions(oldConds, newConds []v1.PodCondition) bool {
	if len(oldConds) != len(newConds) {
		return false
	}
	for i := range newConds {
		if conditionChanged(&oldConds[i], &newConds[i]) || conditionIndex(newConds[:i], newConds[i].Type) >= 0 {
			return false
		}
	}
	return true
}

// noCondition is the base a new condition is diffed against (never written to).
var noCondition v1.PodCondition

// conditionChanged reports whether the condition changed between oc and nc (every member).
func conditionChanged(oc, nc *v1.PodCondition) bool {
	return !ConditionEqual(oc, nc) || !othersEqual(conditionOthers(), oc, nc)
}

// mergedOrderMatches reports whether the server's strategic merge of a conditions patch
// without an order directive yields newConds' order. The merge (apimachinery's
// normalizeElementOrder) keeps the server-only elements in server order and the patched
// ones in patch order, and interleaves the two lists: a server-only element goes first when
// both it and the next patched element are in the server's list and it comes earlier
// there; otherwise the patched element goes first. patched lists the types of the patch's
// elements (deletions excluded), in patch order.
func mergedOrderMatches(oldConds, newConds []v1.PodCondition, patched []v1.PodConditionType) bool {
	var serverOnlyBuf [8]v1.PodConditionType
	serverOnly := serverOnlyBuf[:0]
	for i := range oldConds {
		t := oldConds[i].Type
		if conditionIndex(newConds, t) >= 0 && !slices.Contains(patched, t) {
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
			li, ri := conditionIndex(oldConds, serverOnly[i]), conditionIndex(oldConds, patched[j])
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

// writeConditionDiff writes the changed members of one condition, keyed by its type; a
// member that became empty is null so that the server drops it.
func writeConditionDiff(b []byte, oc, nc *v1.PodCondition) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = appendString(b, string(nc.Type))
	if oc.ObservedGeneration != nc.ObservedGeneration {
		b = appendKey(b, "observedGeneration")
		if nc.ObservedGeneration == 0 {
			b = appendNull(b)
		} else {
			b = strconv.AppendInt(b, nc.ObservedGeneration, 10)
		}
	}
	b = diffString(b, "status", string(oc.Status), string(nc.Status))
	b = diffTime(b, "lastProbeTime", &oc.LastProbeTime, &nc.LastProbeTime)
	b = diffTime(b, "lastTransitionTime", &oc.LastTransitionTime, &nc.LastTransitionTime)
	b = diffString(b, "reason", oc.Reason, nc.Reason)
	b = diffString(b, "message", oc.Message, nc.Message)
	if others := conditionOthers(); len(others) > 0 {
		ov, nv := reflect.ValueOf(oc).Elem(), reflect.ValueOf(nc).Elem()
		for _, m := range others {
			of, nf := ov.Field(m.index), nv.Field(m.index)
			if fieldEqual(of, nf) {
				continue
			}
			var err error
			if b, err = writeFieldValue(appendKey(b, m.name), ov.Type().Field(m.index), of, nf); err != nil {
				return b, err
			}
		}
	}
	b = append(b, '}')
	return b, nil
}

// diffString appends member name with the new value (null when empty) if it changed.
func diffString(b []byte, name, o, n string) []byte {
	if o == n {
		return b
	}
	b = appendKey(b, name)
	if n == "" {
		b = appendNull(b)
	} else {
		b = appendString(b, n)
	}
	return b
}

// diffTime appends member name with the new time (null when zero) if it changed.
func diffTime(b []byte, name string, o, n *metav1.Time) []byte {
	if o.Equal(n) {
		return b
	}
	b = appendKey(b, name)
	if isZeroTime(n) {
		b = appendNull(b)
	} else {
		b = appendTime(b, n)
	}
	return b
}

// containerStatusesField patches a list of container statuses (no merge key): replaced
// whole when it changed.
func containerStatusesField(get func(*v1.PodStatus) []v1.ContainerStatus) statusPatchFunc {
	return func(b []byte, f *jsonField, o, n *v1.PodStatus) ([]byte, error) {
		os, ns := get(o), get(n)
		if listEqual(os, ns, containerStatusEqual) {
			return b, nil
		}
		b = appendKey(b, f.name)
		if len(ns) == 0 {
			b = appendNull(b)
			return b, nil
		}
		b = append(b, '[')
		for i := range ns {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = writeContainerStatus(b, &ns[i]); err != nil {
				return b, fmt.Errorf("status field %s: %w", f.f.Name, err) // err wraps ErrEncode
			}
		}
		b = append(b, ']')
		return b, nil
	}
}

// listEqual compares lists element by element, as equality.Semantic does (nil and empty
// alike).
func listEqual[T any](a, b []T, equal func(a, b *T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equal(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// The members of the condition and container status types that the typed code below
// leaves to reflection (none today but ContainerStatus's user, allocatedResourcesStatus and
// stopSignal, and VolumeMountStatus's volumeStatus).
var (
	conditionOthers       = untypedMembers[v1.PodCondition]("type", "observedGeneration", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")
	containerStatusOthers = untypedMembers[v1.ContainerStatus]("name", "state", "lastState", "ready", "restartCount", "image", "imageID", "containerID", "started",
		"allocatedResources", "resources", "volumeMounts")
	requirementsOthers   = untypedMembers[v1.ResourceRequirements]("limits", "requests", "claims")
	claimOthers          = untypedMembers[v1.ResourceClaim]("name", "request")
	mountOthers          = untypedMembers[v1.VolumeMountStatus]("name", "mountPath", "readOnly", "recursiveReadOnly")
	containerStateOthers = untypedMembers[v1.ContainerState]("waiting", "running", "terminated")
	waitingOthers        = untypedMembers[v1.ContainerStateWaiting]("reason", "message")
	runningOthers        = untypedMembers[v1.ContainerStateRunning]("startedAt")
	terminatedOthers     = untypedMembers[v1.ContainerStateTerminated]("exitCode", "signal", "reason", "message", "startedAt", "finishedAt", "containerID")
)

// member is a JSON member of a struct type: its field index and JSON name, or embedded
// when its members are inlined.
type member struct {
	index    int
	name     string
	embedded bool
}

// untypedMembers returns the JSON members of struct type T (embedded structs included)
// other than the named ones.
func untypedMembers[T any](typed ...string) func() []member {
	return sync.OnceValue(func() []member {
		var out []member
		t := reflect.TypeFor[T]()
		for i := range t.NumField() {
			m := memberOf(t.Field(i))
			if (m.embedded || m.name != "") && !slices.Contains(typed, m.name) {
				out = append(out, m)
			}
		}
		return out
	})
}

// othersEqual compares the members others of the structs *a and *b semantically.
func othersEqual[T any](others []member, a, b *T) bool {
	if len(others) == 0 {
		return true
	}
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, m := range others {
		if !fieldEqual(av.Field(m.index), bv.Field(m.index)) {
			return false
		}
	}
	return true
}

// othersZero reports whether the members others of *v are all zero.
func othersZero[T any](others []member, v *T) bool {
	if len(others) == 0 {
		return true
	}
	rv := reflect.ValueOf(v).Elem()
	for _, m := range others {
		if !rv.Field(m.index).IsZero() {
			return false
		}
	}
	return true
}

// writeOthers writes the members others of *v that writeValue keeps.
func writeOthers[T any](b []byte, others []member, v *T) ([]byte, error) {
	if len(others) == 0 {
		return b, nil
	}
	rv := reflect.ValueOf(v).Elem()
	var err error
	for _, m := range others {
		if b, err = writeMember(b, rv.Field(m.index), m); err != nil {
			return b, err
		}
	}
	return b, nil
}

// containerStatusEqual, containerStateEqual and the state comparisons below compare every
// member as equality.Semantic does: the typed ones directly, the others by reflection.
func containerStatusEqual(a, b *v1.ContainerStatus) bool {
	return a.Name == b.Name && containerStateEqual(&a.State, &b.State) &&
		containerStateEqual(&a.LastTerminationState, &b.LastTerminationState) &&
		a.Ready == b.Ready && a.RestartCount == b.RestartCount && a.Image == b.Image &&
		a.ImageID == b.ImageID && a.ContainerID == b.ContainerID &&
		(a.Started == nil) == (b.Started == nil) && (a.Started == nil || *a.Started == *b.Started) &&
		resourceListEqual(a.AllocatedResources, b.AllocatedResources) &&
		ptrEqual(a.Resources, b.Resources, requirementsEqual) &&
		listEqual(a.VolumeMounts, b.VolumeMounts, mountEqual) &&
		othersEqual(containerStatusOthers(), a, b)
}

// resourceListEqual compares quantities by value, as equality.Semantic does.
func resourceListEqual(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, qa := range a {
		qb, ok := b[k]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func requirementsEqual(a, b *v1.ResourceRequirements) bool {
	return resourceListEqual(a.Limits, b.Limits) && resourceListEqual(a.Requests, b.Requests) &&
		listEqual(a.Claims, b.Claims, claimEqual) &&
		othersEqual(requirementsOthers(), a, b)
}

func claimEqual(a, b *v1.ResourceClaim) bool {
	return a.Name == b.Name && a.Request == b.Request && othersEqual(claimOthers(), a, b)
}

func mountEqual(a, b *v1.VolumeMountStatus) bool {
	return a.Name == b.Name && a.MountPath == b.MountPath && a.ReadOnly == b.ReadOnly &&
		ptrEqual(a.RecursiveReadOnly, b.RecursiveReadOnly, func(x, y *v1.RecursiveReadOnlyMode) bool { return *x == *y }) &&
		othersEqual(mountOthers(), a, b)
}

func containerStateEqual(a, b *v1.ContainerState) bool {
	return ptrEqual(a.Waiting, b.Waiting, waitingEqual) && ptrEqual(a.Running, b.Running, runningEqual) &&
		ptrEqual(a.Terminated, b.Terminated, terminatedEqual) && othersEqual(containerStateOthers(), a, b)
}

// ptrEqual reports whether a and b are both nil or both point to equal values.
func ptrEqual[T any](a, b *T, equal func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equal(a, b)
}

func waitingEqual(a, b *v1.ContainerStateWaiting) bool {
	return a.Reason == b.Reason && a.Message == b.Message && othersEqual(waitingOthers(), a, b)
}

func runningEqual(a, b *v1.ContainerStateRunning) bool {
	return timeEqual(&a.StartedAt, &b.StartedAt) && othersEqual(runningOthers(), a, b)
}

func terminatedEqual(a, b *v1.ContainerStateTerminated) bool {
	return a.ExitCode == b.ExitCode && a.Signal == b.Signal && a.Reason == b.Reason && a.Message == b.Message &&
		timeEqual(&a.StartedAt, &b.StartedAt) && timeEqual(&a.FinishedAt, &b.FinishedAt) &&
		a.ContainerID == b.ContainerID && othersEqual(terminatedOthers(), a, b)
}

// writeContainerStatus writes cs whole, leaving out the members that are zero (see
// writeValue).
func writeContainerStatus(b []byte, cs *v1.ContainerStatus) ([]byte, error) {
	b = append(b, '{')
	b = appendStringMember(b, "name", cs.Name)
	var err error
	if b, err = appendStateMember(b, "state", &cs.State); err != nil {
		return b, err
	}
	if b, err = appendStateMember(b, "lastState", &cs.LastTerminationState); err != nil {
		return b, err
	}
	if cs.Ready {
		b = append(appendKey(b, "ready"), "true"...)
	}
	b = appendIntMember(b, "restartCount", int64(cs.RestartCount))
	b = appendStringMember(b, "image", cs.Image)
	b = appendStringMember(b, "imageID", cs.ImageID)
	b = appendStringMember(b, "containerID", cs.ContainerID)
	if cs.Started != nil {
		b = strconv.AppendBool(appendKey(b, "started"), *cs.Started)
	}
	if len(cs.AllocatedResources) > 0 {
		b = appendResourceList(appendKey(b, "allocatedResources"), cs.AllocatedResources)
	}
	if cs.Resources != nil {
		if b, err = appendRequirements(appendKey(b, "resources"), cs.Resources); err != nil {
			return b, err
		}
	}
	if len(cs.VolumeMounts) > 0 {
		if b, err = appendMounts(appendKey(b, "volumeMounts"), cs.VolumeMounts); err != nil {
			return b, err
		}
	}
	if b, err = writeOthers(b, containerStatusOthers(), cs); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendStateMember writes the container state s as member name unless it is zero.
func appendStateMember(b []byte, name string, s *v1.ContainerState) ([]byte, error) {
	if s.Waiting == nil && s.Running == nil && s.Terminated == nil && othersZero(containerStateOthers(), s) {
		return b, nil
	}
	b = append(appendKey(b, name), '{')
	var err error
	if w := s.Waiting; w != nil {
		b = append(appendKey(b, "waiting"), '{')
		b = appendStringMember(b, "reason", w.Reason)
		b = appendStringMember(b, "message", w.Message)
		if b, err = writeOthers(b, waitingOthers(), w); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	if r := s.Running; r != nil {
		b = append(appendKey(b, "running"), '{')
		b = appendTimeMember(b, "startedAt", &r.StartedAt)
		if b, err = writeOthers(b, runningOthers(), r); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	if t := s.Terminated; t != nil {
		b = append(appendKey(b, "terminated"), '{')
		b = appendIntMember(b, "exitCode", int64(t.ExitCode))
		b = appendIntMember(b, "signal", int64(t.Signal))
		b = appendStringMember(b, "reason", t.Reason)
		b = appendStringMember(b, "message", t.Message)
		b = appendTimeMember(b, "startedAt", &t.StartedAt)
		b = appendTimeMember(b, "finishedAt", &t.FinishedAt)
		b = appendStringMember(b, "containerID", t.ContainerID)
		if b, err = writeOthers(b, terminatedOthers(), t); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	if b, err = writeOthers(b, containerStateOthers(), s); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendResourceList appends rl as encoding/json does: keys in order, quantities in their
// canonical form.
func appendResourceList(b []byte, rl v1.ResourceList) []byte {
	var keysBuf [8]v1.ResourceName
	keys := keysBuf[:0]
	for k := range rl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for _, k := range keys {
		b = appendString(appendSep(b), string(k))
		b = append(b, ':')
		q, _ := rl[k].MarshalJSON() // a quantity always encodes
		b = append(b, q...)
	}
	return append(b, '}')
}

// appendRequirements appends r whole, leaving out the members that are zero.
func appendRequirements(b []byte, r *v1.ResourceRequirements) ([]byte, error) {
	b = append(b, '{')
	if len(r.Limits) > 0 {
		b = appendResourceList(appendKey(b, "limits"), r.Limits)
	}
	if len(r.Requests) > 0 {
		b = appendResourceList(appendKey(b, "requests"), r.Requests)
	}
	var err error
	if len(r.Claims) > 0 {
		b = append(appendKey(b, "claims"), '[')
		for i := range r.Claims {
			c := &r.Claims[i]
			b = append(appendSep(b), '{')
			b = appendStringMember(b, "name", c.Name)
			b = appendStringMember(b, "request", c.Request)
			if b, err = writeOthers(b, claimOthers(), c); err != nil {
				return b, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if b, err = writeOthers(b, requirementsOthers(), r); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendMounts appends the volume mount statuses ms, leaving out the members that are zero.
func appendMounts(b []byte, ms []v1.VolumeMountStatus) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i := range ms {
		m := &ms[i]
		b = append(appendSep(b), '{')
		b = appendStringMember(b, "name", m.Name)
		b = appendStringMember(b, "mountPath", m.MountPath)
		if m.ReadOnly {
			b = append(appendKey(b, "readOnly"), "true"...)
		}
		if m.RecursiveReadOnly != nil {
			b = appendString(appendKey(b, "recursiveReadOnly"), string(*m.RecursiveReadOnly))
		}
		if b, err = writeOthers(b, mountOthers(), m); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendStringMember writes member name = v unless v is empty.
func appendStringMember(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(appendKey(b, name), v)
}

// appendIntMember writes member name = v unless v is 0.
func appendIntMember(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(appendKey(b, name), v, 10)
}

// appendTimeMember writes member name = t unless t is zero.
func appendTimeMember(b []byte, name string, t *metav1.Time) []byte {
	if isZeroTime(t) {
		return b
	}
	return appendTime(appendKey(b, name), t)
}

// writeFieldValue writes the patch value of a changed field by reflection: null when it
// became empty, a replace directive for objects and merge-keyed lists, else the new value.
func writeFieldValue(b []byte, f reflect.StructField, of, nf reflect.Value) ([]byte, error) {
	if isEmptyValue(nf) {
		return appendNull(b), nil
	}
	if b, ok := writeScalar(b, nf); ok {
		return b, nil
	}
	start := len(b)
	b, err := writeValue(b, nf)
	if err != nil {
		return b, fmt.Errorf("status field %s: %w", f.Name, err) // err wraps ErrEncode
	}
	data := b[start:]
	switch {
	case len(data) < 2:
	case data[0] == '[' && strings.Contains(f.Tag.Get("patchStrategy"), "merge"):
		b = insertString(b, start+1, `{"$patch":"replace"}`+commaIf(len(data) > 2))
	case data[0] == '{':
		b = replaceObject(b, start, isEmptyValue(of))
	}
	return b, nil
}

// commaIf is "," if ok, else "".
func commaIf(ok bool) string {
	if ok {
		return ","
	}
	return ""
}

// writeScalar writes strings, integers, booleans and metav1.Time values as encoding/json
// would, without reflection's boxing; it reports false (and returns b as is) for anything
// else.
func writeScalar(b []byte, v reflect.Value) ([]byte, bool) {
	if v.Kind() != reflect.Struct && v.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		return b, false
	}
	switch v.Kind() {
	case reflect.String:
		if isSimpleString(v.String()) {
			return appendString(b, v.String()), true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), true
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), true
	case reflect.Struct:
		if t, ok := reflect.TypeAssert[metav1.Time](v); ok {
			return appendTime(b, &t), true
		}
	}
	return b, false
}

// fieldEqual compares two values of one field semantically (as equality.Semantic.DeepEqual
// does: nil and empty lists and maps are equal, quantities and times by value), with fast
// paths for scalars, times and nil or empty values.
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
			return ref(a).(*metav1.Time).Equal(ref(b).(*metav1.Time))
		}
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() && b.IsNil() {
			return true
		}
	}
	return equality.Semantic.DeepEqual(ref(a), ref(b))
}

// ref returns a pointer to v's value as an interface, without copying the value to the
// heap (v.Interface() would); an unaddressable v is copied once.
func ref(v reflect.Value) any {
	if !v.CanAddr() {
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		return p.Interface()
	}
	return v.Addr().Interface()
}

// jsonField is a struct field that JSON encodes, with its JSON name.
type jsonField struct {
	f    reflect.StructField
	name string
}

// jsonFields lists the fields of the struct type t that JSON encodes.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		if name := jsonName(f); name != "" {
			out = append(out, jsonField{f: f, name: name})
		}
	}
	return out
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

// isEmbedded reports whether f is an embedded struct whose members JSON inlines.
func isEmbedded(f reflect.StructField) bool {
	return f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == ""
}

func writeJSON(b []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return append(b, data...), nil
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
func writeValue(b []byte, v reflect.Value) ([]byte, error) {
	if b, ok := writeScalar(b, v); ok {
		return b, nil
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
			return appendNull(b), nil
		}
		return writeValue(b, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return appendNull(b), nil
		}
		b = append(b, '[')
		var err error
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = writeValue(b, v.Index(i)); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case reflect.Struct:
		b, err := writeMembers(append(b, '{'), v)
		if err != nil {
			return b, err
		}
		return append(b, '}'), nil
	}
	return writeJSON(b, v.Interface())
}

// writeMembers writes the members of struct v that writeValue keeps.
func writeMembers(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	for i := range v.NumField() {
		if b, err = writeMember(b, v.Field(i), memberOf(v.Type().Field(i))); err != nil {
			return b, err
		}
	}
	return b, nil
}

// writeMember writes member m, of value v, unless writeValue leaves it out (an embedded
// struct's members inline).
func writeMember(b []byte, v reflect.Value, m member) ([]byte, error) {
	if m.embedded {
		return writeMembers(b, v)
	}
	if m.name == "" || omitted(v) {
		return b, nil
	}
	return writeValue(appendKey(b, m.name), v)
}

// memberOf describes the struct field f as a JSON member (no name: not encoded).
func memberOf(f reflect.StructField) member {
	return member{index: f.Index[0], name: jsonName(f), embedded: isEmbedded(f)}
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

// ConditionEqual reports whether two conditions are equal in every member (times to the
// second's representation the API server keeps, as metav1.Time.Equal).
func ConditionEqual(a, b *v1.PodCondition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration &&
		a.LastProbeTime.Equal(&b.LastProbeTime) && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// fieldsEqualByPatch is FieldsEqual as it was before equal.go: a field is equal when its
// patcher writes nothing (into a scratch buffer of patchBuffers: a difference allocates
// nothing either).
func fieldsEqualByPatch(a, b *v1.PodStatus, skip string) bool {
	scratch := GetBuffer()
	defer PutBuffer(scratch)
	patchers := statusPatchers()
	for i := range patchers {
		p := &patchers[i]
		if p.field.name == skip {
			continue
		}
		out, err := p.patch((*scratch)[:0], &p.field, a, b)
		if out != nil {
			*scratch = out[:0] // keeps a grown buffer
		}
		if err != nil || len(out) > 0 {
			return false
		}
	}
	return true
}
