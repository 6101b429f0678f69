// Package cri is a node.Runtime over the Container Runtime Interface (CRI v1, the API the
// kubelet speaks to containerd and CRI-O), through gRPC on a unix socket. A node agent on
// package node runs real containers with it:
//
//	rt, err := cri.New(cri.Config{Endpoint: "unix:///run/containerd/containerd.sock"})
//	...
//	defer rt.Close()
//	// node.Config{Runtime: rt, ...}
//
// It keeps the kubelet's conventions, so the kubelet's tools and a later kubelet recognise
// its pods: sandboxes and containers carry the labels io.kubernetes.pod.uid/name/namespace
// and io.kubernetes.container.name, containers the annotations
// io.kubernetes.container.restartCount and io.kubernetes.container.hash, and logs go to
// LogRoot/<namespace>_<name>_<uid>/<container>/<restartCount>.log.
//
// What each node.Runtime method does:
//
//   - ListPods: ListPodSandbox + ListContainers, grouped by the pod UID label; a sandbox is
//     a pleg container that is running while it is READY. The runtime keeps each pod's IDs
//     from it, and adds the objects it creates itself.
//   - PodStatus: the pod's sandboxes (newest first, with the IPs of the newest ready one)
//     and each container's status (exit code, reason, times, image reference), newest
//     instance first. For a pod whose IDs the runtime knows, as the kubelet does: one
//     PodSandboxStatus per sandbox and one ContainerStatus per container, by ID, a stopped
//     sandbox's and an exited container's last status reused; no list (containerd answers
//     a filtered list by converting every object it has). Any other pod is listed by its
//     UID label.
//   - SyncPod: first the pod's volumes (see Volumes below; none missing, or nothing
//     starts), then the kubelet's computePodActions: create a sandbox when none is ready (kill
//     what is left of the old one first), pull images as imagePullPolicy says, start the
//     init containers one by one as package order decides (a sidecar, a restartable init
//     container, is done once it runs, or once a startup probe run through Probe
//     succeeded; exited sidecars restart), then the containers, restart exited ones as the
//     restartPolicy says with the kubelet's crash-loop back-off (10 s doubling to 5 min,
//     per pod and container, forgotten after 10 min without a restart; backoff.go). Nothing
//     of a pod that is done is started again. A container it does not start is reported
//     as a *node.ContainerError (several joined with errors.Join) with the kubelet's reason
//     and message: InvalidImageName, ErrImageNeverPull, ErrImagePull, ImagePullBackOff
//     (the pull back-off: 10 s doubling to 5 min per pod and image, the last pull's error
//     in the message), CreateContainerError, RunContainerError (the CRI error's message),
//     CrashLoopBackOff ("back-off 10s restarting failed container=app pod=web_ns(uid)").
//     Each container gets its environment as the kubelet makes it (package
//     examples/envvar, from Config.Env: ConfigMaps, Secrets and services through the
//     node's client, the downward API with the node's addresses and allocatable) and its
//     command and args with $(VAR) expanded from it; a missing mandatory ConfigMap,
//     Secret or key is CreateContainerConfigError with the kubelet's message
//     (configmap "x" not found, couldn't find key k in ConfigMap ns/x), the container not
//     created.
//     RunPodSandbox, CreateContainer and StartContainer run under a context that does not
//     end with SyncPod's (bounded by Config.CallTimeout, 2 min): a pod deleted while it
//     starts lets them finish (containerd would kill the shim and report exit code 128,
//     StartError), and KillPod then stops what started, as the kubelet does.
//     Ephemeral containers (spec.ephemeralContainers, added through the
//     pods/ephemeralcontainers subresource) are started by the next SyncPod once the
//     sandbox is ready, before the init containers, and never restarted; KillPod stops
//     them with the pod (their namespace is the pod's: targetContainerName is not used).
//   - Hooks (hooks.go), as the kubelet's handlers.go: a postStart hook runs after
//     StartContainer (exec through ExecSync, httpGet to its host or the pod's IP, a
//     hostNetwork pod's status.hostIP or 127.0.0.1, with User-Agent kube-lifecycle/1.37 and
//     only a missing response failing; sleep); a failing one gives the event
//     FailedPostStartHook "PostStartHook failed", kills the container (preStop hook,
//     StopContainer) and is reported as PostStartHookError with the hook's message
//     (ErrPostStartHook); the restartPolicy decides whether it starts again.
//   - Termination messages (termination.go), as the kubelet: each container instance gets
//     an empty 0666 file, RootDir/pods/<uid>/containers/<name>/<8 hex digits>, mounted at
//     its terminationMessagePath; once it exited, the file's last 4 KiB are the message of
//     its status (after the runtime's own, with ": "), or, with FallbackToLogsOnError and
//     a failed container that left it empty, the last 80 lines (2 KiB at most) of its log.
//   - KillPod: every running container in parallel: its preStop hook (exec, httpGet or
//     sleep as postStart's, bounded by the grace period; a failing one gives
//     FailedPreStopHook "PreStopHook failed" and the stop goes on), then StopContainer with
//     the rest of the grace period, at least 2 s; a sidecar's StopContainer waits for the
//     main containers and the sidecars declared after it (order.Termination, the wait taken
//     out of its grace: order.StopGrace); then StopPodSandbox. What runs is read as
//     PodStatus reads it. It returns
//     nil only when no container of the pod runs (one list of its running containers
//     afterwards catches one the runtime did not know of).
//   - KillRuntimePod: the same with a grace period of 1 s (hence the 2 s minimum).
//   - CleanupPod: stops a sandbox still ready (after KillPod: no call at all); the stopped
//     containers stay for their logs. It releases the pod's volumes: its tokens forgotten,
//     its tmpfs mounts unmounted, its directory under Config.RootDir removed.
//   - PushStatuses: once a SyncPod that created a sandbox or started a container returned,
//     the pod is inspected and its status pushed to the node, so a started container is
//     seen at once rather than at the next relist (containerd 1.6 sends no events).
//
// Many pods at once: Config.MaxConcurrentPods pods (default 4) have their sandbox and
// containers started at once, and as many stopped, the others waiting in arrival order, so
// the first pods are done early instead of every pod sharing the runtime's CPU until the
// last one is done; a pod gives its place to the next after Config.AdmissionLease (0.5 s)
// at most, so a slow image pull or a container waiting out its grace period delays the
// others by that much at most.
//   - RemovePod: RemoveContainer for each container, RemovePodSandbox for each sandbox, the
//     pod's log directory and what is left of its volumes' directory.
//
// It is a node.Prober too, so the node runs the containers' probes through it on the
// kubelet's schedule: Probe runs an exec probe through ExecSync (exit 0 succeeds; past
// timeoutSeconds it fails with "command timed out"), an httpGet probe from the node to
// the pod's IP (a hostNetwork pod's at 127.0.0.1; User-Agent kube-probe/1.37; 200-399
// succeeds, a redirect to another host is a warning, others fail with "HTTP probe failed
// with statuscode: N"), a tcpSocket probe by dialing, a grpc probe through
// grpc.health.v1 (SERVING succeeds), with the kubelet's outputs. KillContainer stops the
// one container that failed its liveness or startup probe as KillPod stops each (preStop
// hook, then StopContainer) with the probe's terminationGracePeriodSeconds when it has
// one; the node's next SyncPod starts it again, under restartPolicy OnFailure too whatever
// its exit code (the kubelet's computePodActions restarts a probe-killed container). An
// exec probe's command has $(VAR) expanded from the container's environment, as the
// kubelet's. Not done: HTTP/2 (h2c) and TLS grpc probes.
//
// Beyond node.Runtime, PodStats is a pod's ephemeral-storage use for
// eviction.LocalStorageEviction (package examples/evict runs the kubelet's local-storage
// evictions with it): each container's writable layer from ListContainerStats (containerd
// measures it with its snapshotter every 10 s: a write shows up that much later at most)
// and the size of its log files; not its volumes (an emptyDir's sizeLimit is not
// enforced).
//
// Volumes (volumes.go), set up by SyncPod before any container starts, as the kubelet's
// volume manager, in Config.RootDir/pods/<uid>/volumes/<plugin>/<name> (the kubelet's
// layout, kubernetes.io~empty-dir, ~configmap, ~secret, ~downward-api, ~projected):
//
//   - emptyDir: a 0777 directory; medium Memory a tmpfs of its sizeLimit (as root; a
//     plain directory when mounting is not allowed or Config.MemoryVolumesOnDisk is set).
//   - hostPath: the host's path after the kubelet's type check (DirectoryOrCreate,
//     Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice, with its messages).
//   - configMap, secret, downwardAPI and projected (serviceAccountToken, configMap,
//     secret, downwardAPI): items, defaultMode, a mode per item, optional; read through
//     Config.Volumes (the node's client: ClientVolumes); secret and projected volumes on a
//     tmpfs like emptyDir Memory. Their files are written as the kubelet's atomic writer
//     does (a timestamped directory, the ..data symlink swapped, a symlink per name) and
//     brought up to date at each SyncPod and every Config.VolumeResync (1 min): a changed
//     object or pod label shows up in place, an unchanged one writes nothing. A token is
//     requested with the projection's audience and expirationSeconds, bound to the pod,
//     and requested again at 80% of its lifetime or after 24 h (the kubelet's token
//     manager).
//
// A volume that cannot be set up (a mandatory configMap or secret missing, a key missing,
// a hostPath of the wrong type) gets the kubelet's FailedMount event (`MountVolume.SetUp
// failed for volume "x" : configmap "y" not found`), the pod "Unable to attach or mount
// volumes: unmounted volumes=[x], ..." and SyncPod fails with ErrVolumes: the pod waits
// (ContainerCreating) and the node retries. A container's mounts are the kubelet's
// makeMounts: read-only when the volumeMount says so and for the API-data volumes, the
// mount propagation, subPath and subPathExpr (expanded from the container's env: values
// and the downward API's fieldRef and resourceFieldRef) with the kubelet's checks: an
// absolute path or ".." gives CreateContainerConfigError (ErrCreateContainerConfig) with
// its message ("unable to provision SubPath `..`: must not contain '..'"), a missing
// variable "missing value for X"; a subPath leading out of the volume through a symlink
// is refused (the kubelet also bind-mounts it to close the race; not done here).
//
// Networking: hostNetwork pods run in the node's network namespace (NamespaceMode NODE).
// A pod that needs its own network is refused with ErrPodNetwork and an event unless
// Config.PodNetwork says otherwise (PodNetworkRuntime: let the runtime's CNI set it up;
// PodNetworkNode: run it in the node's network namespace anyway).
//
// Not covered: persistent, CSI and image volumes and clusterTrustBundle projections,
// fsGroup ownership of volumes, resources and cgroups (an ephemeral-storage limit is only
// enforced by an evictor, examples/evict, reading PodStats), security contexts beyond the
// namespaces, and
// restarts on a changed container spec.
package cri
