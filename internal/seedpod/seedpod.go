// Package seedpod builds the benchmark brief's "seed pod", the one pod template every
// workload (W1-W4) is measured on, so that the packages' benchmarks share one definition.
// It is internal: only podlife's own tests and benchmarks use it.
package seedpod

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
)

// lastApplied is the ~300-byte kubectl annotation of BENCHMARKS.md's seed pod.
const lastApplied = `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"labels":{"app":"busybox"},"name":"busybox","namespace":"default"},"spec":{"containers":[{"command":["/bin/sh","-c","sleep 36000"],"image":"busybox","imagePullPolicy":"IfNotPresent","name":"busybox"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30}}` + "\n"

// New builds BENCHMARKS.md's seed pod number n: namespace default, name busybox-n,
// labels {app: busybox}, the last-applied annotation, a resourceVersion, one busybox
// container with a projected service-account volume, two NoExecute tolerations, and a
// Running status with 4 conditions, host and pod IPs and one running container status.
func New(n int) *v1.Pod {
	grace, tol, expiry := int64(30), int64(300), int64(3607)
	prio := int32(0)
	mode := int32(420)
	enable := true
	start := metav1.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	name := fmt.Sprintf("busybox-%d", n)
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "default",
			UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)),
			ResourceVersion:   fmt.Sprint(1000 + n),
			CreationTimestamp: start,
			Labels:            map[string]string{"app": "busybox"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": strings.Replace(lastApplied, `"busybox","namespace"`, `"`+name+`","namespace"`, 1),
			},
		},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{
				Name: "kube-api-access-" + fmt.Sprintf("%05d", n%100000),
				VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
					Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: &expiry, Path: "token"}},
						{ConfigMap: &v1.ConfigMapProjection{
							LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
						}},
						{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{
							Path:     "namespace",
							FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
						}}}},
					},
					DefaultMode: &mode,
				}},
			}},
			Containers: []v1.Container{{
				Name:    "busybox",
				Image:   "busybox",
				Command: []string{"/bin/sh", "-c", "sleep 36000"},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")},
				},
				VolumeMounts: []v1.VolumeMount{{
					Name:      "kube-api-access-" + fmt.Sprintf("%05d", n%100000),
					ReadOnly:  true,
					MountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
				}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
				ImagePullPolicy:          v1.PullIfNotPresent,
			}},
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     v1.DNSClusterFirst,
			ServiceAccountName:            "default",
			NodeName:                      "node1",
			SecurityContext:               &v1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &tol},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &tol},
			},
			Priority:           &prio,
			EnableServiceLinks: &enable,
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{
				{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: start},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
			},
			HostIP:    "10.0.0.1",
			HostIPs:   []v1.HostIP{{IP: "10.0.0.1"}},
			PodIP:     fmt.Sprintf("10.244.%d.%d", n/250, n%250+2),
			PodIPs:    []v1.PodIP{{IP: fmt.Sprintf("10.244.%d.%d", n/250, n%250+2)}},
			StartTime: &start,
			QOSClass:  v1.PodQOSBurstable,
			ContainerStatuses: []v1.ContainerStatus{{
				Name:        "busybox",
				Ready:       true,
				Image:       "docker.io/library/busybox:latest",
				ImageID:     "docker.io/library/busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
				ContainerID: fmt.Sprintf("containerd://%064d", n),
				Started:     &enable,
				State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}},
			}},
		},
	}
}

// Merged is New(n) as the config merge delivers it to the pod workers and the status
// manager: with the source annotation "api" and the first-seen annotation stamped at seen.
func Merged(n int, seen time.Time) *v1.Pod {
	p := New(n)
	p.Annotations[podfacts.SourceAnnotationKey] = podfacts.APISource
	p.Annotations[podfacts.SeenAnnotationKey] = seen.UTC().Format(podfacts.SeenTimeLayout)
	return p
}
