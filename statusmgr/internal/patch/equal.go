package patch

import (
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// This file compares statuses directly, field by field, with the comparisons Status's
// patchers make before they write anything: FieldsEqual(a, b, "") is exactly "Status(uid,
// a, b) is unchanged", without encoding the fields that differ (checked against
// fieldsEqualByPatch and the Reference by the tests and the fuzz test).

// statusEqualFunc reports whether one status field is equal in o and n (its patcher
// writes nothing).
type statusEqualFunc func(f *jsonField, o, n *v1.PodStatus) bool

// typedStatusEqual are the direct comparisons of the typed fields, by JSON name: each is
// the guard of the field's patcher in typedStatusFields. Conditions are compared in one
// pass when they are the same list in the same order (sameConditions); else by patch.
var typedStatusEqual = map[string]statusEqualFunc{
	"observedGeneration": func(_ *jsonField, o, n *v1.PodStatus) bool { return o.ObservedGeneration == n.ObservedGeneration },
	"phase":              func(_ *jsonField, o, n *v1.PodStatus) bool { return o.Phase == n.Phase },
	"message":            func(_ *jsonField, o, n *v1.PodStatus) bool { return o.Message == n.Message },
	"reason":             func(_ *jsonField, o, n *v1.PodStatus) bool { return o.Reason == n.Reason },
	"nominatedNodeName":  func(_ *jsonField, o, n *v1.PodStatus) bool { return o.NominatedNodeName == n.NominatedNodeName },
	"hostIP":             func(_ *jsonField, o, n *v1.PodStatus) bool { return o.HostIP == n.HostIP },
	"hostIPs":            func(_ *jsonField, o, n *v1.PodStatus) bool { return slices.Equal(o.HostIPs, n.HostIPs) },
	"podIP":              func(_ *jsonField, o, n *v1.PodStatus) bool { return o.PodIP == n.PodIP },
	"podIPs":             func(_ *jsonField, o, n *v1.PodStatus) bool { return slices.Equal(o.PodIPs, n.PodIPs) },
	"startTime":          startTimeEqual,
	"initContainerStatuses": func(_ *jsonField, o, n *v1.PodStatus) bool {
		return listEqual(o.InitContainerStatuses, n.InitContainerStatuses, containerStatusEqual)
	},
	"containerStatuses": func(_ *jsonField, o, n *v1.PodStatus) bool {
		return listEqual(o.ContainerStatuses, n.ContainerStatuses, containerStatusEqual)
	},
	"qosClass": func(_ *jsonField, o, n *v1.PodStatus) bool { return o.QOSClass == n.QOSClass },
	"ephemeralContainerStatuses": func(_ *jsonField, o, n *v1.PodStatus) bool {
		return listEqual(o.EphemeralContainerStatuses, n.EphemeralContainerStatuses, containerStatusEqual)
	},
	"resize": func(_ *jsonField, o, n *v1.PodStatus) bool { return o.Resize == n.Resize },
	"allocatedResources": func(_ *jsonField, o, n *v1.PodStatus) bool {
		return resourceListEqual(o.AllocatedResources, n.AllocatedResources)
	},
	"resources": func(_ *jsonField, o, n *v1.PodStatus) bool {
		return ptrEqual(o.Resources, n.Resources, requirementsEqual)
	},
}

// statusEqual returns the direct comparison of the field f: the typed one, a reflective
// one for a field without typed code (patchByReflection's guard), or, for the conditions,
// nil (sameConditions, then by patch: see FieldsEqual).
func statusEqual(f jsonField) statusEqualFunc {
	if f.name == "conditions" {
		return nil
	}
	if eq := typedStatusEqual[f.name]; eq != nil {
		return eq
	}
	if _, typed := typedStatusFields[f.name]; typed {
		return nil // typed code without a direct comparison: by patch
	}
	return reflectEqual
}

// reflectEqual is patchByReflection's guard.
func reflectEqual(f *jsonField, o, n *v1.PodStatus) bool {
	i := f.f.Index[0]
	return fieldEqual(reflect.ValueOf(o).Elem().Field(i), reflect.ValueOf(n).Elem().Field(i))
}

// startTimeEqual is patchStartTime's guard.
func startTimeEqual(_ *jsonField, o, n *v1.PodStatus) bool {
	return o.StartTime == nil && n.StartTime == nil ||
		o.StartTime != nil && n.StartTime != nil && timeEqual(o.StartTime, n.StartTime)
}

// FieldsEqual reports whether a and b are equal in every status field but the one named
// skip (a JSON name), as Status compares them: a field is equal when its patcher would
// write nothing. The fields are compared directly; only conditions that are not the same
// list in the same order are compared by writing their patch (into a scratch buffer).
func FieldsEqual(a, b *v1.PodStatus, skip string) bool {
	patchers := statusPatchers()
	for i := range patchers {
		p := &patchers[i]
		if p.field.name == skip {
			continue
		}
		if p.equal != nil {
			if !p.equal(&p.field, a, b) {
				return false
			}
			continue
		}
		if p.field.name == "conditions" && sameConditions(a.Conditions, b.Conditions) {
			continue
		}
		if !patchWritesNothing(p, a, b) {
			return false
		}
	}
	return true
}

// patchWritesNothing reports whether p's patcher writes nothing for a -> b.
func patchWritesNothing(p *statusPatcher, a, b *v1.PodStatus) bool {
	scratch := GetBuffer()
	defer PutBuffer(scratch)
	out, err := p.patch((*scratch)[:0], &p.field, a, b)
	if out != nil {
		*scratch = out[:0] // keeps a grown buffer
	}
	return err == nil && len(out) == 0
}
