package main

import "testing"

func TestTestName(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"labels", "[It] [sig-node] Pods should get a host IP [Conformance] [NodeConformance] [sig-node, NodeConformance, Conformance]",
			"[sig-node] Pods should get a host IP [Conformance] [NodeConformance]"},
		{"one label", "[It] [sig-node] X [sig-node]", "[sig-node] X [sig-node]"},
		{"setup node", "[SynchronizedBeforeSuite]", "[SynchronizedBeforeSuite]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testName(tc.in); got != tc.want {
				t.Errorf("testName(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
