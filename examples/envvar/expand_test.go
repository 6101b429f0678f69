package envvar_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/envvar"
)

// TestExpand ports the cases of the kubelet's expansion tests
// (third_party/forked/golang/expansion/expand_test.go, TestMapReference and
// TestMapping, v1.37.2).
func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": "", "VAR_EMPTY_2": ""}
	mapping := envvar.MappingFor(vars)
	for _, tc := range []struct{ name, in, want string }{
		{"whole string", "$(VAR_A)", "A"},
		{"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
		{"beginning", "$(VAR_A)-1", "A-1"},
		{"middle", "___$(VAR_B)___", "___B___"},
		{"end", "___$(VAR_C)", "___C"},
		{"compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
		{"escape & expand", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
		{"compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
		{"mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"},
		{"backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"},
		{"backslash escape ignored", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"},
		{"lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"},
		{"nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
		{"nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"value is a reference", "$(VAR_REF)", "$(VAR_A)"},
		{"value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"},
		{"empty var", "foo$(VAR_EMPTY)bar", "foobar"},
		{"unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
		{"expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"},
		{"shell special vars pass through", "$?_boo_$!", "$?_boo_$!"},
		{"bare operators are ignored", "$VAR_A", "$VAR_A"},
		{"undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"},
		{"multiple (even) operators, var undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
		{"multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"},
		{"multiple (odd) operators, var undefined", "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"},
		{"multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"},
		{"missing open expression", "$VAR_A)", "$VAR_A)"},
		{"shell syntax ignored", "${VAR_A}", "${VAR_A}"},
		{"trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"},
		{"trailing incomplete expression, no content, is not consumed", "$(VAR_C)_______$(", "C_______$("},
		{"operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"},
		{"shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"},
		{"lots of $( in middle", "--$($($($($--", "--$($($($($--"},
		{"lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("},
		{"lots of $( at end", "foo0--$($($($(", "foo0--$($($($("},
		{"escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"},
		{"newline not expanded", "\n", "\n"},
		{"empty reference", "$()", "$()"},
		{"invalid UTF-8 after $ becomes U+FFFD, as the kubelet's", "$\xff", "$\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := envvar.Expand(tc.in, mapping); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestExpandCommand: the container's command and args from its resolved env; exec
// probes' and hooks' commands from its literal env values only.
func TestExpandCommand(t *testing.T) {
	c := &v1.Container{Command: []string{"sh", "-c", "echo $(A)"}, Args: []string{"$(B)", "$$(A)", "$(C)"}}
	cmd, args := envvar.ExpandCommandAndArgs(c, []v1.EnvVar{{Name: "A", Value: "a"}, {Name: "B", Value: "b"}})
	if diff := cmp.Diff([]string{"sh", "-c", "echo a"}, cmd); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b", "$(A)", "$(C)"}, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	env := []v1.EnvVar{{Name: "A", Value: "a"}, {Name: "F", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "R", Value: "$(A)"}}
	got := envvar.ExpandCommandOnlyStatic([]string{"$(A)", "$(F)", "$(R)"}, env)
	if diff := cmp.Diff([]string{"a", "$(F)", "$(A)"}, got); diff != "" {
		t.Errorf("static (-want +got):\n%s", diff)
	}
	if cmd, args := envvar.ExpandCommandAndArgs(&v1.Container{}, nil); cmd != nil || args != nil {
		t.Errorf("empty command and args = %q %q, want nil", cmd, args)
	}
}

// FuzzExpand: never panics; a string without $ is unchanged; with an identity-free
// mapping that returns nothing, the output is never longer than the input plus the
// U+FFFD replacements; with every name undefined, valid UTF-8 without "$$" is unchanged.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "$", "$$", "$(A)", "$(A", "a$(B)c$$d", "$\xff", "$(", "$()", "$$$(A)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		undefined := envvar.MappingFor()
		got := envvar.Expand(s, undefined)
		if !strings.Contains(s, "$") && got != s {
			t.Fatalf("Expand(%q) = %q, want it unchanged", s, got)
		}
		if utf8.ValidString(s) && !strings.Contains(s, "$$") && got != s {
			t.Fatalf("Expand(%q) with nothing defined = %q, want it unchanged", s, got)
		}
		empty := envvar.Expand(s, func(string) string { return "" })
		if utf8.ValidString(s) && len(empty) > len(s) {
			t.Fatalf("Expand(%q) with empty values = %q, longer than its input", s, empty)
		}
	})
}
