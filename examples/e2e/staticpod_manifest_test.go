package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/manifest"
	podnode "github.com/podlife/podlife/node"
)

// A static pod from a manifest directory (issue 31 item 2), on containerd and the real
// API server: agent.Config.ManifestDir runs package manifest's file source (re-listed
// every second here); the pod of a manifest file runs and its mirror pod (annotation
// kubernetes.io/config.mirror = the static pod's hash) shows it Running; a mirror pod
// deleted by hand is created again; a changed file is a new static pod (new UID), whose
// new mirror pod replaces the old one; a removed file's pod stops and its mirror pod is
// deleted.
func TestE2ECRIStaticPodManifest(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	registerNode(t, ctx, admin)
	dir := t.TempDir()

	spec := criPod(t, "cri-manifest", image, v1.RestartPolicyAlways, 2)
	spec.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	spec.Spec.NodeName = ""
	path := filepath.Join(dir, "static.yaml")
	writeManifest := func(p *v1.Pod) *v1.Pod {
		t.Helper()
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		// Written elsewhere and renamed, as an editor or kubeadm does: a listing never
		// sees half a file.
		tmp := filepath.Join(dir, ".static.yaml.tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		static, err := manifest.Decode(data, path, node)
		if err != nil {
			t.Fatal(err)
		}
		removeLeftovers(t, rt, static)
		return static
	}
	static := writeManifest(spec)
	mirrorName := spec.Name + "-" + node
	mw := watchPod(t, ctx, admin, mirrorName)
	a := startAgentWith(t, nodeClient, agent.Config{Backend: rt, ManifestDir: dir, ManifestPeriod: time.Second})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent trace of the static pod:\n  %s", strings.Join(a.trace(static), "\n  "))
		}
	})
	mirrorOf := func(hash string) func(e podEvent) bool {
		return func(e podEvent) bool {
			return e.Type != "DELETED" && e.Pod.Annotations[podnode.ConfigMirrorAnnotationKey] == hash && running(e)
		}
	}
	start := time.Now()
	ev := mw.waitFor(t, ctx, "the mirror pod Running", func(es []podEvent) bool { return last(es, mirrorOf(string(static.UID))) })
	mirror := ev[len(ev)-1].Pod
	t.Logf("mirror pod %s Running %v after the agent started", mirror.UID, time.Since(start).Round(time.Millisecond))
	if mirror.UID == static.UID || mirror.Annotations[manifest.ConfigHashAnnotationKey] != string(static.UID) {
		t.Errorf("the mirror pod: UID %s, annotations %v; static UID %s", mirror.UID, mirror.Annotations, static.UID)
	}
	if cs := runtimeContainer(t, ctx, rt, static, "main"); cs == nil || cs.State != "running" {
		t.Errorf("the static pod's container on containerd: %+v", cs)
	}

	// A mirror pod deleted by hand comes back (a new object), the static pod untouched.
	if err := admin.CoreV1().Pods(namespace).Delete(ctx, mirrorName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	mw.waitFor(t, ctx, "the mirror pod created again", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return mirrorOf(string(static.UID))(e) && e.UID != mirror.UID })
	})
	t.Logf("mirror pod recreated after %v", time.Since(start).Round(time.Millisecond))
	if cs := runtimeContainer(t, ctx, rt, static, "main"); cs == nil || cs.State != "running" {
		t.Errorf("after the mirror pod's deletion, the static pod's container: %+v", cs)
	}

	// A changed manifest is a new static pod: the old one stops, a new mirror pod.
	changed := spec.DeepCopy()
	changed.Labels = map[string]string{"version": "2"}
	old := static
	static = writeManifest(changed)
	if static.UID == old.UID {
		t.Fatalf("the changed manifest kept its UID %s", old.UID)
	}
	start = time.Now()
	mw.waitFor(t, ctx, "the new static pod's mirror pod Running", func(es []podEvent) bool { return last(es, mirrorOf(string(static.UID))) })
	t.Logf("new mirror pod Running %v after the change", time.Since(start).Round(time.Millisecond))
	if cs := runtimeContainer(t, ctx, rt, old, "main"); cs != nil && cs.State == "running" {
		t.Errorf("the old static pod's container still runs: %+v", cs)
	}

	// A removed manifest: the pod stops, its mirror pod is deleted.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	mw.waitFor(t, ctx, "the mirror pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == "DELETED" })
	})
	t.Logf("mirror pod deleted %v after the file's removal", time.Since(start).Round(time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs := runtimeContainer(t, ctx, rt, static, "main")
		if cs == nil || cs.State != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed static pod's container still runs: %+v", cs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
