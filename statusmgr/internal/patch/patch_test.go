package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// checkMatchesReference fails unless the typed encoder, Status (the build's: the typed
// encoder, or Reference under the tag podlife_simple) and the reflective Reference give
// the same bytes and the same unchanged flag for old -> nw.
func checkMatchesReference(t *testing.T, old, nw *v1.PodStatus) []byte {
	t.Helper()
	want, wantUnchanged, err := Reference("uid-1", old, nw)
	if err != nil {
		t.Fatal(err)
	}
	typed, typedUnchanged, err := appendTyped(nil, "uid-1", old, nw)
	if err != nil {
		t.Fatal(err)
	}
	if string(typed) != string(want) || typedUnchanged != wantUnchanged {
		t.Fatalf("the typed encoder differs from the reference:\n got %s (unchanged %v)\nwant %s (unchanged %v)\nold %+v\nnew %+v",
			typed, typedUnchanged, want, wantUnchanged, old, nw)
	}
	got, gotUnchanged, err := Status("uid-1", old, nw)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || gotUnchanged != wantUnchanged {
		t.Fatalf("Status (Simple %v) differs from the reference:\n got %s (unchanged %v)\nwant %s (unchanged %v)\nold %+v\nnew %+v",
			Simple, got, gotUnchanged, want, wantUnchanged, old, nw)
	}
	return got
}

// TestStatusMatchesReferenceRandom compares Status with the reflective reference on
// random statuses (statusmgr's TestStatusPatchMatchesReference adds W4's realistic ones).
func TestStatusMatchesReferenceRandom(t *testing.T) {
	for seed := range uint64(500) {
		a := statustest.RandomStatus(seed)
		c, d := randomFilledStatus(seed), randomFilledStatus(seed+1)
		checkMatchesReference(t, &c, &d)
		checkMatchesReference(t, &a, &c)
	}
}

// fillRandom sets v (settable) to a pseudo-random value of its type, reaching every
// exported member of every struct: strings (some needing escapes), numbers, pointers
// (sometimes nil), lists and maps of 0-2 elements, times (sometimes zero, sometimes with
// sub-second parts or in another zone) and quantities. depth bounds recursion.
func fillRandom(r *rand.Rand, v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[metav1.Time]():
		switch r.IntN(4) {
		case 0:
			v.Set(reflect.ValueOf(metav1.Time{}))
		case 1:
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1_700_000_000+r.Int64N(3), int64(r.IntN(2))*5e8).In(time.FixedZone("x", 3600)))))
		default:
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1_700_000_000+r.Int64N(3), 0).UTC())))
		}
		return
	case reflect.TypeFor[resource.Quantity]():
		v.Set(reflect.ValueOf(resource.MustParse([]string{"0", "100m", "1", "64Mi", "1000m"}[r.IntN(5)])))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"", "a", "b", `q"<&>`, "ü"}[r.IntN(5)])
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.IntN(3)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(3)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(r.IntN(3)) / 2)
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		n := r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(r, s.Index(i), depth+1)
		}
		if n > 0 || r.IntN(2) == 0 {
			v.Set(s)
		}
	case reflect.Map:
		n := r.IntN(3)
		m := reflect.MakeMapWithSize(v.Type(), n)
		for range n {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillRandom(r, k, depth+1)
			fillRandom(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && r.IntN(3) > 0 {
				fillRandom(r, v.Field(i), depth+1)
			}
		}
	}
}

// randomFilledStatus is a status with random values in random fields (every field of
// v1.PodStatus, its containers and conditions can be reached).
func randomFilledStatus(seed uint64) v1.PodStatus {
	var s v1.PodStatus
	fillRandom(rand.New(rand.NewPCG(seed, 42)), reflect.ValueOf(&s).Elem(), 0)
	return s
}

// FuzzStatusMatchesReference: Status gives the reference's bytes on random
// statuses, including ones that set every field of v1.PodStatus by reflection (times with
// sub-second parts or in other zones, strings that need escaping) and statuses mutated from
// each other.
func FuzzStatusMatchesReference(f *testing.F) {
	f.Add(uint64(0), uint64(1), uint8(0))
	f.Add(uint64(3), uint64(3), uint8(1))
	f.Add(uint64(0xdead), uint64(0xbeef), uint8(2))
	f.Fuzz(func(t *testing.T, oldSeed, newSeed uint64, kind uint8) {
		var old, nw v1.PodStatus
		switch kind % 3 {
		case 0:
			old, nw = statustest.RandomStatus(oldSeed), statustest.RandomStatus(newSeed)
		case 1:
			old, nw = randomFilledStatus(oldSeed), randomFilledStatus(newSeed)
		case 2: // a few members changed
			old = randomFilledStatus(oldSeed)
			nw = *old.DeepCopy()
			r := rand.New(rand.NewPCG(newSeed, 7))
			for range 1 + r.IntN(3) {
				fillRandom(r, reflect.ValueOf(&nw).Elem().Field(r.IntN(reflect.TypeFor[v1.PodStatus]().NumField())), 0)
			}
		}
		checkMatchesReference(t, &old, &nw)
	})
}

// TestStatusCoversEveryField walks v1.PodStatus's fields by reflection: each is
// patched by typed code or by the reflective fallback, and a status that differs from
// another in that field alone (or in one member of a container status, its state, resources,
// resource claims or volume mounts, or of a condition) gives a patch that, applied to the
// other, gives it back, and the reference's bytes; so does the same change on a status random
// in every field. A field a later k8s.io/api adds is reached the same way.
func TestStatusCoversEveryField(t *testing.T) {
	fields := statusFields()
	var names []string
	for _, f := range statusPatchers() {
		names = append(names, f.field.name)
	}
	for _, f := range fields {
		if !slices.Contains(names, f.name) {
			t.Errorf("status field %s is patched by nothing", f.name)
		}
	}
	for name := range typedStatusFields {
		if !slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == name }) {
			t.Errorf("typed code for %s, which v1.PodStatus does not have", name)
		}
	}
	if len(names) != len(fields) {
		t.Errorf("%d patchers for %d status fields", len(names), len(fields))
	}
	// Each field alone, and each member of the nested types the typed code writes.
	paths := [][]int{}
	for i := range reflect.TypeFor[v1.PodStatus]().NumField() {
		paths = append(paths, []int{i})
	}
	csIndex := fieldIndex(t, reflect.TypeFor[v1.PodStatus](), "ContainerStatuses")
	condIndex := fieldIndex(t, reflect.TypeFor[v1.PodStatus](), "Conditions")
	for i := range reflect.TypeFor[v1.ContainerStatus]().NumField() {
		paths = append(paths, []int{csIndex, 0, i})
	}
	for _, state := range []string{"State", "LastTerminationState"} {
		si := fieldIndex(t, reflect.TypeFor[v1.ContainerStatus](), state)
		for k, st := range []reflect.Type{reflect.TypeFor[v1.ContainerStateWaiting](), reflect.TypeFor[v1.ContainerStateRunning](), reflect.TypeFor[v1.ContainerStateTerminated]()} {
			for i := range st.NumField() {
				paths = append(paths, []int{csIndex, 0, si, k, i})
			}
		}
	}
	for i := range reflect.TypeFor[v1.PodCondition]().NumField() {
		paths = append(paths, []int{condIndex, 0, i})
	}
	mounts := fieldIndex(t, reflect.TypeFor[v1.ContainerStatus](), "VolumeMounts")
	for i := range reflect.TypeFor[v1.VolumeMountStatus]().NumField() {
		paths = append(paths, []int{csIndex, 0, mounts, 0, i})
	}
	resources := fieldIndex(t, reflect.TypeFor[v1.ContainerStatus](), "Resources")
	for i := range reflect.TypeFor[v1.ResourceRequirements]().NumField() {
		paths = append(paths, []int{csIndex, 0, resources, i})
	}
	claims := fieldIndex(t, reflect.TypeFor[v1.ResourceRequirements](), "Claims")
	for i := range reflect.TypeFor[v1.ResourceClaim]().NumField() {
		paths = append(paths, []int{csIndex, 0, resources, claims, 0, i})
	}
	for _, path := range paths {
		for seed := range uint64(8) {
			base := v1.PodStatus{
				Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "i"}},
			}
			reach(reflect.ValueOf(&base).Elem(), path) // the same pointers on both sides
			changed := *base.DeepCopy()
			setPath(rand.New(rand.NewPCG(seed, 1)), reflect.ValueOf(&changed).Elem(), path)
			// Condition types are merge keys: unique on the server.
			changed.Conditions = slices.CompactFunc(changed.Conditions, func(a, b v1.PodCondition) bool { return a.Type == b.Type })
			old, nw := statustest.RoundTrip(t, base), statustest.RoundTrip(t, changed)
			if equality.Semantic.DeepEqual(old, nw) {
				continue
			}
			for _, pair := range [][2]*v1.PodStatus{{&old, &nw}, {&nw, &old}} {
				patch := checkMatchesReference(t, pair[0], pair[1])
				got := statustest.ApplyPatch(t, "uid-1", *pair[0], patch).Status
				if !equality.Semantic.DeepEqual(got, *pair[1]) {
					t.Errorf("path %v: patched status differs (-want +got):\n%s\npatch: %s", path, cmp.Diff(*pair[1], got), patch)
				}
			}
			// The same change on a status random in every field (not always valid for the
			// server: compared with the reference only).
			filled := randomFilledStatus(seed)
			reach(reflect.ValueOf(&filled).Elem(), path)
			filledChanged := *filled.DeepCopy()
			setPath(rand.New(rand.NewPCG(seed, 2)), reflect.ValueOf(&filledChanged).Elem(), path)
			checkMatchesReference(t, &filled, &filledChanged)
			checkMatchesReference(t, &filledChanged, &filled)
		}
	}
}

func fieldIndex(t *testing.T, typ reflect.Type, name string) int {
	f, ok := typ.FieldByName(name)
	if !ok {
		t.Fatalf("%s has no field %s", typ, name)
	}
	return f.Index[0]
}

// reach returns the struct holding the member at path (field indices; through lists,
// element 0; through a ContainerState, the next index selects Waiting, Running or
// Terminated), allocating the pointers on the way, and the member's index.
func reach(v reflect.Value, path []int) (reflect.Value, int) {
	for len(path) > 1 {
		if v.Kind() == reflect.Slice {
			for v.Len() <= path[0] {
				v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
			}
			v = v.Index(path[0])
		} else {
			v = v.Field(path[0])
		}
		path = path[1:]
		if v.Type() == reflect.TypeFor[v1.ContainerState]() && len(path) == 2 {
			v, path = v.Field(path[0]), path[1:]
		}
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
	}
	return v, path[0]
}

// setPath fills the member at path (see reach) with a random non-zero value.
func setPath(r *rand.Rand, v reflect.Value, path []int) {
	parent, i := reach(v, path)
	for range 50 { // until it is non-zero
		if fillRandom(r, parent.Field(i), 0); !parent.Field(i).IsZero() {
			return
		}
	}
	panic(fmt.Sprintf("no value for %v", path))
}

// Conditions equal on both sides in the same order are decided in one pass
// (sameConditions); a list with a type twice is not, and gets the reference's patch.
func TestStatusSameConditions(t *testing.T) {
	conds := []v1.PodCondition{
		statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0),
		statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0),
		statustest.Cond(v1.ContainersReady, v1.ConditionFalse, "", t0),
	}
	twice := append(slices.Clone(conds), statustest.Cond(v1.PodReady, v1.ConditionFalse, "again", t0))
	for _, tc := range []struct {
		name     string
		old, new []v1.PodCondition
		same     bool
	}{
		{"equal", conds, slices.Clone(conds), true},
		{"both empty", nil, []v1.PodCondition{}, true},
		{"one member changed", conds, append(slices.Clone(conds[:2]), statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0)), false},
		{"reordered", conds, []v1.PodCondition{conds[1], conds[0], conds[2]}, false},
		{"a type twice", twice, slices.Clone(twice), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameConditions(tc.old, tc.new); got != tc.same {
				t.Errorf("sameConditions = %v, want %v", got, tc.same)
			}
			old, nw := v1.PodStatus{Conditions: tc.old}, v1.PodStatus{Conditions: tc.new}
			checkMatchesReference(t, &old, &nw)
		})
	}
}

func TestWriteScalarMatchesEncodingJSON(t *testing.T) {
	values := []any{
		"plain", "with \"quotes\"", "back\\slash", "<html>&", "tab\there", "üñí", "",
		v1.PodRunning, int32(-5), int64(1 << 40), true, false,
		metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))),
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := v.(string); ok {
			if got := appendString(nil, s); string(got) != string(want) {
				t.Errorf("%q: appendString wrote %s, want %s", s, got, want)
			}
		}
		got, ok := writeScalar(nil, reflect.ValueOf(v))
		if !ok {
			if _, ok := v.(string); !ok {
				t.Errorf("%#v: not written", v)
			}
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%#v: got %s, want %s", v, got, want)
		}
	}
	if got, ok := writeScalar([]byte("x"), reflect.ValueOf([]string{"a"})); ok || string(got) != "x" {
		t.Errorf("a slice was written as a scalar: %s", got)
	}
}

// writeValue leaves out exactly the members that decode back to the same value: zero
// values and empty lists, but not a pointer to a zero value.
func TestWriteValue(t *testing.T) {
	no, cpu := false, resource.MustParse("250m")
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"zero members left out", v1.ContainerStatus{Name: "c", Image: "busybox"}, `{"name":"c","image":"busybox"}`},
		{"pointer to false kept", v1.ContainerStatus{Name: "c", Started: &no}, `{"name":"c","started":false}`},
		{"pointer to an empty struct kept", v1.ContainerState{Running: &v1.ContainerStateRunning{}}, `{"running":{}}`},
		{"exit code 0 left out, times kept", v1.ContainerStateTerminated{Reason: "Completed", FinishedAt: metav1.NewTime(t0)},
			`{"reason":"Completed","finishedAt":"2026-01-02T03:04:05Z"}`},
		{"quantities and maps by encoding/json", v1.ContainerStatus{Name: "c", AllocatedResources: v1.ResourceList{v1.ResourceCPU: cpu}},
			`{"name":"c","allocatedResources":{"cpu":"250m"}}`},
		{"empty list left out", v1.ContainerStatus{Name: "c", VolumeMounts: []v1.VolumeMountStatus{}}, `{"name":"c"}`},
		{"list elements", []v1.HostIP{{IP: "10.0.0.1"}, {}}, `[{"ip":"10.0.0.1"},{}]`},
		{"bytes as base64", struct {
			Data []byte `json:"data"`
		}{Data: []byte("hi")}, `{"data":"aGk="}`},
		{"escaped strings", v1.ContainerStateWaiting{Message: `say "hi" <now>`}, `{"message":"say \"hi\" \u003cnow\u003e"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := writeValue(nil, reflect.ValueOf(tc.v))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			back := reflect.New(reflect.TypeOf(tc.v))
			if err := json.Unmarshal(got, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(back.Elem().Interface(), tc.v) {
				t.Errorf("reads back as %+v, want %+v", back.Elem().Interface(), tc.v)
			}
		})
	}
}

// Status sends only what changed, with the pod's UID as a precondition (statusmgr's
// ExampleStatusPatch, from before the encoder was internal).
func TestStatusExample(t *testing.T) {
	old := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7"}
	now := v1.PodStatus{Phase: v1.PodFailed, PodIP: "10.0.0.7", Reason: "Evicted"}
	patch, _, _ := Status("uid-1", &old, &now)
	if want := `{"metadata":{"uid":"uid-1"},"status":{"phase":"Failed","reason":"Evicted"}}`; string(patch) != want {
		t.Errorf("patch %s, want %s", patch, want)
	}
}
