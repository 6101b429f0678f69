package statusmgr_test

import (
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// staticAndMirror returns a static pod and its mirror pod (same name, another UID).
func staticAndMirror() (static, mirror *v1.Pod) {
	static = testPod("s", "static-uid")
	static.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
	static.Annotations["kubernetes.io/config.hash"] = "h1"
	mirror = testPod("s", "mirror-uid")
	mirror.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "h1"
	return static, mirror
}

// TestManagerGetPodStatusByMirrorUID: GetPodStatus with a mirror pod's UID returns the
// static pod's status, as the kubelet's does (it translates the UID through its pod
// manager first).
func TestManagerGetPodStatusByMirrorUID(t *testing.T) {
	static, mirror := staticAndMirror()
	translate := func(uid types.UID) types.UID {
		if uid == mirror.UID {
			return static.UID
		}
		return uid
	}
	mirrorOf := func(*v1.Pod) (*v1.Pod, bool) { return mirror, true }
	for _, tc := range []struct {
		name   string
		lookup statusmgr.PodLookup
		sync   bool // sync once before asking
	}{
		{"translating lookup", statusmgr.PodLookupFuncs{GetMirrorPodByPodFunc: mirrorOf, TranslatePodUIDFunc: translate}, false},
		{"translating lookup of another type", translator{statusmgr.PodLookupFuncs{GetMirrorPodByPodFunc: mirrorOf}, translate}, false},
		{"lookup without translation, after a sync", statusmgr.PodLookupFuncs{GetMirrorPodByPodFunc: mirrorOf}, true},
		{"no lookup, after a sync", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := statusmgrtest.NewFakeAPI(mirror)
				m, err := statusmgr.New(statusmgr.Config{Patcher: api, Lookup: tc.lookup})
				must(t, err)
				must(t, m.SetPodStatus(static, runningStatus(true)))
				if tc.sync {
					must(t, m.Sync(t.Context()))
				}
				byStatic, ok := m.GetPodStatus(static.UID)
				if !ok {
					t.Fatal("no status by the static pod's UID")
				}
				byMirror, ok := m.GetPodStatus(mirror.UID)
				if !ok {
					t.Fatal("no status by the mirror pod's UID")
				}
				if byMirror.Phase != v1.PodRunning || byMirror.PodIP != byStatic.PodIP {
					t.Errorf("status by mirror UID = %s %s, want the static pod's", byMirror.Phase, byMirror.PodIP)
				}
				if _, ok := m.GetPodStatus("unknown-uid"); ok {
					t.Error("status for an unknown UID")
				}
				m.RemoveOrphanedStatuses(nil)
				if _, ok := m.GetPodStatus(mirror.UID); ok {
					t.Error("status by the mirror pod's UID after the static pod's was removed")
				}
			})
		})
	}
}

// translator is a PodLookup of the caller's own type that also translates UIDs.
type translator struct {
	statusmgr.PodLookupFuncs
	f func(types.UID) types.UID
}

func (t translator) TranslatePodUID(uid types.UID) types.UID { return t.f(uid) }

var _ statusmgr.PodUIDTranslator = translator{}
