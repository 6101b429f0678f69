package node

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reason cache after a sequence of SyncPod results: ContainerErrors replace the pod's
// entries, a nil error clears them, an error without ContainerErrors keeps them.
func TestReasonCache(t *testing.T) {
	pull := &ContainerError{Container: "app", Reason: ReasonErrImagePull, Message: "not found"}
	crash := &ContainerError{Container: "side", Reason: ReasonCrashLoopBackOff, Message: "back-off 10s"}
	tests := []struct {
		name    string
		results []error
		want    map[string]reasonEntry
	}{
		{name: "none", want: map[string]reasonEntry{}},
		{name: "one container error", results: []error{pull},
			want: map[string]reasonEntry{"app": {ReasonErrImagePull, "not found"}}},
		{name: "joined and wrapped", results: []error{fmt.Errorf("sync: %w", errors.Join(pull, crash, errors.New("other")))},
			want: map[string]reasonEntry{"app": {ReasonErrImagePull, "not found"}, "side": {ReasonCrashLoopBackOff, "back-off 10s"}}},
		{name: "a container no longer reported is dropped", results: []error{errors.Join(pull, crash), crash},
			want: map[string]reasonEntry{"side": {ReasonCrashLoopBackOff, "back-off 10s"}}},
		{name: "nil clears", results: []error{pull, nil}, want: map[string]reasonEntry{}},
		{name: "an error without ContainerErrors keeps them", results: []error{pull, errors.New("sandbox")},
			want: map[string]reasonEntry{"app": {ReasonErrImagePull, "not found"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c reasonCache
			for _, err := range tt.results {
				c.update("u1", err)
			}
			got := map[string]reasonEntry{}
			if f := c.startFailure("u1"); f != nil {
				for _, name := range []string{"app", "side", "other"} {
					if r, m, ok := f(name); ok {
						got[name] = reasonEntry{r, m}
					}
				}
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(reasonEntry{})); d != "" {
				t.Errorf("entries (-want +got):\n%s", d)
			}
			c.forget("u1")
			if c.startFailure("u1") != nil {
				t.Error("entries left after forget")
			}
		})
	}
}
