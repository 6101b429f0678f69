package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podlife/podlife/examples/kube"
)

// TestE2EForbiddenMeansGoneOnlyForTheNodeAuthorizer: on the real server, as the node
// identity, the Node authorizer's 403 for a GET of a pod that does not exist becomes
// NotFound (confirmed by the node's own list), and so does a GET of another node's pod;
// a status patch of another node's pod, which the NodeRestriction admission plugin refuses
// with 403, shows as Forbidden and is counted.
func TestE2EForbiddenMeansGoneOnlyForTheNodeAuthorizer(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kube.NewPatcher(nodeClient)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := p.GetPod(ctx, namespace, "no-such-pod"); !apierrors.IsNotFound(err) {
		t.Errorf("GetPod of a pod that does not exist: %v, want NotFound", err)
	}

	other := busybox(t)
	other.Spec.NodeName = "node2"
	other = createPod(t, ctx, admin, other)
	if _, err := p.GetPod(ctx, namespace, other.Name); !apierrors.IsNotFound(err) {
		t.Errorf("GetPod of node2's pod: %v, want NotFound", err)
	}
	_, err = p.PatchPodStatus(ctx, namespace, other.Name,
		[]byte(`{"metadata":{"uid":"`+string(other.UID)+`"},"status":{"phase":"`+string(v1.PodRunning)+`"}}`))
	if !apierrors.IsForbidden(err) {
		t.Errorf("PatchPodStatus of node2's pod: %v, want Forbidden", err)
	}
	t.Logf("patch of node2's pod: %v", err)
	if got, want := p.Stats(), (kube.PatcherStats{GoneForbidden: 2, Forbidden: 1}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}
