// Package examples holds runnable programs and adapters built on podlife: node agents that wire
// config, podworker, pleg and statusmgr together the way the kubelet does, and adapters to
// client-go and virtual-kubelet. It is a separate Go module so that the library itself stays
// free of those heavier dependencies. Its go.mod requires the library at the version both
// are released at (VERSION; tags vX.Y.Z and examples/vX.Y.Z, hack/release.sh), with no replace
// directive, so users get either by version; inside the repository examples/go.work replaces
// that version by the repository's tree.
package examples
