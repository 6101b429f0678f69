// Package podworker is the per-pod lifecycle state machine of podlife: one serialized
// worker per pod UID that drives a pod through sync -> terminating -> terminated ->
// finished by calling the caller's PodSyncer.
package podworker
