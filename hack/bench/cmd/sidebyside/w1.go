package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/hack/bench/internal/work"
	kconfig "github.com/podlife/podlife/hack/bench/kubelet/config"
	"github.com/podlife/podlife/internal/seedpod"
)

// merger is one side's config merge of a Set of source "api": the pods by kind.
type merger func(pods []*v1.Pod) [seedpod.W1Kinds][]*v1.Pod

func kubeletMerger() merger {
	s := kconfig.NewStorage()
	ctx := context.Background()
	return func(pods []*v1.Pod) (out [seedpod.W1Kinds][]*v1.Pod) {
		out[seedpod.W1Add], out[seedpod.W1Update], out[seedpod.W1Delete], out[seedpod.W1Remove], out[seedpod.W1Reconcile] = s.Set(ctx, "api", pods)
		return out
	}
}

// podlifeMerger is podlife's Store as package node configures it (SharedPods: the merge
// hands out its stored pods, read-only, as the kubelet's does); full turns the api
// source's resourceVersion shortcut off (every pod compared field by field, as the
// kubelet does).
func podlifeMerger(full bool) merger {
	s := config.NewStoreWithConfig(config.StoreConfig{TrustResourceVersions: !full, SharedPods: true})
	return func(pods []*v1.Pod) (out [seedpod.W1Kinds][]*v1.Pod) {
		c := s.Merge(config.PodUpdate{Op: config.Set, Source: "api", Pods: pods})
		out[seedpod.W1Add], out[seedpod.W1Update], out[seedpod.W1Delete], out[seedpod.W1Remove], out[seedpod.W1Reconcile] = c.Adds, c.Updates, c.Deletes, c.Removes, c.Reconciles
		return out
	}
}

// runW1 is W1 (BENCHMARKS.md) in one input mode: the initial Set of 5,000 pods, then 50
// rounds; the input of every Set is made before the clock starts and every Set's
// classification is checked. Timed: the merge call only. full turns podlife's
// resourceVersion shortcut off (the kubelet has none: its side is the same either way).
func runW1(side string, fresh, full bool) (result, error) {
	g := seedpod.NewW1(fresh)
	m := kubeletMerger()
	if side == podlife {
		m = podlifeMerger(full)
	}
	res := result{}
	measure := func(pods []*v1.Pod) (out [seedpod.W1Kinds][]*v1.Pod, wall, cpu time.Duration, allocs uint64) {
		runtime.GC()
		a0 := work.Mallocs()
		c0 := work.CPU()
		t0 := time.Now()
		out = m(pods)
		wall = time.Since(t0)
		cpu = work.CPU() - c0
		allocs = work.Mallocs() - a0
		return
	}
	initial := g.List()
	out, wall, cpu, allocs := measure(initial)
	if len(out[seedpod.W1Add]) != seedpod.W1Pods || len(out[seedpod.W1Update])+len(out[seedpod.W1Delete])+len(out[seedpod.W1Remove])+len(out[seedpod.W1Reconcile]) != 0 {
		return nil, fmt.Errorf("initial Set: %d adds, want %d and nothing else", len(out[seedpod.W1Add]), seedpod.W1Pods)
	}
	res["initial-ns/pod"] = float64(wall.Nanoseconds()) / seedpod.W1Pods
	res["initial-cpu-ns/pod"] = float64(cpu.Nanoseconds()) / seedpod.W1Pods
	res["initial-allocs/pod"] = float64(allocs) / seedpod.W1Pods
	var tw, tc time.Duration
	var ta uint64
	for round := range seedpod.W1Rounds {
		pods := g.Round()
		out, wall, cpu, allocs := measure(pods)
		if msg := g.Check(out); msg != "" {
			return nil, fmt.Errorf("round %d: %s", round, msg)
		}
		tw += wall
		tc += cpu
		ta += allocs
	}
	podRounds := float64(seedpod.W1Rounds * seedpod.W1Pods)
	res["ns/pod-round"] = float64(tw.Nanoseconds()) / podRounds
	res["cpu-ns/pod-round"] = float64(tc.Nanoseconds()) / podRounds
	res["allocs/pod-round"] = float64(ta) / podRounds
	return res, nil
}
