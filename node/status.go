package node

import (
	"net/netip"
	"reflect"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/utils/net"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
)

// GenerateOptions are the inputs of GenerateAPIStatus besides the pod and its runtime
// status. The zero value is usable: no host IPs, no time stamps, a pod not terminal,
// no old status, the "podlife://" container ID type, no probe results and no start
// failures.
type GenerateOptions struct {
	// HostIPs are the node's addresses (primary first) for status.hostIP/hostIPs and
	// a hostNetwork pod's podIPs. The first valid one is the primary; the first later
	// one of the other IP family, if any, the secondary (the kubelet reports at most
	// one per family). Unparsable entries are skipped. None valid: hostIP and hostIPs
	// are left empty (as the kubelet does when it cannot tell its node's addresses).
	HostIPs []string
	// Now stamps the conditions' lastTransitionTime and status.startTime where the
	// old status has none to keep. Zero leaves them as the old status has them.
	Now time.Time
	// PodIsTerminal: the pod workers stopped every container for good
	// (SyncTerminatingPod done, or SyncTerminatedPod): exited containers give a
	// terminal phase whatever the restart policy.
	PodIsTerminal bool
	// OldStatus is the pod's last status (the status manager's cached one, else
	// pod.Status): lastState and restartCount of containers gone from the runtime,
	// started flags, startTime, a terminal phase kept, the phase's reason and message,
	// qosClass, DisruptionTarget and the resize conditions, the conditions'
	// transition times. A zero OldStatus means none is cached: pod.Status is used,
	// as the kubelet does.
	OldStatus v1.PodStatus
	// ContainerIDPrefix is the type prefix of containerID fields ("containerd://";
	// "://" is appended when missing), as the kubelet's ContainerID.String() gives
	// type://id. A runtime ID that already contains "://" is used as is; empty means
	// "podlife://".
	ContainerIDPrefix string
	// ProbeResult reports the latest result of a container's startup or readiness
	// probe (the kubelet's prober results, keyed by containerID): known false while
	// the probe has not run for this instance. Nil: no probe has run; a container
	// with a startup probe in its spec then is not started, one with a readiness
	// probe is not ready, and one without them is started and ready once running.
	ProbeResult func(containerName, containerID string, kind ProbeKind) (success, known bool)
	// StartFailure reports why the last attempt to start a container failed (the
	// kubelet's reasonCache: "CrashLoopBackOff", "ErrImagePull", ... with a message).
	// A container the runtime would start again then shows Waiting with that reason.
	// Nil: no failures recorded.
	StartFailure func(containerName string) (reason, message string, ok bool)
}

// GenerateAPIStatus builds the pod's API status from its runtime status, as the
// kubelet's generateAPIPodStatus (1.37 default feature gates). It is pure: nothing
// passed in is modified and the result shares no memory with the inputs' statuses.
// rs may be nil (nothing exists in the runtime); a nil pod gets the zero status.
//
// Container statuses (init containers in spec order, regular and ephemeral ones by
// name; ContainerStatuses):
//   - Waiting "ContainerCreating" before the runtime has the container, or
//     "PodInitializing" in a pod with init containers (for all its containers); a
//     created container or one in an unknown state is Waiting without reason; a
//     container whose start failed (opts.StartFailure) shows that reason.
//   - Running with startedAt; Terminated with exit code, reason (the runtime's, else
//     "Completed" for exit 0 and "Error"), message, times and containerID.
//   - lastState is the previous instance's state (the second newest of that name),
//     else the old status's; restartCount the runtime's, never below the old one.
//   - A container that was running and is gone from the runtime keeps a Waiting
//     state with a lastState Terminated "ContainerStatusUnknown" (137) and one more
//     restart unless the pod is being deleted; one in an unknown state that was
//     running is Terminated "ContainerStatusUnknown". An init container the runtime
//     no longer has, in a pod whose regular containers exist, counts as Completed.
//     Old statuses that were terminated are kept as they were.
//   - Started and Ready as the kubelet's prober sets them (see
//     GenerateOptions.ProbeResult); a regular init container is ready once it
//     exited 0.
//
// The phase is PodPhaseInitialized on the statuses before Started/Ready are set
// (as the kubelet computes it), with "a regular container of the current sandbox
// exists" read from rs. A terminal phase of opts.OldStatus is never left (the kubelet
// lets a generated terminal phase replace it; podlife's status manager refuses that
// change); a generated non-terminal phase yields to a terminal phase of pod.Status; a
// terminal pod.Status phase is never left. The
// reason and message of the old status are kept while the phase is unchanged (from
// pod.Status where the old ones are empty).
//
// podIPs come from rs.IPs: the first of the primary host IP's family (IPv4 when no
// host IP is known), then the first of the other family. A hostNetwork pod without
// them gets the host IPs. qosClass is opts.OldStatus's, else pod.Status's (the API
// server rejects a change), else PodQOSClass(pod). startTime is kept from the old
// status, else opts.Now. Conditions: PodConditions.
//
// Left out (the kubelet takes them from parts podlife does not have): container and
// pod resources (allocation manager, cgroups), allocatedResourcesStatus (device
// plugins), user (CRI), image-volume digests, evictions by the kubelet's own pod
// sync handlers, and observedGeneration (the status manager sets it).
func GenerateAPIStatus(pod *v1.Pod, rs *pleg.PodStatus, opts GenerateOptions) v1.PodStatus {
	if pod == nil {
		return v1.PodStatus{}
	}
	old := oldStatusOf(pod, &opts)
	var s v1.PodStatus
	hasStartTime := (old.StartTime != nil && !old.StartTime.IsZero()) || !opts.Now.IsZero()
	data, conds, regular := statusMemory(pod, rs, old, &opts, hasStartTime)

	hostIPs := nodeIPs(opts.HostIPs)
	if rs != nil && len(rs.IPs) > 0 {
		s.PodIPs = sortPodIPs(rs.IPs, hostIPs, &data.podIPs)
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}

	switch {
	case old.QOSClass != "":
		s.QOSClass = old.QOSClass
	case pod.Status.QOSClass != "":
		s.QOSClass = pod.Status.QOSClass
	default:
		s.QOSClass = PodQOSClass(pod)
	}

	restarting := shouldAllContainersRestart(pod, rs, old)
	hasInit := len(pod.Spec.InitContainers) > 0
	s.ContainerStatuses = convertStatuses(pod, rs, old.ContainerStatuses, pod.Spec.Containers, hasInit, false, restarting, &opts, regular)
	s.InitContainerStatuses = convertStatuses(pod, rs, old.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true, restarting, &opts, nil)
	ephemeral := make([]v1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		ephemeral[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	s.EphemeralContainerStatuses = convertStatuses(pod, rs, old.EphemeralContainerStatuses, ephemeral, hasInit, false, restarting, &opts, nil)

	s.Phase = PodPhaseInitialized(pod, s.InitContainerStatuses, s.ContainerStatuses, opts.PodIsTerminal,
		hasAnyActiveRegularContainerStarted(&pod.Spec, rs))
	switch {
	case podfacts.IsTerminalPhase(old.Phase):
		// Also over a generated terminal phase (podlife; the kubelet only over a
		// non-terminal one): the status manager never leaves a terminal phase, and a
		// kill's status function may have set Failed on a pod whose containers then
		// stopped with exit code 0 (Succeeded).
		s.Phase = old.Phase
	case !podfacts.IsTerminalPhase(s.Phase) && podfacts.IsTerminalPhase(pod.Status.Phase):
		s.Phase = pod.Status.Phase
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if podfacts.IsTerminalPhase(pod.Status.Phase) {
		s.Phase = pod.Status.Phase
	}

	applyProbes(pod, s.ContainerStatuses, s.InitContainerStatuses, &opts)
	s.Conditions = podConditions(pod, rs, &s, old, &opts, conds)

	if len(hostIPs) > 0 {
		s.HostIP = hostIPs[0].s
		s.HostIPs = make([]v1.HostIP, len(hostIPs))
		for i, ip := range hostIPs {
			s.HostIPs[i].IP = ip.s
		}
		if pod.Spec.HostNetwork {
			if s.PodIP == "" {
				s.PodIP = hostIPs[0].s
				s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
			}
			if len(hostIPs) == 2 && len(s.PodIPs) == 1 {
				if ip, ok := parseIP(s.PodIPs[0].IP); ok && ip.a.Is4() != hostIPs[1].a.Is4() {
					s.PodIPs = append(s.PodIPs, v1.PodIP{IP: hostIPs[1].s})
				}
			}
		}
	}

	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		data.startTime = *old.StartTime
		s.StartTime = &data.startTime
	case hasStartTime:
		data.startTime = metav1.NewTime(opts.Now)
		s.StartTime = &data.startTime
	}
	return s
}

// podStatusData is what a generated status points to besides its conditions and
// container statuses: its start time and the array of its pod IPs (at most two), in one
// allocation instead of two.
type podStatusData struct {
	startTime metav1.Time
	podIPs    [2]v1.PodIP
}

// statusMemory returns what GenerateAPIStatus builds a status in: its podStatusData
// (nil if the status has neither a start time nor pod IPs) and, for the usual pod
// (isUsualPod), empty slices with room for its conditions and its container status,
// allocated with it (nil otherwise: each is allocated on its own).
func statusMemory(pod *v1.Pod, rs *pleg.PodStatus, old *v1.PodStatus, opts *GenerateOptions, hasStartTime bool) (
	*podStatusData, []v1.PodCondition, []v1.ContainerStatus) {
	switch {
	case isUsualPod(pod, old, opts.PodIsTerminal):
		u := new(usualStatus)
		return &u.data, u.conditions[:0], u.containers[:0]
	case hasStartTime || (rs != nil && len(rs.IPs) > 0):
		return new(podStatusData), nil, nil
	}
	return nil, nil, nil
}

// usualStatus is the memory of the status of the usual pod (isUsualPod): its five
// conditions, its container status and its podStatusData, in one allocation instead of
// three.
type usualStatus struct {
	conditions [usualConditions]v1.PodCondition
	containers [1]v1.ContainerStatus
	data       podStatusData
}

// usualConditions is the number of conditions of the usual pod: the kubelet's own five.
const usualConditions = 5

// isUsualPod reports whether pod's status has the usual shape: one regular container,
// no init or ephemeral one, and exactly the kubelet's five conditions (none kept from
// pod.Status or old, no RestartAllContainers rule). old is the old status, as
// podConditions reads it.
func isUsualPod(pod *v1.Pod, old *v1.PodStatus, podIsTerminal bool) bool {
	return len(pod.Spec.Containers) == 1 && len(pod.Spec.InitContainers) == 0 && len(pod.Spec.EphemeralContainers) == 0 &&
		conditionCount(pod, old, podIsTerminal, allContainersCouldRestart(&pod.Spec)) == usualConditions
}

// oldStatusOf returns opts.OldStatus, or pod.Status when OldStatus is zero (read only,
// not copied).
func oldStatusOf(pod *v1.Pod, opts *GenerateOptions) *v1.PodStatus {
	if opts.OldStatus.Phase == "" && reflect.ValueOf(&opts.OldStatus).Elem().IsZero() { // a phase: not zero, at once
		return &pod.Status
	}
	return &opts.OldStatus
}

// ipAddr is a parsed IP address (an IPv4-mapped IPv6 address as IPv4, as net.IP
// treats it) and its text as net.IP.String writes it.
type ipAddr struct {
	a netip.Addr
	s string
}

// parseIP parses an address leniently (leading zeros allowed, as utilnet.ParseIPSloppy);
// false for an invalid one (one with a zone included). Its text is s itself when s is
// already written as net.IP.String would (no allocation then).
func parseIP(s string) (ipAddr, bool) {
	a, err := netip.ParseAddr(s)
	switch {
	case err == nil && a.Zone() != "":
		return ipAddr{}, false
	case err != nil:
		ip := utilnet.ParseIPSloppy(s)
		var ok bool
		if a, ok = netip.AddrFromSlice(ip); !ok {
			return ipAddr{}, false
		}
	}
	a = a.Unmap()
	var buf [64]byte
	if string(a.AppendTo(buf[:0])) != s {
		s = a.String()
	}
	return ipAddr{a: a, s: s}, true
}

// nodeIPs returns the node's primary address (the first valid one) and its secondary
// (the first later one of the other family), if any.
func nodeIPs(ips []string) []ipAddr {
	var out []ipAddr
	for _, s := range ips {
		ip, ok := parseIP(s)
		if !ok {
			continue
		}
		if len(out) == 0 {
			out = make([]ipAddr, 1, 2)
			out[0] = ip
			continue
		}
		if ip.a.Is4() != out[0].a.Is4() {
			return append(out, ip)
		}
	}
	return out
}

// sortPodIPs is the kubelet's sortPodIPs: the first pod IP of the primary host IP's
// family (IPv4 without host IPs), then the first of the other family, re-formatted, in
// buf (nil if none is valid).
func sortPodIPs(podIPs []string, hostIPs []ipAddr, buf *[2]v1.PodIP) []v1.PodIP {
	primaryV4 := len(hostIPs) == 0 || hostIPs[0].a.Is4()
	var out []v1.PodIP
	for _, wantV4 := range [...]bool{primaryV4, !primaryV4} {
		for _, s := range podIPs {
			if ip, ok := parseIP(s); ok && ip.a.Is4() == wantV4 {
				if out == nil {
					out = buf[:0]
				}
				out = append(out, v1.PodIP{IP: ip.s})
				break
			}
		}
	}
	return out
}
