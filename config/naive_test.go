package config

import (
	"math/rand/v2"
	"reflect"

	v1 "k8s.io/api/core/v1"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }

func reflectValue(p *v1.Pod) reflect.Value { return reflect.ValueOf(p).Elem() }

// naiveCheckAndUpdatePod is the kubelet's checkAndUpdatePod restated with
// reflect.DeepEqual, for comparison (ref.Annotations must not be nil).
func naiveCheckAndUpdatePod(existing, ref *v1.Pod) (needUpdate, needReconcile, needGracefulDelete bool) {
	local := map[string]bool{ConfigSourceAnnotationKey: true, ConfigMirrorAnnotationKey: true, ConfigFirstSeenAnnotationKey: true}
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if !local[k] {
				out[k] = v
			}
		}
		return out
	}
	if reflect.DeepEqual(existing.Spec, ref.Spec) &&
		reflect.DeepEqual(existing.Labels, ref.Labels) &&
		reflect.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) &&
		reflect.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) &&
		reflect.DeepEqual(strip(existing.Annotations), strip(ref.Annotations)) {
		if !reflect.DeepEqual(existing.Status, ref.Status) {
			existing.Status = ref.Status
			return false, true, false
		}
		return false, false, false
	}
	ref.Annotations[ConfigFirstSeenAnnotationKey] = existing.Annotations[ConfigFirstSeenAnnotationKey]
	existing.Spec = ref.Spec
	existing.Labels = ref.Labels
	existing.DeletionTimestamp = ref.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	existing.Generation = ref.Generation
	existing.Status = ref.Status
	ann := map[string]string{}
	for k, v := range ref.Annotations {
		ann[k] = v
	}
	for k := range local {
		if v, ok := existing.Annotations[k]; ok {
			ann[k] = v
		}
	}
	existing.Annotations = ann
	if ref.DeletionTimestamp != nil {
		return false, false, true
	}
	return true, false, false
}
