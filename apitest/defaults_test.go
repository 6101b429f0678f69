package apitest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The facts below are kube-apiserver 1.37's (k8s.io/kubernetes pkg/apis/core/v1
// defaults.go and zz_generated.defaults.go), written out by hand.

// in is a pod as a user writes it: the containers named, nothing else.
func in(cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{Containers: cs}}
}

// stored is the pod the API server stores for in(cs...) with the containers already
// defaulted: the pod-level defaults.
func stored(cs ...v1.Container) *v1.Pod {
	p := in(cs...)
	p.Spec.RestartPolicy = "Always"
	p.Spec.DNSPolicy = "ClusterFirst"
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.SecurityContext = &v1.PodSecurityContext{}
	p.Spec.TerminationGracePeriodSeconds = new(int64(30))
	p.Spec.EnableServiceLinks = new(true)
	return p
}

// ctr is a container as a user writes it; def the same container defaulted with pull.
func ctr(name, image string) v1.Container { return v1.Container{Name: name, Image: image} }

func def(c v1.Container, pull v1.PullPolicy) v1.Container {
	c.ImagePullPolicy = pull
	c.TerminationMessagePath = "/dev/termination-log"
	c.TerminationMessagePolicy = "File"
	return c
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestDefaultPod(t *testing.T) {
	sha := "sha256:" + strings.Repeat("0f", 32)
	cpuMem := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: q(cpu), v1.ResourceMemory: q(mem)}
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want *v1.Pod
	}{
		{name: "nil pod", pod: nil, want: nil},
		{name: "a bare pod gets the pod-level defaults",
			pod:  in(ctr("c", "busybox")),
			want: stored(def(ctr("c", "busybox"), "Always"))},
		{name: "set values are kept",
			pod: func() *v1.Pod {
				p := stored(def(ctr("c", "busybox"), "Never"))
				p.Spec.RestartPolicy, p.Spec.DNSPolicy, p.Spec.SchedulerName = "OnFailure", "Default", "mine"
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: new(int64(1000))}
				p.Spec.TerminationGracePeriodSeconds, p.Spec.EnableServiceLinks = new(int64(0)), new(false)
				p.Spec.Containers[0].TerminationMessagePath = "/tmp/msg"
				p.Spec.Containers[0].TerminationMessagePolicy = "FallbackToLogsOnError"
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "busybox"), "Never"))
				p.Spec.RestartPolicy, p.Spec.DNSPolicy, p.Spec.SchedulerName = "OnFailure", "Default", "mine"
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: new(int64(1000))}
				p.Spec.TerminationGracePeriodSeconds, p.Spec.EnableServiceLinks = new(int64(0)), new(false)
				p.Spec.Containers[0].TerminationMessagePath = "/tmp/msg"
				p.Spec.Containers[0].TerminationMessagePolicy = "FallbackToLogsOnError"
				return p
			}()},
		{name: "a negative grace period becomes 1",
			pod: func() *v1.Pod {
				p := in(ctr("c", "busybox:1"))
				p.Spec.TerminationGracePeriodSeconds = new(int64(-3))
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "busybox:1"), "IfNotPresent"))
				p.Spec.TerminationGracePeriodSeconds = new(int64(1))
				return p
			}()},
		{name: "imagePullPolicy follows the tag, in every kind of container",
			pod: func() *v1.Pod {
				p := in(ctr("tagged", "busybox:1.36"), ctr("latest", "busybox:latest"), ctr("digest", "busybox@"+sha),
					ctr("registry", "localhost:5000/busybox"))
				p.Spec.InitContainers = []v1.Container{ctr("init", "busybox")}
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1"}}}
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("tagged", "busybox:1.36"), "IfNotPresent"), def(ctr("latest", "busybox:latest"), "Always"),
					def(ctr("digest", "busybox@"+sha), "IfNotPresent"), def(ctr("registry", "localhost:5000/busybox"), "Always"))
				p.Spec.InitContainers = []v1.Container{def(ctr("init", "busybox"), "Always")}
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(def(ctr("debug", "busybox:1"), "IfNotPresent"))}}
				return p
			}()},
		{name: "requests default to limits in regular and init containers, quantities rounded up to milli-units",
			pod: func() *v1.Pod {
				c := ctr("c", "x:1")
				c.Resources = v1.ResourceRequirements{Limits: cpuMem("500m", "64Mi"), Requests: v1.ResourceList{v1.ResourceCPU: q("100u")}}
				i := ctr("i", "x:1")
				i.Resources = v1.ResourceRequirements{Limits: cpuMem("1", "1Gi")}
				p := in(c)
				p.Spec.InitContainers = []v1.Container{i}
				p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: q("1.0001")}
				return p
			}(),
			want: func() *v1.Pod {
				c := def(ctr("c", "x:1"), "IfNotPresent")
				c.Resources = v1.ResourceRequirements{Limits: cpuMem("500m", "64Mi"), Requests: cpuMem("1m", "64Mi")}
				i := def(ctr("i", "x:1"), "IfNotPresent")
				i.Resources = v1.ResourceRequirements{Limits: cpuMem("1", "1Gi"), Requests: cpuMem("1", "1Gi")}
				p := stored(c)
				p.Spec.InitContainers = []v1.Container{i}
				p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: q("1.001")}
				return p
			}()},
		{name: "service account: the deprecated field fills the name",
			pod: func() *v1.Pod { p := in(ctr("c", "x:1")); p.Spec.DeprecatedServiceAccount = "old"; return p }(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "old", "old"
				return p
			}()},
		{name: "service account: the name wins",
			pod: func() *v1.Pod {
				p := in(ctr("c", "x:1"))
				p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "new", "old"
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "new", "new"
				return p
			}()},
		{name: "ports: protocol TCP; hostPort from containerPort with hostNetwork",
			pod: func() *v1.Pod {
				c := ctr("c", "x:1")
				c.Ports = []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 5353, Protocol: "UDP"}}
				p := in(c)
				p.Spec.HostNetwork = true
				return p
			}(),
			want: func() *v1.Pod {
				c := def(ctr("c", "x:1"), "IfNotPresent")
				c.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: "TCP"}, {ContainerPort: 53, HostPort: 5353, Protocol: "UDP"}}
				p := stored(c)
				p.Spec.HostNetwork = true
				return p
			}()},
		{name: "ports without hostNetwork keep hostPort 0",
			pod: func() *v1.Pod {
				c := ctr("c", "x:1")
				c.Ports = []v1.ContainerPort{{ContainerPort: 80}}
				return in(c)
			}(),
			want: func() *v1.Pod {
				c := def(ctr("c", "x:1"), "IfNotPresent")
				c.Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}}
				return stored(c)
			}()},
		{name: "probes, lifecycle hooks and env",
			pod: func() *v1.Pod {
				c := ctr("c", "x:1")
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{}}}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9}}, PeriodSeconds: 3}
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}, FailureThreshold: 30}
				c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stop"}}}
				c.Env = []v1.EnvVar{{Name: "a", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "b", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{Key: "k"}}}, {Name: "c", Value: "v"}}
				return in(c)
			}(),
			want: func() *v1.Pod {
				c := def(ctr("c", "x:1"), "IfNotPresent")
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Scheme: "HTTP"}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9, Service: new("")}},
					TimeoutSeconds: 1, PeriodSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3}
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 30}
				c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stop", Scheme: "HTTP"}}}
				c.Env = []v1.EnvVar{{Name: "a", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
					{Name: "b", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{Key: "k", Optional: new(false)}}}, {Name: "c", Value: "v"}}
				return stored(c)
			}()},
		{name: "volumes",
			pod: func() *v1.Pod {
				p := in(ctr("c", "x:1"))
				p.Spec.Volumes = []v1.Volume{
					{Name: "none"},
					{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
					{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: new(int32(0o600))}}},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
					{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
						{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
					{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
						{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}},
					{Name: "image", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "artifact:v1"}}},
					{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}},
					{Name: "rbd", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{}}},
					{Name: "iscsi", VolumeSource: v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{}}},
					{Name: "azure", VolumeSource: v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{}}},
					{Name: "scaleio", VolumeSource: v1.VolumeSource{ScaleIO: &v1.ScaleIOVolumeSource{}}},
				}
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Spec.Volumes = []v1.Volume{
					{Name: "none", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: new(int32(0o644))}}},
					{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: new(int32(0o600))}}},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x", Type: new(v1.HostPathType(""))}}},
					{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: new(int32(0o644)), Items: []v1.DownwardAPIVolumeFile{
						{Path: "n", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}}},
					{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: new(int32(0o644)), Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3600))}},
						{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}}}}}},
					{Name: "image", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "artifact:v1", PullPolicy: "IfNotPresent"}}},
					{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
						Spec: v1.PersistentVolumeClaimSpec{VolumeMode: new(v1.PersistentVolumeFilesystem)}}}}},
					{Name: "rbd", VolumeSource: v1.VolumeSource{RBD: &v1.RBDVolumeSource{RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring"}}},
					{Name: "iscsi", VolumeSource: v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{ISCSIInterface: "default"}}},
					{Name: "azure", VolumeSource: v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{CachingMode: new(v1.AzureDataDiskCachingMode("ReadWrite")),
						FSType: new("ext4"), ReadOnly: new(false), Kind: new(v1.AzureDataDiskKind("Shared"))}}},
					{Name: "scaleio", VolumeSource: v1.VolumeSource{ScaleIO: &v1.ScaleIOVolumeSource{StorageMode: "ThinProvisioned", FSType: "xfs"}}},
				}
				return p
			}()},
		{name: "status: podIPs from podIP",
			pod: func() *v1.Pod { p := in(ctr("c", "x:1")); p.Status.PodIP = "10.0.0.1"; return p }(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.1", []v1.PodIP{{IP: "10.0.0.1"}}
				return p
			}()},
		{name: "status: podIP from podIPs",
			pod: func() *v1.Pod {
				p := in(ctr("c", "x:1"))
				p.Status.PodIPs = []v1.PodIP{{IP: "fd00::1"}, {IP: "10.0.0.1"}}
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Status.PodIP, p.Status.PodIPs = "fd00::1", []v1.PodIP{{IP: "fd00::1"}, {IP: "10.0.0.1"}}
				return p
			}()},
		{name: "status: podIP wins over a different podIPs",
			pod: func() *v1.Pod {
				p := in(ctr("c", "x:1"))
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.2", []v1.PodIP{{IP: "10.0.0.1"}}
				return p
			}(),
			want: func() *v1.Pod {
				p := stored(def(ctr("c", "x:1"), "IfNotPresent"))
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.2", []v1.PodIP{{IP: "10.0.0.2"}}
				return p
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.pod.DeepCopy()
			DefaultPod(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DefaultPod (-want +got):\n%s", diff)
			}
			again := got.DeepCopy()
			DefaultPod(again)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("DefaultPod of a defaulted pod changed it (-once +twice):\n%s", diff)
			}
		})
	}
}

// Create defaults the pod and does what the API server does on create only: generation
// 1, the status reset to Pending with the QoS class, the SchedulingGated condition.
func TestCreateDefaults(t *testing.T) {
	guaranteed := ctr("c", "busybox")
	guaranteed.Resources.Limits = v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")}
	tests := []struct {
		name string
		pod  *v1.Pod
		want func(p *v1.Pod) // the stored pod, from stored(...) of the pod's containers
	}{
		{name: "a bare pod", pod: in(ctr("c", "busybox")),
			want: func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }},
		{name: "the status is dropped", pod: func() *v1.Pod {
			p := in(ctr("c", "busybox"))
			p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1", QOSClass: v1.PodQOSGuaranteed,
				Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
			return p
		}(), want: func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }},
		{name: "limits only is Guaranteed (requests defaulted first)", pod: in(guaranteed),
			want: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")}
				p.Status.QOSClass = v1.PodQOSGuaranteed
			}},
		{name: "scheduling gates", pod: func() *v1.Pod {
			p := in(ctr("c", "busybox"))
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
			return p
		}(), want: func(p *v1.Pod) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
			p.Status.QOSClass = v1.PodQOSBestEffort
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "SchedulingGated",
				Message: "Scheduling is blocked due to non-empty scheduling gates", LastTransitionTime: metav1.NewTime(t0)}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newServer()
			before := tt.pod.DeepCopy()
			got, err := s.Create(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, tt.pod); diff != "" {
				t.Errorf("Create modified its argument (-before +after):\n%s", diff)
			}
			want := stored(def(tt.pod.Spec.Containers[0], v1.PullAlways)) // every image here is busybox
			want.UID, want.ResourceVersion, want.Generation, want.CreationTimestamp = "uid-0001", "1", 1, metav1.NewTime(t0)
			want.Status.Phase = v1.PodPending
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create (-want +got):\n%s", diff)
			}
		})
	}
}
