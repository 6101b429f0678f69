package podworker_test

import (
	"path/filepath"
	"testing"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/podworker/podworkertest"
)

// TestEngineScenarios runs every script under testdata against the Runner on each of its
// engines: each must print the Machine's trace.
func TestEngineScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, engine := range podworker.EngineNames {
		t.Run(engine, func(t *testing.T) {
			for _, f := range files {
				t.Run(filepath.Base(f), func(t *testing.T) {
					podworkertest.RunFile(t, f, podworkertest.RunnerMode, false, podworkertest.WithNewRunner(podworker.NewOnEngine(engine)))
				})
			}
		})
	}
}
