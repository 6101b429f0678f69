package vk

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/envvar"
	"github.com/podlife/podlife/node"
)

// EnvSource reads the ConfigMaps and Secrets a pod's environment refers to. The Node
// authorizer lets a node GET the ConfigMaps and Secrets of the pods bound to it.
type EnvSource = envvar.Getter

// ClientEnvSource is an EnvSource that GETs the objects through client (the node's).
//
// Deprecated: use envvar.ClientGetter.
func ClientEnvSource(client kubernetes.Interface) EnvSource { return envvar.ClientGetter(client) }

// Reasons of the events of environment resolution (virtual-kubelet's podutils) and the
// kubelet's waiting reason of a container whose environment cannot be made.
const (
	ReasonOptionalConfigMapNotFound     = envvar.ReasonOptionalConfigMapNotFound
	ReasonOptionalConfigMapKeyNotFound  = envvar.ReasonOptionalConfigMapKeyNotFound
	ReasonFailedToReadOptionalConfigMap = envvar.ReasonFailedToReadOptionalConfigMap
	ReasonOptionalSecretNotFound        = envvar.ReasonOptionalSecretNotFound
	ReasonOptionalSecretKeyNotFound     = envvar.ReasonOptionalSecretKeyNotFound
	ReasonFailedToReadOptionalSecret    = envvar.ReasonFailedToReadOptionalSecret

	ReasonMandatoryConfigMapNotFound     = envvar.ReasonMandatoryConfigMapNotFound
	ReasonMandatoryConfigMapKeyNotFound  = envvar.ReasonMandatoryConfigMapKeyNotFound
	ReasonFailedToReadMandatoryConfigMap = envvar.ReasonFailedToReadMandatoryConfigMap
	ReasonMandatorySecretNotFound        = envvar.ReasonMandatorySecretNotFound
	ReasonMandatorySecretKeyNotFound     = envvar.ReasonMandatorySecretKeyNotFound
	ReasonFailedToReadMandatorySecret    = envvar.ReasonFailedToReadMandatorySecret

	ReasonInvalidEnvironmentVariableNames = envvar.ReasonInvalidEnvironmentVariableNames

	// ReasonCreateContainerConfigError is the kubelet's waiting reason of a container
	// whose configuration (here: its environment) cannot be made.
	ReasonCreateContainerConfigError = node.ReasonCreateContainerConfigError
)

// ErrEnv is wrapped by the error of a pod whose environment cannot be resolved (a
// mandatory ConfigMap, Secret or key is missing or unreadable, or a field reference is
// invalid); EnvError carries the container.
var ErrEnv = errors.New("vk: cannot resolve the environment")

// EnvError is the error of one container's environment.
type EnvError struct {
	Container string
	Msg       string
}

func (e *EnvError) Error() string { return e.Msg }
func (e *EnvError) Unwrap() error { return ErrEnv }

// envResolver resolves a pod's environment as virtual-kubelet's pod controller does
// before CreatePod and UpdatePod (podutils.PopulateEnvironmentVariables), with package
// examples/envvar (the kubelet's rules, shared with examples/cri): every container gets
// its env from envFrom (ConfigMaps, Secrets, with prefix) and env (values with $(VAR)
// expanded, ConfigMap and Secret keys, fieldRef, resourceFieldRef) as plain values, env
// overriding envFrom, and no envFrom. A missing optional reference is skipped with a
// warning event; a missing mandatory one, or any object that cannot be read (not
// NotFound: the kubelet's rule), fails the pod's resolution with the kubelet's message.
// As virtual-kubelet, envFrom keys that are not variable names are skipped with an
// event. Unlike virtual-kubelet, the order of env is kept (envFrom's keys sorted first,
// then env's in order) and resourceFieldRef is resolved (an unset limit is the node's
// allocatable, as the kubelet's); service links are not added.
type envResolver struct {
	r envvar.Resolver
}

func newEnvResolver(src EnvSource, allocatable v1.ResourceList, event func(pod *v1.Pod, reason, message string)) *envResolver {
	return &envResolver{r: envvar.Resolver{Getter: src, Allocatable: allocatable, SkipInvalidNames: true, Event: event}}
}

// resolve returns a copy of pod with every container's environment resolved.
func (r *envResolver) resolve(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			env, err := r.container(ctx, pod, &cs[i])
			if err != nil {
				return nil, err
			}
			cs[i].Env, cs[i].EnvFrom = env, nil
		}
	}
	for i := range out.Spec.EphemeralContainers {
		c := &out.Spec.EphemeralContainers[i]
		ct := v1.Container(c.EphemeralContainerCommon)
		env, err := r.container(ctx, pod, &ct)
		if err != nil {
			return nil, err
		}
		c.Env, c.EnvFrom = env, nil
	}
	return out, nil
}

func (r *envResolver) container(ctx context.Context, pod *v1.Pod, c *v1.Container) ([]v1.EnvVar, error) {
	if len(c.Env) == 0 && len(c.EnvFrom) == 0 {
		return c.Env, nil
	}
	env, err := r.r.Env(ctx, pod, c, nil)
	if err != nil {
		return nil, &EnvError{Container: c.Name, Msg: err.Error()}
	}
	return env, nil
}
