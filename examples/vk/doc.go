// Package vk runs virtual-kubelet providers under podlife's pod lifecycle.
//
// A provider (node.PodLifecycleHandler, and node.PodNotifier if it has it) becomes the
// Backend of podlife's node agent (package examples/agent) through an Adapter: the pod
// workers create, update and delete pods in the provider; the provider's GetPods and GetPod
// back the PLEG's relist and re-inspection, and NotifyPods its push mode; the status
// manager patches the provider's statuses to the API server and deletes a pod object only
// once the provider has stopped the pod and its terminal phase is on the server.
//
// Like virtual-kubelet's pod controller, Run resolves each container's environment before
// CreatePod (AdapterConfig.Env; Config.SkipEnvResolution), shows a failing CreatePod in the
// pod's status (ProviderFailed) and as events, and runs only the pods Config.PodFilter
// accepts; NewRunner gives Ready, Done and Err. Like nodeutil, Run records the events
// through the node's client unless told otherwise (Config.Recorder, Config.NoEvents).
//
// Run replaces virtual-kubelet's pod controller while keeping its node controller (the
// Node object, its status and its lease): pods come from a list+watch of the node's pods
// (examples/kube) and statuses go out as patches. NewAgent assembles the same agent on any
// API (statusmgrtest.FakeAPI in tests). Package vktest is an in-memory provider, polled or
// notifying, like virtual-kubelet's own mock.
//
// What podlife changes for a provider, against virtual-kubelet's pod controller (each a
// scenario of this package's tests, replaying virtual-kubelet's issue):
//
//   - a pod deleted before it ran still reaches DeletePod (#989);
//   - a terminal status whose write fails is retried until it is on the server (#712);
//   - a pod recreated under the same name waits until the old one has stopped in the
//     provider, and the old one's termination never touches it (#867);
//   - a restart never re-creates a pod that has finished (#762);
//   - a pod whose name the provider still holds for another pod is not created: StartPod
//     fails at once with ErrNameTaken and the pod worker retries with its backoff;
//   - a graceful delete keeps the object until the provider has stopped the pod and the
//     terminal status is written, then deletes it at once (#587, #681, #690), instead of at
//     deletion + grace.
package vk
