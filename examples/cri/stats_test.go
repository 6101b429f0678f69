package cri_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/eviction"
	"github.com/podlife/podlife/examples/cri"
)

// statsCRI answers Version and ListContainerStats with fixed stats, and records the
// filter it got.
type statsCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	stats  []*runtimeapi.ContainerStats
	filter chan *runtimeapi.ContainerStatsFilter
}

func (f *statsCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeApiVersion: "v1"}, nil
}

func (f *statsCRI) ListContainerStats(_ context.Context, r *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f.filter <- r.GetFilter()
	return &runtimeapi.ListContainerStatsResponse{Stats: f.stats}, nil
}

func containerStats(name string, attempt uint32, used *uint64) *runtimeapi.ContainerStats {
	s := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: name + "-id",
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Labels:   map[string]string{cri.LabelContainerName: name}}}
	if used != nil {
		s.WritableLayer = &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: *used}}
	}
	return s
}

func u64(n uint64) *uint64 { return &n }

// PodStats: the newest instance's writable layer and every log file of a container,
// summed into the pod's use; a container without a writable layer's stats has none.
func TestPodStats(t *testing.T) {
	dir, err := os.MkdirTemp("", "statscri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &statsCRI{filter: make(chan *runtimeapi.ContainerStatsFilter, 1), stats: []*runtimeapi.ContainerStats{
		containerStats("app", 1, u64(3000)), containerStats("app", 0, u64(1<<30)), containerStats("side", 0, nil)}}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, f)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	logRoot := t.TempDir()
	rt, err := cri.New(cri.Config{Endpoint: "unix://" + sock, LogRoot: logRoot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	appLogs := filepath.Join(logRoot, "ns_p_uid-1", "app")
	if err := os.MkdirAll(appLogs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"0.log": 100, "1.log": 20} {
		if err := os.WriteFile(filepath.Join(appLogs, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	got, err := rt.PodStats(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	i64 := func(n int64) *int64 { return &n }
	want := eviction.PodStats{EphemeralStorageBytes: i64(3120), Containers: []eviction.ContainerStats{
		{Name: "app", RootfsBytes: i64(3000), LogsBytes: i64(120)},
		{Name: "side", LogsBytes: i64(0)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PodStats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{cri.LabelPodUID: "uid-1"}, (<-f.filter).GetLabelSelector()); diff != "" {
		t.Errorf("filter (-want +got):\n%s", diff)
	}
}
