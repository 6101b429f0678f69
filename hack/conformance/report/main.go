// Command report reads the JUnit reports of hack/conformance.sh's runs (per side: the podlife
// node, and with -kubelet the real kubelet; a side may have several, one per shard) and prints, per test, pass, fail or
// skip for each side, then the totals; with -md, as a Markdown table for
// docs/CONFORMANCE.md, each result with the test's duration.
//
//	go run ./report podlife=junit-podlife.xml kubelet=junit-kubelet.xml
package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type suites struct {
	Suites []suite `xml:"testsuite"`
}

type suite struct {
	Cases []testCase `xml:"testcase"`
}

type testCase struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
	Time    float64   `xml:"time,attr"`
}

// testName is a JUnit test name as the report shows it: without ginkgo's "[It] " and the
// list of labels at its end ("[sig-node, NodeConformance, Conformance]"), which repeat
// what the name says.
func testName(junit string) string {
	n := strings.TrimPrefix(strings.TrimSpace(junit), "[It] ")
	if i := strings.LastIndex(n, " ["); i >= 0 && strings.HasSuffix(n, "]") && strings.Contains(n[i:], ", ") {
		n = n[:i]
	}
	return n
}

// result is one test's outcome: pass, fail or skip.
func (c testCase) result() string {
	switch {
	case c.Failure != nil || c.Error != nil:
		return "fail"
	case c.Skipped != nil || c.Status == "skipped" || c.Status == "pending":
		return "skip"
	default:
		return "pass"
	}
}

func main() {
	md := flag.Bool("md", false, "print a Markdown table")
	flag.Parse()
	if err := run(os.Stdout, flag.Args(), *md); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, args []string, md bool) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: report [-md] SIDE=junit.xml ...")
	}
	var sides []string
	results := map[string]map[string]string{} // test -> side -> result
	secs := map[string]map[string]float64{}   // test -> side -> its duration, when it ran
	for _, a := range args {
		side, path, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q is not SIDE=FILE", a)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s suites
		if err := xml.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !slices.Contains(sides, side) { // one side's shards: several files
			sides = append(sides, side)
		}
		for _, su := range s.Suites {
			for _, c := range su.Cases {
				name := testName(c.Name)
				if !strings.Contains(name, "[sig-") { // the suite's setup nodes
					continue
				}
				if results[name] == nil {
					results[name] = map[string]string{}
					secs[name] = map[string]float64{}
				}
				// A shard's file lists the other shards' tests as skipped: a
				// result of the run wins over a skip.
				if r := c.result(); r != "skip" || results[name][side] == "" {
					results[name][side] = r
					secs[name][side] = c.Time
				}
			}
		}
	}
	names := make([]string, 0, len(results))
	for n, r := range results {
		ran := false // by one side at least: the others are outside the set
		for _, v := range r {
			ran = ran || v != "skip"
		}
		if ran {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	totals := map[string]map[string]int{}
	for _, s := range sides {
		totals[s] = map[string]int{}
	}
	if md {
		fmt.Fprintf(w, "| test | %s |\n|---|%s\n", strings.Join(sides, " | "), strings.Repeat("---|", len(sides)))
	}
	for _, n := range names {
		var cols []string
		for _, s := range sides {
			r := results[n][s]
			if r == "" {
				r = "-"
			}
			totals[s][r]++
			if md && r != "-" && r != "skip" {
				r = fmt.Sprintf("%s, %.0f s", r, secs[n][s])
			}
			cols = append(cols, r)
		}
		if md {
			fmt.Fprintf(w, "| %s | %s |\n", strings.ReplaceAll(n, "|", "\\|"), strings.Join(cols, " | "))
		} else {
			fmt.Fprintf(w, "%-5s %s\n", strings.Join(cols, " "), n)
		}
	}
	fmt.Fprintln(w)
	for _, s := range sides {
		t := totals[s]
		fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped, of %d\n", s, t["pass"], t["fail"], t["skip"], len(names))
	}
	if len(sides) == 2 {
		var worse []string
		for _, n := range names {
			if results[n][sides[1]] == "pass" && results[n][sides[0]] != "pass" {
				worse = append(worse, n)
			}
		}
		fmt.Fprintf(w, "passed by %s and not by %s: %d\n", sides[1], sides[0], len(worse))
		for _, n := range worse {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	return nil
}
