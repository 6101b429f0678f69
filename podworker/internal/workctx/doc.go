// Package workctx hands out the contexts of a podworker Runner's works: one per PodSyncer
// call, cancelled by the Runner when the Machine supersedes the work, when the work is
// over, and for every work in flight when Run ends.
//
// It holds a fast path and its simple twin:
//
//   - fast (the default): a hand-written context that does not register with its parent
//     (the Runner cancels every work itself when Run's context ends), handed out from
//     batches of 16 (one allocation instead of 16), and that implements AfterFunc, so
//     the contexts a PodSyncer derives from it (context.WithTimeout, WithCancel,
//     AfterFunc) start no goroutine to watch it. Values and the deadline come from the
//     parent.
//   - simple: context.WithCancel of the parent.
//
// Building with the tag podlife_simple (go build -tags podlife_simple, or go test) makes
// every Runner use the simple twin, to rule the fast path out while debugging; Simple
// says which one the build uses. The package's tests run the same equivalence tests on
// both.
package workctx

import "context"

// Canceler ends one work's context. Cancel may be called more than once and from any
// goroutine.
type Canceler interface{ Cancel() }

// Source hands out work contexts. It is not safe for concurrent use (a Runner calls it
// under its lock).
type Source struct {
	simple bool
	// batch holds the fast contexts allocated at once and not yet handed out.
	batch []fastContext
}

// batchSize is how many fast contexts New allocates at once (one allocation instead of
// 16; a context a PodSyncer keeps after it returned keeps its batch, 768 bytes, alive).
const batchSize = 16

// NewSource returns a Source of fast contexts, or of simple ones (context.WithCancel)
// when simple is true. Runners pass Simple.
func NewSource(simple bool) *Source { return &Source{simple: simple} }

// New returns the context of one work, derived from parent, and what ends it.
func (s *Source) New(parent context.Context) (context.Context, Canceler) {
	if s.simple {
		ctx, cancel := context.WithCancel(parent)
		return ctx, cancelFunc(cancel)
	}
	if len(s.batch) == 0 {
		s.batch = make([]fastContext, batchSize)
	}
	c := &s.batch[0]
	s.batch = s.batch[1:]
	c.Context = parent
	return c, c
}

// cancelFunc is a context.CancelFunc as a Canceler.
type cancelFunc context.CancelFunc

func (f cancelFunc) Cancel() { f() }
