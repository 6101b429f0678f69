package apitest

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/internal/podfacts"
)

// DefaultPod sets the defaults kube-apiserver 1.37 gives every pod it decodes
// (k8s.io/kubernetes pkg/apis/core/v1 SetObjectDefaults_Pod with the default feature
// gates), in place: the Server's Create calls it, and tests call it to make a fixture
// look like a stored object. Only empty fields are set (and quantities rounded up to
// milli-units), so a defaulted pod is a fixed point. A nil pod is left alone.
//
// The pod (SetDefaults_Pod, SetDefaults_PodSpec):
//   - restartPolicy Always, dnsPolicy ClusterFirst, schedulerName default-scheduler,
//     securityContext {}, terminationGracePeriodSeconds 30 (a negative one becomes 1),
//     enableServiceLinks true;
//   - serviceAccountName from the deprecated serviceAccount, and serviceAccount from
//     serviceAccountName (which wins);
//   - a regular or init container's missing resource requests are its limits;
//   - with hostNetwork, a container port's hostPort is its containerPort.
//
// Every container (init, regular and ephemeral):
//   - imagePullPolicy Always for an image tagged latest or without a tag (and without a
//     digest), IfNotPresent otherwise (podfacts.DefaultImagePullPolicy);
//     terminationMessagePath /dev/termination-log; terminationMessagePolicy File;
//   - ports' protocol TCP; env fieldRef apiVersion v1, fileKeyRef optional false;
//   - probes: timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3;
//     httpGet path "/" and scheme HTTP (probes and lifecycle hooks); grpc service "".
//
// Volumes: a volume without a source is an emptyDir; defaultMode 0644 for secret,
// configMap, downwardAPI and projected; hostPath type ""; downwardAPI fieldRef apiVersion
// v1; serviceAccountToken expirationSeconds 3600; an image volume's pullPolicy as a
// container's; an ephemeral volume claim's volumeMode Filesystem; and the defaults of
// iscsi, rbd, azureDisk and scaleIO.
//
// The status: podIP and podIPs agree (podIP wins).
//
// Not done: the defaults of feature gates off by default in 1.37 (H2CContainerProbe), and
// what the API server does on create only (Create does that: generation 1, the status
// reset to phase Pending with the QoS class, the SchedulingGated condition). Pod-level
// resources are not defaulted from the containers', and admission (service account,
// LimitRange, ...) is not run.
func DefaultPod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	spec := &pod.Spec
	// SetDefaults_Pod.
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		spec.TerminationGracePeriodSeconds = new(int64(1))
	}
	for _, cs := range [][]v1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			requestsFromLimits(&cs[i].Resources)
		}
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = new(v1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		for _, cs := range [][]v1.Container{spec.Containers, spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	// SetDefaults_PodSpec.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	spec.RestartPolicy = podfacts.RestartPolicy(spec)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = new(podfacts.TerminationGracePeriodSeconds(spec))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundRequirements(spec.Resources)
	}
	defaultPodStatus(&pod.Status)
}

// requestsFromLimits gives every resource with a limit and no request the limit as its
// request.
func requestsFromLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	for name, lim := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = lim.DeepCopy()
		}
	}
}

// roundUp rounds every quantity of l up to milli-units (SetDefaults_ResourceList).
func roundUp(l v1.ResourceList) {
	for name, q := range l {
		q.RoundUp(resource.Milli)
		l[name] = q
	}
}

func roundRequirements(r *v1.ResourceRequirements) {
	roundUp(r.Limits)
	roundUp(r.Requests)
}

// defaultContainer is SetDefaults_Container and the defaults of the container's parts.
func defaultContainer(c *v1.Container) {
	c.ImagePullPolicy = podfacts.ImagePullPolicy(c)
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			defaultFieldRef(from.FieldRef)
			if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
				from.FileKeyRef.Optional = new(false)
			}
		}
	}
	roundRequirements(&c.Resources)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*v1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = new("")
	}
}

func defaultHTTPGet(a *v1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = v1.URISchemeHTTP
	}
}

func defaultFieldRef(f *v1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// defaultVolume is SetDefaults_Volume and the defaults of the volume sources.
func defaultVolume(v *v1.Volume) {
	src := &v.VolumeSource
	if *src == (v1.VolumeSource{}) {
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if img := src.Image; img != nil && img.PullPolicy == "" {
		img.PullPolicy = podfacts.DefaultImagePullPolicy(img.Reference)
	}
	if hp := src.HostPath; hp != nil && hp.Type == nil {
		hp.Type = new(v1.HostPathUnset)
	}
	if s := src.Secret; s != nil && s.DefaultMode == nil {
		s.DefaultMode = new(int32(v1.SecretVolumeSourceDefaultMode))
	}
	if s := src.ISCSI; s != nil && s.ISCSIInterface == "" {
		s.ISCSIInterface = "default"
	}
	if s := src.RBD; s != nil {
		if s.RBDPool == "" {
			s.RBDPool = "rbd"
		}
		if s.RadosUser == "" {
			s.RadosUser = "admin"
		}
		if s.Keyring == "" {
			s.Keyring = "/etc/ceph/keyring"
		}
	}
	if s := src.DownwardAPI; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = new(int32(v1.DownwardAPIVolumeSourceDefaultMode))
		}
		for i := range s.Items {
			defaultFieldRef(s.Items[i].FieldRef)
		}
	}
	if s := src.ConfigMap; s != nil && s.DefaultMode == nil {
		s.DefaultMode = new(int32(v1.ConfigMapVolumeSourceDefaultMode))
	}
	if s := src.AzureDisk; s != nil {
		if s.CachingMode == nil {
			s.CachingMode = new(v1.AzureDataDiskCachingReadWrite)
		}
		if s.FSType == nil {
			s.FSType = new("ext4")
		}
		if s.ReadOnly == nil {
			s.ReadOnly = new(false)
		}
		if s.Kind == nil {
			s.Kind = new(v1.AzureSharedBlobDisk)
		}
	}
	if s := src.Projected; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = new(int32(v1.ProjectedVolumeSourceDefaultMode))
		}
		for i := range s.Sources {
			if d := s.Sources[i].DownwardAPI; d != nil {
				for j := range d.Items {
					defaultFieldRef(d.Items[j].FieldRef)
				}
			}
			if t := s.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = new(int64(3600))
			}
		}
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = "ThinProvisioned"
		}
		if s.FSType == "" {
			s.FSType = "xfs"
		}
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		s := &e.VolumeClaimTemplate.Spec
		if s.VolumeMode == nil {
			s.VolumeMode = new(v1.PersistentVolumeFilesystem)
		}
		roundUp(s.Resources.Limits)
		roundUp(s.Resources.Requests)
	}
}

// defaultPodStatus is SetDefaults_PodStatus and the rounding of the status's quantities.
func defaultPodStatus(s *v1.PodStatus) {
	switch hasIP, hasIPs := s.PodIP != "", len(s.PodIPs) > 0; {
	case hasIP && !hasIPs:
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	case !hasIP && hasIPs:
		s.PodIP = s.PodIPs[0].IP
	case hasIP && hasIPs && s.PodIPs[0].IP != s.PodIP:
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	for _, cs := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range cs {
			roundUp(cs[i].AllocatedResources)
			if cs[i].Resources != nil {
				roundRequirements(cs[i].Resources)
			}
		}
	}
	roundUp(s.AllocatedResources)
	if s.Resources != nil {
		roundRequirements(s.Resources)
	}
}
