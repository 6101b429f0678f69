// Package podlife is the kubelet's pod lifecycle state machine as an importable library.
// See the package documentation of grace, config, pleg, podworker and statusmgr.
package podlife
