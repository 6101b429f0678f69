// Package backoff is the kubelet's per-container back-off as pure functions for runtime
// authors: the container restart back-off behind CrashLoopBackOff and the image-pull
// back-off behind ImagePullBackOff (client-go's util/flowcontrol.Backoff as the kubelet
// configures it, without a clock or a lock).
//
// A runtime keeps one Entry per key (the kubelet's keys: pod UID, container name and
// restart hash for restarts; pod UID and image for pulls), asks InBackOffSince before it
// starts a container again, and calls Next after each failure:
//
//	e := entries[key]
//	if backoff.Restart.InBackOffSince(e, finishedAt, now) {
//		return &node.ContainerError{Container: c.Name, Reason: node.ReasonCrashLoopBackOff,
//			Message: backoff.CrashLoopBackOffMessage(e.Backoff, c.Name, backoff.FormatPod(name, ns, uid))}
//	}
//	entries[key] = backoff.Restart.Next(e, finishedAt, now)
//
// Map does the same for keyed entries behind a lock. No function reads the clock: every
// time is the caller's.
package backoff

import (
	"fmt"
	"sync"
	"time"
)

// Policy is a back-off's parameters: the first delay, the delay's maximum (each failure
// doubles it up to Max), and how long without an update resets it to Initial (an event
// more than ResetAfter after the entry's last update starts over).
type Policy struct {
	Initial, Max, ResetAfter time.Duration
}

// Restart is the kubelet's container restart back-off (CrashLoopBackOff): 10 s doubling
// to 300 s (kubelet.go initialCrashLoopBackOff and MaxContainerBackOff; the
// KubeletCrashLoopBackOffMax gate, on by default since 1.35, keeps 300 s unless the
// kubelet's configuration sets another; ReduceDefaultCrashLoopBackOffDecay, alpha and
// off, would make it 1 s to 60 s), reset once the container ran for 10 minutes (the
// kubelet's HasExpiredFunc: 600 s since the last update).
var Restart = Policy{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 600 * time.Second}

// ImagePull is the kubelet's image-pull back-off (ImagePullBackOff): 10 s doubling to
// 300 s (kubelet.go imageBackOffPeriod, MaxImageBackOff), reset after twice the maximum
// without a failure (flowcontrol's default expiry).
var ImagePull = Policy{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 600 * time.Second}

// Entry is one key's back-off state; the zero Entry is a key with no failure recorded.
type Entry struct {
	// Backoff is the current delay (0: none).
	Backoff time.Duration
	// LastUpdate is when Next last recorded a failure.
	LastUpdate time.Time
}

// expired reports whether e no longer counts for an event at eventTime.
func (p Policy) expired(e Entry, eventTime time.Time) bool {
	return eventTime.Sub(e.LastUpdate) > p.ResetAfter
}

// Next records a failure that happened at eventTime, seen at now (flowcontrol's Next): a
// new or expired entry starts at Initial, another doubles up to Max. The result's
// LastUpdate is now.
func (p Policy) Next(e Entry, eventTime, now time.Time) Entry {
	if e.Backoff == 0 || p.expired(e, eventTime) {
		return Entry{Backoff: p.Initial, LastUpdate: now}
	}
	return Entry{Backoff: min(e.Backoff*2, p.Max), LastUpdate: now}
}

// InBackOffSince reports whether, at now, an event at eventTime (a container's finish
// time) is still in e's back-off (flowcontrol's IsInBackOffSince, as kuberuntime's
// doBackOff asks it).
func (p Policy) InBackOffSince(e Entry, eventTime, now time.Time) bool {
	if e.Backoff == 0 || p.expired(e, eventTime) {
		return false
	}
	return now.Sub(eventTime) < e.Backoff
}

// InBackOffSinceUpdate reports whether eventTime is within e's back-off counted from its
// last update (flowcontrol's IsInBackOffSinceUpdate, as the image manager asks it with
// eventTime now).
func (p Policy) InBackOffSinceUpdate(e Entry, eventTime time.Time) bool {
	if e.Backoff == 0 || p.expired(e, eventTime) {
		return false
	}
	return eventTime.Sub(e.LastUpdate) < e.Backoff
}

// FormatPod is the kubelet's format.Pod: "name_namespace(uid)".
func FormatPod(name, namespace, uid string) string {
	return fmt.Sprintf("%s_%s(%s)", name, namespace, uid)
}

// CrashLoopBackOffMessage is the kubelet's CrashLoopBackOff message (kuberuntime's
// doBackOff): "back-off 10s restarting failed container=app pod=web_default(uid)", pod
// as FormatPod gives it.
func CrashLoopBackOffMessage(d time.Duration, container, pod string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, container, pod)
}

// ImagePullBackOffMessage is the kubelet's ImagePullBackOff message (the image manager):
// `Back-off pulling image "busybox"`, followed by ": " and the last pull's error when
// there is one.
func ImagePullBackOffMessage(image, lastPullError string) string {
	msg := fmt.Sprintf("Back-off pulling image %q", image)
	if lastPullError != "" {
		msg += ": " + lastPullError
	}
	return msg
}

// Map is a Policy's entries by key behind a lock (flowcontrol.Backoff without its clock).
// The zero Map is not usable: set Policy. A Map is safe for concurrent use.
type Map struct {
	Policy Policy

	mu sync.Mutex
	m  map[string]Entry
}

// Get returns the key's entry (the zero Entry if none).
func (m *Map) Get(key string) Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key]
}

// Next records a failure of key at eventTime, seen at now, and returns the new entry.
func (m *Map) Next(key string, eventTime, now time.Time) Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]Entry)
	}
	e := m.Policy.Next(m.m[key], eventTime, now)
	m.m[key] = e
	return e
}

// InBackOffSince is Policy.InBackOffSince for key's entry.
func (m *Map) InBackOffSince(key string, eventTime, now time.Time) bool {
	return m.Policy.InBackOffSince(m.Get(key), eventTime, now)
}

// Reset forgets key.
func (m *Map) Reset(key string) {
	m.mu.Lock()
	delete(m.m, key)
	m.mu.Unlock()
}

// GC forgets every entry expired at now (flowcontrol's GC).
func (m *Map) GC(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.m {
		if m.Policy.expired(e, now) {
			delete(m.m, k)
		}
	}
}
