package statusmgr_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/scenarios with the actual output")

// TestScenarios runs the scripts in testdata/scenarios (see statusmgrtest.RunFile) against
// the per-pod step machine, stepped one pod after the other by the harness, and then
// against the Manager's Sync, which writes pods in parallel: both must print the same
// calls. Run with -rewrite to regenerate the outputs.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Run("machine", func(t *testing.T) { statusmgrtest.RunFile(t, file, statusmgrtest.MachineMode, *rewrite) })
			t.Run("manager", func(t *testing.T) { statusmgrtest.RunFile(t, file, statusmgrtest.ManagerMode, false) })
		})
	}
}
