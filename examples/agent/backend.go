package agent

import (
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
)

// Backend is what runs the agent's pods: a node.Runtime. The in-memory runtime
// (Config.Runtime, through nodetest.Runtime) is the default; package examples/vk adapts
// a virtual-kubelet provider. A Backend that implements node.StatusPusher feeds the
// PLEG's push mode; one that implements node.StatusGenerator completes the pods' API
// statuses.
type Backend = node.Runtime

// StatusPusher is node.StatusPusher.
type StatusPusher = node.StatusPusher

// ContainerBehaviour is how a pod's containers behave in the in-memory runtime.
type ContainerBehaviour = nodetest.ContainerBehaviour

// Annotations by which a pod tells the in-memory runtime how its containers behave (see
// package node/nodetest).
const (
	AnnotationStopDelay = nodetest.AnnotationStopDelay
	AnnotationRunFor    = nodetest.AnnotationRunFor
	AnnotationExitCode  = nodetest.AnnotationExitCode
	AnnotationPreStop   = nodetest.AnnotationPreStop
)
