// Package script reads, runs and rewrites podlife's scenario scripts: the one text format
// shared by every scenario harness (podworkertest, statusmgrtest, podgctest), in the style
// of github.com/cockroachdb/datadriven.
//
// # The format
//
// A script is a sequence of cases. A case is a command line, a line "----" and the output
// the command must print; a blank line (or the end of the file) ends the output:
//
//	# Comments start with '#'; they and blank lines between cases are kept as they are.
//	create a grace=30 static
//	----
//	a: none -> syncing
//	a: SyncPod(create), status any
//
//	hold a
//	----
//
// A command is words separated by spaces: the first names the command, the others are its
// arguments, each a bare word (a positional argument or a flag, as the harness defines) or
// key=value. A command that prints nothing still has its "----", followed by a blank line or
// the end of the file. An output that contains blank lines is written between two lines
// "----" and ends at the next two lines "----":
//
//	show
//	----
//	----
//	first paragraph
//
//	second paragraph
//	----
//	----
//
// Expected output is compared line for line, exactly (spaces count); a missing trailing
// newline does not. Run reports each case whose output differs, at the command's line;
// with rewrite it writes the actual outputs into the file instead, keeping the commands,
// comments and blank lines, so a change of behaviour is reviewed as a diff of the scripts.
// Each harness's entry point (podworkertest.RunFile, statusmgrtest.RunFile,
// podgctest.RunScenario) takes that rewrite argument; podlife's scenario tests pass their
// -rewrite flag to it:
//
//	go test ./podworker -run TestScenarios -rewrite
package script

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// separator separates a command from its output.
const separator = "----"

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("script: syntax error")

// File is a parsed script.
type File struct {
	// Name is the file's name, used in messages.
	Name string
	// Cases are the file's cases, in order.
	Cases []*Case
	// trailer holds the comment and blank lines after the last case.
	trailer []string
}

// Case is one command and its expected output.
type Case struct {
	// Pos is "name:line" of the command line (lines count from 1), for messages.
	Pos string
	// Text is the command line without surrounding spaces.
	Text string
	// Cmd is the command's name: the first word of Text.
	Cmd string
	// Args are the other words of Text, in order.
	Args []Arg
	// Expected is the expected output: its lines joined by "\n", without a trailing newline.
	Expected string
	// before holds the comment and blank lines between the previous case and this one.
	before []string
}

// Arg is one argument of a command: a bare word (Key, with HasVal false) or key=value.
type Arg struct {
	Key    string
	Val    string
	HasVal bool
}

// String returns the argument as written.
func (a Arg) String() string {
	if a.HasVal {
		return a.Key + "=" + a.Val
	}
	return a.Key
}

// Words returns the bare words among the case's arguments, in order.
func (c *Case) Words() []string {
	var out []string
	for _, a := range c.Args {
		if !a.HasVal {
			out = append(out, a.Key)
		}
	}
	return out
}

// Value returns the value of the argument key=value (the last one, if repeated).
func (c *Case) Value(key string) (string, bool) {
	val, ok := "", false
	for _, a := range c.Args {
		if a.HasVal && a.Key == key {
			val, ok = a.Val, true
		}
	}
	return val, ok
}

// Parse parses a script; name is used in error messages. An error wraps ErrSyntax and
// names the line.
func Parse(name, src string) (*File, error) {
	f := &File{Name: name}
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r") // CRLF files read as LF
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1] // the final newline ends the last line
	}
	var pending []string
	for i := 0; i < len(lines); {
		l := lines[i]
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			pending = append(pending, l)
			i++
			continue
		}
		if t == separator {
			return nil, fmt.Errorf("%w: %s:%d: %q without a command", ErrSyntax, name, i+1, separator)
		}
		c := &Case{Pos: fmt.Sprintf("%s:%d", name, i+1), Text: t, before: pending}
		pending = nil
		words := strings.Fields(t)
		c.Cmd = words[0]
		for _, w := range words[1:] {
			k, v, ok := strings.Cut(w, "=")
			c.Args = append(c.Args, Arg{Key: k, Val: v, HasVal: ok})
		}
		i++
		if i >= len(lines) || strings.TrimSpace(lines[i]) != separator {
			return nil, fmt.Errorf("%w: %s: command %q is not followed by %q", ErrSyntax, c.Pos, t, separator)
		}
		i++
		var out []string
		if i < len(lines) && strings.TrimSpace(lines[i]) == separator {
			// A block output: up to the next two separator lines.
			i++
			for ; ; i++ {
				if i+1 >= len(lines) {
					return nil, fmt.Errorf("%w: %s: output of %q does not end with two %q lines", ErrSyntax, c.Pos, t, separator)
				}
				if lines[i] == separator && lines[i+1] == separator {
					i += 2
					break
				}
				out = append(out, lines[i])
			}
		} else {
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				out = append(out, lines[i])
			}
		}
		c.Expected = strings.Join(out, "\n")
		f.Cases = append(f.Cases, c)
	}
	f.trailer = pending
	return f, nil
}

// ReadFile reads and parses the script at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(data))
}

// Render returns the script with outputs[i] as the output of Cases[i] (a case beyond
// outputs keeps its expected output); comments, blank lines and commands stay as they are.
func (f *File) Render(outputs []string) string {
	var b strings.Builder
	// open is set after a plain output: a line that is not blank would continue it, so a
	// blank line goes first (only where a block output was followed by one at once).
	open := false
	line := func(l string) {
		if open && strings.TrimSpace(l) != "" {
			b.WriteString("\n")
		}
		open = false
		b.WriteString(l + "\n")
	}
	for i, c := range f.Cases {
		for _, l := range c.before {
			line(l)
		}
		out := c.Expected
		if i < len(outputs) {
			out = normalize(outputs[i])
		}
		line(c.Text)
		b.WriteString(separator + "\n")
		if needsBlock(out) {
			b.WriteString(separator + "\n" + out + "\n" + separator + "\n" + separator + "\n")
			continue
		}
		if out != "" {
			b.WriteString(out + "\n")
		}
		open = true
	}
	for _, l := range f.trailer {
		line(l)
	}
	return b.String()
}

// needsBlock reports whether out cannot be written as a plain output: it has a blank line,
// or it starts with the separator (a plain output would read as a block).
func needsBlock(out string) bool {
	if out == "" {
		return false
	}
	lines := strings.Split(out, "\n")
	if strings.TrimSpace(lines[0]) == separator {
		return true
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			return true
		}
	}
	return false
}

// normalize drops the trailing newlines of an output.
func normalize(out string) string { return strings.TrimRight(out, "\n") }

// Run runs the script at path: exec runs each case's command, in order, and returns what
// it printed. Run fails t where the output differs from the expected one, and stops at an
// exec error. With rewrite it fails nothing but writes the actual outputs into the file
// (only if every case ran and t has not failed).
func Run(t testing.TB, path string, rewrite bool, exec func(c *Case) (string, error)) {
	t.Helper()
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Run(t, rewrite, exec)
}

// Run runs f's cases as the function Run does; with rewrite it writes the file f.Name.
func (f *File) Run(t testing.TB, rewrite bool, exec func(c *Case) (string, error)) {
	t.Helper()
	outputs := make([]string, 0, len(f.Cases))
	for _, c := range f.Cases {
		got, err := exec(c)
		if err != nil {
			t.Fatalf("%s: %s: %v", c.Pos, c.Text, err)
		}
		got = normalize(got)
		outputs = append(outputs, got)
		if rewrite {
			continue
		}
		if diff := cmp.Diff(c.Expected, got); diff != "" {
			t.Errorf("%s: %s: output mismatch (-want +got):\n%s", c.Pos, c.Text, diff)
		}
	}
	if !rewrite || t.Failed() {
		return
	}
	if err := os.WriteFile(f.Name, []byte(f.Render(outputs)), 0o644); err != nil {
		t.Fatal(err)
	}
}
