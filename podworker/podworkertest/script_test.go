package podworkertest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podlife/podlife/internal/script"
	"github.com/podlife/podlife/podworker"
)

// parse parses one command line.
func parse(t *testing.T, line string) args {
	t.Helper()
	f, err := script.Parse("test", line+"\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	return argsOf(f.Cases[0])
}

func TestArgsOf(t *testing.T) {
	for _, tc := range []struct {
		line string
		want args
	}{
		{"kill a evict override=5 wait", args{verb: "kill", pos: []string{"a"}, kv: map[string]string{"override": "5"},
			flag: map[string]bool{"evict": true, "wait": true}}},
		{"config by-name max=2", args{verb: "config", kv: map[string]string{"max": "2"}, flag: map[string]bool{"by-name": true}}},
		{"sync-known a b", args{verb: "sync-known", pos: []string{"a", "b"}, kv: map[string]string{}, flag: map[string]bool{}}},
		{"fail a sync times=2", args{verb: "fail", pos: []string{"a", "sync"}, kv: map[string]string{"times": "2"}, flag: map[string]bool{}}},
	} {
		if diff := cmp.Diff(tc.want, parse(t, tc.line), cmp.AllowUnexported(args{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.line, diff)
		}
	}
}

// TestUnknownCommand: a typo in a script shows up in the trace rather than passing silently.
func TestUnknownCommand(t *testing.T) {
	h := newHarness(t, MachineMode, options{newRunner: podworker.New})
	defer h.close()
	if got := h.exec(parse(t, "frobnicate a")); got != "error: unknown command \"frobnicate\"\n" {
		t.Errorf("trace %q", got)
	}
	if got := h.exec(parse(t, "finish a")); got != "error: no held call for pod a\n" {
		t.Errorf("trace %q", got)
	}
}
