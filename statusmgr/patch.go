package statusmgr

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// statusPatch builds the strategic merge patch that turns oldStatus (the server's) into
// newStatus, for the pod's status subresource. It is computed field by field, without
// encoding either status whole:
//   - the patch always carries metadata.uid = uid, which the API server treats as a
//     precondition: a pod recreated under the same name (another UID) is never patched;
//   - a status field that is semantically equal on both sides is left out; a field that
//     became empty is sent as null; a changed object field is replaced whole
//     ("$patch":"replace"); a changed list is replaced whole (lists with a merge key through
//     a {"$patch":"replace"} element); inside a value sent whole, a member the server
//     decodes to the same value when it is absent (false, 0, "", an empty list) is left
//     out (a pointer to such a value is kept);
//   - conditions are patched element by element (merge key "type"): only changed or new
//     conditions and deletions are sent, so conditions another client wrote since oldStatus
//     was read are kept by the server; "$setElementOrder/conditions" is added only when the
//     server's merge would otherwise leave them in another order than newStatus.
//
// The fields a pod status carries (phase, reasons, IPs, start time, QoS class, conditions,
// container statuses and their states) are compared and written by typed code; every
// other field, and every member the typed code does not name (one a later k8s.io/api adds),
// by reflection, with the same rules.
//
// unchanged is true when the statuses are equal; patch then carries only the UID and need
// not be sent. Applied with strategicpatch.StrategicMergePatch to a pod whose status is
// oldStatus, patch gives a pod whose status is newStatus.
func statusPatch(uid types.UID, oldStatus, newStatus *v1.PodStatus) (p []byte, unchanged bool, err error) {
	if oldStatus == nil || newStatus == nil {
		return nil, false, fmt.Errorf("%w: nil status", ErrNilPod)
	}
	return patch.Status(uid, oldStatus, newStatus)
}
