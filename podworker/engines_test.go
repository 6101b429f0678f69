package podworker

import (
	"fmt"
	"testing"
	"testing/synctest"
)

// engines are the Runner's engines by name: the one Runners use and its plain twin.
var engines = []struct {
	name string
	new  func(*Runner) engine
}{
	{"combining", newCombiningEngine},
	{"plain", newPlainEngine},
}

// useEngine makes the Runners that New returns until the test ends use the named engine.
func useEngine(t testing.TB, name string) {
	for _, e := range engines {
		if e.name == name {
			prev := newEngine
			newEngine = e.new
			t.Cleanup(func() { newEngine = prev })
			return
		}
	}
	t.Fatalf("no engine %q", name)
}

// TestEnginesStress runs the stress test on every engine.
func TestEnginesStress(t *testing.T) {
	for _, e := range engines {
		for _, bound := range []int{0, 3, Unbounded} {
			t.Run(fmt.Sprintf("%s/max=%d", e.name, bound), func(t *testing.T) {
				useEngine(t, e.name)
				synctest.Test(t, func(t *testing.T) { stress(t, bound) })
			})
		}
	}
}
