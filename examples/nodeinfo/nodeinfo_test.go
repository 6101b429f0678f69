package nodeinfo

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseResources(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr bool
	}{
		{name: "empty", in: " ", want: map[string]string{}},
		{name: "several", in: "cpu=2, memory=4Gi,pods=110,ephemeral-storage=20Gi",
			want: map[string]string{"cpu": "2", "memory": "4Gi", "pods": "110", "ephemeral-storage": "20Gi"}},
		{name: "millicores", in: "cpu=1500m", want: map[string]string{"cpu": "1500m"}},
		{name: "extended resource", in: "example.com/gpu=1", want: map[string]string{"example.com/gpu": "1"}},
		{name: "no equals", in: "cpu", wantErr: true},
		{name: "no name", in: "=2", wantErr: true},
		{name: "bad quantity", in: "cpu=two", wantErr: true},
		{name: "negative", in: "cpu=-1", wantErr: true},
		{name: "twice", in: "cpu=1,cpu=2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl, err := ParseResources(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, strs(rl)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func strs(rl v1.ResourceList) map[string]string {
	m := map[string]string{}
	for k, q := range rl {
		m[string(k)] = q.String()
	}
	return m
}

func TestMemTotal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{name: "kB", in: "MemFree:  1 kB\nMemTotal:       16303412 kB\n", want: 16303412 * 1024},
		{name: "bytes", in: "MemTotal: 4096\n", want: 4096},
		{name: "missing", in: "MemFree: 1 kB\n", wantErr: true},
		{name: "garbage", in: "MemTotal: lots kB\n", wantErr: true},
		{name: "unit", in: "MemTotal: 1 MB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MemTotal(strings.NewReader(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("MemTotal = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New without a name: err = %v, want ErrInvalid", err)
	}
	n, err := New(Config{Name: "node1", DiskPath: t.TempDir(),
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, Labels: map[string]string{"zone": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"kubernetes.io/hostname": "node1", "kubernetes.io/os": runtime.GOOS,
		"kubernetes.io/arch": runtime.GOARCH, "beta.kubernetes.io/os": runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH, "zone": "a"}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	a := n.Status.Allocatable
	if q := a[v1.ResourceCPU]; q.String() != "1" {
		t.Errorf("cpu = %s, want the override 1", q.String())
	}
	if q := a[v1.ResourcePods]; q.Value() != DefaultMaxPods {
		t.Errorf("pods = %s, want %d", q.String(), DefaultMaxPods)
	}
	if runtime.GOOS == "linux" {
		for _, r := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceEphemeralStorage} {
			if q, ok := a[r]; !ok || q.Sign() <= 0 {
				t.Errorf("%s = %v (present %v), want the machine's", r, q.String(), ok)
			}
		}
	}
	if diff := cmp.Diff(strs(n.Status.Allocatable), strs(n.Status.Capacity)); diff != "" {
		t.Errorf("capacity differs from allocatable:\n%s", diff)
	}
}
