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
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
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
			"(deletion took 3s)",
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
			"(deletion took 0s)",
			"# -grace 0: the objects went at once; the containers really took 500ms to stop",
			"# delete to gone:    p50 0s",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
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
