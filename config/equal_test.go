package config

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/seedpod"
)

// settable returns v made settable even if it was reached through an unexported field.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// positions lists every addressable value inside v (v included), depth first.
func positions(v reflect.Value, out []reflect.Value) []reflect.Value {
	v = settable(v)
	out = append(out, v)
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			out = positions(v.Elem(), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = positions(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = positions(v.Field(i), out)
		}
	}
	return out
}

// mutate changes the value at one random position of v in one of the ways that matter to
// DeepEqual: a scalar, nil against empty, nil against zero, a length, a map entry. It
// never writes through memory that v may share with another value: containers are
// replaced, not modified.
func mutate(r *rand.Rand, v reflect.Value) {
	ps := positions(v, nil)
	p := ps[r.IntN(len(ps))]
	switch p.Kind() {
	case reflect.String:
		if r.IntN(2) == 0 {
			p.SetString(p.String() + "x")
		} else {
			p.SetString("")
		}
	case reflect.Bool:
		p.SetBool(!p.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.SetInt(p.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.SetUint(p.Uint() + 1)
	case reflect.Pointer:
		if p.IsNil() {
			p.Set(reflect.New(p.Type().Elem()))
		} else {
			p.SetZero()
		}
	case reflect.Slice:
		switch {
		case p.IsNil():
			p.Set(reflect.MakeSlice(p.Type(), 0, 0))
		case p.Len() == 0:
			p.SetZero()
		case r.IntN(2) == 0:
			p.Set(p.Slice(0, p.Len()-1))
		default:
			n := reflect.MakeSlice(p.Type(), p.Len()+1, p.Len()+1)
			reflect.Copy(n, p)
			p.Set(n)
		}
	case reflect.Map:
		switch {
		case p.IsNil():
			p.Set(reflect.MakeMap(p.Type()))
		case p.Len() == 0:
			p.SetZero()
		default:
			n := reflect.MakeMap(p.Type())
			iter := p.MapRange()
			for iter.Next() {
				n.SetMapIndex(iter.Key(), iter.Value())
			}
			k := reflect.New(p.Type().Key()).Elem()
			if k.Kind() == reflect.String {
				k.SetString("new")
			}
			n.SetMapIndex(k, reflect.Zero(p.Type().Elem()))
			p.Set(n)
		}
	}
}

// richPod is a seed pod with more of the spec filled in: resources, probes, env, a
// deletion timestamp, so that mutations reach quantities, times and maps.
func richPod() *v1.Pod {
	p := seedpod.New(7)
	c := &p.Spec.Containers[0]
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi"), v1.ResourceCPU: resource.MustParse("1")}
	c.Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}
	p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox"}}
	now := metav1.Date(2026, 11, 2, 0, 0, 0, 5, time.UTC)
	p.DeletionTimestamp = &now
	p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, FinishedAt: now}}}}
	return p
}

// TestCompiledEqualMatchesDeepEqual checks the compiled comparators against
// reflect.DeepEqual on random mutations of a pod, both on deep copies and on shallow
// copies that share memory with the original.
func TestCompiledEqualMatchesDeepEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := richPod()
	equal, differ := 0, 0
	for i := range 20000 {
		a := base.DeepCopy()
		var b *v1.Pod
		if i%2 == 0 {
			b = a.DeepCopy()
		} else {
			c := *a
			b = &c
		}
		for range r.IntN(3) {
			mutate(r, reflect.ValueOf(b).Elem())
		}
		if r.IntN(4) == 0 {
			mutate(r, reflect.ValueOf(a).Elem())
		}
		checks := []struct {
			name      string
			got, want bool
		}{
			{"spec", specEqual(a, b, nil), reflect.DeepEqual(a.Spec, b.Spec)},
			{"status", statusEqual(a, b, nil), reflect.DeepEqual(a.Status, b.Status)},
			{"deletionTimestamp", deletionTimestampEqual(a, b), reflect.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp)},
			{"labels", stringMapEqual(a.Labels, b.Labels), reflect.DeepEqual(a.Labels, b.Labels)},
			{"deletionGrace", int64PtrEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds), reflect.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Fatalf("iteration %d: %s: compiled %v, reflect.DeepEqual %v", i, c.name, c.got, c.want)
			}
			if c.want {
				equal++
			} else {
				differ++
			}
		}
	}
	if equal < 1000 || differ < 1000 {
		t.Fatalf("too few cases of one kind: %d equal, %d different", equal, differ)
	}
}

// odd exercises the kinds pods do not use: floats, complex numbers, arrays, interfaces,
// funcs, non-string maps, byte slices and a recursive type.
type odd struct {
	F   float64
	C   complex64
	A   [2]int8
	I   any
	Fn  func()
	M   map[int]string
	B   []byte
	U   uint16
	N   *odd
	_   int32
	Z   struct{}
	Arr [0]string
}
