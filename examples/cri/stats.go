package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/eviction"
)

// PodStats is the pod's ephemeral-storage use as the kubelet's CRI stats provider sees it,
// for eviction.LocalStorageEviction: per container (one ListContainerStats filtered by the
// pod's UID label) its writable layer (WritableLayer.UsedBytes) and the size of its log
// files (every file under LogRoot/<namespace>_<name>_<uid>/<container>/, all restarts, as
// the kubelet counts a container's logs), and the pod's EphemeralStorageBytes, the sum of
// both over its containers. Of a container with several instances (restarts) the newest
// (the highest attempt) counts, as the kubelet keeps the running instance. There are no
// volume stats: the runtime mounts no volumes. A container the runtime reports no
// writable layer for has RootfsBytes nil; one without a log directory LogsBytes 0.
//
// containerd computes the writable layer from its snapshotter's usage in the background
// (every 10 s by default, stats_collect_period), so a write shows up to that much later.
func (r *Runtime) PodStats(ctx context.Context, pod *v1.Pod) (eviction.PodStats, error) {
	resp, err := r.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{
		Filter: &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{LabelPodUID: string(pod.UID)}}})
	if err != nil {
		return eviction.PodStats{}, fmt.Errorf("cri: ListContainerStats: %w", err)
	}
	type newest struct {
		attempt uint32
		rootfs  *int64
	}
	byName := map[string]newest{}
	var order []string
	for _, s := range resp.GetStats() {
		a := s.GetAttributes()
		name := a.GetLabels()[LabelContainerName]
		if name == "" {
			name = a.GetMetadata().GetName()
		}
		var rootfs *int64
		if wl := s.GetWritableLayer(); wl != nil && wl.GetUsedBytes() != nil {
			n := int64(wl.GetUsedBytes().GetValue())
			rootfs = &n
		}
		prev, seen := byName[name]
		if !seen {
			order = append(order, name)
		} else if a.GetMetadata().GetAttempt() < prev.attempt {
			continue
		}
		byName[name] = newest{attempt: a.GetMetadata().GetAttempt(), rootfs: rootfs}
	}
	dir := podLogDir(r.cfg.LogRoot, pod.Namespace, pod.Name, pod.UID)
	var stats eviction.PodStats
	var total int64
	for _, name := range order {
		logs, err := dirSize(filepath.Join(dir, name))
		if err != nil {
			return eviction.PodStats{}, fmt.Errorf("cri: logs of %s/%s container %s: %w", pod.Namespace, pod.Name, name, err)
		}
		cs := eviction.ContainerStats{Name: name, RootfsBytes: byName[name].rootfs, LogsBytes: &logs}
		if cs.RootfsBytes != nil {
			total += *cs.RootfsBytes
		}
		total += logs
		stats.Containers = append(stats.Containers, cs)
	}
	stats.EphemeralStorageBytes = &total
	return stats, nil
}

// dirSize is the total size of the regular files under dir (0 if it does not exist).
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // rotated away meanwhile
		}
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	return n, nil
}
