package main

import (
	"os"
	"strings"
	"testing"
)

// TestE2ECRINodeAgent runs the command's in-memory scenario on real containers:
// PODLIFE_E2E_CRI names a containerd with the test image (hack/containerd.sh up).
func TestE2ECRINodeAgent(t *testing.T) {
	ep := os.Getenv("PODLIFE_E2E_CRI")
	if ep == "" {
		t.Skip("PODLIFE_E2E_CRI is not set: run hack/e2e.sh (or hack/containerd.sh up)")
	}
	args := []string{"-cri", ep, "-log-root", t.TempDir(), "-pods", "2", "-grace", "5", "-stop-delay", "200ms"}
	if img := os.Getenv("PODLIFE_E2E_IMAGE"); img != "" {
		args = append(args, "-image", img)
	}
	var out strings.Builder
	if err := run(args, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"patched status: phase Running", "SyncTerminatingPod done: every container stopped",
		"deleted from the API (grace 0", "# CRI (containerd"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, out.String())
		}
	}
}
