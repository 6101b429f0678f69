package podgc_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/podlife/podlife/podgc/podgctest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/scenarios/*.txt with the actual outputs")

// TestScenarios runs the scripts in testdata/scenarios (see podgctest.RunScenario). After a
// change of behaviour, run `go test ./podgc -run TestScenarios -rewrite` and read the diff.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { podgctest.RunScenario(t, f, *rewrite) })
	}
}
