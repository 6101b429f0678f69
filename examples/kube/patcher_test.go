package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
)

func testPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid, ResourceVersion: "1"},
		Spec:       v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
}

func TestPatcherCalls(t *testing.T) {
	client := fake.NewClientset(testPod("web", "uid-1"))
	p, err := NewPatcher(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := p.GetPod(ctx, "default", "web")
	if err != nil || got.UID != "uid-1" {
		t.Fatalf("GetPod = %v, %v; want the pod uid-1", got, err)
	}
	patched, err := p.PatchPodStatus(ctx, "default", "web",
		[]byte(`{"metadata":{"uid":"uid-1"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`))
	if err != nil {
		t.Fatalf("PatchPodStatus: %v", err)
	}
	if diff := cmp.Diff(v1.PodRunning, patched.Status.Phase); diff != "" {
		t.Errorf("patched phase (-want +got):\n%s", diff)
	}
	if err := p.DeletePod(ctx, "default", "web", "uid-1"); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}

	type call struct {
		Verb, Subresource string
		PatchType         types.PatchType
		Grace             *int64
		UID               *types.UID
	}
	var calls []call
	for _, a := range client.Actions() {
		c := call{Verb: a.GetVerb(), Subresource: a.GetSubresource()}
		switch a := a.(type) {
		case k8stesting.PatchAction:
			c.PatchType = a.GetPatchType()
		case k8stesting.DeleteActionImpl:
			c.Grace = a.DeleteOptions.GracePeriodSeconds
			if a.DeleteOptions.Preconditions != nil {
				c.UID = a.DeleteOptions.Preconditions.UID
			}
		}
		calls = append(calls, c)
	}
	want := []call{
		{Verb: "get"},
		{Verb: "patch", Subresource: "status", PatchType: types.StrategicMergePatchType},
		{Verb: "delete", Grace: ptr.To[int64](0), UID: ptr.To[types.UID]("uid-1")},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPatcherErrorMapping(t *testing.T) {
	gr := v1.Resource("pods")
	tests := []struct {
		name string
		err  error
		// want classifies the returned error.
		want string
	}{
		{name: "not found stays not found", err: apierrors.NewNotFound(gr, "web"), want: "notfound"},
		{name: "an RBAC forbidden passes through", err: apierrors.NewForbidden(gr, "web", errors.New(`User "system:node:node1" cannot get resource "pods"`)), want: "forbidden"},
		{name: "conflict passes through", err: apierrors.NewConflict(gr, "web", errors.New("uid mismatch")), want: "conflict"},
		{name: "server timeout passes through", err: apierrors.NewServerTimeout(gr, "patch", 1), want: "other"},
		{name: "transport error passes through", err: errors.New("connection refused"), want: "other"},
	}
	classify := func(err error) string {
		switch {
		case err == nil:
			return "nil"
		case apierrors.IsNotFound(err):
			return "notfound"
		case apierrors.IsConflict(err):
			return "conflict"
		case apierrors.IsForbidden(err):
			return "forbidden"
		}
		return "other"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("web", "uid-1"))
			client.PrependReactor("*", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			p, err := NewPatcher(client)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, getErr := p.GetPod(ctx, "default", "web")
			_, patchErr := p.PatchPodStatus(ctx, "default", "web", []byte(`{}`))
			delErr := p.DeletePod(ctx, "default", "web", "uid-1")
			got := []string{classify(getErr), classify(patchErr), classify(delErr)}
			if diff := cmp.Diff([]string{tt.want, tt.want, tt.want}, got); diff != "" {
				t.Errorf("get, patch, delete errors (-want +got):\n%s", diff)
			}
			if tt.want == "other" && !errors.Is(getErr, tt.err) && getErr.Error() != tt.err.Error() {
				t.Errorf("GetPod error = %v, want %v unchanged", getErr, tt.err)
			}
		})
	}
}

// nodeDenial is the Node authorizer's answer to a GET of a pod its graph does not connect
// to node1, as kube-apiserver words it with --authorization-mode Node,RBAC.
var nodeDenial = apierrors.NewForbidden(v1.Resource("pods"), "web", errors.New(
	`User "system:node:node1" cannot get resource "pods" in API group "" in the namespace "default": no relationship found between node 'node1' and this object`))

// TestPatcherNodeAuthorizerForbidden: only a GET the Node authorizer refuses for want of a
// relationship, confirmed by an empty list of node1's pods of that name, means gone; the
// same refusal of a pod the list still finds (the graph lagged) returns the pod; a patch
// or delete Forbidden, or a failed confirmation, shows as Forbidden and is counted.
func TestPatcherNodeAuthorizerForbidden(t *testing.T) {
	tests := []struct {
		name      string
		verbErr   map[string]error // per verb
		listed    []v1.Pod
		listErr   error
		want      []string // get, patch, delete
		wantStats PatcherStats
		wantList  string // the confirming list's field selector ("" if none)
	}{
		{name: "denied get of a pod gone is NotFound", verbErr: map[string]error{"get": nodeDenial},
			want: []string{"notfound", "nil", "nil"}, wantStats: PatcherStats{GoneForbidden: 1},
			wantList: "metadata.name=web,spec.nodeName=node1"},
		{name: "denied get of a pod still listed returns it", verbErr: map[string]error{"get": nodeDenial},
			listed: []v1.Pod{*testPod("web", "uid-1")}, want: []string{"nil", "nil", "nil"},
			wantList: "metadata.name=web,spec.nodeName=node1"},
		{name: "failed confirmation stays Forbidden", verbErr: map[string]error{"get": nodeDenial},
			listErr: apierrors.NewServiceUnavailable("etcd"), want: []string{"forbidden", "nil", "nil"},
			wantStats: PatcherStats{Forbidden: 1}, wantList: "metadata.name=web,spec.nodeName=node1"},
		{name: "forbidden patch and delete show", verbErr: map[string]error{"patch": nodeDenial, "delete": apierrors.NewForbidden(
			v1.Resource("pods"), "web", errors.New(`node "node1" can only delete pods with spec.nodeName set to itself`))},
			want: []string{"nil", "forbidden", "forbidden"}, wantStats: PatcherStats{Forbidden: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(testPod("web", "uid-1"))
			var selector string
			client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				selector = a.(k8stesting.ListAction).GetListRestrictions().Fields.String()
				return true, &v1.PodList{Items: tt.listed}, tt.listErr
			})
			client.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if err := tt.verbErr[a.GetVerb()]; err != nil {
					return true, nil, err
				}
				return false, nil, nil
			})
			p, err := NewPatcher(client)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, getErr := p.GetPod(ctx, "default", "web")
			_, patchErr := p.PatchPodStatus(ctx, "default", "web", []byte(`{}`))
			delErr := p.DeletePod(ctx, "default", "web", "uid-1")
			got := []string{classifyErr(getErr), classifyErr(patchErr), classifyErr(delErr)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("get, patch, delete errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, p.Stats()); diff != "" {
				t.Errorf("Stats (-want +got):\n%s", diff)
			}
			if selector != tt.wantList {
				t.Errorf("confirming list's field selector = %q, want %q", selector, tt.wantList)
			}
		})
	}
}

func classifyErr(err error) string {
	switch {
	case err == nil:
		return "nil"
	case apierrors.IsNotFound(err):
		return "notfound"
	case apierrors.IsForbidden(err):
		return "forbidden"
	}
	return "other: " + err.Error()
}

func TestPatcherBadInput(t *testing.T) {
	if _, err := NewPatcher(nil); !errors.Is(err, ErrNilClient) {
		t.Errorf("NewPatcher(nil) = %v, want ErrNilClient", err)
	}
	client := fake.NewClientset()
	p, err := NewPatcher(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["get without name"] = p.GetPod(ctx, "default", "")
	_, errs["patch without namespace"] = p.PatchPodStatus(ctx, "", "web", nil)
	errs["delete without uid"] = p.DeletePod(ctx, "default", "web", "")
	for name, err := range errs {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("bad input reached the server %d times", n)
	}
}

// The Patcher is the node's mirror pod client (the kubelet's mirror_client.go): a
// create of a mirror pod that exists already and a delete of one that is gone succeed;
// a delete removes the pod; empty names are refused.
func TestMirrorPodClient(t *testing.T) {
	client := fake.NewClientset()
	p, err := NewPatcher(client)
	if err != nil {
		t.Fatal(err)
	}
	static := testPod("etcd-node1", "static-uid")
	if err := p.CreateMirrorPod(t.Context(), node.NewMirrorPod(static)); !apierrors.IsNotFound(err) {
		t.Errorf("create without a Node object: %v, want its NotFound", err)
	}
	if _, err := client.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "h1"}
	mirror := node.NewMirrorPod(static)
	for i := range 2 {
		if err := p.CreateMirrorPod(t.Context(), mirror); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	got, err := client.CoreV1().Pods(mirror.Namespace).Get(t.Context(), mirror.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node1", UID: "node-uid", Controller: ptr.To(true)}}; !cmp.Equal(got.OwnerReferences, want) {
		t.Errorf("owner references %+v, want %+v", got.OwnerReferences, want)
	}
	if got.Annotations[node.ConfigMirrorAnnotationKey] != "h1" {
		t.Errorf("mirror annotation %q, want h1", got.Annotations[node.ConfigMirrorAnnotationKey])
	}
	got.UID = "mirror-uid" // the fake clientset assigns none
	if got, err = client.CoreV1().Pods(got.Namespace).Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteMirrorPod(t.Context(), got.Namespace, got.Name, got.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(mirror.Namespace).Get(t.Context(), mirror.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the delete: %v, want NotFound", err)
	}
	if err := p.DeleteMirrorPod(t.Context(), got.Namespace, got.Name, got.UID); err != nil {
		t.Errorf("delete of a gone mirror pod: %v", err)
	}
	if err := p.CreateMirrorPod(t.Context(), &v1.Pod{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("create without a name: %v, want ErrInvalidArgument", err)
	}
}
