package node_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// BenchmarkGenerateAPIStatus is one GenerateAPIStatus of a seed pod (internal/seedpod,
// status cleared) from the status generated for it before, as the node's sync does:
// running=every container runs (a resync of a running pod), stopped=every container
// exited 0 and the pod is terminal (the terminating pod's last status).
func BenchmarkGenerateAPIStatus(b *testing.B) {
	for _, stopped := range []bool{false, true} {
		name := "running"
		if stopped {
			name = "stopped"
		}
		b.Run(name, func(b *testing.B) {
			pod := seedpod.New(1)
			pod.Status = v1.PodStatus{}
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			rs := &pleg.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, IPs: []string{"10.0.0.7"},
				SandboxStatuses: []*pleg.SandboxStatus{{ID: "sb", State: pleg.SandboxReady, IP: "10.0.0.7", CreatedAt: now}}}
			for i, c := range pod.Spec.Containers {
				rs.ContainerStatuses = append(rs.ContainerStatuses, &pleg.ContainerStatus{ID: fmt.Sprintf("c%d", i),
					Name: c.Name, Image: c.Image, State: pleg.ContainerStateRunning, CreatedAt: now, StartedAt: now})
			}
			opts := node.GenerateOptions{HostIPs: []string{"192.168.0.2"}, Now: now}
			opts.OldStatus = node.GenerateAPIStatus(pod, rs, opts)
			want := v1.PodRunning
			if stopped {
				for _, cs := range rs.ContainerStatuses {
					cs.State, cs.FinishedAt = pleg.ContainerStateExited, now.Add(time.Second)
				}
				opts.PodIsTerminal, want = true, v1.PodSucceeded
			}
			b.ReportAllocs()
			for b.Loop() {
				if st := node.GenerateAPIStatus(pod, rs, opts); st.Phase != want || len(st.ContainerStatuses) != len(pod.Spec.Containers) {
					b.Fatalf("phase %s, %d container statuses; want %s, %d", st.Phase, len(st.ContainerStatuses), want, len(pod.Spec.Containers))
				}
			}
		})
	}
}
