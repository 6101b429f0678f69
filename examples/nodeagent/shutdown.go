package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/node"
)

// The kubelet's refusal of new pods while the node shuts down (its nodeshutdown
// manager's admit handler).
const (
	shutdownNotAdmittedReason  = "NodeShutdown"
	shutdownNotAdmittedMessage = "Pod was rejected as the node is shutting down."
)

// statusMargin is how long, past the shutdown's period, the agent still waits for the
// last pods' terminal statuses to reach the server: a pod killed when its group's period
// runs out gets its Failed patch just after.
const statusMargin = 5 * time.Second

// shutdownGate refuses new pods once the node shuts down.
type shutdownGate struct{ on atomic.Bool }

func (g *shutdownGate) handler() admission.Handler {
	return admission.HandlerFunc(func(context.Context, *admission.Attributes) admission.Result {
		if g.on.Load() {
			return admission.Result{Reason: shutdownNotAdmittedReason, Message: shutdownNotAdmittedMessage}
		}
		return admission.Result{Admit: true}
	})
}

// shutdownPeriod is the whole duration of a graceful node shutdown of cfg: the sum of its
// groups' periods.
func shutdownPeriod(cfg node.ShutdownConfig) (time.Duration, error) {
	periods, err := node.ShutdownPeriods(cfg)
	var d time.Duration
	for _, p := range periods {
		d += time.Duration(p.ShutdownGracePeriodSeconds) * time.Second
	}
	return d, err
}

// runNode runs a until ctx ends or a signal arrives on sigs. With sc set (a non-zero
// period), a signal first runs the kubelet's graceful node shutdown while the agent keeps
// running: new pods are refused (gate), node.Shutdown kills the active pods by priority,
// and waitTerminal waits until every pod of the node is terminal on the server (or gone),
// all within the shutdown's period plus statusMargin; a second signal, or ctx ending, cuts
// it short. Then the agent stops and runNode returns Run's error (and the shutdown's).
func runNode(ctx context.Context, a *agent.Agent, sigs <-chan os.Signal, sc node.ShutdownConfig, gate *shutdownGate,
	waitTerminal func(context.Context) error, say func(format string, args ...any)) error {
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	var sig os.Signal
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		stopRun()
		return <-done
	case sig = <-sigs:
	}
	period, err := shutdownPeriod(sc)
	if err != nil || period == 0 {
		say("# %v: stopping", sig)
		stopRun()
		return errors.Join(err, <-done)
	}
	say("# %v: graceful node shutdown (shutdownGracePeriod %v, shutdownGracePeriodCriticalPods %v)",
		sig, sc.GracePeriod, sc.GracePeriodCriticalPods)
	gate.on.Store(true)
	start := time.Now()
	shCtx, cancel := context.WithTimeout(ctx, period+statusMargin)
	defer cancel()
	go func() {
		select {
		case s := <-sigs:
			say("# %v again: ending the shutdown now", s)
			cancel()
		case <-shCtx.Done():
		}
	}()
	shErr := a.Node().Shutdown(shCtx, sc)
	if shErr == nil {
		if err := waitTerminal(shCtx); err != nil {
			shErr = fmt.Errorf("waiting for the pods' terminal statuses: %w", err)
		} else {
			say("# graceful node shutdown done after %v: every pod is terminal on the server", time.Since(start).Round(time.Millisecond))
		}
	}
	if shErr != nil {
		say("# graceful node shutdown cut short after %v: %v", time.Since(start).Round(time.Millisecond), shErr)
	}
	stopRun()
	return errors.Join(<-done, shErr)
}

// serverTerminal waits, polling every 200 ms, until every pod bound to nodeName is
// terminal on the server (listed with the node's identity).
func serverTerminal(client kubernetes.Interface, nodeName string) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			l, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
			if err == nil && allTerminal(l.Items) {
				return nil
			}
			select {
			case <-ctx.Done():
				if err != nil {
					return fmt.Errorf("%w (last list: %v)", ctx.Err(), err)
				}
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

func allTerminal(pods []v1.Pod) bool {
	for i := range pods {
		if p := pods[i].Status.Phase; p != v1.PodSucceeded && p != v1.PodFailed {
			return false
		}
	}
	return true
}
