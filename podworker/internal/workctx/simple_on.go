//go:build podlife_simple

package workctx

// Simple is true: this build (tag podlife_simple) runs the simple twin.
const Simple = true
