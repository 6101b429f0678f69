package node

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/statusmgr"
)

// podManager is the node's view of its desired pods (the kubelet's pod manager): the
// pods the sources last gave, by UID, and the mirror pods (the API server's copies of
// static pods) by full name. Only the loop changes it; the status manager and the
// syncer read it. It implements statusmgr.PodLookup.
type podManager struct {
	mu sync.RWMutex
	// pods are the desired pods that are not mirror pods, by UID.
	pods map[types.UID]*v1.Pod
	// mirrors are the mirror pods by full name (name_namespace).
	mirrors map[string]*v1.Pod
	// static are the static pods (in pods too) by full name.
	static map[string]*v1.Pod
	// staticNames are the full names of every static pod seen, by UID, also after its
	// removal, until prune finds its worker gone.
	staticNames map[types.UID]string
}

var (
	_ statusmgr.PodLookup        = (*podManager)(nil)
	_ statusmgr.PodUIDTranslator = (*podManager)(nil)
)

// TranslatePodUID returns the UID of the static pod whose mirror pod has the UID, or uid.
func (m *podManager) TranslatePodUID(uid types.UID) types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for fn, mp := range m.mirrors {
		if mp.UID == uid {
			if p, ok := m.static[fn]; ok {
				return p.UID
			}
			break
		}
	}
	return uid
}

func newPodManager() *podManager {
	return &podManager{pods: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}, static: map[string]*v1.Pod{}, staticNames: map[types.UID]string{}}
}

// set records p (a mirror pod by its full name).
func (m *podManager) set(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if podfacts.IsMirror(p) {
		m.mirrors[podfacts.PodFullName(p)] = p
		return
	}
	m.pods[p.UID] = p
	if podfacts.IsStatic(p) {
		m.static[podfacts.PodFullName(p)] = p
		m.staticNames[p.UID] = podfacts.PodFullName(p)
	}
}

// remove forgets p (a mirror pod only if the one recorded has p's UID).
func (m *podManager) remove(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if podfacts.IsMirror(p) {
		if cur, ok := m.mirrors[podfacts.PodFullName(p)]; ok && cur.UID == p.UID {
			delete(m.mirrors, podfacts.PodFullName(p))
		}
		return
	}
	delete(m.pods, p.UID)
	if cur, ok := m.static[podfacts.PodFullName(p)]; ok && cur.UID == p.UID {
		delete(m.static, podfacts.PodFullName(p))
	}
}

// GetPodByUID returns the desired pod with the UID.
func (m *podManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.pods[uid]
	return p, ok
}

// GetMirrorPodByPod returns the mirror pod of a static pod.
func (m *podManager) GetMirrorPodByPod(p *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mp, ok := m.mirrors[podfacts.PodFullName(p)]
	return mp, ok
}

// staticPodOf returns the desired static pod a mirror pod mirrors.
func (m *podManager) staticPodOf(mirror *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.static[podfacts.PodFullName(mirror)]
	return p, ok
}

// snapshot returns the desired pods, the mirror pods and the UIDs of both.
func (m *podManager) snapshot() (pods, mirrors []*v1.Pod, uids map[types.UID]bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pods = make([]*v1.Pod, 0, len(m.pods))
	uids = make(map[types.UID]bool, len(m.pods)+len(m.mirrors))
	for uid, p := range m.pods {
		pods = append(pods, p)
		uids[uid] = true
	}
	for _, p := range m.mirrors {
		mirrors = append(mirrors, p)
		uids[p.UID] = true
	}
	return pods, mirrors, uids
}

// staticFullName returns the full name of a static pod seen with the UID.
func (m *podManager) staticFullName(uid types.UID) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn, ok := m.staticNames[uid]
	return fn, ok
}

// prune forgets the names of static pods that are neither desired nor kept by keep.
func (m *podManager) prune(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.staticNames {
		if _, desired := m.pods[uid]; !desired && !keep(uid) {
			delete(m.staticNames, uid)
		}
	}
}
