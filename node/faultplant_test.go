package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
)

// Planted bugs: StatusPatchers between the node and the checker that misbehave the way a
// broken status manager would, for TestFaultsCatchesPlantedBug.

// plantEarlyDelete deletes a pod as soon as a patch shows it deleted, before its phase is
// terminal.
func plantEarlyDelete(inner statusmgr.StatusPatcher) statusmgr.StatusPatcher {
	var mu sync.Mutex
	done := map[types.UID]bool{}
	return statusmgr.StatusPatcherFuncs{
		GetPodFunc: inner.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			p, err := inner.PatchPodStatus(ctx, namespace, name, patch)
			if err != nil || p.DeletionTimestamp == nil || statusmgr.IsTerminalPhase(p.Status.Phase) {
				return p, err
			}
			mu.Lock()
			first := !done[p.UID]
			done[p.UID] = true
			mu.Unlock()
			if first {
				_ = inner.DeletePod(ctx, namespace, name, p.UID)
			}
			return p, err
		},
		DeletePodFunc: inner.DeletePod,
	}
}

// plantDropTerminal loses every patch that makes a pod terminal, answering as if it
// had been applied.
func plantDropTerminal(inner statusmgr.StatusPatcher) statusmgr.StatusPatcher {
	return statusmgr.StatusPatcherFuncs{
		GetPodFunc: inner.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			if bytes.Contains(patch, []byte(`"phase":"Succeeded"`)) || bytes.Contains(patch, []byte(`"phase":"Failed"`)) {
				return inner.GetPod(ctx, namespace, name)
			}
			return inner.PatchPodStatus(ctx, namespace, name, patch)
		},
		DeletePodFunc: inner.DeletePod,
	}
}

// plantStripUID drops metadata.uid from every patch (no UID precondition).
func plantStripUID(inner statusmgr.StatusPatcher) statusmgr.StatusPatcher {
	return statusmgr.StatusPatcherFuncs{
		GetPodFunc: inner.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			var m map[string]any
			if err := json.Unmarshal(patch, &m); err == nil {
				delete(m, "metadata")
				if b, err := json.Marshal(m); err == nil {
					patch = b
				}
			}
			return inner.PatchPodStatus(ctx, namespace, name, patch)
		},
		DeletePodFunc: inner.DeletePod,
	}
}

// plantWrongUID deletes with a UID that is not the pod's.
func plantWrongUID(inner statusmgr.StatusPatcher) statusmgr.StatusPatcher {
	return statusmgr.StatusPatcherFuncs{
		GetPodFunc:         inner.GetPod,
		PatchPodStatusFunc: inner.PatchPodStatus,
		DeletePodFunc: func(ctx context.Context, namespace, name string, uid types.UID) error {
			return inner.DeletePod(ctx, namespace, name, "other-"+uid)
		},
	}
}
