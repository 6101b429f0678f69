package cri

import "context"

// ResyncVolumes runs the periodic volume update once (the loop runs it every
// Config.VolumeResync).
func (r *Runtime) ResyncVolumes(ctx context.Context) { r.resyncVolumes(ctx) }
