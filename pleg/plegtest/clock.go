package plegtest

import "k8s.io/utils/clock"

// Clock returns the runtime's clock (the one given to NewRuntime), for a runtime on top
// of it that waits in the same time.
func (r *Runtime) Clock() clock.Clock { return r.clock }
