package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// userMain is a user's program outside the repository: the library's node package and the
// adapters users reach for first (client-go, CRI, virtual-kubelet, metrics).
const userMain = `package main

import (
	"fmt"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/examples/metrics"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/statusmgr"
)

var (
	_ node.Runtime            = (*cri.Runtime)(nil)
	_ statusmgr.StatusPatcher = (*kube.Patcher)(nil)
)

func main() { fmt.Println(vk.Run != nil, metrics.New != nil) }
`

// TestModulesByVersion builds, outside the repository, a user's module that requires the
// library and the examples module at the version in VERSION, with no replace directive, as
// `go get` would fetch them once the tags are published: hack/modproxy writes a file:// module
// proxy of both from the repository's tree, the module's other dependencies come from the
// module cache or the Go module proxy. It also installs examples/nodeagent by version (`go
// install pkg@version` refuses a module whose go.mod has a replace directive, and fails on
// a library version the proxy does not have). See hack/release.sh.
func TestModulesByVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module outside the repository (a minute or more the first time)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(b))

	// Fail with the command's output, not the test binary's timeout panic, when the go
	// commands are slow (a cold build cache on a busy machine).
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-20*time.Second))
		defer cancel()
	}
	run := func(dir string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goTool, args...)
		cmd.Dir = dir
		cmd.Env = env
		// Only stdout is the answer: with a cold module cache the go command writes
		// "go: downloading ..." lines on stderr.
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("go %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, out.String(), stderr.String())
		}
		return out.String()
	}
	// withEnv is the test's environment with the variables of set replaced.
	withEnv := func(set ...string) []string {
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return slices.ContainsFunc(set, func(s string) bool {
				return strings.HasPrefix(kv, s[:strings.IndexByte(s, '=')+1])
			})
		})
		return append(env, set...)
	}

	goEnv := strings.Fields(run(repo, withEnv("GOWORK=off"), "env", "GOPROXY", "GOMODCACHE"))
	if len(goEnv) != 2 {
		t.Fatalf("go env GOPROXY GOMODCACHE: %q", goEnv)
	}
	proxy := t.TempDir()
	if got := strings.TrimSpace(run(filepath.Join(repo, "hack", "modproxy"), withEnv("GOWORK=off"),
		"run", ".", "-repo", repo, "-out", proxy)); got != version {
		t.Fatalf("hack/modproxy wrote version %q, VERSION says %q", got, version)
	}

	user := filepath.Join(t.TempDir(), "user")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(user, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/user\n\ngo 1.26.0\n\nrequire (\n"+
		"\tgithub.com/podlife/podlife "+version+"\n"+
		"\tgithub.com/podlife/podlife/examples "+version+"\n)\n")
	write("main.go", userMain)
	// The checksums of the third-party modules the repository already uses (the podlife
	// modules' come from the proxy directory, unchecked: GONOSUMDB).
	var sums []string
	for _, f := range []string{filepath.Join(repo, "go.sum"), filepath.Join(repo, "examples", "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(sums)
	write("go.sum", strings.Join(slices.Compact(sums), "\n")+"\n")

	tmp := t.TempDir()
	env := withEnv(
		// The tree's modules first; then the module cache as a proxy (no network for what is
		// already downloaded), then the usual proxy.
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(goEnv[1], "cache", "download"))+","+goEnv[0],
		"GONOSUMDB=github.com/podlife",
		"GONOPROXY=", "GOPRIVATE=",
		"GOWORK=off",
		// A module cache of its own: v0.1.0 of the tree must not land in the shared one.
		// -modcacherw lets t.TempDir remove it.
		"GOMODCACHE="+filepath.Join(tmp, "mod"),
		"GOFLAGS=-modcacherw",
		"GOBIN="+filepath.Join(tmp, "bin"),
		"GOTOOLCHAIN=local",
	)
	run(user, env, "mod", "tidy")
	mods := strings.Fields(run(user, env, "list", "-m", "github.com/podlife/podlife", "github.com/podlife/podlife/examples"))
	if want := []string{"github.com/podlife/podlife", version, "github.com/podlife/podlife/examples", version}; !slices.Equal(mods, want) {
		t.Errorf("go list -m: %q, want %q", mods, want)
	}
	gomod, err := os.ReadFile(filepath.Join(user, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(gomod, []byte("replace")) {
		t.Errorf("the user's go.mod has a replace directive:\n%s", gomod)
	}
	// -trimpath: the packages' cache keys do not name the module cache's (temporary)
	// directory, so a second run reuses the first one's compiled packages.
	run(user, env, "build", "-trimpath", "./...")
	run(user, env, "install", "-trimpath", "github.com/podlife/podlife/examples/nodeagent@"+version)
	if _, err := os.Stat(filepath.Join(tmp, "bin", "nodeagent")); err != nil {
		t.Errorf("go install nodeagent@%s: %v", version, err)
	}
}
