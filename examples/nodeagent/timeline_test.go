package main

import (
	"bufio"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/examples/agent"
)

func TestSequencer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name string
		// arrivals: since and arrival offset (ms) of each entry, named by text.
		arrivals []entry
		at       time.Duration // due(t0 + at)
		wantDue  []string
		wantHeld int
	}{
		{name: "nothing has waited the window", at: ms(40), wantHeld: 2,
			arrivals: []entry{{text: "a", since: ms(1), at: t0}, {text: "b", since: ms(2), at: t0.Add(ms(1))}}},
		{name: "a late arrival stamped earlier comes out first", at: ms(60), wantDue: []string{"early", "late"},
			arrivals: []entry{{text: "late", since: ms(10), at: t0}, {text: "early", since: ms(5), at: t0.Add(ms(3))}}},
		{name: "equal times keep arrival order", at: ms(100), wantDue: []string{"x", "y", "z"},
			arrivals: []entry{{text: "x", since: ms(7), at: t0}, {text: "y", since: ms(7), at: t0}, {text: "z", since: ms(7), at: t0}}},
		{name: "an entry waits for an earlier one still held", at: ms(55), wantHeld: 2,
			arrivals: []entry{{text: "old", since: ms(20), at: t0}, {text: "new", since: ms(10), at: t0.Add(ms(20))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sequencer{window: 50 * time.Millisecond}
			for _, e := range tt.arrivals {
				s.add(e)
			}
			var got []string
			for _, e := range s.due(t0.Add(tt.at)) {
				got = append(got, e.text)
			}
			if diff := cmp.Diff(tt.wantDue, got); diff != "" {
				t.Errorf("due (-want +got):\n%s", diff)
			}
			if held := len(s.drain()); held != tt.wantHeld {
				t.Errorf("held %d, want %d", held, tt.wantHeld)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := []time.Duration{percentile(ds, 50), percentile(ds, 99), percentile(ds, 100), percentile(nil, 50)}
	want := []time.Duration{50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("percentiles (-want +got):\n%s", diff)
	}
}

var stepLine = regexp.MustCompile(`^\s+(\d+\.\d{3})s  `)

// TestRunLegendAndTimeOrder: the legend comes first and the timeline's lines are in the
// order of their times, though they come from several goroutines.
func TestRunLegendAndTimeOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-pods", "3", "-grace", "5", "-stop-delay", "1s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if !strings.HasPrefix(text, legend) {
			t.Errorf("output does not open with the legend:\n%s", text)
		}
		prev, steps := -1.0, 0
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			m := stepLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			steps++
			since, _ := strconv.ParseFloat(m[1], 64)
			if since < prev {
				t.Errorf("line out of time order (%.3f after %.3f): %s", since, prev, sc.Text())
			}
			prev = since
		}
		if steps < 30 {
			t.Errorf("only %d timeline lines:\n%s", steps, text)
		}
	})
}

// TestRunKillAtGraceEnd: containers that ignore the stop signal are killed when the grace
// period runs out, and the timeline says so, with the exit code.
func TestRunKillAtGraceEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-grace", "3", "-stop-delay", "-1s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, want := range []string{
			"patched status: phase Failed",
			"container busybox killed at the end of the grace period (exit code 137)",
			"(deletion took 3s;",
			"# delete to every container stopped: p50 3s",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
		}
	})
}

// TestRunGraceZero: with grace 0 the objects go at once; the summary reports how long the
// containers really took.
func TestRunGraceZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-grace", "0", "-stop-delay", "500ms"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, want := range []string{
			"deleted at once (grace 0)",
			"(deletion took 0s;",
			"# -grace 0: the objects went at once; the containers really took 500ms to stop",
			"# delete to gone:    p50 0s",
			// What really happens, and why the work line says "grace 1s".
			"; deleting them at once (-grace 0, a force delete: the objects go at once; " +
				"the containers still get the kubelet's minimum grace period, 1s, hence \"grace 1s\" below)",
			"SyncTerminatingPod (grace 1s)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "gracefully") {
			t.Errorf("-grace 0 says the pods are deleted gracefully:\n%s", text)
		}
	})
}

// TestRunManyPods: from 100 pods on, a progress line a second replaces the timeline, and
// the summary gives the percentiles.
func TestRunManyPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-pods", "100", "-grace", "5", "-stop-delay", "2s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if strings.Contains(text, legend) || stepLine.MatchString(text) || strings.Contains(text, " ADD") {
			t.Errorf("timeline printed for 100 pods:\n%s", text)
		}
		progress := regexp.MustCompile(`(?m)^#\s+\d+\.0s  progress: 100/100 created, \d+ Running, \d+ deleting, \d+ stopped, \d+ gone$`)
		if n := len(progress.FindAllString(text, -1)); n < 2 || n > 10 {
			t.Errorf("%d progress lines, want one a second:\n%s", n, text)
		}
		// The narration is in time order with the progress lines: every pod is gone at 3 s
		// (Running at 1 s, deleted then, stopped 2 s later), after the 2 s line, before the 4 s one.
		lines := strings.Split(text, "\n")
		gone := lineIndex(lines, -1, "# every pod is gone after 3s (deletion took 2s; the last gone at 3.000s)")
		if gone < 0 || gone < lineIndex(lines, -1, "2.0s  progress") || gone > lineIndex(lines, -1, "4.0s  progress") {
			t.Errorf("\"every pod is gone\" out of order with the progress lines:\n%s", text)
		}
		for _, want := range []string{
			"# create to Running: p50 ",
			"# delete to gone:    p50 2s, p99 2s, max 2s (100 pods)",
			"# delete to every container stopped: p50 2s, p99 2s, max 2s (100 pods)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
		}
	})
}

func TestHelpExitsZero(t *testing.T) {
	err := run([]string{"-h"}, io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h = %v, want flag.ErrHelp", err)
	}
	var stderr strings.Builder
	if got := exitStatus(err, &stderr); got != 0 || stderr.Len() != 0 {
		t.Errorf("exit status %d (stderr %q), want 0 and nothing", got, stderr.String())
	}
	if got := exitStatus(errors.New("boom"), &stderr); got != 1 {
		t.Errorf("exit status for an error = %d, want 1", got)
	}
}

// TestREADMEDocumentsEveryFlag: every flag of the command is named in README.md.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	if err := run([]string{"-h"}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h = %v", err)
	}
	flags := regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(usage.String(), -1)
	if len(flags) < 10 {
		t.Fatalf("only %d flags in the usage:\n%s", len(flags), usage.String())
	}
	for _, f := range flags {
		if !strings.Contains(string(readme), "`-"+f[1]) {
			t.Errorf("README.md does not document -%s", f[1])
		}
	}
}

// lineIndex is the index of the first line of lines containing sub after from (-1: none).
func lineIndex(lines []string, from int, sub string) int {
	for i := from + 1; i < len(lines); i++ {
		if strings.Contains(lines[i], sub) {
			return i
		}
	}
	return -1
}

// lastLineIndex is the index of the last line containing sub (-1: none).
func lastLineIndex(lines []string, sub string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return i
		}
	}
	return -1
}

// TestRunNarrationInOrder: the command's "#" lines come in time order with the steps they
// narrate: "deleting them gracefully" before the deletes, "every pod is gone" after the
// last final delete and before housekeeping forgets the pods two seconds later.
func TestRunNarrationInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-pods", "3", "-grace", "5", "-stop-delay", "1s"}, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		deleting := lineIndex(lines, -1, "; deleting them gracefully")
		firstDelete := lineIndex(lines, -1, "graceful delete: deletionTimestamp set")
		gone := lineIndex(lines, -1, "# every pod is gone after")
		lastFinal := lastLineIndex(lines, "deleted from the API (grace 0")
		forgot := lineIndex(lines, -1, "forgot ")
		if deleting < 0 || firstDelete < deleting {
			t.Errorf("the delete narrated at line %d, the first delete at line %d:\n%s", deleting, firstDelete, out.String())
		}
		if gone < lastFinal || forgot < gone {
			t.Errorf("\"every pod is gone\" at line %d, the last final delete at line %d, housekeeping's forgetting at %d:\n%s",
				gone, lastFinal, forgot, out.String())
		}
	})
}

// TestTimelineSayOnAgentScale: a line said is placed on the steps' scale (time since the
// agent started, not since the timeline was created), so a line said before an action
// comes out before the action's steps; a step that only has the pod's UID (the node forgot
// the pod) shows the pod's name, as earlier steps did.
func TestTimelineSayOnAgentScale(t *testing.T) {
	started := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(started.Add(2 * time.Second)) // the timeline comes 2 s after the agent
	var out strings.Builder
	tl := newTimeline(clk, started, &out, false, 0, 1)
	tl.step(agent.Step{Since: 1500 * time.Millisecond, Kind: agent.KindAPI, Pod: "default/a", UID: "uid-a", Detail: "created"})
	tl.say("# deleting it")
	tl.step(agent.Step{Since: 2 * time.Second, Kind: agent.KindAPI, Pod: "default/a", UID: "uid-a", Detail: "deleted at once (grace 0)"})
	tl.step(agent.Step{Since: 2 * time.Second, Kind: agent.KindWorker, Pod: "uid-a", UID: "uid-a", Detail: "syncing -> terminating"})
	tl.step(agent.Step{Since: 2 * time.Second, Kind: agent.KindWorker, Pod: "uid-b", UID: "uid-b", Detail: "finished -> none"})
	tl.close()
	want := []string{
		"    1.500s  api          default/a              created",
		"# deleting it",
		"    2.000s  api          default/a              deleted at once (grace 0)",
		"    2.000s  worker       default/a              syncing -> terminating",
		"    2.000s  worker       uid-b                  finished -> none",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

// TestRunPodColumnKeepsName: with -grace 0 the node forgets the pods as soon as their
// objects go; the steps that follow still show the pods by name.
func TestRunPodColumnKeepsName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-pods", "2", "-grace", "0", "-stop-delay", "500ms"}, &out); err != nil {
			t.Fatal(err)
		}
		uidColumn := regexp.MustCompile(`(?m)^\s+\d+\.\d{3}s  \S+\s+uid-.*$`)
		if got := uidColumn.FindAllString(out.String(), -1); len(got) > 0 {
			t.Errorf("steps showing the pod by UID:\n%s\n\nin:\n%s", strings.Join(got, "\n"), out.String())
		}
		if !strings.Contains(out.String(), "worker       default/busybox-1      finished -> none") {
			t.Errorf("the forgetting of busybox-1 is not shown by name:\n%s", out.String())
		}
	})
}

// tickingClock is the real clock (synctest's fake time) with every reading 1 ms after the
// previous one: time passes between any two readings, as it does outside a bubble.
type tickingClock struct {
	clock.RealClock
	mu sync.Mutex
	n  time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += time.Millisecond
	return time.Now().Add(c.n)
}

func (c *tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestRunOneClock: the narration's figures are the timeline's: "every pod is Running
// after" is from the "created" step to the "phase Running" step, as the timeline prints
// them and as the summary's create to Running measures it, even when time passes between
// readings of the clock.
func TestRunOneClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := runClock(t.Context(), &tickingClock{}, []string{"-grace", "5", "-stop-delay", "1s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		stepAt := func(re string) time.Duration {
			m := regexp.MustCompile(`(?m)^\s+(\d+\.\d{3})s  ` + re).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no step %q:\n%s", re, text)
			}
			return parseSeconds(t, m[1])
		}
		created := stepAt(`api\s+default/busybox-1\s+created`)
		running := stepAt(`status\s+default/busybox-1\s+patched status: phase Running`)
		m := regexp.MustCompile(`# every pod is Running on the API server after (\S+) \(created at (\d+\.\d{3})s, the last Running at (\d+\.\d{3})s\)`).
			FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no figures of the create to Running:\n%s", text)
		}
		after, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		summary := regexp.MustCompile(`# create to Running: p50 (\S+),`).FindStringSubmatch(text)
		if summary == nil {
			t.Fatalf("no summary:\n%s", text)
		}
		p50, err := time.ParseDuration(summary[1])
		if err != nil {
			t.Fatal(err)
		}
		got := []time.Duration{parseSeconds(t, m[2]), parseSeconds(t, m[3]), after, p50}
		want := []time.Duration{created, running, running - created, running - created}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("created, Running, Running after, create to Running p50 (-timeline +narration and summary):\n%s\n%s", diff, text)
		}
	})
}

func parseSeconds(t *testing.T, s string) time.Duration {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(f*1000+0.5) * time.Millisecond
}

// TestRunQuietReportsKill: -quiet prints no timeline, but the summary still reports the
// container killed at the end of the grace period.
func TestRunQuietReportsKill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-quiet", "-grace", "3", "-stop-delay", "-1s"}, &out); err != nil {
			t.Fatal(err)
		}
		want := "# killed with exit code 137: 1 container(s), 1 of them at the end of the grace period (default/busybox-1 busybox)\n"
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
		if stepLine.MatchString(out.String()) {
			t.Errorf("-quiet printed steps:\n%s", out.String())
		}
	})
}

// TestHelpSaysWhatItDoes: -h opens with what the program does, then the flags.
func TestHelpSaysWhatItDoes(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h = %v", err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "Usage: nodeagent [flags]\n\nnodeagent shows a pod's whole lifecycle") {
		t.Errorf("-h does not open with what the program does:\n%s", text)
	}
	if what, flags := strings.Index(text, "creates -pods pods"), strings.Index(text, "\n  -"); what < 0 || flags < what {
		t.Errorf("-h: the description at %d, the flags at %d:\n%s", what, flags, text)
	}
}
