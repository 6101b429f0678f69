package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// The kubelet's TestValidatePath (pkg/volume/util/atomic_writer_test.go).
func TestValidatePayloadPath(t *testing.T) {
	maxPath := strings.Repeat("a", maxPathLength+1)
	maxFile := strings.Repeat("a", maxFileNameLength+1)
	for _, tc := range []struct {
		name  string
		path  string
		valid bool
	}{
		{"valid 1", "i/am/well/behaved.txt", true},
		{"valid 2", "keepyourheaddownandfollowtherules.txt", true},
		{"max path length", maxPath, false},
		{"max file length", maxFile, false},
		{"absolute failure", "/dev/null", false},
		{"reserved path", "..sneaky.txt", false},
		{"contains doubledot 1", "hello/there/../../../../../../etc/passwd", false},
		{"contains doubledot 2", "hello/../etc/somethingbad", false},
		{"empty", "", false},
	} {
		if err := validatePayloadPath(tc.path); (err == nil) != tc.valid {
			t.Errorf("%s: validatePayloadPath = %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}

// listDir is the volume directory's user-visible entries: a symlink's target or a file's
// content and mode.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || strings.HasPrefix(rel, "..2") {
			if info.IsDir() && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			if rel == dataDirName {
				target = "TS"
			}
			out[rel] = "-> " + target
			return nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readVolumeFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %#o", data, info.Mode().Perm())
}

// The atomic writer: a timestamped directory behind ..data, a symlink per top-level name;
// the same payload writes nothing; a new one swaps ..data, drops the names it lost and
// removes the old directory.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	first := map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400}}
	wrote, err := writeAtomic(dir, first, now)
	if err != nil || !wrote {
		t.Fatalf("first write = %v, %v", wrote, err)
	}
	if diff := cmp.Diff(map[string]string{"..data": "-> TS", "a": "-> ..data/a", "sub": "-> ..data/sub"}, listDir(t, dir)); diff != "" {
		t.Errorf("after the first write (-want +got):\n%s", diff)
	}
	ts1, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if !strings.HasPrefix(ts1, "..2026_01_01_10_00_00.") {
		t.Errorf("timestamped directory %q", ts1)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "a")); got != "1 0644" {
		t.Errorf("a = %s", got)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "sub/b")); got != "2 0400" {
		t.Errorf("sub/b = %s", got)
	}

	if wrote, err := writeAtomic(dir, first, now.Add(time.Minute)); err != nil || wrote {
		t.Errorf("the same payload again = %v, %v; want no write", wrote, err)
	}
	if ts, _ := os.Readlink(filepath.Join(dir, dataDirName)); ts != ts1 {
		t.Errorf("..data moved to %s without a change", ts)
	}

	second := map[string]fileProjection{"a": {Data: []byte("changed"), Mode: 0o644}, "c": {Data: []byte("3"), Mode: 0o644}}
	if wrote, err := writeAtomic(dir, second, now.Add(2*time.Minute)); err != nil || !wrote {
		t.Fatalf("second write = %v, %v", wrote, err)
	}
	if diff := cmp.Diff(map[string]string{"..data": "-> TS", "a": "-> ..data/a", "c": "-> ..data/c"}, listDir(t, dir)); diff != "" {
		t.Errorf("after the second write (-want +got):\n%s", diff)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "a")); got != "changed 0644" {
		t.Errorf("a = %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ts1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old timestamped directory is still there: %v", err)
	}
	if _, err := writeAtomic(dir, map[string]fileProjection{"../x": {}}, now); err == nil {
		t.Error("a payload path with .. was written")
	}
}

// The kubelet's TestRequiresRefresh and TestTokenCachingAndExpiration
// (pkg/kubelet/token/token_manager_test.go): a token is requested again at 80% of its
// lifetime or after 24 h, a failed refresh keeps a valid token.
func TestTokenRotation(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		exp      time.Duration
		after    time.Duration
		failNext bool
		want     int // token requests
		wantErr  bool
	}{
		{name: "hour token kept at 10 minutes", exp: time.Hour, after: 10 * time.Minute, want: 1},
		{name: "hour token kept just before 80% less the jitter", exp: time.Hour, after: 48*time.Minute - tokenMaxJitter, want: 1},
		{name: "rotate hour token expires in the last 12 minutes", exp: time.Hour, after: 50 * time.Minute, want: 2},
		{name: "rotate hour token past 80%", exp: time.Hour, after: 48*time.Minute + time.Second, want: 2},
		{name: "rotate 24 hour token that expires in 40 hours", exp: 40 * time.Hour, after: 25 * time.Hour, want: 2},
		{name: "year token kept before 24 hours less the jitter", exp: 365 * 24 * time.Hour, after: 24*time.Hour - tokenMaxJitter, want: 1},
		{name: "year token rotated after 24 hours", exp: 365 * 24 * time.Hour, after: 24*time.Hour + time.Second, want: 2},
		{name: "rotate hour token fails, old token is still valid, doesn't error", exp: time.Hour, after: 50 * time.Minute, failNext: true, want: 2},
		{name: "rotate hour token fails, old token expired", exp: time.Hour, after: 70 * time.Minute, failNext: true, want: 2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			c := newTokenCache(clk)
			calls, fail := 0, false
			create := func(_ context.Context, ns, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
				calls++
				if fail {
					return nil, errors.New("err")
				}
				out := tr.DeepCopy()
				secs := int64(tc.exp.Seconds())
				out.Spec.ExpirationSeconds = &secs // what the server granted
				out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", calls),
					ExpirationTimestamp: metav1.NewTime(clk.Now().Add(tc.exp))}
				return out, nil
			}
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p", UID: "uid"}}}
			first, err := c.get(t.Context(), "ns", "sa", req, create)
			if err != nil {
				t.Fatal(err)
			}
			clk.Step(tc.after)
			fail = tc.failNext
			got, err := c.get(t.Context(), "ns", "sa", req, create)
			if (err != nil) != tc.wantErr {
				t.Fatalf("get after %v = %v, want error %v", tc.after, err, tc.wantErr)
			}
			if calls != tc.want {
				t.Errorf("%d token requests, want %d", calls, tc.want)
			}
			if err == nil && tc.failNext && got.Status.Token != first.Status.Token {
				t.Errorf("a failed refresh gave %s, want the cached token", got.Status.Token)
			}
			c.forget("uid")
			if len(c.cache) != 0 {
				t.Errorf("forget left %d tokens", len(c.cache))
			}
		})
	}
}

// The kubelet's subPath checks (TestMakeMounts' "invalid absolute SubPath" and "invalid
// SubPath with backsteps", pkg/kubelet/kubelet_pods_linux_test.go) and
// ExpandContainerVolumeMounts (TestExpandVolumeMountsWithSubpath,
// pkg/kubelet/container/helpers_test.go).
func TestSubPathValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expr    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "subpath with no expansion", expr: "foo", want: "foo"},
		{name: "volumes with expanded subpath", expr: "foo/$(POD_NAME)", env: map[string]string{"POD_NAME": "bar"}, want: "foo/bar"},
		{name: "volumes expanded with empty subpath", expr: "", env: map[string]string{"POD_NAME": "bar"}, want: ""},
		{name: "volumes expanded with no envs subpath", expr: "/foo/$(POD_NAME)", wantErr: "missing value for POD_NAME"},
		{name: "volumes expanded with leading environment variable", expr: "$(POD_NAME)/bar", env: map[string]string{"POD_NAME": "foo"}, want: "foo/bar"},
		{name: "volumes expanded with an empty variable", expr: "$(POD_NAME)/bar", env: map[string]string{"POD_NAME": ""}, wantErr: "missing value for POD_NAME"},
		{name: "two missing variables, sorted", expr: "$(B)/$(A)", wantErr: "missing value for A, B"},
		{name: "escaped dollar", expr: "$$(POD_NAME)", env: map[string]string{"POD_NAME": "x"}, want: "$(POD_NAME)"},
		{name: "an unterminated reference is kept, a later $$ still escapes (envvar.Expand)", expr: "a$(b$$c", want: "a$(b$c"},
		{name: "invalid absolute SubPath", expr: "/must/not/be/absolute", wantErr: "error SubPath `/must/not/be/absolute` must not be an absolute path"},
		{name: "invalid SubPath with backsteps", expr: "no/backsteps/../allowed", wantErr: "unable to provision SubPath `no/backsteps/../allowed`: must not contain '..'"},
		{name: "expanded to backsteps (the e2e test's backticks)", expr: "$(POD_NAME)", env: map[string]string{"POD_NAME": ".."}, wantErr: "unable to provision SubPath `..`: must not contain '..'"},
		{name: "expanded to an absolute path", expr: "$(POD_NAME)", env: map[string]string{"POD_NAME": "/tmp"}, wantErr: "error SubPath `/tmp` must not be an absolute path"},
		{name: "dots in a name are fine", expr: "a..b/..c", want: "a..b/..c"},
	} {
		got, err := expandSubPath(tc.expr, tc.env)
		if err == nil && got != "" {
			err = validateSubPath(got)
		}
		gotErr := ""
		if err != nil {
			gotErr, got = err.Error(), ""
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: %q gives %q, error %q; want %q, error %q", tc.name, tc.expr, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func TestMountPropagation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode *v1.MountPropagationMode
		want runtimeapi.MountPropagation
		err  bool
	}{
		{"unset is private", nil, runtimeapi.MountPropagation_PROPAGATION_PRIVATE, false},
		{"None", ptr.To(v1.MountPropagationNone), runtimeapi.MountPropagation_PROPAGATION_PRIVATE, false},
		{"HostToContainer", ptr.To(v1.MountPropagationHostToContainer), runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, false},
		{"Bidirectional", ptr.To(v1.MountPropagationBidirectional), runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, false},
		{"unknown", ptr.To(v1.MountPropagationMode("Sideways")), 0, true},
	} {
		got, err := mountPropagation(tc.mode)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %v, %v", tc.name, got, err)
		}
	}
}

// The kubelet's hostPath type checks and messages (pkg/volume/hostpath/host_path.go).
func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name    string
		path    string
		typ     v1.HostPathType
		wantErr string
	}{
		{"unset type, missing path", missing, v1.HostPathUnset, ""},
		{"Directory", dir, v1.HostPathDirectory, ""},
		{"Directory on a file", file, v1.HostPathDirectory, "hostPath type check failed: " + file + " is not a directory, it's a File"},
		{"Directory missing", missing, v1.HostPathDirectory, "hostPath type check failed, " + missing + " is not a directory, unable to determine its type: stat " + missing + ": no such file or directory"},
		{"File", file, v1.HostPathFile, ""},
		{"File on a directory", dir, v1.HostPathFile, "hostPath type check failed: " + dir + " is not a file, it's a Directory"},
		{"FileOrCreate on a directory", dir, v1.HostPathFileOrCreate, "hostPath type check failed: " + dir + " is not a file, it's a Directory"},
		{"DirectoryOrCreate on a file", file, v1.HostPathDirectoryOrCreate, "hostPath type check failed: " + file + " is not a directory, it's a File"},
		{"Socket", sock, v1.HostPathSocket, ""},
		{"Socket on a file", file, v1.HostPathSocket, "hostPath type check failed: " + file + " is not a socket file, it's a File"},
		{"CharDevice", "/dev/null", v1.HostPathCharDev, ""},
		{"CharDevice on a directory", dir, v1.HostPathCharDev, "hostPath type check failed: " + dir + " is not a character device, it's a Directory"},
		{"BlockDevice on a char device", "/dev/null", v1.HostPathBlockDev, "hostPath type check failed: /dev/null is not a block device, it's a CharDevice"},
		{"invalid type", dir, "Weird", "Weird is an invalid volume type"},
		{"backsteps", dir + "/../x", "", "invalid HostPath `" + dir + "/../x`: must not contain '..'"},
	} {
		gotErr := ""
		if err := checkHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: &tc.typ}); err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.wantErr {
			t.Errorf("%s: error %q, want %q", tc.name, gotErr, tc.wantErr)
		}
	}
	// The OrCreate types create what is missing: a directory 0755, an empty file 0644.
	newDir, newFile := filepath.Join(dir, "a/b"), filepath.Join(dir, "new")
	if err := checkHostPath(&v1.HostPathVolumeSource{Path: newDir, Type: ptr.To(v1.HostPathDirectoryOrCreate)}); err != nil {
		t.Fatal(err)
	}
	if err := checkHostPath(&v1.HostPathVolumeSource{Path: newFile, Type: ptr.To(v1.HostPathFileOrCreate)}); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(newDir); err != nil || !info.IsDir() || info.Mode().Perm() != 0o755 {
		t.Errorf("DirectoryOrCreate made %v, %v", info, err)
	}
	if info, err := os.Stat(newFile); err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
		t.Errorf("FileOrCreate made %v, %v", info, err)
	}
}

func TestDownwardAPIPayload(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1",
		Labels: map[string]string{"b": "2", "a": `q"x`}, Annotations: map[string]string{"k": "v"}},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi"), v1.ResourceCPU: resource.MustParse("250m")}}}}}}
	got, err := downwardAPIPayload(pod, []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: ptr.To[int32](0o400)},
		{Path: "sub/../ann", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['k']"}},
		{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
	}, ptr.To[int32](0o640), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fileProjection{
		"name":   {Data: []byte("web"), Mode: 0o640},
		"labels": {Data: []byte("a=\"q\\\"x\"\nb=\"2\""), Mode: 0o400},
		"ann":    {Data: []byte("v"), Mode: 0o640},
		"mem":    {Data: []byte("64"), Mode: 0o640},
		"cpu":    {Data: []byte("1"), Mode: 0o640},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if _, err := downwardAPIPayload(pod, []v1.DownwardAPIVolumeFile{{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nope"}}}, nil, nil); err == nil {
		t.Error("an unknown field path gave no error")
	}
}
