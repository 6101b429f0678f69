package vk

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/examples/agent"
)

// FilterSource returns a Source that yields only the pods of src that keep accepts (as
// virtual-kubelet's PodEventFilterFunc): the pods it rejects are never run, nor their
// statuses written. keep decides when a pod is first seen, and again on each change of a
// pod it rejected (a pod it accepts later arrives then, as added). A pod once accepted
// stays: its later changes and its removal pass whatever keep says of them, so a pod
// that runs is never dropped while its object exists (virtual-kubelet's filtering event
// handler would turn such a change into a delete). Every Set passes, with the pods
// accepted before or now. A nil keep returns src.
func FilterSource(src agent.Source, keep func(*v1.Pod) bool) agent.Source {
	if keep == nil {
		return src
	}
	return &filteredSource{src: src, keep: keep}
}

type filteredSource struct {
	src  agent.Source
	keep func(*v1.Pod) bool
}

func (f *filteredSource) Run(ctx context.Context, nodeName string, out chan<- config.PodUpdate) error {
	accepted := map[types.UID]bool{}
	return relay(ctx, f.src, nodeName, out, func(u config.PodUpdate) (config.PodUpdate, bool) {
		return f.filter(accepted, u)
	})
}

// filter returns what passes of u, given and updating the UIDs accepted so far.
func (f *filteredSource) filter(accepted map[types.UID]bool, u config.PodUpdate) (config.PodUpdate, bool) {
	var pods []*v1.Pod
	switch u.Op {
	case config.Set:
		now := make(map[types.UID]bool, len(u.Pods))
		for _, p := range u.Pods {
			if p != nil && (accepted[p.UID] || f.keep(p)) {
				now[p.UID] = true
				pods = append(pods, p)
			}
		}
		clear(accepted)
		maps.Copy(accepted, now)
		u.Pods = pods
		return u, true
	case config.Remove:
		for _, p := range u.Pods {
			if p != nil && accepted[p.UID] {
				delete(accepted, p.UID)
				pods = append(pods, p)
			}
		}
	default:
		added := false
		for _, p := range u.Pods {
			switch {
			case p == nil:
			case accepted[p.UID]:
				pods = append(pods, p)
			case f.keep(p):
				accepted[p.UID], added = true, true
				pods = append(pods, p)
			}
		}
		if added {
			// New to the node. The config classifies each pod of an Add by its
			// content, so the pods accepted before are updated as they would be.
			u.Op = config.Add
		}
	}
	u.Pods = pods
	return u, len(pods) > 0
}

// relay runs src into a channel of its own and passes each update through pass to out,
// until ctx ends or src.Run returns; it returns src.Run's error.
func relay(ctx context.Context, src agent.Source, nodeName string, out chan<- config.PodUpdate,
	pass func(config.PodUpdate) (config.PodUpdate, bool)) error {
	in := make(chan config.PodUpdate)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, nodeName, in) }()
	for {
		select {
		case u := <-in:
			u, ok := pass(u)
			if !ok {
				continue
			}
			select {
			case out <- u:
			case <-ctx.Done():
				return <-done
			}
		case err := <-done:
			return err
		case <-ctx.Done():
			return <-done
		}
	}
}
