package podworkertest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// A script is a sequence of comments and commands. A command is one line, followed by a
// line "----" and its expected output, which ends at a blank line or the end of the file:
//
//	# a graceful delete
//	create a
//	----
//	a: none -> syncing
//	a: SyncPod(create), status any
//	a: SyncPod done: ok
//
// Lines starting with '#' between commands are kept as they are when rewriting.
type script struct {
	items []item
}

type item struct {
	comment  string // a comment or blank line, kept verbatim (when cmd is "")
	cmd      string
	line     int
	expected string
	actual   string
}

func parseScript(path string) (*script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var s script
	n := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		n++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			s.items = append(s.items, item{comment: line})
			continue
		}
		it := item{cmd: trimmed, line: n}
		sep, ok := next()
		if !ok || strings.TrimSpace(sep) != "----" {
			return nil, fmt.Errorf("%s:%d: command %q not followed by ----", path, n, trimmed)
		}
		var out []string
		for {
			l, ok := next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			out = append(out, l)
		}
		if len(out) > 0 {
			it.expected = strings.Join(out, "\n") + "\n"
		}
		s.items = append(s.items, it)
	}
	return &s, sc.Err()
}

// render writes the script with the actual outputs.
func (s *script) render() string {
	var b strings.Builder
	for _, it := range s.items {
		if it.cmd == "" {
			b.WriteString(it.comment)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(it.cmd)
		b.WriteString("\n----\n")
		b.WriteString(it.actual)
		b.WriteByte('\n')
	}
	out := b.String()
	return strings.TrimRight(out, "\n") + "\n"
}

// args splits a command line into its verb, positional arguments and key=value options.
type args struct {
	verb string
	pos  []string
	kv   map[string]string
	flag map[string]bool
}

func parseArgs(line string) args {
	f := strings.Fields(line)
	a := args{kv: map[string]string{}, flag: map[string]bool{}}
	if len(f) == 0 {
		return a
	}
	a.verb = f[0]
	for _, w := range f[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			a.kv[k] = v
		} else if (len(a.pos) == 0 && a.verb != "config") || a.verb == "sync-known" || a.verb == "fail" || a.verb == "runtime" || a.verb == "storm" {
			a.pos = append(a.pos, w)
		} else {
			a.flag[w] = true
		}
	}
	return a
}
