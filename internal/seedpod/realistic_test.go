package seedpod

import (
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRealisticIsDeterministic(t *testing.T) {
	for n := range 200 {
		a, b := Realistic(7, n, start), Realistic(7, n, start)
		if !equality.Semantic.DeepEqual(a, b) {
			t.Fatalf("pod %d: two histories from seed 7 differ", n)
		}
	}
	differ := 0
	for n := range 200 {
		a, b := Realistic(7, n, start), Realistic(8, n, start)
		if !equality.Semantic.DeepEqual(a.Statuses, b.Statuses) {
			differ++
		}
	}
	if differ < 190 {
		t.Errorf("only %d of 200 histories differ between seeds 7 and 8", differ)
	}
}

func TestRealisticStatuses(t *testing.T) {
	const pods = 1000
	idRE := regexp.MustCompile(`^containerd://[0-9a-f]{64}$`)
	terminal, deleted, restarted := 0, 0, 0
	for n := range pods {
		p := Realistic(1, n, start)
		if len(p.Statuses) != RealisticSteps {
			t.Fatalf("pod %d: %d statuses", n, len(p.Statuses))
		}
		if p.Deleting.DeletionTimestamp == nil || *p.Deleting.DeletionGracePeriodSeconds != 30 || p.Pod.DeletionTimestamp != nil {
			t.Fatalf("pod %d: Pod %v / Deleting %v", n, p.Pod.DeletionTimestamp, p.Deleting.DeletionTimestamp)
		}
		if p.DeletedAt < RealisticSteps {
			deleted++
		}
		if p.TerminalAt < RealisticSteps {
			terminal++
			if p.TerminalAt <= p.DeletedAt {
				t.Fatalf("pod %d terminal at step %d, deleted at %d", n, p.TerminalAt, p.DeletedAt)
			}
		}
		for j, s := range p.Statuses {
			isTerminal := s.Phase == v1.PodSucceeded || s.Phase == v1.PodFailed
			if isTerminal != (j >= p.TerminalAt) {
				t.Fatalf("pod %d step %d: phase %s, terminal from %d", n, j, s.Phase, p.TerminalAt)
			}
			cs := s.ContainerStatuses[0]
			if j > 0 && !idRE.MatchString(cs.ContainerID) {
				t.Fatalf("pod %d step %d: container ID %q", n, j, cs.ContainerID)
			}
			if isTerminal && cs.State.Terminated == nil {
				t.Fatalf("pod %d step %d: terminal with container state %+v", n, j, cs.State)
			}
			if cs.RestartCount > 0 && cs.LastTerminationState.Terminated.ExitCode == 0 {
				t.Fatalf("pod %d step %d: restarted after exit code 0", n, j)
			}
			for _, c := range s.Conditions {
				if c.Status == v1.ConditionFalse && c.Type == v1.PodReady && c.Reason == "" {
					t.Fatalf("pod %d step %d: Ready false without a reason", n, j)
				}
			}
		}
		if p.Statuses[RealisticSteps-1].ContainerStatuses[0].RestartCount > 0 {
			restarted++
		}
		p.Statuses[0].ContainerStatuses[0].Name = "changed"
		if p.Statuses[1].ContainerStatuses[0].Name != "busybox" {
			t.Fatalf("pod %d: statuses share their container statuses", n)
		}
	}
	if terminal < pods*5/100 || terminal > pods*15/100 {
		t.Errorf("%d of %d pods terminal before TerminatePod, want about 10%%", terminal, pods)
	}
	if deleted < pods*30/100 || deleted > pods*50/100 {
		t.Errorf("%d of %d pods deleted during the steps, want about 40%%", deleted, pods)
	}
	if restarted < pods/4 {
		t.Errorf("only %d of %d pods restarted", restarted, pods)
	}
}
