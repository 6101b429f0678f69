package cri_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCRI is an in-memory CRI runtime and image service on a unix socket: sandboxes and
// containers with the states a test sets, images present or pulled, and a record of the
// calls that matter. Time is the fake clock's.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	clock    *clocktesting.FakeClock
	endpoint string

	mu         sync.Mutex
	next       int
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer
	images     map[string]bool
	pulls      []string
	stops      map[string]int64 // StopContainer timeout by container name
	stopOrder  []string         // container names in the order of their StopContainer calls
	// stopHold, if set, is called (without f.mu) at the start of StopContainer.
	stopHold func(name string)
	// stopKeepsRunning: StopContainer leaves the container running (a stuck runtime).
	stopKeepsRunning bool
	// stopExitsZero: StopContainer makes the container exit 0 (it handles SIGTERM), not 143.
	stopExitsZero bool
	// execTakes is how long an ExecSync (a preStop hook) takes, in fake time.
	execTakes time.Duration
	execs     []string
	// execReply, if set, answers an ExecSync (a probe's command) instead of exit 0.
	execReply func(cmd []string) (*runtimeapi.ExecSyncResponse, error)
	// hold, if set, is called (without f.mu) at the start of RunPodSandbox,
	// CreateContainer and StartContainer with the method's name and the server side of
	// the call's context; a call whose context ended by then fails with its error.
	hold func(ctx context.Context, method string)
	// pullErr, createErr and startErr, if set, fail PullImage, CreateContainer and
	// StartContainer.
	pullErr, createErr, startErr error
}

// failWith sets the errors of PullImage, CreateContainer and StartContainer.
func (f *fakeCRI) failWith(pull, create, start error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pullErr, f.createErr, f.startErr = pull, create, start
}

// held runs f.hold and returns the call's context error after it.
func (f *fakeCRI) held(ctx context.Context, method string) error {
	if f.hold == nil {
		return nil
	}
	f.hold(ctx, method)
	return ctx.Err()
}

type fakeSandbox struct {
	cfg   *runtimeapi.PodSandboxConfig
	id    string
	state runtimeapi.PodSandboxState
	at    time.Time
}

type fakeContainer struct {
	cfg      *runtimeapi.ContainerConfig
	id, sbID string
	image    string
	state    runtimeapi.ContainerState
	at       time.Time
	started  time.Time
	finished time.Time
	exitCode int32
}

func newFakeCRI(t *testing.T) *fakeCRI {
	t.Helper()
	dir, err := os.MkdirTemp("", "fakecri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCRI{clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), endpoint: "unix://" + sock,
		sandboxes: map[string]*fakeSandbox{}, containers: map[string]*fakeContainer{}, images: map[string]bool{},
		stops: map[string]int64{}}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, f)
	runtimeapi.RegisterImageServiceServer(s, f)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return f
}

func (f *fakeCRI) id(prefix string) string {
	f.next++
	return fmt.Sprintf("%s%d", prefix, f.next)
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "0", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeCRI) RunPodSandbox(ctx context.Context, r *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	if err := f.held(ctx, "RunPodSandbox"); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := &fakeSandbox{cfg: r.GetConfig(), id: f.id("sb"), state: runtimeapi.PodSandboxState_SANDBOX_READY, at: f.clock.Now()}
	f.sandboxes[sb.id] = sb
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
}

func (f *fakeCRI) StopPodSandbox(_ context.Context, r *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[r.GetPodSandboxId()]
	if sb == nil {
		return nil, status.Error(codes.NotFound, "no sandbox")
	}
	sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	for _, c := range f.containers {
		if c.sbID == sb.id && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !f.stopKeepsRunning {
			f.exit(c, 137)
		}
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, r *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sandboxes, r.GetPodSandboxId())
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[r.GetPodSandboxId()]
	if sb == nil {
		return nil, status.Error(codes.NotFound, "no sandbox")
	}
	st := &runtimeapi.PodSandboxStatus{Id: sb.id, Metadata: sb.cfg.GetMetadata(), State: sb.state, CreatedAt: sb.at.UnixNano(),
		Labels: sb.cfg.GetLabels()}
	if sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_POD {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2"}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, r *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range f.sandboxes {
		if !matches(r.GetFilter().GetLabelSelector(), sb.cfg.GetLabels()) {
			continue
		}
		if s := r.GetFilter().GetState(); s != nil && s.GetState() != sb.state {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: sb.id, Metadata: sb.cfg.GetMetadata(), State: sb.state, CreatedAt: sb.at.UnixNano(),
			Labels: sb.cfg.GetLabels(), Annotations: sb.cfg.GetAnnotations()})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeCRI) CreateContainer(ctx context.Context, r *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	if err := f.held(ctx, "CreateContainer"); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sandboxes[r.GetPodSandboxId()] == nil {
		return nil, status.Error(codes.NotFound, "no sandbox")
	}
	if f.createErr != nil {
		return nil, f.createErr
	}
	c := &fakeContainer{cfg: r.GetConfig(), id: f.id("c"), sbID: r.GetPodSandboxId(), image: r.GetConfig().GetImage().GetImage(),
		state: runtimeapi.ContainerState_CONTAINER_CREATED, at: f.clock.Now()}
	f.containers[c.id] = c
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

func (f *fakeCRI) StartContainer(ctx context.Context, r *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := f.held(ctx, "StartContainer"); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[r.GetContainerId()]
	if c == nil {
		return nil, status.Error(codes.NotFound, "no container")
	}
	if f.startErr != nil {
		return nil, f.startErr
	}
	c.state, c.started = runtimeapi.ContainerState_CONTAINER_RUNNING, f.clock.Now()
	return &runtimeapi.StartContainerResponse{}, nil
}

// exit makes the container exit with code now. f.mu is held.
func (f *fakeCRI) exit(c *fakeContainer, code int32) {
	c.state, c.finished, c.exitCode = runtimeapi.ContainerState_CONTAINER_EXITED, f.clock.Now(), code
}

// exitContainer makes the newest running container of that name exit.
func (f *fakeCRI) exitContainer(t *testing.T, name string, code int32) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.cfg.GetMetadata().GetName() == name && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			f.exit(c, code)
			return
		}
	}
	t.Fatalf("no running container %s", name)
}

func (f *fakeCRI) StopContainer(_ context.Context, r *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	hold := f.stopHold
	if c := f.containers[r.GetContainerId()]; hold != nil && c != nil {
		f.mu.Unlock()
		hold(c.cfg.GetMetadata().GetName())
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	c := f.containers[r.GetContainerId()]
	if c == nil {
		return nil, status.Error(codes.NotFound, "no container")
	}
	f.stops[c.cfg.GetMetadata().GetName()] = r.GetTimeout()
	f.stopOrder = append(f.stopOrder, c.cfg.GetMetadata().GetName())
	if !f.stopKeepsRunning && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		code := int32(143)
		if f.stopExitsZero {
			code = 0
		}
		f.exit(c, code)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeCRI) RemoveContainer(_ context.Context, r *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, r.GetContainerId())
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *fakeCRI) ListContainers(_ context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if !matches(r.GetFilter().GetLabelSelector(), c.cfg.GetLabels()) {
			continue
		}
		if s := r.GetFilter().GetState(); s != nil && s.GetState() != c.state {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: c.id, PodSandboxId: c.sbID, Metadata: c.cfg.GetMetadata(),
			Image: c.cfg.GetImage(), ImageRef: c.image, State: c.state, CreatedAt: c.at.UnixNano(),
			Labels: c.cfg.GetLabels(), Annotations: c.cfg.GetAnnotations()})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[r.GetContainerId()]
	if c == nil {
		return nil, status.Error(codes.NotFound, "no container")
	}
	st := &runtimeapi.ContainerStatus{Id: c.id, Metadata: c.cfg.GetMetadata(), State: c.state, CreatedAt: c.at.UnixNano(),
		Image: c.cfg.GetImage(), ImageRef: c.image, ExitCode: c.exitCode,
		Labels: c.cfg.GetLabels(), Annotations: c.cfg.GetAnnotations(), LogPath: c.cfg.GetLogPath(), Mounts: c.cfg.GetMounts()}
	if sb := f.sandboxes[c.sbID]; sb != nil && c.cfg.GetLogPath() != "" {
		st.LogPath = filepath.Join(sb.cfg.GetLogDirectory(), c.cfg.GetLogPath()) // containerd's full path
	}
	if !c.started.IsZero() {
		st.StartedAt = c.started.UnixNano()
	}
	if !c.finished.IsZero() {
		st.FinishedAt = c.finished.UnixNano()
		st.Reason = "Error"
		if c.exitCode == 0 {
			st.Reason = "Completed"
		}
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (f *fakeCRI) ExecSync(_ context.Context, r *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.mu.Lock()
	c := f.containers[r.GetContainerId()]
	f.execs = append(f.execs, fmt.Sprintf("%s %v timeout=%d", c.cfg.GetMetadata().GetName(), r.GetCmd(), r.GetTimeout()))
	takes, reply := f.execTakes, f.execReply
	f.mu.Unlock()
	f.clock.Step(takes)
	if reply != nil {
		return reply(r.GetCmd())
	}
	return &runtimeapi.ExecSyncResponse{}, nil
}

func (f *fakeCRI) ImageStatus(_ context.Context, r *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[r.GetImage().GetImage()] {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + r.GetImage().GetImage(), RepoTags: []string{r.GetImage().GetImage()}}}, nil
}

func (f *fakeCRI) PullImage(_ context.Context, r *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, r.GetImage().GetImage())
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	f.images[r.GetImage().GetImage()] = true
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + r.GetImage().GetImage()}, nil
}

// snapshot returns the containers' configs and states by name, and the sandboxes.
func (f *fakeCRI) snapshot() (map[string][]*fakeContainer, []*fakeSandbox) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cs := map[string][]*fakeContainer{}
	for _, c := range f.containers {
		cp := *c
		cs[c.cfg.GetMetadata().GetName()] = append(cs[c.cfg.GetMetadata().GetName()], &cp)
	}
	var sbs []*fakeSandbox
	for _, sb := range f.sandboxes {
		cp := *sb
		sbs = append(sbs, &cp)
	}
	return cs, sbs
}

func (f *fakeCRI) stopTimeouts() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.stops)
}
