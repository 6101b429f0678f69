package order

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/grace"
)

// Stop is one running container's turn in a stopping pod.
type Stop struct {
	// Name is the container's name.
	Name string
	// After lists the running containers that must have stopped before this one is
	// stopped (empty: stop it at once); it waits at most TurnBudget.
	After []string
}

// Termination gives the turn of each running container of a stopping pod (running, by
// name, in that order), as the kubelet's terminationOrdering: main containers and regular
// init containers at once, a sidecar after every running main container and after the
// running sidecar declared right after it (so sidecars stop in the reverse order of their
// declaration). A pod without sidecars stops every container at once. Names not in the
// pod's spec stop at once.
func Termination(pod *v1.Pod, running []string) []Stop {
	stops := make([]Stop, 0, len(running))
	for _, name := range running {
		stops = append(stops, Stop{Name: name})
	}
	if pod == nil || !HasSidecar(pod) {
		return stops
	}
	isRunning := func(name string) bool { return slices.Contains(running, name) }
	var mains []string
	for _, c := range pod.Spec.Containers {
		if isRunning(c.Name) && !slices.Contains(mains, c.Name) {
			mains = append(mains, c.Name)
		}
	}
	after := map[string][]string{}
	previous := "" // the sidecar declared right after, as the kubelet walks them backwards
	inits := pod.Spec.InitContainers
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		if !IsSidecar(c) {
			continue
		}
		deps := slices.Clone(mains)
		// The kubelet waits for the previous sidecar's channel, closed already when it
		// does not run: then this one does not wait for it.
		if previous != "" && isRunning(previous) {
			deps = append(deps, previous)
		}
		after[c.Name] = deps
		previous = c.Name
	}
	for i := range stops {
		stops[i].After = after[stops[i].Name]
	}
	return stops
}

// TurnBudget is how long a container may wait for its turn (Stop.After): the pod's grace
// period less the whole seconds its preStop hook took; after that it is stopped anyway.
// Zero or less: it does not wait.
func TurnBudget(gracePeriod int64, preStop time.Duration) time.Duration {
	return time.Duration(gracePeriod-int64(preStop.Seconds())) * time.Second
}

// StopGrace is the StopContainer timeout in seconds of a container of a pod stopped with
// grace period gracePeriod whose preStop hook took preStop and which then waited for its
// turn for waited: the grace period less both, each in whole seconds as the kubelet
// truncates them, at least grace.MinContainerStopSeconds.
func StopGrace(gracePeriod int64, preStop, waited time.Duration) int64 {
	g := gracePeriod
	if g > 0 {
		g -= int64(preStop.Seconds())
	}
	if g > 0 {
		g -= int64(waited.Seconds())
	}
	return max(g, grace.MinContainerStopSeconds)
}
