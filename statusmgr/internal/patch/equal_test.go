package patch

import (
	"math/rand/v2"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// checkFieldsEqual fails unless FieldsEqual, fieldsEqualByPatch and (with no field
// skipped) the Reference's unchanged flag agree for a -> b, with every skip.
func checkFieldsEqual(t *testing.T, a, b *v1.PodStatus) {
	t.Helper()
	_, unchanged, err := Reference("uid-1", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := FieldsEqual(a, b, ""); got != unchanged {
		t.Fatalf("FieldsEqual = %v, the reference's unchanged %v\na %+v\nb %+v", got, unchanged, a, b)
	}
	for _, f := range statusFields() {
		if got, want := FieldsEqual(a, b, f.name), fieldsEqualByPatch(a, b, f.name); got != want {
			t.Fatalf("skip %s: FieldsEqual = %v, by patch %v\na %+v\nb %+v", f.name, got, want, a, b)
		}
	}
}

// TestFieldsEqual: the direct comparison is the patch's "nothing to write", on random
// statuses, equal ones, and statuses one field apart.
func TestFieldsEqual(t *testing.T) {
	for seed := range uint64(100) {
		a, b := statustest.RandomStatus(seed), statustest.RandomStatus(seed+1)
		checkFieldsEqual(t, &a, &b)
		checkFieldsEqual(t, &a, a.DeepCopy())
		c := randomFilledStatus(seed)
		checkFieldsEqual(t, &c, c.DeepCopy())
		for i := range reflect.TypeFor[v1.PodStatus]().NumField() {
			d := *c.DeepCopy()
			fillRandom(rand.New(rand.NewPCG(seed, uint64(i))), reflect.ValueOf(&d).Elem().Field(i), 0)
			checkFieldsEqual(t, &c, &d)
			checkFieldsEqual(t, &d, &c)
		}
	}
}

// FuzzFieldsEqual: FieldsEqual agrees with the patch (fieldsEqualByPatch, the Reference)
// on random statuses and on statuses a few members apart.
func FuzzFieldsEqual(f *testing.F) {
	f.Add(uint64(0), uint64(1), false)
	f.Add(uint64(5), uint64(9), true)
	f.Fuzz(func(t *testing.T, seedA, seedB uint64, near bool) {
		a, b := randomFilledStatus(seedA), randomFilledStatus(seedB)
		if near {
			b = *a.DeepCopy()
			r := rand.New(rand.NewPCG(seedB, 3))
			for range 1 + r.IntN(3) {
				fillRandom(r, reflect.ValueOf(&b).Elem().Field(r.IntN(reflect.TypeFor[v1.PodStatus]().NumField())), 0)
			}
		}
		checkFieldsEqual(t, &a, &b)
	})
}

// BenchmarkFieldsEqual compares FieldsEqual with fieldsEqualByPatch on statuses that are
// equal and on statuses whose container statuses differ (a new version of a pod).
func BenchmarkFieldsEqual(b *testing.B) {
	old := randomFilledStatus(1)
	same := *old.DeepCopy()
	changed := *old.DeepCopy()
	changed.ContainerStatuses = append(changed.ContainerStatuses, v1.ContainerStatus{Name: "new"})
	for _, bc := range []struct {
		name string
		eq   func(a, b *v1.PodStatus, skip string) bool
	}{{"direct", FieldsEqual}, {"by-patch", fieldsEqualByPatch}} {
		for _, pair := range []struct {
			name string
			b    *v1.PodStatus
		}{{"equal", &same}, {"changed", &changed}} {
			b.Run(bc.name+"/"+pair.name, func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					bc.eq(&old, pair.b, "")
				}
			})
		}
	}
}
