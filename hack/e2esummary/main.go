// Command e2esummary reads `go test -json` on stdin, prints what `go test` would print
// (every line with -v; else the packages' result lines and the output of failed tests, as
// go test does without -v), and ends with a summary naming what ran: per package, the
// top-level tests passed, skipped and failed, and the components the tests ran against
// (-components); with -summary FILE the summary goes to FILE instead (hack/e2e.sh prints it
// last, once the servers are stopped). It exits 1 when a test or a build failed, or nothing
// ran.
//
//	go test -json ./... | e2esummary [-v] [-components "etcd 3.7.0, ..."] [-summary FILE]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// pkgResult is what one package ran.
type pkgResult struct {
	name                    string
	passed, skipped, failed []string // top-level tests, in the order they ended
	elapsed                 float64
	result                  string // pass, fail, skip (no test files), or "" (still running)
}

// summarizer folds the events into per-package results and prints as it goes.
type summarizer struct {
	out      io.Writer
	verbose  bool
	pkgs     map[string]*pkgResult
	order    []string
	buffered map[string][]string // package + "\x00" + test: output kept until the test ends
	builds   int                 // failed builds
}

func newSummarizer(out io.Writer, verbose bool) *summarizer {
	return &summarizer{out: out, verbose: verbose, pkgs: map[string]*pkgResult{}, buffered: map[string][]string{}}
}

func (s *summarizer) pkg(name string) *pkgResult {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgResult{name: name}
		s.pkgs[name] = p
		s.order = append(s.order, name)
	}
	return p
}

// isChatter reports the framing lines go test prints only with -v.
func isChatter(line string) bool {
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(strings.TrimLeft(line, " "), prefix) {
			return true
		}
	}
	return line == "PASS\n" || line == "testing: warning: no tests to run\n"
}

func (s *summarizer) handle(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		s.builds++
		return
	}
	if e.Package == "" {
		if e.Output != "" {
			fmt.Fprint(s.out, e.Output)
		}
		return
	}
	p := s.pkg(e.Package)
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		switch {
		case s.verbose:
			fmt.Fprint(s.out, e.Output)
		case e.Test == "":
			if !isChatter(e.Output) {
				fmt.Fprint(s.out, e.Output)
			}
		default:
			s.buffered[key] = append(s.buffered[key], e.Output)
		}
	case "pass", "skip", "fail":
		if e.Test == "" {
			p.result, p.elapsed = e.Action, e.Elapsed
			if e.FailedBuild != "" {
				p.result = "fail"
			}
			return
		}
		out := s.buffered[key]
		delete(s.buffered, key)
		if e.Action == "fail" && !s.verbose {
			for _, line := range out {
				if !strings.HasPrefix(strings.TrimLeft(line, " "), "=== ") {
					fmt.Fprint(s.out, line)
				}
			}
		}
		if strings.Contains(e.Test, "/") {
			return // subtests count in their top-level test
		}
		switch e.Action {
		case "pass":
			p.passed = append(p.passed, e.Test)
		case "skip":
			p.skipped = append(p.skipped, e.Test)
		case "fail":
			p.failed = append(p.failed, e.Test)
		}
	}
}

// summary prints the summary and reports whether everything passed.
func (s *summarizer) summary(w io.Writer, components string, took time.Duration) bool {
	var passed, skipped, failed, failedPkgs int
	var ran, empty []string
	for _, name := range s.order {
		p := s.pkgs[name]
		passed, skipped, failed = passed+len(p.passed), skipped+len(p.skipped), failed+len(p.failed)
		if p.result == "fail" || p.result == "" {
			failedPkgs++
		}
		if len(p.passed)+len(p.skipped)+len(p.failed) == 0 && p.result != "fail" {
			empty = append(empty, strings.TrimPrefix(name, "github.com/podlife/podlife/"))
			continue
		}
		ran = append(ran, name)
	}
	ok := failed == 0 && failedPkgs == 0 && s.builds == 0 && passed+skipped > 0
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "e2e: %s: %d passed, %d skipped, %d failed, in %d package(s), %v\n",
		verdict, passed, skipped, failed, len(ran), took.Round(time.Second))
	for _, name := range ran {
		p := s.pkgs[name]
		fmt.Fprintf(w, "  %s (%.1fs)\n", name, p.elapsed)
		for _, l := range []struct {
			what  string
			tests []string
		}{{"passed", p.passed}, {"skipped", p.skipped}, {"FAILED", p.failed}} {
			if len(l.tests) > 0 {
				fmt.Fprintf(w, "    %d %s: %s\n", len(l.tests), l.what, strings.Join(l.tests, " "))
			}
		}
		if p.result == "fail" && len(p.failed) == 0 {
			fmt.Fprintf(w, "    FAILED outside a test (build, panic or timeout)\n")
		}
	}
	if len(empty) > 0 {
		slices.Sort(empty)
		fmt.Fprintf(w, "  no test matched in: %s\n", strings.Join(empty, " "))
	}
	if s.builds > 0 {
		fmt.Fprintf(w, "  %d build(s) failed\n", s.builds)
	}
	if components != "" {
		fmt.Fprintf(w, "  against: %s\n", components)
	}
	return ok
}

func main() {
	verbose := flag.Bool("v", false, "print every line of the tests' output, as go test -v")
	components := flag.String("components", "", "what the tests ran against, for the summary")
	summaryFile := flag.String("summary", "", "write the summary to this file instead of stdout")
	flag.Parse()
	start := time.Now()
	s := newSummarizer(os.Stdout, *verbose)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // not test2json: pass it through
			continue
		}
		s.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "e2esummary:", err)
		os.Exit(1)
	}
	w := io.Writer(os.Stdout)
	if *summaryFile != "" {
		f, err := os.Create(*summaryFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2esummary:", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	ok := s.summary(w, *components, time.Since(start))
	if !ok {
		os.Exit(1)
	}
}
