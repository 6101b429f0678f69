package node_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// startReporter is a Runtime that reports its starts (node.StartReporter) when reports.
type startReporter struct {
	node.Runtime
	reports bool
}

func (s startReporter) ReportsStart() bool { return s.reports }

// patchLog records the phase on the server after each successful status PATCH.
type patchLog struct {
	mu     sync.Mutex
	phases []string
}

func (l *patchLog) patcher(api *statusmgrtest.FakeAPI) any {
	return statusmgr.StatusPatcherFuncs{GetPodFunc: api.GetPod, DeletePodFunc: api.DeletePod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			got, err := api.PatchPodStatus(ctx, namespace, name, patch)
			if err == nil {
				l.mu.Lock()
				l.phases = append(l.phases, string(got.Status.Phase))
				l.mu.Unlock()
			}
			return got, err
		}}
}

// A pod's status writes until it runs: with a Runtime that reports its starts
// (StartReporter), the first status is written after the runtime's SyncPod from the
// inspection right after it, so a pod that runs at once gets one PATCH, Running, and no
// Pending one (issue 33 item 5: virtual-kubelet writes one status per started pod). Any
// other Runtime gets the kubelet's order: Pending first, then Running.
func TestStartReporterFirstStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reports bool
		want    []string
	}{
		{"no StartReporter", false, []string{"Pending", "Running"}},
		{"ReportsStart false", false, []string{"Pending", "Running"}},
		{"ReportsStart true", true, []string{"Running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log patchLog
				opts := envOpts{patcher: log.patcher}
				if tc.name != "no StartReporter" {
					opts.wrap = func(rt node.Runtime) node.Runtime { return startReporter{Runtime: rt, reports: tc.reports} }
				}
				e := start(t, nil, nil, opts)
				e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
				e.waitPhase("web", v1.PodRunning)
				time.Sleep(time.Minute) // nothing more happens
				e.stop()
				log.mu.Lock()
				defer log.mu.Unlock()
				if diff := cmp.Diff(tc.want, log.phases); diff != "" {
					t.Errorf("the phases of the status PATCHes (-want +got):\n%s", diff)
				}
				p, _ := e.api.Pod("default", "web")
				if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil || p.Status.StartTime == nil {
					t.Errorf("status on the server %+v, want a start time and one running container", p.Status)
				}
			})
		})
	}
}

// A pod whose first SyncPod fails gets its status with the failure's reason at once, also
// with a Runtime that reports its starts: nothing of it runs for the runtime to report.
func TestStartReporterFailedStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log patchLog
		e := start(t, nil, nil, envOpts{patcher: log.patcher,
			containers: nodetest.ContainerBehaviour{ImagePullError: "no such image"},
			wrap:       func(rt node.Runtime) node.Runtime { return startReporter{Runtime: rt, reports: true} }})
		e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := e.api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			p := pods[types.NamespacedName{Namespace: "default", Name: "web"}]
			return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImagePull"
		})
		if err != nil {
			t.Errorf("no ErrImagePull status on the server a minute after the creation: %v", err)
		}
		e.stop()
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.phases) == 0 || log.phases[0] != string(v1.PodPending) {
			t.Errorf("the phases of the status PATCHes = %v, want Pending first", log.phases)
		}
	})
}
