package script

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: Parse never panics, and a parsed script renders to a script that parses to the
// same cases and renders to itself.
func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("a\n----\n")
	f.Add("a\n----\n----\n\n----\n----\n")
	f.Add("a\n----\nx\n----\n\nb\n----\n")
	f.Add("# c\r\n\r\na b=c\r\n----\r\nout\r\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("f", src)
		if err != nil {
			return
		}
		text := p.Render(nil)
		q, err := Parse("f", text)
		if err != nil {
			t.Fatalf("the rendered script does not parse: %v\n%q", err, text)
		}
		if len(p.Cases) != len(q.Cases) {
			t.Fatalf("%d cases, %d after rendering", len(p.Cases), len(q.Cases))
		}
		for i := range p.Cases {
			a, b := p.Cases[i], q.Cases[i]
			if a.Text != b.Text || a.Expected != b.Expected || !cmp.Equal(a.Args, b.Args) {
				t.Fatalf("case %d: %q %q became %q %q", i, a.Text, a.Expected, b.Text, b.Expected)
			}
		}
		if again := q.Render(nil); again != text {
			t.Fatalf("rendering is not stable:\n%q\n%q", text, again)
		}
	})
}
