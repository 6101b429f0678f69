// Package config holds a verbatim copy of the kubelet's pkg/kubelet/config (config.go,
// mux.go, sources.go; made by copy-kubelet.sh, never committed) and this file, the only
// one written here, which exports the config merge the side-by-side W1 drives.
package config

import (
	"time"

	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// The copies are made by ../../copy-kubelet.sh (run.sh runs it); without them, the build
// stops here first.
var _ = runCopyKubeletShFirst

//go:generate ../../copy-kubelet.sh

// Storage is the kubelet's podStorage.
type Storage struct{ s *podStorage }

// noSLI is a startup-latency observer that records nothing.
type noSLI struct{}

func (noSLI) ObservedPodOnWatch(klog.Logger, *v1.Pod, time.Time) {}

// NewStorage returns the kubelet's podStorage as newPodStorage builds it (the updates
// channel is never written: Set drives merge, not Merge).
func NewStorage() *Storage {
	return &Storage{s: newPodStorage(make(chan kubetypes.PodUpdate), &record.FakeRecorder{}, noSLI{})}
}

// Set runs the kubelet's podStorage.merge for a Set of pods from source: its five
// classifications (each a deep copy, as the kubelet delivers them).
func (s *Storage) Set(ctx context.Context, source string, pods []*v1.Pod) (adds, updates, deletes, removes, reconciles []*v1.Pod) {
	a, u, d, r, c := s.s.merge(ctx, source, sourceUpdate{Pods: pods})
	return a.Pods, u.Pods, d.Pods, r.Pods, c.Pods
}
