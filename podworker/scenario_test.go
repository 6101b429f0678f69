package podworker_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/podlife/podlife/podworker/podworkertest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the traces the Machine produces")

// TestScenarios runs every script under testdata against the Machine and then against
// the Runner (in a synctest bubble): both must print the same trace.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Run("machine", func(t *testing.T) { podworkertest.RunFile(t, f, podworkertest.MachineMode, *rewrite) })
			t.Run("runner", func(t *testing.T) { podworkertest.RunFile(t, f, podworkertest.RunnerMode, false) })
		})
	}
}
