package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/kube"
)

// API calls counted two ways: on the client side by a client-go transport wrapper
// (apiCounter, for clients the test builds), and on the server side from kube-apiserver's
// apiserver_request_total (serverCalls, for a client the test does not build: the kubelet).
// Both key a call as "VERB resource[/subresource]" with the verbs of the server's metric
// (GET, LIST, WATCH, POST, PUT, PATCH, DELETE, DELETECOLLECTION).

// apiCounter counts the requests of the clients whose transport it wraps.
type apiCounter struct {
	mu    sync.Mutex
	calls map[string]int64
}

func newAPICounter() *apiCounter { return &apiCounter{calls: map[string]int64{}} }

// Snapshot returns the counts so far.
func (c *apiCounter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// wrap is a rest.Config.WrapTransport counting every request, and, under "KEY CODE"
// (e.g. "PUT pods/status 409"), every answer that is not a success.
func (c *apiCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		k := apiKey(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
		if k != "" {
			c.mu.Lock()
			c.calls[k]++
			c.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		if k != "" && err == nil && resp.StatusCode >= 300 {
			c.mu.Lock()
			c.calls[fmt.Sprintf("%s %d", k, resp.StatusCode)]++
			c.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiKey is "VERB resource[/subresource]" of a request to a resource path (/api/v1/...,
// /apis/group/version/...), or "" for anything else (/metrics, /version, ...).
func apiKey(method, path, watch string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	resource, named := parts[0], len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	verb := method
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "WATCH"
		case !named:
			verb = "LIST"
		}
	case http.MethodDelete:
		if !named {
			verb = "DELETECOLLECTION"
		}
	}
	return verb + " " + resource
}

// countingClient is a client of the kubeconfig whose requests counter counts.
func countingClient(t *testing.T, kubeconfig, userAgent string, counter *apiCounter) kubernetes.Interface {
	t.Helper()
	rc, err := kube.RESTConfig(kube.ClientConfig{Kubeconfig: kubeconfig, UserAgent: userAgent})
	if err != nil {
		t.Fatal(err)
	}
	rc.Wrap(counter.wrap)
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// requestTotal matches one sample of apiserver_request_total.
var requestTotal = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

// labelPair matches one label of a sample.
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// serverCalls reads kube-apiserver's apiserver_request_total (as the admin) and sums it by
// "VERB resource[/subresource]" over every code, client and version; non-resource requests
// are left out.
func serverCalls(ctx context.Context, admin kubernetes.Interface) (map[string]int64, error) {
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestTotal.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		if labels["resource"] == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total: %q: %w", m[2], err)
		}
		k := labels["verb"] + " " + labels["resource"]
		if s := labels["subresource"]; s != "" {
			k += "/" + s
		}
		out[k] += int64(v)
	}
	return out, sc.Err()
}

// diffCalls is after - before, dropping what did not change (and anything negative).
func diffCalls(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if x := v - before[k]; x > 0 {
			d[k] = x
		}
	}
	return d
}

// minusCalls removes b's counts from a (the test's own calls from the server's count).
func minusCalls(a, b map[string]int64) map[string]int64 {
	d := maps.Clone(a)
	for k, v := range b {
		if d[k] -= v; d[k] <= 0 {
			delete(d, k)
		}
	}
	return d
}

// callsPerPod formats counts divided by n, sorted by key, keeping those keep accepts, and
// returns their total per pod.
func callsPerPod(calls map[string]int64, n int, keep func(string) bool) (float64, string) {
	var total int64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		if keep != nil && !keep(k) {
			continue
		}
		total += calls[k]
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(calls[k])/float64(n)))
	}
	return float64(total) / float64(n), strings.Join(parts, ", ")
}
