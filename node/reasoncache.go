package node

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// reasonCache is the kubelet's ReasonCache: per pod UID and container name, the last
// ContainerError that Runtime.SyncPod reported. The status generation reads it
// (GenerateOptions.StartFailure) so that a container the runtime would start again shows
// Waiting with the runtime's reason and message.
//
// After each SyncPod the pod's entries are replaced by the ContainerErrors of the error it
// returned: a container SyncPod no longer reports is dropped, a nil error clears the pod.
// An error that carries no ContainerError (a sandbox failure, a cancelled call) keeps
// them: it says nothing about the containers, and the kubelet's cache too is only
// updated from the per-container results of a sync. The pod's entries are forgotten
// when it terminates or its worker is forgotten.
type reasonCache struct {
	mu sync.Mutex
	m  map[types.UID]map[string]reasonEntry
	// size is len(m): with no entry (the usual case) reads and forgets take no lock.
	size atomic.Int64
}

// reasonEntry is one container's reason and message.
type reasonEntry struct {
	reason, message string
}

// update records the result of one SyncPod of the pod.
func (c *reasonCache) update(uid types.UID, err error) {
	if err == nil {
		c.forget(uid)
		return
	}
	ces := ContainerErrors(err)
	if len(ces) == 0 {
		return
	}
	m := make(map[string]reasonEntry, len(ces))
	for _, ce := range ces {
		m[ce.Container] = reasonEntry{reason: ce.Reason, message: ce.Message}
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[types.UID]map[string]reasonEntry)
	}
	c.m[uid] = m
	c.size.Store(int64(len(c.m)))
	c.mu.Unlock()
}

// forget drops the pod's entries.
func (c *reasonCache) forget(uid types.UID) {
	if c.size.Load() == 0 {
		return
	}
	c.mu.Lock()
	delete(c.m, uid)
	c.size.Store(int64(len(c.m)))
	c.mu.Unlock()
}

// startFailure returns the pod's lookup for GenerateOptions.StartFailure, nil when the
// pod has no entry. The lookup reads a snapshot: the pod's map is replaced, never changed.
func (c *reasonCache) startFailure(uid types.UID) func(string) (string, string, bool) {
	if c.size.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	m := c.m[uid]
	c.mu.Unlock()
	if len(m) == 0 {
		return nil
	}
	return func(name string) (string, string, bool) {
		e, ok := m[name]
		return e.reason, e.message, ok
	}
}
