package cri_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/cri"
)

// TestTerminationMessage: the runtime makes each container instance a termination-log
// file (0666, under the pod's directory) mounted at terminationMessagePath, and reads it
// once the container exited (its last 4 KiB); FallbackToLogsOnError takes the log's last
// 80 lines / 2 KiB when the file is empty and the container failed.
func TestTerminationMessage(t *testing.T) {
	var hundred strings.Builder
	for i := range 100 {
		fmt.Fprintf(&hundred, "2026-01-01T00:00:00.000000000Z stdout F line %d\n", i)
	}
	var lastEighty strings.Builder
	for i := 20; i < 100; i++ {
		fmt.Fprintf(&lastEighty, "line %d\n", i)
	}
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name   string
		policy v1.TerminationMessagePolicy
		file   string
		log    string
		exit   int32
		want   string
	}{
		{name: "from the file", policy: v1.TerminationMessageReadFile, file: "done", want: "done"},
		{name: "the file's last 4 KiB", policy: v1.TerminationMessageReadFile, file: strings.Repeat("a", 100) + strings.Repeat("b", 4096), want: strings.Repeat("b", 4096)},
		{name: "File: an empty file and a failure give none", policy: v1.TerminationMessageReadFile, exit: 1,
			log: "2026-01-01T00:00:00Z stderr F oops\n"},
		{name: "fallback: the log of a failed container", policy: v1.TerminationMessageFallbackToLogsOnError, exit: 1,
			log:  "2026-01-01T00:00:00Z stdout P par\n2026-01-01T00:00:00Z stdout F tial\n2026-01-01T00:00:01Z stderr F oops\n",
			want: "partial\noops\n"},
		{name: "fallback: the last 80 lines", policy: v1.TerminationMessageFallbackToLogsOnError, exit: 2, log: hundred.String(),
			want: lastEighty.String()},
		{name: "fallback: the last 2 KiB", policy: v1.TerminationMessageFallbackToLogsOnError, exit: 2,
			log: "2026-01-01T00:00:00Z stdout F " + long + "\n", want: long[len(long)-2047:] + "\n"},
		{name: "fallback: a success gives none", policy: v1.TerminationMessageFallbackToLogsOnError,
			log: "2026-01-01T00:00:00Z stdout F fine\n"},
		{name: "fallback: the file wins", policy: v1.TerminationMessageFallbackToLogsOnError, exit: 1, file: "from file",
			log: "2026-01-01T00:00:00Z stdout F from log\n", want: "from file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			h := newHarness(t, func(c *cri.Config) { c.RootDir = root })
			pod := fakePod(v1.RestartPolicyNever, "app")
			pod.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			pod.Spec.Containers[0].TerminationMessagePolicy = tc.policy
			if err := h.sync(t, pod); err != nil {
				t.Fatal(err)
			}
			cs, sbs := h.snapshot()
			mounts := cs["app"][0].cfg.GetMounts()
			if len(mounts) != 1 || mounts[0].GetContainerPath() != "/dev/termination-log" ||
				filepath.Dir(mounts[0].GetHostPath()) != filepath.Join(root, "pods", "uid-1", "containers", "app") {
				t.Fatalf("mounts %v, want the termination log under %s", mounts, root)
			}
			fi, err := os.Stat(mounts[0].GetHostPath())
			if err != nil || fi.Mode().Perm() != 0o666 || fi.Size() != 0 {
				t.Fatalf("termination log %v, %v: want an empty file, mode 0666", fi, err)
			}
			if err := os.WriteFile(mounts[0].GetHostPath(), []byte(tc.file), 0o666); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(sbs[0].cfg.GetLogDirectory(), cs["app"][0].cfg.GetLogPath())
			if err := os.WriteFile(logPath, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			h.exitContainer(t, "app", tc.exit)
			got := h.status(t, pod).FindContainerStatusByName("app").Message
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}
