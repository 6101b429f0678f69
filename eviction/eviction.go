// Package eviction is the kubelet's eviction manager's pod-level decisions
// (pkg/kubelet/eviction, 1.37) as pure functions over stats you supply:
//
//   - LocalStorageEviction: a pod whose emptyDir is over its sizeLimit, whose
//     ephemeral-storage use is over the pod's limit, or one of whose containers is over
//     its own limit is evicted at once (grace 1, ImmediateGracePeriodSeconds), with the
//     kubelet's message.
//   - RankMemoryPressure and RankDiskPressure: the order the kubelet evicts pods in
//     under node pressure (pods using more than they request first, then lower
//     priority, then the most usage above requests); the kubelet evicts the first pod
//     that is not critical, one per round. There is no QoS term: the QoS class only
//     shows through the requests (a BestEffort pod requests nothing).
//   - EvictionMessage: the message of a pressure eviction, naming the resource and the
//     containers using more than they request.
//   - EvictedStatus: the status function of the kill (phase Failed, reason Evicted, the
//     message; for a pressure eviction the DisruptionTarget condition, reason
//     TerminationByKubelet). Hand it to a node's KillPod.
//
// Nothing here measures usage, watches thresholds or kills: the caller does, with its
// own stats (PodStats) and its own node.KillPod. Critical pods (admission.IsCriticalPod)
// are never evicted: LocalStorageEviction returns false for them, and a caller walking a
// ranking skips them.
package eviction

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/internal/podres"
)

// The kubelet's eviction reason, grace and messages.
const (
	// Reason is the status reason (and event reason) of an evicted pod.
	Reason = "Evicted"
	// ImmediateGracePeriodSeconds is the grace period of a limit eviction and of a hard
	// threshold's eviction.
	ImmediateGracePeriodSeconds int64 = 1

	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podMessageFmt                       = "Pod %s was using %s, request is %s, has larger consumption of %v. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
)

// ContainerStats is what the kubelet's stats summary says of one container; a nil
// field is not known.
type ContainerStats struct {
	Name string
	// RootfsBytes and LogsBytes are the container's writable layer and logs.
	RootfsBytes, LogsBytes *int64
	// MemoryWorkingSetBytes is its memory working set.
	MemoryWorkingSetBytes *int64
}

// PodStats is what the kubelet's stats summary says of one pod.
type PodStats struct {
	Containers []ContainerStats
	// VolumeBytes are the used bytes of the pod's volumes, by volume name.
	VolumeBytes map[string]int64
	// EphemeralStorageBytes is the pod's whole ephemeral-storage use (its containers'
	// rootfs and logs, its local volumes); nil: unknown, counted as 0.
	EphemeralStorageBytes *int64
	// MemoryWorkingSetBytes is the pod's memory working set (nil: unknown).
	MemoryWorkingSetBytes *int64
}

// StatsFunc returns a pod's stats, false when there are none.
type StatsFunc func(*v1.Pod) (PodStats, bool)

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func binary(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.BinarySI) }

// LocalStorageEviction is the kubelet's localStorageEviction for one pod: it returns
// the eviction message and true when, checked in this order,
//   - an emptyDir volume (any medium) uses more than its positive sizeLimit
//     ("Usage of EmptyDir volume "cache" exceeds the limit "1Gi". ");
//   - the pod has an ephemeral-storage limit (its containers' and sidecars' sum, or
//     the pod's own, plus the overhead) and stats.EphemeralStorageBytes exceeds it
//     ("Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ");
//   - a container or sidecar with a non-zero ephemeral-storage limit uses more: its
//     logs, plus its rootfs unless the node has a dedicated image filesystem
//     ("Container app exceeded its local ephemeral storage limit "1Gi". ").
//
// A critical pod is never evicted (false). The status is EvictedStatus(pod, msg, false)
// and the grace period ImmediateGracePeriodSeconds.
func LocalStorageEviction(pod *v1.Pod, stats PodStats, dedicatedImageFs bool) (string, bool) {
	if pod == nil || admission.IsCriticalPod(pod) {
		return "", false
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() != 1 {
			continue
		}
		used, ok := stats.VolumeBytes[vol.Name]
		if ok && binary(used).Cmp(*vol.EmptyDir.SizeLimit) > 0 {
			return fmt.Sprintf(emptyDirMessageFmt, vol.Name, vol.EmptyDir.SizeLimit.String()), true
		}
	}
	if limit, ok := podres.Limits(pod)[v1.ResourceEphemeralStorage]; ok {
		if binary(deref(stats.EphemeralStorageBytes)).Cmp(limit) > 0 {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String()), true
		}
	}
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if l, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && l.Value() != 0 {
			limits[c.Name] = l
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if l, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && l.Value() != 0 && podres.IsRestartableInitContainer(c) {
			limits[c.Name] = l
		}
	}
	for _, cs := range stats.Containers {
		used := deref(cs.LogsBytes)
		if !dedicatedImageFs {
			used += deref(cs.RootfsBytes)
		}
		if l, ok := limits[cs.Name]; ok && l.Cmp(*binary(used)) < 0 {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, cs.Name, l.String()), true
		}
	}
	return "", false
}

// EvictedStatus is the status function of an eviction's kill: phase Failed, reason
// Evicted, the message; with condition (a pressure eviction; the limit evictions have
// none) also the DisruptionTarget condition (True, TerminationByKubelet, the message),
// its observedGeneration the pod's generation.
func EvictedStatus(pod *v1.Pod, message string, condition bool) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		s.Phase = v1.PodFailed
		s.Reason = Reason
		s.Message = message
		if condition {
			var gen int64
			if pod != nil {
				gen = pod.Generation
			}
			admission.SetCondition(s, v1.PodCondition{Type: v1.DisruptionTarget, ObservedGeneration: gen,
				Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: message})
		}
	}
}

// cmpBool orders true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// rank sorts pods by: pods without stats first, usage over the request first, lower
// priority first, more usage above the request first.
func rank(pods []*v1.Pod, stats StatsFunc, usage func(*v1.Pod, PodStats) int64, req v1.ResourceName) {
	if stats == nil {
		stats = func(*v1.Pod) (PodStats, bool) { return PodStats{}, false }
	}
	type key struct {
		found   bool
		exceeds bool
		prio    int32
		above   int64
	}
	keys := make(map[*v1.Pod]key, len(pods))
	for _, p := range pods {
		if p == nil {
			continue
		}
		s, ok := stats(p)
		k := key{found: ok, prio: priority(p)}
		if ok {
			u := usage(p, s)
			r := podres.RequestQuantity(p, req)
			k.exceeds = binary(u).Cmp(r) > 0
			k.above = u - r.Value()
		}
		keys[p] = k
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		ka, kb := keys[a], keys[b]
		if c := cmpBool(!ka.found, !kb.found); c != 0 {
			return c
		}
		if ka.found && kb.found {
			if c := cmpBool(ka.exceeds, kb.exceeds); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(ka.prio, kb.prio); c != 0 {
			return c
		}
		if ka.found && kb.found {
			return cmp.Compare(kb.above, ka.above)
		}
		return 0
	})
}

// RankMemoryPressure sorts pods in the order the kubelet evicts them under memory
// pressure (rankMemoryPressure): pods whose memory working set exceeds their memory
// request first, then by priority (lowest first), then by working set above the request
// (most first). Pods without stats come first (the kubelet evicts what it cannot measure), by priority. The sort is stable.
func RankMemoryPressure(pods []*v1.Pod, stats StatsFunc) {
	rank(pods, stats, func(_ *v1.Pod, s PodStats) int64 { return deref(s.MemoryWorkingSetBytes) }, v1.ResourceMemory)
}

// DiskUsage is a pod's disk use as the kubelet ranks it on a node without a separate
// image filesystem: every container's rootfs and logs, and its local volumes (hostPath,
// emptyDir on disk, configMap, gitRepo).
func DiskUsage(pod *v1.Pod, s PodStats) int64 {
	var n int64
	for _, c := range s.Containers {
		n += deref(c.RootfsBytes) + deref(c.LogsBytes)
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.HostPath != nil || vol.GitRepo != nil || vol.ConfigMap != nil ||
			(vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault) {
			n += s.VolumeBytes[vol.Name]
		}
	}
	return n
}

// RankDiskPressure sorts pods in the order the kubelet evicts them under nodefs
// pressure (rankDiskPressureFunc with rootfs, logs and local volumes): DiskUsage above
// the ephemeral-storage request first, then by priority, then by usage above the
// request. Pods without stats come last. The sort is stable.
func RankDiskPressure(pods []*v1.Pod, stats StatsFunc) {
	rank(pods, stats, DiskUsage, v1.ResourceEphemeralStorage)
}

// EvictionMessage is the kubelet's evictionMessage for a pressure eviction of the pod:
// "The node was low on resource: memory. ", then, with threshold and available,
// "Threshold quantity: 100Mi, available: 50Mi. ", then, for memory with pod-level
// requests, the pod's use against its request, then each container (and init
// container) using more than its request ("Container app was using 1Gi, request is
// 500Mi, has larger consumption of memory. "). Only memory and ephemeral-storage name
// containers.
func EvictionMessage(res v1.ResourceName, pod *v1.Pod, stats PodStats, threshold, available *resource.Quantity) string {
	msg := fmt.Sprintf(nodeLowMessageFmt, res)
	if threshold != nil && available != nil {
		msg += fmt.Sprintf(thresholdMetMessageFmt, threshold, available)
	}
	if pod == nil {
		return msg
	}
	if res == v1.ResourceMemory && podres.IsPodLevelResourcesSet(pod) {
		if req, ok := pod.Spec.Resources.Requests[res]; ok && stats.MemoryWorkingSetBytes != nil {
			msg += fmt.Sprintf(podMessageFmt, pod.Name, binary(*stats.MemoryWorkingSetBytes).String(), req.String(), res)
		}
	}
	containers := append(slices.Clip(pod.Spec.Containers), pod.Spec.InitContainers...)
	for _, cs := range stats.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				if cs.RootfsBytes != nil && cs.LogsBytes != nil {
					usage = binary(*cs.RootfsBytes + *cs.LogsBytes)
				}
			case v1.ResourceMemory:
				if cs.MemoryWorkingSetBytes != nil {
					usage = binary(*cs.MemoryWorkingSetBytes)
				}
			}
			if usage != nil && usage.Cmp(req) > 0 {
				msg += fmt.Sprintf(containerMessageFmt, c.Name, usage.String(), req.String(), res)
			}
			break
		}
	}
	return msg
}
