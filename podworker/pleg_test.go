package podworker_test

import (
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// pleg's relister plugs into the Runner as it is.
var _ podworker.RuntimeView = (*pleg.Relister)(nil)
