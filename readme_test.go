package podlife_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADMEUsageSketch checks that README.md's usage sketch is node.Example_agent, verbatim:
// the sketch compiles and runs (its output checked) with the package's tests.
func TestREADMEUsageSketch(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n## Usage sketch\n")
	if !ok {
		t.Fatal("README.md has no \"## Usage sketch\" section")
	}
	_, block, ok := strings.Cut(after, "\n```go\n")
	if !ok {
		t.Fatal("README.md's usage sketch has no ```go block")
	}
	sketch, _, ok := strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal("README.md's usage sketch's ```go block does not end")
	}

	const file = "node/example_agent_test.go"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var example string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "Example_agent" {
			example = string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset])
		}
	}
	if example == "" {
		t.Fatalf("%s has no Example_agent", file)
	}
	if diff := cmp.Diff(example, sketch); diff != "" {
		t.Errorf("README.md's usage sketch is not %s's Example_agent (-example +README):\n%s", file, diff)
	}
}
