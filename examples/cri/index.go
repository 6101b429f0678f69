package cri

import (
	"k8s.io/apimachinery/pkg/types"
)

// podIndex is the runtime's knowledge of which sandboxes and containers each pod has: what
// the last full list (ListPods, the PLEG's relist) showed, plus what the runtime created
// itself since. PodStatus reads a known pod's objects by ID from it (PodSandboxStatus,
// ContainerStatus: one object each, as the kubelet's GetPodStatus does with its relist's
// IDs) instead of listing the runtime filtered by the pod's label, which containerd answers by
// converting every container and sandbox it has, for every call. Guarded by Runtime.mu.
type podIndex struct {
	pods map[types.UID]*podIDs
	// gen counts additions; a list replaces a pod's IDs but keeps those added after the
	// list was asked for (gen greater than its start).
	gen uint64
}

// podIDs are one pod's sandbox and container IDs, with the generation each was added at.
type podIDs struct {
	sandboxes, containers map[string]uint64
}

func newPodIndex() podIndex { return podIndex{pods: map[types.UID]*podIDs{}} }

func (x *podIndex) pod(uid types.UID) *podIDs {
	p := x.pods[uid]
	if p == nil {
		p = &podIDs{sandboxes: map[string]uint64{}, containers: map[string]uint64{}}
		x.pods[uid] = p
	}
	return p
}

// addSandbox and addContainer record an object the runtime created for the pod.
func (x *podIndex) addSandbox(uid types.UID, id string) {
	x.gen++
	x.pod(uid).sandboxes[id] = x.gen
}

func (x *podIndex) addContainer(uid types.UID, id string) {
	x.gen++
	x.pod(uid).containers[id] = x.gen
}

// forget drops an object that is gone (NotFound) from the pod's IDs.
func (x *podIndex) forget(uid types.UID, id string) {
	if p := x.pods[uid]; p != nil {
		delete(p.sandboxes, id)
		delete(p.containers, id)
	}
}

// ids returns the pod's known sandbox and container IDs, or ok false for a pod the index
// does not know.
func (x *podIndex) ids(uid types.UID) (sandboxes, containers []string, ok bool) {
	p := x.pods[uid]
	if p == nil {
		return nil, nil, false
	}
	for id := range p.sandboxes {
		sandboxes = append(sandboxes, id)
	}
	for id := range p.containers {
		containers = append(containers, id)
	}
	return sandboxes, containers, true
}

// replace sets every pod's IDs to what a list asked for at generation start showed (listed,
// by pod), keeping the objects added since; pods neither listed nor added to since are
// dropped.
func (x *podIndex) replace(start uint64, listed map[types.UID]*podIDs) {
	for uid, p := range x.pods {
		l := listed[uid]
		if l == nil {
			l = &podIDs{sandboxes: map[string]uint64{}, containers: map[string]uint64{}}
		}
		for id, g := range p.sandboxes {
			if g > start {
				l.sandboxes[id] = g
			}
		}
		for id, g := range p.containers {
			if g > start {
				l.containers[id] = g
			}
		}
		if len(l.sandboxes)+len(l.containers) == 0 {
			delete(x.pods, uid)
			continue
		}
		x.pods[uid] = l
	}
	for uid, l := range listed {
		if x.pods[uid] == nil {
			x.pods[uid] = l
		}
	}
}
