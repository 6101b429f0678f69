package envvar

import (
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// Expand replaces each $(NAME) in s by mapping(NAME), as the kubelet's expansion does
// (k8s.io/kubernetes third_party/forked/golang/expansion): $$ is a literal $, a $
// followed by anything else, or an unterminated $(, is kept as written.
func Expand(s string, mapping func(name string) string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	last := 0 // s[last:i] is not yet written
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[last:i])
		rest := s[i+1:]
		r, size := utf8.DecodeRuneInString(rest)
		switch r {
		case '$':
			b.WriteByte('$')
			i += size
		case '(':
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				break
			}
			b.WriteString(mapping(rest[1:end]))
			i += end + 1
		default:
			// The kubelet writes the rune it decoded: an invalid UTF-8 byte becomes U+FFFD.
			b.WriteByte('$')
			b.WriteRune(r)
			i += size
		}
		last = i + 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// MappingFor is the kubelet's MappingFuncFor: a name's value from the first map that
// has it; a name none has stays the reference $(NAME).
func MappingFor(maps ...map[string]string) func(string) string {
	return func(name string) string {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}

// ExpandCommandAndArgs is the kubelet's ExpandContainerCommandAndArgs: the container's
// command and args with $(VAR) expanded from its resolved environment env (Env's
// result).
func ExpandCommandAndArgs(c *v1.Container, env []v1.EnvVar) (command, args []string) {
	m := toMap(env)
	return expandAll(c.Command, m), expandAll(c.Args, m)
}

// ExpandCommandOnlyStatic is the kubelet's ExpandContainerCommandOnlyStatic, used for
// exec probes and exec hooks: $(VAR) is expanded from the env entries that have a
// literal value only (not valueFrom), taken as written.
func ExpandCommandOnlyStatic(cmd []string, env []v1.EnvVar) []string {
	m := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			m[e.Name] = e.Value
		}
	}
	return expandAll(cmd, m)
}

func toMap(env []v1.EnvVar) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

func expandAll(ss []string, m map[string]string) []string {
	if ss == nil {
		return nil
	}
	mapping := MappingFor(m)
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Expand(s, mapping)
	}
	return out
}
