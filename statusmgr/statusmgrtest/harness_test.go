package statusmgrtest

import (
	"os"
	"path/filepath"
	"testing"
)

// A user's script runs in both modes.
func TestRunFileBothModes(t *testing.T) {
	const script = `# a pod gone from the server: its status is forgotten
pod a ua
----

set a running
----

sync
----
GET a -> NotFound

stats
----
Gets=1 NotFounds=1 Gone=1

frobnicate
----
error: unknown command "frobnicate"
`
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	RunFile(t, path, MachineMode, false)
	RunFile(t, path, ManagerMode, false)
}
