package statusmgr

import (
	"encoding/json"
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
// The fields a pod status carries (phase, reasons, IPs, start time, QoS class, conditions,
// container statuses and their states) are compared and written by typed code; every
// other field, and every member the typed code does not name (one a later k8s.io/api adds),
// by reflection, with the same rules.
//
// unchanged is true when the statuses are equal; patch then carries only the UID and need
// not be sent. Applied with strategicpatch.StrategicMergePatch to a pod whose status is
// oldStatus, patch gives a pod whose status is newStatus.
func StatusPatch(uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	if oldStatus == nil || newStatus == nil {
		return nil, false, fmt.Errorf("%w: nil status", ErrNilPod)
	}
	w := newPatchWriter()
	defer w.release()
	w.b = append(w.b, `{"metadata":{"uid":`...)
	w.string(string(uid))
	w.b = append(w.b, `},"status":{`...)
	patchers := statusPatchers()
	for i := range patchers {
		p := &patchers[i]
		if err := p.patch(w, &p.field, oldStatus, newStatus); err != nil {
			return nil, false, err
		}
	}
	if w.keys == 0 {
		w.b = append(w.b[:len(w.b)-len(`,"status":{`)], '}')
		return slices.Clone(w.b), true, nil
	}
	w.b = append(w.b, `}}`...)
	return slices.Clone(w.b), false, nil
}

// patchWriter is the scratch buffer a patch is built in; keys counts the status keys
// written so far.
type patchWriter struct {
	b    []byte
	keys int
}

// patchWriters keeps scratch buffers between patches: a patch is built in one and copied
// out at its exact size.
var patchWriters = sync.Pool{New: func() any { return &patchWriter{b: make([]byte, 0, 2048)} }}

// maxPooledPatch is the largest scratch buffer kept for reuse.
const maxPooledPatch = 64 << 10

func newPatchWriter() *patchWriter {
	w := patchWriters.Get().(*patchWriter)
	w.b, w.keys = w.b[:0], 0
	return w
}

func (w *patchWriter) release() {
	if cap(w.b) <= maxPooledPatch {
		patchWriters.Put(w)
	}
}

// key starts the status key name (after a comma unless it is the first).
func (w *patchWriter) key(name string) {
	if w.keys > 0 {
		w.b = append(w.b, ',')
	}
	w.keys++
	w.name(name)
}

// member starts the member name of an object (after a comma unless *first).
func (w *patchWriter) member(first *bool, name string) {
	if !*first {
		w.b = append(w.b, ',')
	}
	*first = false
	w.name(name)
}

func (w *patchWriter) name(name string) {
	w.b = append(w.b, '"')
	w.b = append(w.b, name...) // json tag names are plain identifiers
	w.b = append(w.b, `":`...)
}

func (w *patchWriter) null() { w.b = append(w.b, "null"...) }

func (w *patchWriter) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

func (w *patchWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

// string writes s as encoding/json does (escaping HTML characters).
func (w *patchWriter) string(s string) {
	if !isSimpleString(s) {
		data, _ := json.Marshal(s) // a string always encodes
		w.b = append(w.b, data...)
		return
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// time writes t as metav1.Time's JSON encoding does (RFC 3339 in UTC), even when zero.
func (w *patchWriter) time(t *metav1.Time) {
	w.b = append(w.b, '"')
	w.b = t.UTC().AppendFormat(w.b, time.RFC3339)
	w.b = append(w.b, '"')
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

// insert inserts s into the buffer at offset at.
func (w *patchWriter) insert(at int, s string) {
	w.b = append(w.b, s...)
	copy(w.b[at+len(s):], w.b[at:len(w.b)-len(s)])
	copy(w.b[at:], s)
}

// statusPatchFunc writes the patch of one status field, f, if it changed.
type statusPatchFunc func(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error

// statusPatcher patches one status field.
type statusPatcher struct {
	field jsonField
	patch statusPatchFunc
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
}

// statusPatchers are the patchers of the JSON fields of PodStatus, in order: the typed
// ones, else patchByReflection.
var statusPatchers = sync.OnceValue(func() []statusPatcher {
	var out []statusPatcher
	for _, f := range jsonFields(reflect.TypeFor[v1.PodStatus]()) {
		p := typedStatusFields[f.name]
		if p == nil {
			p = patchByReflection
		}
		out = append(out, statusPatcher{field: f, patch: p})
	}
	return out
})

// patchByReflection patches a status field that has no typed code.
func patchByReflection(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
	i := f.f.Index[0]
	of, nf := reflect.ValueOf(o).Elem().Field(i), reflect.ValueOf(n).Elem().Field(i)
	if fieldEqual(of, nf) {
		return nil
	}
	w.key(f.name)
	return writeFieldValue(w, f.f, of, nf)
}

func stringField(get func(*v1.PodStatus) string) statusPatchFunc {
	return func(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
		if os, ns := get(o), get(n); os != ns {
			w.key(f.name)
			if ns == "" {
				w.null()
			} else {
				w.string(ns)
			}
		}
		return nil
	}
}

func intField(get func(*v1.PodStatus) int64) statusPatchFunc {
	return func(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
		if ov, nv := get(o), get(n); ov != nv {
			w.key(f.name)
			if nv == 0 {
				w.null()
			} else {
				w.int(nv)
			}
		}
		return nil
	}
}

// ipsField patches a list of IPs (merge key "ip"): replaced whole when it changed.
func ipsField[T v1.HostIP | v1.PodIP](get func(*v1.PodStatus) []T) statusPatchFunc {
	return func(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
		os, ns := get(o), get(n)
		if slices.Equal(os, ns) {
			return nil
		}
		w.key(f.name)
		if len(ns) == 0 {
			w.null()
			return nil
		}
		w.b = append(w.b, `[{"$patch":"replace"}`...)
		for _, ip := range ns {
			w.b = append(w.b, ",{"...)
			if ip := v1.PodIP(ip).IP; ip != "" {
				w.name("ip")
				w.string(ip)
			}
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
		return nil
	}
}

func patchStartTime(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
	if o.StartTime == nil && n.StartTime == nil ||
		o.StartTime != nil && n.StartTime != nil && timeEqual(o.StartTime, n.StartTime) {
		return nil
	}
	w.key(f.name)
	if n.StartTime == nil {
		w.null()
	} else {
		w.time(n.StartTime)
	}
	return nil
}

// timeEqual compares times as equality.Semantic does.
func timeEqual(a, b *metav1.Time) bool { return a.UTC() == b.UTC() }

// isZeroTime reports whether t is the zero value (as reflect's IsZero: a zero instant in
// another location is not).
func isZeroTime(t *metav1.Time) bool { return t.Time == time.Time{} }

// patchConditions writes the conditions part of the patch: "$setElementOrder/conditions"
// when needed, then the changed and new conditions (their changed members) and deletions.
func patchConditions(w *patchWriter, _ *jsonField, o, n *v1.PodStatus) error {
	oldConds, newConds := o.Conditions, n.Conditions
	var patchedBuf [8]v1.PodConditionType
	patched := patchedBuf[:0] // types of the changed or new conditions, in newConds' order
	for i := range newConds {
		if j := findCondition(oldConds, newConds[i].Type); j < 0 || conditionChanged(&oldConds[j], &newConds[i]) {
			patched = append(patched, newConds[i].Type)
		}
	}
	deleted := slices.ContainsFunc(oldConds, func(c v1.PodCondition) bool { return findCondition(newConds, c.Type) < 0 })
	reorder := !mergedOrderMatches(oldConds, newConds, patched)
	if reorder {
		w.key("$setElementOrder/conditions")
		w.b = append(w.b, '[')
		for i := range newConds {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, `{"type":`...)
			w.string(string(newConds[i].Type))
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	if len(patched) == 0 && !deleted {
		return nil
	}
	w.key("conditions")
	w.b = append(w.b, '[')
	first := true
	for i := range newConds {
		nc := &newConds[i]
		base := &noCondition // a new condition: only its set members
		if j := findCondition(oldConds, nc.Type); j >= 0 {
			if base = &oldConds[j]; !conditionChanged(base, nc) {
				continue
			}
		}
		if !first {
			w.b = append(w.b, ',')
		}
		first = false
		if err := writeConditionDiff(w, base, nc); err != nil {
			return err
		}
	}
	for i := range oldConds {
		if findCondition(newConds, oldConds[i].Type) >= 0 {
			continue
		}
		if !first {
			w.b = append(w.b, ',')
		}
		first = false
		w.b = append(w.b, `{"$patch":"delete","type":`...)
		w.string(string(oldConds[i].Type))
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
	return nil
}

// noCondition is the base a new condition is diffed against (never written to).
var noCondition v1.PodCondition

// conditionChanged reports whether the condition changed between oc and nc (every member).
func conditionChanged(oc, nc *v1.PodCondition) bool {
	return !conditionEqual(oc, nc) || !othersEqual(conditionOthers(), oc, nc)
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

// writeConditionDiff writes the changed members of one condition, keyed by its type; a
// member that became empty is null so that the server drops it.
func writeConditionDiff(w *patchWriter, oc, nc *v1.PodCondition) error {
	w.b = append(w.b, `{"type":`...)
	w.string(string(nc.Type))
	if oc.ObservedGeneration != nc.ObservedGeneration {
		w.b = append(w.b, ',')
		w.name("observedGeneration")
		if nc.ObservedGeneration == 0 {
			w.null()
		} else {
			w.int(nc.ObservedGeneration)
		}
	}
	diffString(w, "status", string(oc.Status), string(nc.Status))
	diffTime(w, "lastProbeTime", &oc.LastProbeTime, &nc.LastProbeTime)
	diffTime(w, "lastTransitionTime", &oc.LastTransitionTime, &nc.LastTransitionTime)
	diffString(w, "reason", oc.Reason, nc.Reason)
	diffString(w, "message", oc.Message, nc.Message)
	if others := conditionOthers(); len(others) > 0 {
		ov, nv := reflect.ValueOf(oc).Elem(), reflect.ValueOf(nc).Elem()
		for _, m := range others {
			of, nf := ov.Field(m.index), nv.Field(m.index)
			if fieldEqual(of, nf) {
				continue
			}
			w.b = append(w.b, ',')
			w.name(m.name)
			if err := writeFieldValue(w, ov.Type().Field(m.index), of, nf); err != nil {
				return err
			}
		}
	}
	w.b = append(w.b, '}')
	return nil
}

// diffString writes `,"name":` and the new value (null when empty) if it changed.
func diffString(w *patchWriter, name, o, n string) {
	if o == n {
		return
	}
	w.b = append(w.b, ',')
	w.name(name)
	if n == "" {
		w.null()
	} else {
		w.string(n)
	}
}

// diffTime writes `,"name":` and the new time (null when zero) if it changed.
func diffTime(w *patchWriter, name string, o, n *metav1.Time) {
	if o.Equal(n) {
		return
	}
	w.b = append(w.b, ',')
	w.name(name)
	if isZeroTime(n) {
		w.null()
	} else {
		w.time(n)
	}
}

// containerStatusesField patches a list of container statuses (no merge key): replaced
// whole when it changed.
func containerStatusesField(get func(*v1.PodStatus) []v1.ContainerStatus) statusPatchFunc {
	return func(w *patchWriter, f *jsonField, o, n *v1.PodStatus) error {
		os, ns := get(o), get(n)
		if containerStatusesEqual(os, ns) {
			return nil
		}
		w.key(f.name)
		if len(ns) == 0 {
			w.null()
			return nil
		}
		w.b = append(w.b, '[')
		for i := range ns {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if err := writeContainerStatus(w, &ns[i]); err != nil {
				return fmt.Errorf("status field %s: %w", f.f.Name, err) // err wraps ErrEncode
			}
		}
		w.b = append(w.b, ']')
		return nil
	}
}

func containerStatusesEqual(a, b []v1.ContainerStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !containerStatusEqual(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// The members of the container status types that the typed code below leaves to
// reflection (none today but ContainerStatus's resources, mounts, user and signal).
var (
	conditionOthers       = untypedMembers[v1.PodCondition]("type", "observedGeneration", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")
	containerStatusOthers = untypedMembers[v1.ContainerStatus]("name", "state", "lastState", "ready", "restartCount", "image", "imageID", "containerID", "started")
	containerStateOthers  = untypedMembers[v1.ContainerState]("waiting", "running", "terminated")
	waitingOthers         = untypedMembers[v1.ContainerStateWaiting]("reason", "message")
	runningOthers         = untypedMembers[v1.ContainerStateRunning]("startedAt")
	terminatedOthers      = untypedMembers[v1.ContainerStateTerminated]("exitCode", "signal", "reason", "message", "startedAt", "finishedAt", "containerID")
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
func writeOthers[T any](w *patchWriter, others []member, v *T, first *bool) error {
	if len(others) == 0 {
		return nil
	}
	rv := reflect.ValueOf(v).Elem()
	for _, m := range others {
		if err := writeMember(w, rv.Field(m.index), m, first); err != nil {
			return err
		}
	}
	return nil
}

func containerStatusEqual(a, b *v1.ContainerStatus) bool {
	return a.Name == b.Name && containerStateEqual(&a.State, &b.State) &&
		containerStateEqual(&a.LastTerminationState, &b.LastTerminationState) &&
		a.Ready == b.Ready && a.RestartCount == b.RestartCount && a.Image == b.Image &&
		a.ImageID == b.ImageID && a.ContainerID == b.ContainerID &&
		(a.Started == nil) == (b.Started == nil) && (a.Started == nil || *a.Started == *b.Started) &&
		othersEqual(containerStatusOthers(), a, b)
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
func writeContainerStatus(w *patchWriter, cs *v1.ContainerStatus) error {
	w.b = append(w.b, '{')
	first := true
	w.stringMember(&first, "name", cs.Name)
	if err := w.stateMember(&first, "state", &cs.State); err != nil {
		return err
	}
	if err := w.stateMember(&first, "lastState", &cs.LastTerminationState); err != nil {
		return err
	}
	if cs.Ready {
		w.member(&first, "ready")
		w.bool(true)
	}
	w.intMember(&first, "restartCount", int64(cs.RestartCount))
	w.stringMember(&first, "image", cs.Image)
	w.stringMember(&first, "imageID", cs.ImageID)
	w.stringMember(&first, "containerID", cs.ContainerID)
	if cs.Started != nil {
		w.member(&first, "started")
		w.bool(*cs.Started)
	}
	if err := writeOthers(w, containerStatusOthers(), cs, &first); err != nil {
		return err
	}
	w.b = append(w.b, '}')
	return nil
}

// stateMember writes the container state s as member name unless it is zero.
func (w *patchWriter) stateMember(first *bool, name string, s *v1.ContainerState) error {
	if s.Waiting == nil && s.Running == nil && s.Terminated == nil && othersZero(containerStateOthers(), s) {
		return nil
	}
	w.member(first, name)
	w.b = append(w.b, '{')
	in := true
	if s.Waiting != nil {
		w.member(&in, "waiting")
		w.b = append(w.b, '{')
		f := true
		w.stringMember(&f, "reason", s.Waiting.Reason)
		w.stringMember(&f, "message", s.Waiting.Message)
		if err := writeOthers(w, waitingOthers(), s.Waiting, &f); err != nil {
			return err
		}
		w.b = append(w.b, '}')
	}
	if s.Running != nil {
		w.member(&in, "running")
		w.b = append(w.b, '{')
		f := true
		w.timeMember(&f, "startedAt", &s.Running.StartedAt)
		if err := writeOthers(w, runningOthers(), s.Running, &f); err != nil {
			return err
		}
		w.b = append(w.b, '}')
	}
	if t := s.Terminated; t != nil {
		w.member(&in, "terminated")
		w.b = append(w.b, '{')
		f := true
		w.intMember(&f, "exitCode", int64(t.ExitCode))
		w.intMember(&f, "signal", int64(t.Signal))
		w.stringMember(&f, "reason", t.Reason)
		w.stringMember(&f, "message", t.Message)
		w.timeMember(&f, "startedAt", &t.StartedAt)
		w.timeMember(&f, "finishedAt", &t.FinishedAt)
		w.stringMember(&f, "containerID", t.ContainerID)
		if err := writeOthers(w, terminatedOthers(), t, &f); err != nil {
			return err
		}
		w.b = append(w.b, '}')
	}
	if err := writeOthers(w, containerStateOthers(), s, &in); err != nil {
		return err
	}
	w.b = append(w.b, '}')
	return nil
}

// stringMember writes member name = v unless v is empty.
func (w *patchWriter) stringMember(first *bool, name, v string) {
	if v != "" {
		w.member(first, name)
		w.string(v)
	}
}

// intMember writes member name = v unless v is 0.
func (w *patchWriter) intMember(first *bool, name string, v int64) {
	if v != 0 {
		w.member(first, name)
		w.int(v)
	}
}

// timeMember writes member name = t unless t is zero.
func (w *patchWriter) timeMember(first *bool, name string, t *metav1.Time) {
	if !isZeroTime(t) {
		w.member(first, name)
		w.time(t)
	}
}

// writeFieldValue writes the patch value of a changed field by reflection: null when it
// became empty, a replace directive for objects and merge-keyed lists, else the new value.
func writeFieldValue(w *patchWriter, f reflect.StructField, of, nf reflect.Value) error {
	if isEmptyValue(nf) {
		w.null()
		return nil
	}
	if writeScalar(w, nf) {
		return nil
	}
	start := len(w.b)
	if err := writeValue(w, nf); err != nil {
		return fmt.Errorf("status field %s: %w", f.Name, err) // err wraps ErrEncode
	}
	data := w.b[start:]
	switch {
	case len(data) > 2 && data[0] == '[' && strings.Contains(f.Tag.Get("patchStrategy"), "merge"):
		w.insert(start+1, `{"$patch":"replace"},`)
	case len(data) == 2 && data[0] == '[' && strings.Contains(f.Tag.Get("patchStrategy"), "merge"):
		w.insert(start+1, `{"$patch":"replace"}`)
	case len(data) > 2 && data[0] == '{' && !isEmptyValue(of):
		// (When the old value is empty the object is sent as is: the server's strategic
		// merge drops a replace directive on an absent map field.)
		w.insert(start+1, `"$patch":"replace",`)
	case len(data) == 2 && data[0] == '{' && !isEmptyValue(of):
		w.insert(start+1, `"$patch":"replace"`)
	}
	return nil
}

// writeScalar writes strings, integers, booleans and metav1.Time values as encoding/json
// would, without reflection's boxing; it reports false for anything else.
func writeScalar(w *patchWriter, v reflect.Value) bool {
	if v.Kind() != reflect.Struct && v.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		if !isSimpleString(v.String()) {
			return false
		}
		w.string(v.String())
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.int(v.Int())
		return true
	case reflect.Bool:
		w.bool(v.Bool())
		return true
	case reflect.Struct:
		if t, ok := reflect.TypeAssert[metav1.Time](v); ok {
			w.time(&t)
			return true
		}
	}
	return false
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

func writeJSON(w *patchWriter, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncode, err)
	}
	w.b = append(w.b, data...)
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
func writeValue(w *patchWriter, v reflect.Value) error {
	if writeScalar(w, v) {
		return nil
	}
	switch {
	case v.Kind() != reflect.Pointer && v.Type().Implements(reflect.TypeFor[json.Marshaler]()),
		v.Kind() == reflect.Map,
		v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		return writeJSON(w, v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			w.null()
			return nil
		}
		return writeValue(w, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			w.null()
			return nil
		}
		w.b = append(w.b, '[')
		for i := range v.Len() {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if err := writeValue(w, v.Index(i)); err != nil {
				return err
			}
		}
		w.b = append(w.b, ']')
		return nil
	case reflect.Struct:
		w.b = append(w.b, '{')
		first := true
		if err := writeMembers(w, v, &first); err != nil {
			return err
		}
		w.b = append(w.b, '}')
		return nil
	}
	return writeJSON(w, v.Interface())
}

// writeMembers writes the members of struct v that writeValue keeps, each after a comma
// unless *first.
func writeMembers(w *patchWriter, v reflect.Value, first *bool) error {
	for i := range v.NumField() {
		if err := writeMember(w, v.Field(i), memberOf(v.Type().Field(i)), first); err != nil {
			return err
		}
	}
	return nil
}

// writeMember writes member m, of value v, unless writeValue leaves it out (an embedded
// struct's members inline).
func writeMember(w *patchWriter, v reflect.Value, m member, first *bool) error {
	if m.embedded {
		return writeMembers(w, v, first)
	}
	if m.name == "" || omitted(v) {
		return nil
	}
	w.member(first, m.name)
	return writeValue(w, v)
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
