package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// fakeAPI is a fake clientset that gives created Nodes a UID and counts the status
// patches of nodes.
type fakeAPI struct {
	*fake.Clientset
	uids    atomic.Int64
	patches atomic.Int64
}

func newFakeAPI(objs ...runtime.Object) *fakeAPI {
	f := &fakeAPI{Clientset: fake.NewClientset(objs...)}
	f.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n := a.(k8stesting.CreateAction).GetObject().(*v1.Node)
		n.UID = types.UID(fmt.Sprintf("uid-%d", f.uids.Add(1)))
		return false, nil, nil // the tracker stores it, UID included
	})
	f.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			f.patches.Add(1)
		}
		return false, nil, nil
	})
	return f
}

func (f *fakeAPI) node(t *testing.T) *v1.Node {
	t.Helper()
	n, err := f.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testNode() *v1.Node {
	rl := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("2"),
		v1.ResourceMemory:           resource.MustParse("4Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{
			v1.LabelHostname: "node1", v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"}},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl,
			NodeInfo: v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", KernelVersion: "6.1.0"}},
	}
}

// health is a settable Config.Health.
type health struct {
	mu  sync.Mutex
	err error
}

func (h *health) set(err error) { h.mu.Lock(); h.err = err; h.mu.Unlock() }
func (h *health) get() error    { h.mu.Lock(); defer h.mu.Unlock(); return h.err }

// start runs a controller of cfg (Client api, Node testNode, the bubble's real clock)
// until the returned stop is called (once or more); stop waits for Run.
func start(t *testing.T, api *fakeAPI, cfg Config) (stop func()) {
	t.Helper()
	cfg.Client = api
	if cfg.Node == nil {
		cfg.Node = testNode()
	}
	cfg.Clock = clock.RealClock{} // synctest's fake time
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

func readyOf(n *v1.Node) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestRunRegistersNodeStatusAndLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		stop := start(t, api, Config{
			Addresses:      []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}},
			RuntimeVersion: RuntimeVersion("containerd", "v2.1.4"),
			KubeletPort:    10251,
		})
		defer stop()
		synctest.Wait()
		n := api.node(t)
		if diff := cmp.Diff(testNode().Labels, n.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node1"}}, n.Status.Addresses); diff != "" {
			t.Errorf("addresses (-want +got):\n%s", diff)
		}
		if got := n.Status.Allocatable[v1.ResourceCPU]; got.String() != "2" {
			t.Errorf("allocatable cpu = %s, want 2", got.String())
		}
		wantInfo := v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", KernelVersion: "6.1.0",
			KubeletVersion: KubeletVersion, ContainerRuntimeVersion: "containerd://2.1.4"}
		if diff := cmp.Diff(wantInfo, n.Status.NodeInfo); diff != "" {
			t.Errorf("nodeInfo (-want +got):\n%s", diff)
		}
		if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 10251 {
			t.Errorf("kubelet port = %d, want 10251", p)
		}
		var types []string
		for _, c := range n.Status.Conditions {
			types = append(types, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		want := []string{"MemoryPressure=False/KubeletHasSufficientMemory", "DiskPressure=False/KubeletHasNoDiskPressure",
			"PIDPressure=False/KubeletHasSufficientPID", "Ready=True/KubeletReady"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}

		l, err := api.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("holder=%s duration=%d owner=%v", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, l.OwnerReferences)
		wantLease := fmt.Sprintf("holder=node1 duration=40 owner=%v", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node1", UID: n.UID}})
		if got != wantLease {
			t.Errorf("lease %s, want %s", got, wantLease)
		}
		renewed := l.Spec.RenewTime.Time
		time.Sleep(DefaultRenewInterval + time.Second) // the controller's jitter is 4%
		synctest.Wait()
		l, err = api.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !l.Spec.RenewTime.After(renewed) {
			t.Errorf("renewTime %v did not advance from %v", l.Spec.RenewTime.Time, renewed)
		}

		// Stopped: no more renewals.
		stop()
		renewed = l.Spec.RenewTime.Time
		time.Sleep(time.Minute)
		l, err = api.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !l.Spec.RenewTime.Time.Equal(renewed) {
			t.Errorf("renewTime moved to %v after Run returned", l.Spec.RenewTime.Time)
		}
	})
}

func TestRunAdoptsExistingNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "old", Labels: map[string]string{
			v1.LabelHostname: "other", v1.LabelOSStable: "windows", "example.com/team": "a",
			v1.LabelTopologyZone: "z1"}}}
		api := newFakeAPI(existing)
		stop := start(t, api, Config{})
		defer stop()
		synctest.Wait()
		n := api.node(t)
		want := map[string]string{v1.LabelHostname: "node1", v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64",
			"example.com/team": "a", v1.LabelTopologyZone: "z1"}
		if diff := cmp.Diff(want, n.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		if n.UID != "old" {
			t.Errorf("UID %s: want the existing node adopted", n.UID)
		}
		if r := readyOf(n); r.Status != v1.ConditionTrue {
			t.Errorf("Ready = %+v, want True", r)
		}
	})
}

func TestRunRegistersDeletedNodeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		stop := start(t, api, Config{})
		defer stop()
		synctest.Wait()
		first := api.node(t)
		if err := api.CoreV1().Nodes().Delete(context.Background(), "node1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(DefaultUpdateFrequency)
		synctest.Wait()
		again := api.node(t)
		if again.UID == first.UID || again.UID == "" {
			t.Fatalf("UID %q after the delete, first %q: want a new registration", again.UID, first.UID)
		}
		if r := readyOf(again); r.Status != v1.ConditionTrue {
			t.Errorf("Ready = %+v, want True", r)
		}
		if diff := cmp.Diff(testNode().Labels, again.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		// The Lease's owner follows at its next renewal.
		time.Sleep(DefaultRenewInterval + time.Second)
		synctest.Wait()
		l, err := api.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != again.UID {
			t.Errorf("lease owners %v, want the new node %s", l.OwnerReferences, again.UID)
		}
	})
}

func TestRunStatusCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		h := &health{}
		stop := start(t, api, Config{Health: h.get})
		defer stop()
		synctest.Wait()
		// Registration creates the node with its status; the first update patches (the
		// first report of the process).
		if got := api.patches.Load(); got != 1 {
			t.Fatalf("%d status patches after registration, want 1", got)
		}
		start := time.Now()
		// Unchanged: nothing until the report frequency has passed since the last patch.
		for time.Since(start) < DefaultReportFrequency-DefaultUpdateFrequency {
			time.Sleep(DefaultUpdateFrequency)
			synctest.Wait()
		}
		if got := api.patches.Load(); got != 1 {
			t.Fatalf("%d status patches in %v without a change, want 1", got, time.Since(start))
		}
		time.Sleep(DefaultUpdateFrequency)
		synctest.Wait()
		if got := api.patches.Load(); got != 2 {
			t.Fatalf("%d status patches after %v, want 2 (the report frequency's)", got, time.Since(start))
		}
		hb := readyOf(api.node(t)).LastHeartbeatTime
		if !hb.Time.Equal(time.Now()) {
			t.Errorf("heartbeat %v, want now %v", hb.Time, time.Now())
		}

		// A change is posted at the next update, 10 s at most.
		h.set(errors.New("PLEG is not healthy: pleg: relist not healthy: no successful relist yet"))
		time.Sleep(DefaultUpdateFrequency)
		synctest.Wait()
		if got := api.patches.Load(); got != 3 {
			t.Fatalf("%d status patches after the change, want 3", got)
		}
		r := readyOf(api.node(t))
		want := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "PLEG is not healthy: pleg: relist not healthy: no successful relist yet"}
		if diff := cmp.Diff(want, r, cmpIgnoreTimes); diff != "" {
			t.Errorf("Ready (-want +got):\n%s", diff)
		}
		if !r.LastTransitionTime.Time.Equal(time.Now()) {
			t.Errorf("lastTransitionTime %v, want now", r.LastTransitionTime)
		}
		time.Sleep(DefaultUpdateFrequency)
		synctest.Wait()
		if got := api.patches.Load(); got != 3 {
			t.Errorf("%d status patches with no further change, want 3", got)
		}
		h.set(nil)
		time.Sleep(DefaultUpdateFrequency)
		synctest.Wait()
		if r := readyOf(api.node(t)); r.Status != v1.ConditionTrue || r.Reason != "KubeletReady" {
			t.Errorf("Ready = %+v, want True again", r)
		}
	})
}

func TestRunStopsWhileRegistering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		var creates atomic.Int64
		api.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			creates.Add(1)
			return true, nil, errors.New("connection refused")
		})
		stop := start(t, api, Config{})
		time.Sleep(time.Minute)
		synctest.Wait()
		// 100 ms doubling to 7 s: at 0, .1, .3, .7, 1.5, 3.1, 6.3, 12.7, 19.7, ... 54.7 s.
		if got := creates.Load(); got != 14 {
			t.Errorf("%d creates in a minute, want 14 (the kubelet's backoff)", got)
		}
		stop()
	})
}
