// Package examples holds runnable programs and adapters built on podlife: node agents that wire
// config, podworker, pleg and statusmgr together the way the kubelet does, and adapters to
// client-go and virtual-kubelet. It is a separate Go module so that the library itself stays
// free of those heavier dependencies; it imports the library through a replace directive.
package examples
