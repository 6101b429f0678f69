package main

import (
	"context"
	"fmt"
	"path"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/hack/bench/internal/work"
	"github.com/podlife/podlife/internal/seedpod"
)

const (
	w5Pods     = 1000
	w5Node     = "node1"
	w5Grace    = 30
	w5Timeout  = 3 * time.Minute
	virtualKub = "virtual-kubelet v1.14.1"
	// vkSyncWorkers is virtual-kubelet's default --pod-sync-workers.
	vkSyncWorkers = 10
	// vkInformerResync is virtual-kubelet's default --full-resync-period.
	vkInformerResync = time.Minute
)

// w5API is client-go's fake clientset as W5's API server: a reactor in front of its object
// tracker counts the controllers' calls on pods, keeps a status update (UpdateStatus) from
// changing anything but the status (as the API server's status subresource does), times
// its own CPU (apiCPU: the work a real API server does in its own process), gives
// every write of a pod a new resourceVersion (the tracker keeps the object's own: without
// it a graceful delete would look like a pod already seen), records when every pod is
// Running and when each is deleted (and its phase then), and closes running and gone. The watches of pods are its own (podWatch, fed by every write on
// pods, never full): the tracker's hold 100 events and panic when a consumer falls
// behind, as on a loaded machine. The benchmark's own writes (the creates, the graceful
// deletes) go straight to the tracker and are not counted.
type w5API struct {
	client *fake.Clientset
	n      int
	// Guarded by the clientset's lock (every reactor runs under it).
	podCalls, otherCalls int
	version              int64 // the last resourceVersion given to a pod
	apiCPU               time.Duration
	running              map[types.UID]bool
	deleted              map[string]time.Time // by pod name: the final delete
	terminalAtDelete     int
	deletes              int
	runningClosed        bool
	running1, gone       chan struct{}
	watches              []*podWatch
}

func newW5API(n int) *w5API {
	a := &w5API{client: fake.NewSimpleClientset(), n: n, running: map[types.UID]bool{}, deleted: map[string]time.Time{},
		running1: make(chan struct{}), gone: make(chan struct{}), version: w5FirstVersion}
	tracker := a.client.Tracker()
	serve := clienttesting.ObjectReaction(versionedPatches{ObjectTracker: tracker, a: a})
	a.client.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		defer a.timed()()
		if action.GetResource().Resource != "pods" {
			a.otherCalls++
			return false, nil, nil
		}
		a.podCalls++
		switch act := action.(type) {
		case clienttesting.UpdateActionImpl:
			if act.GetSubresource() == "status" {
				return a.updateStatus(act)
			}
		case clienttesting.DeleteActionImpl:
			o, err := tracker.Get(podsResource, act.GetNamespace(), act.GetName())
			handled, obj, err2 := serve(action)
			if err == nil && err2 == nil {
				a.emit(watch.Deleted, o.(*v1.Pod))
				a.deleted[act.GetName()] = time.Now()
				if p := o.(*v1.Pod); p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
					a.terminalAtDelete++
				}
				if a.deletes++; a.deletes == a.n {
					close(a.gone)
				}
			}
			return handled, obj, err2
		}
		handled, obj, err := serve(action)
		if p, ok := obj.(*v1.Pod); ok && err == nil && action.GetVerb() != "get" {
			a.emit(watch.Modified, p)
			a.observe(p)
		}
		return handled, obj, err
	})
	a.client.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := newPodWatch()
		a.watches = append(a.watches, w)
		return true, w, nil
	})
	return a
}

// timed starts timing the API server's own CPU (the calling goroutine's thread, locked
// to it meanwhile) and returns the function that adds it to apiCPU. The clientset's lock
// must be held until then.
func (a *w5API) timed() func() {
	goruntime.LockOSThread()
	t0 := work.ThreadCPU()
	return func() {
		a.apiCPU += work.ThreadCPU() - t0
		goruntime.UnlockOSThread()
	}
}

// cpu returns the API server's CPU so far.
func (a *w5API) cpu() time.Duration {
	a.client.Lock()
	defer a.client.Unlock()
	return a.apiCPU
}

// w5FirstVersion is above every seed pod's resourceVersion.
const w5FirstVersion = 1 << 20

// nextVersion stamps p with the next resourceVersion. The clientset's lock must be held.
func (a *w5API) nextVersion(p *v1.Pod) {
	a.version++
	p.ResourceVersion = strconv.FormatInt(a.version, 10)
}

// versionedPatches is the tracker as the clientset's patches reach it: the patched pod
// (the reactor's own object, also its result) gets the next resourceVersion.
type versionedPatches struct {
	clienttesting.ObjectTracker
	a *w5API
}

func (t versionedPatches) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if p, ok := obj.(*v1.Pod); ok {
		t.a.nextVersion(p)
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

// emit sends a pod's change to every watch. The clientset's lock must be held.
func (a *w5API) emit(t watch.EventType, p *v1.Pod) {
	for _, w := range a.watches {
		w.add(watch.Event{Type: t, Object: p.DeepCopy()})
	}
}

// updateStatus is the status subresource's update: only the status changes.
func (a *w5API) updateStatus(act clienttesting.UpdateActionImpl) (bool, runtime.Object, error) {
	in := act.GetObject().(*v1.Pod)
	o, err := a.client.Tracker().Get(podsResource, act.GetNamespace(), in.Name)
	if err != nil {
		return true, nil, err
	}
	p := o.(*v1.Pod).DeepCopy()
	p.Status = *in.Status.DeepCopy()
	a.nextVersion(p)
	if err := a.client.Tracker().Update(podsResource, p, p.Namespace); err != nil {
		return true, nil, err
	}
	a.emit(watch.Modified, p)
	a.observe(p)
	return true, p, nil
}

// observe notes a pod's phase on the server after a write.
func (a *w5API) observe(p *v1.Pod) {
	if p.Status.Phase != v1.PodRunning || a.running[p.UID] {
		return
	}
	a.running[p.UID] = true
	if len(a.running) == a.n && !a.runningClosed {
		a.runningClosed = true
		close(a.running1)
	}
}

// write runs f on the tracker under the clientset's lock (as the API server's own write:
// not a call of the controllers) and sends the pod it wrote to every watch.
func (a *w5API) write(t watch.EventType, f func(clienttesting.ObjectTracker) (*v1.Pod, error)) error {
	a.client.Lock()
	defer a.client.Unlock()
	defer a.timed()()
	p, err := f(a.client.Tracker())
	if err != nil {
		return err
	}
	a.emit(t, p)
	return nil
}

// podWatch is a watch of pods whose buffer has no bound: add never blocks; a goroutine
// hands the events to the consumer in order until Stop.
type podWatch struct {
	mu    sync.Mutex
	queue []watch.Event
	wake  chan struct{}
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newPodWatch() *podWatch {
	w := &podWatch{wake: make(chan struct{}, 1), out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *podWatch) add(e watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWatch) run() {
	defer close(w.out)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			}
		}
		e := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.out <- e:
		case <-w.stop:
			return
		}
	}
}

// Stop ends the watch.
func (w *podWatch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan is the watch's events.
func (w *podWatch) ResultChan() <-chan watch.Event { return w.out }

// w5Stops records, per pod, the provider's first DeletePod (the pod stopped: the provider
// stops pods at once).
type w5Stops struct {
	mu      sync.Mutex
	stopped map[types.UID]time.Time
}

func (s *w5Stops) observe(c vktest.Call) {
	if c.Verb != vktest.Delete || c.Err != nil || c.UID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.stopped[c.UID]; !ok {
		s.stopped[c.UID] = time.Now()
	}
}

// w5Pod is seed pod i as the scheduler leaves it bound to the virtual node: Pending.
func w5Pod(i int) *v1.Pod {
	p := seedpod.New(i)
	p.Spec.NodeName = w5Node
	p.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBurstable}
	return p
}

// startVK runs virtual-kubelet's own node.PodController (and node controller) on the
// fake clientset, as its command does: a pod informer of the node's pods, ConfigMap,
// Secret and Service informers, 1 min resync, 10 sync workers, its pod events
// (ProviderCreateSuccess, ProviderDeleteSuccess, ...) written to the API server through an
// event broadcaster as nodeutil's (podlife's side writes its own, e.g. Killing, the same
// way: vk.Run's default recorder); but its
// three queues' rate limiters are per-item back-off only (workqueue's
// DefaultTypedItemBasedRateLimiter). Its default (DefaultTypedControllerRateLimiter) also
// admits only 10 pods a second after a burst of 100: 1,000 pods take 90 s to reach the
// provider, and their deletes as long.
func startVK(ctx context.Context, a *w5API, provider node.PodLifecycleHandler) error {
	c := a.client
	pods := informers.NewSharedInformerFactoryWithOptions(c, vkInformerResync, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", w5Node).String()
	}))
	others := informers.NewSharedInformerFactory(c, vkInformerResync)
	// As nodeutil.NewNode and Node.Run (without the log sink): a broadcaster to the API
	// server, shut down when the run ends.
	eb := record.NewBroadcaster(record.WithContext(ctx))
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events(v1.NamespaceAll)})
	go func() { <-ctx.Done(); eb.Shutdown() }()
	recorder := eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: path.Join(w5Node, "pod-controller")})
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient: c.CoreV1(), PodInformer: pods.Core().V1().Pods(), EventRecorder: recorder, Provider: provider,
		ConfigMapInformer: others.Core().V1().ConfigMaps(), SecretInformer: others.Core().V1().Secrets(), ServiceInformer: others.Core().V1().Services(),
		SyncPodsFromKubernetesRateLimiter:    workqueue.DefaultTypedItemBasedRateLimiter[any](),
		DeletePodsFromKubernetesRateLimiter:  workqueue.DefaultTypedItemBasedRateLimiter[any](),
		SyncPodStatusFromProviderRateLimiter: workqueue.DefaultTypedItemBasedRateLimiter[any](),
	})
	if err != nil {
		return err
	}
	nc, err := node.NewNodeController(node.NaiveNodeProvider{}, vk.DefaultNode(w5Node), c.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(c.CoordinationV1().Leases(v1.NamespaceNodeLease), 0))
	if err != nil {
		return err
	}
	pods.Start(ctx.Done())
	others.Start(ctx.Done())
	go func() { _ = pc.Run(ctx, vkSyncWorkers) }()
	go func() { _ = nc.Run(ctx) }()
	for _, ready := range []<-chan struct{}{pc.Ready(), nc.Ready()} {
		select {
		case <-ready:
		case <-pc.Done():
			return fmt.Errorf("pod controller: %v", pc.Err())
		case <-time.After(w5Timeout):
			return fmt.Errorf("virtual-kubelet not ready after %s", w5Timeout)
		}
	}
	return nil
}

// startPodlife runs podlife's examples/vk runner (vk.NewRunner, default configuration)
// on the fake clientset.
func startPodlife(ctx context.Context, a *w5API, provider node.PodLifecycleHandler) error {
	r, err := vk.NewRunner(vk.Config{NodeName: w5Node, Provider: provider, Client: a.client})
	if err != nil {
		return err
	}
	go func() { _ = r.Run(ctx) }()
	select {
	case <-r.Ready():
		return nil
	case <-r.Done():
		return fmt.Errorf("vk runner: %v", r.Err())
	case <-time.After(w5Timeout):
		return fmt.Errorf("vk runner not ready after %s", w5Timeout)
	}
}

// runW5 is W5 (BENCHMARKS.md) on client-go's fake clientset: 1,000 seed pods bound to the
// virtual node, run by virtual-kubelet v1.14.1's pod controller or podlife's vk runner
// with the same provider (examples/vk/vktest: pods start and stop at once; notifying or
// polled). All are created and it waits until every pod is Running on the server; then
// every pod is deleted gracefully (deletionTimestamp, grace 30: the object stays) and it
// waits until every object is gone. Checked: every pod Running, then gone, with exactly
// one final delete, after the provider's DeletePod.
func runW5(side string, notify bool) (result, error) {
	stops := &w5Stops{stopped: map[types.UID]time.Time{}}
	pcfg := vktest.Config{Observer: stops.observe}
	provider, handler := vktest.NewHandler(pcfg, notify)
	a := newW5API(w5Pods)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := startPodlife
	if side == kubelet {
		start = startVK
	}
	if err := start(ctx, a, handler); err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, w5Pods)
	for i := range pods {
		pods[i] = w5Pod(i)
	}
	wait := func(ch <-chan struct{}, what string) error {
		select {
		case <-ch:
			return nil
		case <-time.After(w5Timeout):
			a.client.Lock()
			defer a.client.Unlock()
			var left []string
			for _, p := range pods {
				if o, err := a.client.Tracker().Get(podsResource, p.Namespace, p.Name); err == nil {
					q := o.(*v1.Pod)
					left = append(left, fmt.Sprintf("%s (phase %s, deletionTimestamp %v; provider: CreatePod %d, DeletePod %d)", q.Name, q.Status.Phase,
						q.DeletionTimestamp != nil, provider.CountFor(q.UID, vktest.Create), provider.CountFor(q.UID, vktest.Delete)))
				}
				if len(left) == 10 {
					break
				}
			}
			return fmt.Errorf("%s: not after %s (%d Running, %d deleted); left (up to 10): %v", what, w5Timeout, len(a.running), a.deletes, left)
		}
	}

	c0, t0, api0 := work.CPU(), time.Now(), a.cpu()
	for _, p := range pods {
		if err := a.write(watch.Added, func(t clienttesting.ObjectTracker) (*v1.Pod, error) {
			q := p.DeepCopy()
			a.nextVersion(q)
			return q, t.Create(podsResource, q, q.Namespace)
		}); err != nil {
			return nil, err
		}
	}
	if err := wait(a.running1, "every pod Running"); err != nil {
		return nil, err
	}
	createWall, createCPU, createAPI := time.Since(t0), work.CPU()-c0, a.cpu()-api0

	c0, t0, api0 = work.CPU(), time.Now(), a.cpu()
	for _, p := range pods {
		if err := a.write(watch.Modified, func(t clienttesting.ObjectTracker) (*v1.Pod, error) { return a.markGracefullyDeleted(t, p) }); err != nil {
			return nil, err
		}
	}
	if err := wait(a.gone, "every object gone"); err != nil {
		return nil, err
	}
	deleteWall, deleteCPU, deleteAPI := time.Since(t0), work.CPU()-c0, a.cpu()-api0
	cancel()

	a.client.Lock()
	defer a.client.Unlock()
	stops.mu.Lock()
	defer stops.mu.Unlock()
	var lat []time.Duration
	for _, p := range pods {
		stopped, ok := stops.stopped[p.UID]
		final := a.deleted[p.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("pod %s deleted without a DeletePod call", p.Name)
		case final.Before(stopped):
			return nil, fmt.Errorf("pod %s deleted %s before its DeletePod call", p.Name, stopped.Sub(final))
		}
		lat = append(lat, final.Sub(stopped))
	}
	if a.deletes != w5Pods {
		return nil, fmt.Errorf("%d final deletes, want %d", a.deletes, w5Pods)
	}
	slices.Sort(lat)
	calls := 0
	for _, v := range []string{vktest.Create, vktest.Update, vktest.Delete, vktest.Get, vktest.GetStatus, vktest.List} {
		calls += provider.Count(v)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return result{
		"api/pod":           float64(a.podCalls) / w5Pods,
		"provider/pod":      float64(calls) / w5Pods,
		"terminal-at-del-%": 100 * float64(a.terminalAtDelete) / w5Pods,
		"create-cpu-ms":     ms(createCPU),
		"delete-cpu-ms":     ms(deleteCPU),
		"create-api-cpu-ms": ms(createAPI),
		"create-own-cpu-ms": ms(createCPU - createAPI),
		"delete-own-cpu-ms": ms(deleteCPU - deleteAPI),
		"create-ms":         ms(createWall),
		"delete-ms":         ms(deleteWall),
		"stop-del-p50-ms":   ms(lat[len(lat)/2]),
		"stop-del-p99-ms":   ms(lat[len(lat)*99/100]),
	}, nil
}

// markGracefullyDeleted is the API server's graceful delete of p (grace 30): the object
// stays, with deletionTimestamp and deletionGracePeriodSeconds set and a new
// resourceVersion. The clientset's lock must be held.
func (a *w5API) markGracefullyDeleted(t clienttesting.ObjectTracker, p *v1.Pod) (*v1.Pod, error) {
	o, err := t.Get(podsResource, p.Namespace, p.Name)
	if err != nil {
		return nil, err
	}
	q := o.(*v1.Pod).DeepCopy()
	now, g := metav1.Now(), int64(w5Grace)
	q.DeletionTimestamp, q.DeletionGracePeriodSeconds = &now, &g
	a.nextVersion(q)
	return q, t.Update(podsResource, q, q.Namespace)
}
