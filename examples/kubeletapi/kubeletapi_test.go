package kubeletapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/podlife/podlife/examples/cri"
)

func TestAttributes(t *testing.T) {
	tests := []struct {
		name, method, path string
		want               []string // verb/subresource
	}{
		{name: "stats", method: "GET", path: "/stats/summary", want: []string{"get/stats"}},
		{name: "metrics", method: "GET", path: "/metrics", want: []string{"get/metrics"}},
		{name: "logs", method: "GET", path: "/logs/", want: []string{"get/log"}},
		{name: "pods", method: "GET", path: "/pods", want: []string{"get/pods", "get/proxy"}},
		{name: "runningpods", method: "GET", path: "/runningpods/", want: []string{"get/pods", "get/proxy"}},
		{name: "healthz", method: "GET", path: "/healthz", want: []string{"get/healthz", "get/proxy"}},
		{name: "exec", method: "POST", path: "/exec/ns/p/c", want: []string{"create/proxy"}},
		{name: "containerLogs", method: "GET", path: "/containerLogs/ns/p/c", want: []string{"get/proxy"}},
		{name: "statsfoo is not stats", method: "GET", path: "/statsfoo", want: []string{"get/proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			var got []string
			for _, a := range Attributes("node1", &user.DefaultInfo{Name: "u"}, r) {
				if a.GetResource() != "nodes" || a.GetName() != "node1" || !a.IsResourceRequest() {
					t.Errorf("attributes %+v: not a request on nodes/node1", a)
				}
				got = append(got, a.GetVerb()+"/"+a.GetSubresource())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Attributes(%s %s) (-want +got):\n%s", tt.method, tt.path, diff)
			}
		})
	}
}

type fakeAuthn struct{}

func (fakeAuthn) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name := r.Header.Get("X-User")
	if name == "" {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

// fakeAuthz allows user "proxy" nodes/proxy and user "pods" nodes/pods.
var fakeAuthz = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == a.GetSubresource() {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestSecure(t *testing.T) {
	h := Secure("node1", fakeAuthn{}, fakeAuthz, Handler(HandlerConfig{}))
	tests := []struct {
		name, user, path string
		want             int
	}{
		{name: "anonymous", path: "/healthz", want: http.StatusUnauthorized},
		{name: "no permission", user: "stats", path: "/healthz", want: http.StatusForbidden},
		{name: "proxy", user: "proxy", path: "/healthz", want: http.StatusOK},
		{name: "fine-grained pods", user: "pods", path: "/pods", want: http.StatusServiceUnavailable}, // allowed; no pod source
		{name: "pods is not exec", user: "pods", path: "/exec/ns/p/c", want: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.user != "" {
				r.Header.Set("X-User", tt.user)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("GET %s as %q: %d, want %d (%s)", tt.path, tt.user, w.Code, tt.want, w.Body)
			}
		})
	}
}

func TestReadLogs(t *testing.T) {
	const file = "2026-01-01T00:00:01Z stdout F one\n" +
		"2026-01-01T00:00:02Z stderr P tw\n" +
		"2026-01-01T00:00:02.5Z stderr F o\n" +
		"garbage\n" +
		"2026-01-01T00:00:03Z stdout F three\n"
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	n := func(v int64) *int64 { return &v }
	since := time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{name: "all", want: "one\ntwo\nthree\n"},
		{name: "tail 1", opts: LogOptions{TailLines: n(1)}, want: "three\n"},
		{name: "tail 0", opts: LogOptions{TailLines: n(0)}, want: ""},
		{name: "limit bytes", opts: LogOptions{LimitBytes: n(5)}, want: "one\nt"},
		{name: "since", opts: LogOptions{SinceTime: &since}, want: "two\nthree\n"},
		{name: "timestamps", opts: LogOptions{Timestamps: true, TailLines: n(1)}, want: "2026-01-01T00:00:03Z three\n"},
		{name: "follow of a stopped container", opts: LogOptions{Follow: true}, want: "one\ntwo\nthree\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := ReadLogs(t.Context(), path, tt.opts, &out, func() bool { return false }, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("ReadLogs (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeRuntime has no containers.
type fakeRuntime struct{ Runtime }

func (fakeRuntime) FindContainer(_ context.Context, ns, name, container string, previous bool) (cri.StreamContainer, error) {
	return cri.StreamContainer{}, fmt.Errorf("%w: container %q in pod %s/%s", cri.ErrNotFound, container, ns, name)
}

// TestLogsErrors: a log request the runtime cannot answer gets the kubelet's 400, in the
// kubelet's words for a previous instance it does not have.
func TestLogsErrors(t *testing.T) {
	h := Handler(HandlerConfig{Runtime: fakeRuntime{}})
	tests := []struct {
		name, query, want string
	}{
		{name: "previous", query: "?previous=true", want: "previous terminated container \"c\" in pod \"p\" not found\n"},
		{name: "current", query: "", want: "cri: not found: container \"c\" in pod ns/p\n"},
		{name: "bad option", query: "?tailLines=x", want: "tailLines: \"x\" is not a non-negative integer\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/containerLogs/ns/p/c"+tt.query, nil))
			if w.Code != http.StatusBadRequest {
				t.Errorf("code %d, want 400", w.Code)
			}
			if diff := cmp.Diff(tt.want, w.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
