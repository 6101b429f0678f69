package vk

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// FilterSource returns a Source that yields only the pods of src that keep accepts (as
// virtual-kubelet's PodEventFilterFunc): the pods it rejects are never run, nor their
// statuses written. keep decides when a pod is first seen, and again on each change of a
// pod it rejected (a pod it accepts later arrives then, as added). A pod once accepted
// stays: its later changes and its removal pass whatever keep says of them, so a pod
// that runs is never dropped while its object exists (virtual-kubelet's filtering event
// handler would turn such a change into a delete). A nil keep returns src.
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

func (f *filteredSource) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan statusmgrtest.Event) {
	initial, in := f.src.Watch(ctx, nodeName)
	accepted := map[types.UID]bool{}
	var pods []*v1.Pod
	for _, p := range initial {
		if p != nil && f.keep(p) {
			accepted[p.UID] = true
			pods = append(pods, p)
		}
	}
	out := make(chan statusmgrtest.Event)
	go func() {
		defer close(out)
		defer func() {
			for range in { // let src end once ctx has ended
			}
		}()
		for ev := range in {
			if ev.Pod == nil {
				continue
			}
			uid := ev.Pod.UID
			switch {
			case accepted[uid]:
				if ev.Type == statusmgrtest.Deleted {
					delete(accepted, uid)
				}
			case ev.Type != statusmgrtest.Deleted && f.keep(ev.Pod):
				accepted[uid] = true
				ev.Type = statusmgrtest.Added
			default:
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return pods, out
}
