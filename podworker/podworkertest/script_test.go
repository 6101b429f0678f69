package podworkertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScriptRoundTrip(t *testing.T) {
	const text = `# comment kept
create a
----
a: none -> syncing

# an empty output
hold a
----

delete a grace=5
----
a: x
a: y
`
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds, expected []string
	for i := range s.items {
		it := &s.items[i]
		if it.cmd != "" {
			cmds = append(cmds, it.cmd)
			expected = append(expected, it.expected)
			it.actual = it.expected
		}
	}
	if diff := cmp.Diff([]string{"create a", "hold a", "delete a grace=5"}, cmds); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a: none -> syncing\n", "", "a: x\na: y\n"}, expected); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(text, s.render()); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

func TestScriptErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(path, []byte("create a\nnot a separator\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseScript(path); err == nil {
		t.Error("a command without ---- parsed")
	}
}

func TestParseArgs(t *testing.T) {
	got := parseArgs("kill a evict override=5 wait")
	want := args{verb: "kill", pos: []string{"a"}, kv: map[string]string{"override": "5"},
		flag: map[string]bool{"evict": true, "wait": true}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(args{})); diff != "" {
		t.Error(diff)
	}
}

// TestUnknownCommand: a typo in a script shows up in the trace rather than passing silently.
func TestUnknownCommand(t *testing.T) {
	h := newHarness(t, MachineMode)
	defer h.close()
	if got := h.exec("frobnicate a"); got != "error: unknown command \"frobnicate\"\n" {
		t.Errorf("trace %q", got)
	}
	if got := h.exec("finish a"); got != "error: no held call for pod a\n" {
		t.Errorf("trace %q", got)
	}
}
