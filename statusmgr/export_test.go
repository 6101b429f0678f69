package statusmgr

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodForTest is the node agent's pod the manager holds for the pod with the UID (what its
// next write works from); nil if none.
func (m *Manager) PodForTest(uid types.UID) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.mach.c.entries[uid]; e != nil {
		return e.pod
	}
	return nil
}
