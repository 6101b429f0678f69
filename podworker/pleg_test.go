package podworker_test

import (
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// pleg's cache and relister plug into the Runner as they are.
var (
	_ podworker.StatusCache     = (*pleg.Cache)(nil)
	_ podworker.StatusGetter    = (*pleg.Cache)(nil)
	_ podworker.Refresher       = (*pleg.Relister)(nil)
	_ podworker.StatusRefresher = (*pleg.Relister)(nil)
)
