package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patchStatus patches the Node from old to updated as the kubelet's PatchNodeStatus
// (k8s.io/component-helpers/node/util), with ctx: a strategic merge patch of the status
// subresource, the spec left out, metadata (labels) in; status.addresses, wrongly
// annotated patchStrategy=merge, replaced as a whole when they changed.
func (c *Controller) patchStatus(ctx context.Context, old, updated *v1.Node) (*v1.Node, error) {
	patch, err := StatusPatch(old, updated)
	if err != nil {
		return nil, err
	}
	n, err := c.client.CoreV1().Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patching the status of node %q: %w", old.Name, err)
	}
	return n, nil
}

// StatusPatch is the strategic merge patch of the status subresource from old to
// updated, as the kubelet's: the spec left out, status.addresses replaced as a whole
// when they changed.
func StatusPatch(old, updated *v1.Node) ([]byte, error) {
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: marshalling the node: %w", err)
	}
	replaceAddresses := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, updated.Status.Addresses)
	diff := updated.DeepCopy()
	diff.Spec = old.Spec
	if replaceAddresses {
		diff.Status.Addresses = old.Status.Addresses
	}
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: marshalling the node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("nodestatus: making the patch: %w", err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("nodestatus: reading the patch: %w", err)
	}
	status, _ := m["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		m["status"] = status
	}
	addrs := []any{}
	for _, a := range updated.Status.Addresses {
		addrs = append(addrs, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = append(addrs, map[string]any{"$patch": "replace"})
	return json.Marshal(m)
}
