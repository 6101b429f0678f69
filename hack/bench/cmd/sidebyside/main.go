// Command sidebyside runs the W1-W5 workloads of BENCHMARKS.md (and W9, the probes of
// issue 28) on the kubelet's (and
// virtual-kubelet's) own code and on podlife, each run in a fresh process, alternating the
// two sides (A B A B ...), and prints one table of medians.
//
//	./copy-kubelet.sh && go run ./cmd/sidebyside [-pairs 4] [-only W1,W3]
//
// The kubelet's unexported code (the config merge, the pod workers) runs from verbatim
// copies made by copy-kubelet.sh (git-ignored, so a fresh checkout has none: without
// them the build stops at "undefined: runCopyKubeletShFirst"); run.sh makes them and then
// runs this.
//
// With -one WORKLOAD -side kubelet|podlife it runs one workload once on one side and
// prints its figures as JSON (what the driver runs in each child process).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

const (
	kubelet = "kubelet"
	podlife = "podlife"
)

// result is one run's figures by name.
type result map[string]float64

// kind orders the table: allocation and call counts, then CPU, then wall time.
type kind int

const (
	counts kind = iota
	cpu
	wall
)

// figure is one row of the table.
type figure struct {
	key, label string
	kind       kind
}

// workload is one side-by-side workload.
type workload struct {
	name, other string // other: whose code the podlife side is compared with
	run         func(side string) (result, error)
	figures     []figure
}

var workloads = []workload{
	{"W1-informer", kubelet, func(s string) (result, error) { return runW1(s, false, false) }, w1Figures},
	{"W1-fresh", kubelet, func(s string) (result, error) { return runW1(s, true, false) }, w1Figures},
	{"W1-informer-full", kubelet, func(s string) (result, error) { return runW1(s, false, true) }, w1Figures},
	{"W1-fresh-full", kubelet, func(s string) (result, error) { return runW1(s, true, true) }, w1Figures},
	{"W2", kubelet, func(s string) (result, error) { return runW2(s, false) }, w2Figures},
	{"W2-real", kubelet, func(s string) (result, error) { return runW2(s, true) }, w2RealFigures},
	{"W2-hot", kubelet, runW2Hot, w2HotFigures},
	{"W3", kubelet, func(s string) (result, error) { return runW3(s, false) }, w3Figures},
	{"W3-cri", kubelet, func(s string) (result, error) { return runW3(s, true) }, w3Figures},
	{"W4", kubelet, func(s string) (result, error) { return runW4(s, false) }, w4Figures},
	{"W4-realistic", kubelet, func(s string) (result, error) { return runW4(s, true) }, w4Figures},
	{"W5-notifying", virtualKub, func(s string) (result, error) { return runW5(s, true) }, w5Figures},
	{"W5-polled", virtualKub, func(s string) (result, error) { return runW5(s, false) }, w5Figures},
	{"W9-probes", kubelet, runW9, w9Figures},
}

var w1Figures = []figure{
	{"initial-allocs/pod", "initial Set: allocs per pod", counts},
	{"allocs/pod-round", "allocs per pod-round", counts},
	{"initial-cpu-ns/pod", "initial Set: CPU ns per pod", cpu},
	{"cpu-ns/pod-round", "CPU ns per pod-round", cpu},
	{"initial-ns/pod", "initial Set: ns per pod", wall},
	{"ns/pod-round", "ns per pod-round", wall},
}

var w2Figures = []figure{
	{"syncpod/pod", "SyncPod calls per pod", counts},
	{"allocs/pod", "allocs per pod", counts},
	{"peak-goroutines", "peak goroutines", counts},
	{"peak-heap-B/pod", "peak heap (garbage included) per pod, bytes", counts},
	{"cpu-ms", "CPU ms", cpu},
	{"wall-ms", "wall ms", wall},
	{"pods/s", "pods/s", wall},
}

var w2RealFigures = []figure{
	{"status/pod", "runtime status calls per pod", counts},
	{"syncpod/pod", "SyncPod calls per pod", counts},
	{"allocs/pod", "allocs per pod (relister and runtime included)", counts},
	{"peak-goroutines", "peak goroutines", counts},
	{"cpu-ms", "CPU ms", cpu},
	{"wall-ms", "wall ms", wall},
}

var w2HotFigures = []figure{
	{"syncpod-calls", "SyncPod calls for 100,000 updates", counts},
	{"cpu-ms", "CPU ms", cpu},
	{"wall-ms", "wall ms", wall},
}

var w3Figures = []figure{
	{"events/relist", "events per relist (checked: 10+10+10)", counts},
	{"allocs/relist", "allocs per relist", counts},
	{"B/relist", "bytes allocated per relist", counts},
	{"cpu-ns/relist", "CPU ns per relist", cpu},
	{"ns/relist", "ns per relist", wall},
}

var w4Figures = []figure{
	{"get/pod", "GET per pod", counts},
	{"patch/pod", "PATCH per pod", counts},
	{"delete/pod", "DELETE per pod", counts},
	{"patch-B/pod", "patch bytes per pod", counts},
	{"largest-patch", "largest PATCH, bytes", counts},
	{"allocs/pod", "allocs per pod (fake clientset included)", counts},
	{"cpu-ms", "CPU ms", cpu},
	{"wall-ms", "wall ms until every pod is deleted", wall},
}

var w5Figures = []figure{
	{"api/pod", "API calls on pods per pod", counts},
	{"provider/pod", "provider calls per pod", counts},
	{"terminal-at-del-%", "% of pods terminal on the server at the final delete", counts},
	{"create-cpu-ms", "create: CPU ms", cpu},
	{"delete-cpu-ms", "delete: CPU ms", cpu},
	{"create-api-cpu-ms", "create: CPU ms of it in the fake API server", cpu},
	{"create-own-cpu-ms", "create: CPU ms without the fake API server", cpu},
	{"delete-own-cpu-ms", "delete: CPU ms without the fake API server", cpu},
	{"create-ms", "create: ms until every pod Running", wall},
	{"delete-ms", "delete: ms until every object gone", wall},
	{"stop-del-p50-ms", "DeletePod -> final delete p50, ms", wall},
	{"stop-del-p99-ms", "DeletePod -> final delete p99, ms", wall},
}

func main() {
	one := flag.String("one", "", "run this workload once and print its figures as JSON")
	side := flag.String("side", "", "with -one: kubelet (or virtual-kubelet) or podlife")
	pairs := flag.Int("pairs", 4, "runs of each side per workload (A B A B ...), each a fresh process")
	only := flag.String("only", "", "comma-separated workloads to run (default all)")
	flag.Parse()
	// The kubelet's code logs through klog: its info lines are formatted but discarded,
	// its errors (there should be none) go to stderr.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if *one != "" {
		for _, w := range workloads {
			if w.name == *one {
				r, err := w.run(*side)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s on %s: %v\n", w.name, *side, err)
					os.Exit(1)
				}
				_ = json.NewEncoder(os.Stdout).Encode(r)
				return
			}
		}
		fmt.Fprintf(os.Stderr, "unknown workload %q\n", *one)
		os.Exit(2)
	}
	if *pairs < 1 {
		fmt.Fprintln(os.Stderr, "-pairs must be at least 1")
		os.Exit(2)
	}
	var chosen []workload
	for _, w := range workloads {
		if *only == "" || slices.Contains(strings.Split(*only, ","), w.name) {
			chosen = append(chosen, w)
		}
	}
	if err := drive(os.Stdout, chosen, *pairs); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

// drive runs every workload pairs times on each side, alternating (for each pair, every
// workload: the other side then podlife), and prints the table of medians. A run that
// fails its checks is left out of the medians, listed under the table with its error, and
// makes drive return an error once the table is printed.
func drive(out io.Writer, ws []workload, pairs int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	load0 := loadavg()
	runs := map[string][]result{}
	var failed []string
	for p := range pairs {
		for _, w := range ws {
			for _, s := range []string{kubelet, podlife} {
				cmd := exec.Command(self, "-one", w.name, "-side", s)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				var r result
				err := cmd.Run()
				if err == nil {
					err = json.Unmarshal(stdout.Bytes(), &r)
				}
				if err != nil {
					msg := fmt.Sprintf("%s on %s (pair %d): %v: %s", w.name, s, p+1, err, strings.TrimSpace(stderr.String()))
					fmt.Fprintln(os.Stderr, "FAILED", msg)
					failed = append(failed, msg)
					continue
				}
				runs[w.name+"/"+s] = append(runs[w.name+"/"+s], r)
				fmt.Fprintf(os.Stderr, "pair %d/%d %s %s done\n", p+1, pairs, w.name, s)
			}
		}
	}
	fmt.Fprintf(out, "side by side, %s, %s/%s, %d CPUs, %d runs of each side per workload (A B A B, fresh processes), medians\n",
		start.Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), pairs)
	fmt.Fprintf(out, "load average before: %s; after: %s; took %s\n", load0, loadavg(), time.Since(start).Round(time.Second))
	fmt.Fprintln(out, "ratio = the compared code's median / podlife's median (above 1: podlife is lower)")
	fmt.Fprintln(out)
	rows := [][]string{{"workload", "figure", "compared with", "its median", "podlife median", "ratio"}}
	for _, k := range []kind{counts, cpu, wall} {
		for _, w := range ws {
			for _, f := range w.figures {
				if f.kind != k {
					continue
				}
				a := median(runs[w.name+"/"+kubelet], f.key)
				b := median(runs[w.name+"/"+podlife], f.key)
				other := w.other
				if w.other == kubelet {
					other = "kubelet v1.37.2"
				}
				rows = append(rows, []string{w.name, f.label, other, num(a), num(b), ratio(a, b)})
			}
		}
	}
	printTable(out, rows)
	if len(failed) > 0 {
		fmt.Fprintf(out, "\n%d failed runs (left out of the medians):\n", len(failed))
		for _, f := range failed {
			fmt.Fprintln(out, "- "+f)
		}
		return fmt.Errorf("%d runs failed", len(failed))
	}
	return nil
}

// printTable prints rows as a Markdown table (the first row is the header), numbers
// right-aligned.
func printTable(out io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	right := func(i int) bool { return i >= 3 }
	for n, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if right(i) {
				b.WriteString("| " + pad + c + " ")
			} else {
				b.WriteString("| " + c + pad + " ")
			}
		}
		fmt.Fprintln(out, b.String()+"|")
		if n == 0 {
			b.Reset()
			for i := range r {
				if right(i) {
					b.WriteString("|" + strings.Repeat("-", width[i]+1) + ":")
				} else {
					b.WriteString("|" + strings.Repeat("-", width[i]+2))
				}
			}
			fmt.Fprintln(out, b.String()+"|")
		}
	}
}

func median(rs []result, key string) float64 {
	var v []float64
	for _, r := range rs {
		if x, ok := r[key]; ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.Abs(x) >= 100 || x == math.Trunc(x):
		return thousands(int64(math.Round(x)))
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		if a == 0 && b == 0 {
			return "="
		}
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// thousands formats n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
