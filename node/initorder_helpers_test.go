package node_test

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/pleg"
)

// The fixtures of the container order scenarios (init_test.go, sidecar_order_test.go): a
// pod with init containers before its app on nodetest's runtime, and the runtime's view
// of it.

// sidecar is a restartable init container (restartPolicy Always).
func sidecar(name, image string) v1.Container {
	return v1.Container{Name: name, Image: image, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
}

// createWithInit creates pod name (grace 30 s, its app "app" after init) and waits for
// its phase; it returns the created pod.
func (e *env) createWithInit(name string, policy v1.RestartPolicy, phase v1.PodPhase, init ...v1.Container) *v1.Pod {
	e.t.Helper()
	p := newPod(name, 30, policy, nil)
	p.Spec.InitContainers = init
	created := e.create(p)
	e.waitPhase(name, phase)
	return created
}

// runtimeStatus is the runtime's status of pod p, failing the test if it cannot be read.
func (e *env) runtimeStatus(p *v1.Pod) *pleg.PodStatus {
	e.t.Helper()
	st, err := e.mem.PodStatus(e.t.Context(), p.UID, p.Name, p.Namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}
