package podworkertest

import "github.com/podlife/podlife/internal/script"

// args is a command's verb, positional arguments, key=value options and flags.
type args struct {
	verb string
	pos  []string
	kv   map[string]string
	flag map[string]bool
}

// takesList reports whether the bare words of the command verb are all positional
// arguments; the other commands take one positional argument (config none), and their
// other bare words are flags.
func takesList(verb string) bool {
	switch verb {
	case "sync-known", "fail", "runtime", "storm":
		return true
	}
	return false
}

// argsOf sorts a parsed command's arguments.
func argsOf(c *script.Case) args {
	a := args{verb: c.Cmd, kv: map[string]string{}, flag: map[string]bool{}}
	for _, w := range c.Args {
		switch {
		case w.HasVal:
			a.kv[w.Key] = w.Val
		case takesList(a.verb) || (len(a.pos) == 0 && a.verb != "config"):
			a.pos = append(a.pos, w.Key)
		default:
			a.flag[w.Key] = true
		}
	}
	return a
}
