package manifest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/apitest"
	"github.com/podlife/podlife/config"
)

const nodeName = "node1"

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: test
  namespace: mynamespace
  uid: "12345"
spec:
  containers:
  - name: image
    image: test/image
`

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"test","namespace":"mynamespace","uid":"12345"},
"spec":{"containers":[{"name":"image","image":"test/image"}]}}`

// want is the pod of podYAML/podJSON after the kubelet's defaults.
func want(uid types.UID) *v1.Pod {
	p := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "test-node1", Namespace: "mynamespace", UID: uid,
			Annotations: map[string]string{ConfigHashAnnotationKey: string(uid)}},
		Spec: v1.PodSpec{NodeName: nodeName,
			Containers:  []v1.Container{{Name: "image", Image: "test/image"}},
			Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	apitest.DefaultPod(p)
	return p
}

func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Ported from the kubelet's TestDecodeSinglePod, TestReadPodsFromFileExistAlready
// (file_linux_test.go, common_test.go): JSON and YAML decode to the same defaulted pod.
func TestDecodeSinglePod(t *testing.T) {
	for _, tc := range []struct{ name, data string }{{"json", podJSON}, {"yaml", podYAML}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.data), "/m/test", nodeName)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want("12345"), got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ name, data, words string }{
		{"not yaml", "\t: :\n- [", "couldn't parse as pod"},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, "couldn't parse as pod"},
		{"a service", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n", "couldn't parse as pod"},
		{"a pod list", "apiVersion: v1\nkind: PodList\nitems: []\n", "couldn't parse as pod"},
		{"no name", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, image: b}]}\n", "name is needed for the pod"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n", "spec.containers: Required value"},
		{"no image", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: a}]}\n", "image: Required value"},
		{"duplicate container", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: a, image: b}, {name: a, image: b}]}\n", "Duplicate value"},
		{"bad name", "apiVersion: v1\nkind: Pod\nmetadata: {name: A_B}\nspec: {containers: [{name: a, image: b}]}\n", "metadata.name: Invalid value"},
		// TestDecodeSinglePodRejectsClusterTrustBundleVolumes.
		{"cluster trust bundle", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: a, image: b}]\n  volumes: [{name: v, projected: {sources: [{clusterTrustBundle: {name: x, path: p}}]}}]\n", "static pods may not reference clustertrustbundles"},
		// TestDecodeSinglePodRejectsResourceClaims.
		{"resource claims", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: a, image: b}]\n  resourceClaims: [{name: c, resourceClaimName: x}]\n", "static pods may not reference resourceclaims"},
		{"secret volume", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: a, image: b}]\n  volumes: [{name: v, secret: {secretName: s}}]\n", "static pods may not reference secrets"},
		{"config map env", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: a, image: b, envFrom: [{configMapRef: {name: c}}]}]\n", "static pods may not reference configmaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data), "/m/x", nodeName)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("err %v; want ErrInvalid with %q", err, tc.words)
			}
		})
	}
}

// Ported from the kubelet's TestStaticPodNameGenerate: the name is suffixed with the
// lower-cased node name.
func TestStaticPodNameGenerate(t *testing.T) {
	for _, tc := range []struct{ node, name, want string }{
		{"node1", "static-pod1", "static-pod1-node1"},
		{"Node1", "static-pod1", "static-pod1-node1"},
		{"NODE1", "static-pod1", "static-pod1-node1"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			p, err := Decode([]byte(strings.Replace(podYAML, "name: test", "name: "+tc.name, 1)), "/m/x", tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tc.want || p.Spec.NodeName != tc.node {
				t.Errorf("name %q nodeName %q; want %q, %q", p.Name, p.Spec.NodeName, tc.want, tc.node)
			}
		})
	}
}

// Ported from the kubelet's TestDecodeSinglePodTerminationGracePeriodSeconds.
func TestDecodeSinglePodTerminationGracePeriodSeconds(t *testing.T) {
	p, err := Decode([]byte(podYAML+"  terminationGracePeriodSeconds: -1\n"), "/m/x", nodeName)
	if err != nil {
		t.Fatal(err)
	}
	if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("grace period %v; want 1", g)
	}
}

// applyDefaults: the UID is a hash of the pod, the node and the path; the namespace
// defaults; an existing NoExecute Exists toleration is not duplicated.
func TestApplyDefaults(t *testing.T) {
	noUID := strings.Replace(podYAML, "  uid: \"12345\"\n", "", 1)
	noNS := strings.Replace(noUID, "  namespace: mynamespace\n", "", 1)
	uid := func(data, path, node string) types.UID {
		t.Helper()
		p, err := Decode([]byte(data), path, node)
		if err != nil {
			t.Fatal(err)
		}
		return p.UID
	}
	base := uid(noUID, "/m/a", nodeName)
	if len(base) != 32 {
		t.Errorf("UID %q: want 32 hex digits (FNV-128a)", base)
	}
	for _, tc := range []struct {
		name, data, path, node string
		same                   bool
	}{
		{"same", noUID, "/m/a", nodeName, true},
		{"other path", noUID, "/m/b", nodeName, false},
		{"other node", noUID, "/m/a", "node2", false},
		{"other content", strings.Replace(noUID, "test/image", "test/image2", 1), "/m/a", nodeName, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uid(tc.data, tc.path, tc.node); (got == base) != tc.same {
				t.Errorf("UID %s vs %s: same=%v, want %v", got, base, got == base, tc.same)
			}
		})
	}
	p, err := Decode([]byte(noNS+"  tolerations: [{operator: Exists, effect: NoExecute}, {key: k, operator: Exists, effect: NoSchedule}]\n"), "/m/a", nodeName)
	if err != nil {
		t.Fatal(err)
	}
	wantTol := []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
		{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(wantTol, p.Spec.Tolerations); diff != "" || p.Namespace != "default" || p.Annotations[ConfigHashAnnotationKey] != string(p.UID) {
		t.Errorf("namespace %q, annotations %v, tolerations -want +got:\n%s", p.Namespace, p.Annotations, diff)
	}
}

// Ported from the kubelet's TestExtractFromNonExistentFile and the directory listing of
// extractFromDir: hidden files and subdirectories skipped, bad manifests reported and
// skipped, the others delivered in name order; one file read alone.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "b.yaml", podYAML)
	write(t, dir, "a.json", strings.Replace(podJSON, `"test"`, `"other"`, 1))
	write(t, dir, ".hidden.yaml", podYAML)
	write(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path  string
		wantNames   []string
		wantSkipped []string
		wantErr     error
	}{
		{"directory", dir, []string{"other-node1", "test-node1"}, []string{"bad.yaml", "sub"}, nil},
		{"one file", filepath.Join(dir, "b.yaml"), []string{"test-node1"}, nil, nil},
		{"one bad file", filepath.Join(dir, "bad.yaml"), []string{}, []string{"bad.yaml"}, nil},
		{"missing", filepath.Join(dir, "none"), []string{}, nil, nil},
		{"empty directory", t.TempDir(), []string{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, skipped, err := Read(tc.path, nodeName)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			names := []string{}
			for _, p := range pods {
				names = append(names, p.Name)
			}
			var sk []string
			for _, s := range skipped {
				sk = append(sk, filepath.Base(s.Path))
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("pods -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, sk); diff != "" {
				t.Errorf("skipped -want +got:\n%s", diff)
			}
		})
	}
}

type recorder struct {
	mu      sync.Mutex
	updates []config.PodUpdate
}

func (r *recorder) update(_ context.Context, u config.PodUpdate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	return nil
}

func (r *recorder) names() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]string
	for _, u := range r.updates {
		if u.Op != config.Set || u.Source != SourceName {
			out = append(out, []string{"bad update", string(u.Source)})
			continue
		}
		ns := []string{}
		for _, p := range u.Pods {
			ns = append(ns, p.Name+"/"+p.Spec.Containers[0].Image)
		}
		out = append(out, ns)
	}
	return out
}

// Ported from the kubelet's TestUpdateOnNonExistentFile, TestWatchFileAdded and
// TestWatchFileChanged: a missing directory sends an empty Set at once; a file added,
// changed and removed shows in the next listing, one period later.
func TestSourceRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "manifests")
		r := &recorder{}
		ctx, cancel := context.WithCancel(t.Context())
		s := &Source{Path: dir, NodeName: nodeName, Update: r.update, Period: time.Second}
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		synctest.Wait()
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "p.yaml", podYAML)
		time.Sleep(time.Second)
		synctest.Wait()
		write(t, dir, "p.yaml", strings.Replace(podYAML, "test/image", "test/image2", 1))
		time.Sleep(time.Second)
		synctest.Wait()
		if err := os.Remove(filepath.Join(dir, "p.yaml")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		want := [][]string{{}, {"test-node1/test/image"}, {"test-node1/test/image2"}, {}}
		if diff := cmp.Diff(want, r.names()); diff != "" {
			t.Errorf("updates -want +got:\n%s", diff)
		}
	})
}

// Update's error ends Run.
func TestSourceUpdateError(t *testing.T) {
	boom := errors.New("boom")
	s := &Source{Path: t.TempDir(), NodeName: nodeName,
		Update: func(context.Context, config.PodUpdate) error { return boom }}
	if err := s.Run(t.Context()); !errors.Is(err, boom) {
		t.Errorf("Run: %v, want boom", err)
	}
}

// FuzzDecode: Decode never panics, and a pod it returns has the defaults.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(podYAML))
	f.Add([]byte(podJSON))
	f.Add([]byte("apiVersion: v1\nkind: Pod\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "/m/f", nodeName)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if p.UID == "" || p.Annotations[ConfigHashAnnotationKey] != string(p.UID) || p.Spec.NodeName != nodeName ||
			!strings.HasSuffix(p.Name, "-"+nodeName) || p.Namespace == "" {
			t.Errorf("pod without the defaults: %+v", p.ObjectMeta)
		}
	})
}
