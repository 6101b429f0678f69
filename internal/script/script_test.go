package script

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `# comment kept
create a grace=5 static
----
a: none -> syncing

# an empty output
hold a
----

  # an indented comment
show
----
----
one

two
----
----

delete a
----
a: x
a: y
# trailing comment
`

func TestParse(t *testing.T) {
	f, err := Parse("s.txt", sample)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Pos, Cmd, Expected string
		Args               []Arg
	}
	var cases []got
	for _, c := range f.Cases {
		cases = append(cases, got{c.Pos, c.Cmd, c.Expected, c.Args})
	}
	want := []got{
		{"s.txt:2", "create", "a: none -> syncing", []Arg{{Key: "a"}, {Key: "grace", Val: "5", HasVal: true}, {Key: "static"}}},
		{"s.txt:7", "hold", "", []Arg{{Key: "a"}}},
		{"s.txt:11", "show", "one\n\ntwo", nil},
		{"s.txt:20", "delete", "a: x\na: y\n# trailing comment", []Arg{{Key: "a"}}},
	}
	if diff := cmp.Diff(want, cases); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sample, f.Render(nil)); diff != "" {
		t.Errorf("Render(nil) (-want +got):\n%s", diff)
	}
}

func TestCaseArgs(t *testing.T) {
	f, err := Parse("s", "kill a evict override=3 wait override=4\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	c := f.Cases[0]
	if diff := cmp.Diff([]string{"a", "evict", "wait"}, c.Words()); diff != "" {
		t.Errorf("Words (-want +got):\n%s", diff)
	}
	if v, ok := c.Value("override"); !ok || v != "4" {
		t.Errorf("Value(override) = %q, %v; want the last one, 4", v, ok)
	}
	if _, ok := c.Value("evict"); ok {
		t.Error("Value(evict) found a bare word")
	}
	if s := c.Args[1].String() + " " + c.Args[2].String(); s != "evict override=3" {
		t.Errorf("Arg.String = %q", s)
	}
}

func TestParseErrors(t *testing.T) {
	for name, src := range map[string]string{
		"separator first":    "----\nout\n",
		"no separator":       "create a\ncreate b\n----\n",
		"no separator (eof)": "create a",
		"unclosed block":     "show\n----\n----\none\n\ntwo\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("s", src); !errors.Is(err, ErrSyntax) {
				t.Errorf("Parse = %v, want ErrSyntax", err)
			}
		})
	}
}

func TestRenderOutputs(t *testing.T) {
	f, err := Parse("s", "a\n----\nold\n\nb\n----\n\nc\n----\nkept\n")
	if err != nil {
		t.Fatal(err)
	}
	got := f.Render([]string{"new\n", "x\n\ny\n"})
	want := "a\n----\nnew\n\nb\n----\n----\nx\n\ny\n----\n----\n\nc\n----\nkept\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}
	g, err := Parse("s", got)
	if err != nil {
		t.Fatal(err)
	}
	if g.Cases[1].Expected != "x\n\ny" {
		t.Errorf("re-parsed block output = %q", g.Cases[1].Expected)
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper()                           {}
func (r *recorder) Failed() bool                      { return len(r.errors) > 0 || r.fatal }
func (r *recorder) Errorf(format string, args ...any) { r.errors = append(r.errors, format) }
func (r *recorder) Fatal(args ...any)                 { r.fatal = true; panic(r) }
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = true; panic(r) }

// run runs Run with r, stopping at its Fatal.
func (r *recorder) run(path string, rewrite bool, exec func(*Case) (string, error)) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	Run(r, path, rewrite, exec)
}

func echo(c *Case) (string, error) {
	return strings.Join(c.Words(), "\n") + "\n", nil
}

func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txt")
	const src = "# echo\necho a b\n----\na\nb\n\necho c\n----\nwrong\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}

	r := &recorder{TB: t}
	r.run(path, false, echo)
	if len(r.errors) != 1 || r.fatal {
		t.Fatalf("Run reported %d mismatches (fatal %v), want 1: the second case", len(r.errors), r.fatal)
	}

	r = &recorder{TB: t}
	r.run(path, true, echo)
	if r.Failed() {
		t.Fatalf("Run with rewrite failed: %v", r.errors)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# echo\necho a b\n----\na\nb\n\necho c\n----\nc\n"; string(data) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", data, want)
	}

	r = &recorder{TB: t}
	r.run(path, false, echo)
	if r.Failed() {
		t.Errorf("Run after rewrite failed: %v", r.errors)
	}

	r = &recorder{TB: t}
	r.run(path, true, func(*Case) (string, error) { return "", errors.New("bad command") })
	if !r.fatal {
		t.Error("an exec error did not stop the run")
	}
	if data2, _ := os.ReadFile(path); string(data2) != string(data) {
		t.Error("a failed run rewrote the file")
	}
}
