package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podlife/podlife/examples/manifest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Config.ManifestDir: the file source is ready from its first (empty) listing; a
// manifest written later runs at the next listing; removed, its pod is killed.
func TestManifestDir(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		rt := plegtest.NewRuntime(nil)
		a, err := New(Config{Server: statusmgrtest.NewFakeAPI(), Runtime: rt, ManifestDir: dir,
			ManifestPeriod: 5 * time.Second, Containers: ContainerBehaviour{StopDelay: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		select {
		case <-a.Node().Ready():
		case <-time.After(time.Second):
			t.Fatal("the node is not ready: the file source sent no first listing")
		}
		data := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers: [{name: c, image: i}]\n")
		path := filepath.Join(dir, "web.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		want, err := manifest.Decode(data, path, DefaultNodeName)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !rt.IsRunning(want.UID) {
			t.Fatalf("the static pod %s is not running after a listing", want.UID)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if rt.IsRunning(want.UID) {
			t.Errorf("the static pod %s still runs after its manifest was removed", want.UID)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
