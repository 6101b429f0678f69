//go:build !podlife_simple

package workctx

// Simple is false: this build runs the fast path (build with -tags podlife_simple for the
// simple twin).
const Simple = false
