package cri

import (
	"strings"
	"time"
)

// BackOff is the kubelet's crash-loop back-off for restarting exited containers, keyed by
// pod and container: the first restart is immediate; each later one waits, counted from
// the moment the previous instance finished, Initial, then twice as long each time, at
// most Max. An entry whose last restart is more than 2*Max old (10 minutes with the
// kubelet's 5-minute maximum: the container ran that long) starts over. It is a pure
// value (time is an argument) and not safe for concurrent use.
type BackOff struct {
	Initial, Max time.Duration
	entries      map[string]backOffEntry
}

type backOffEntry struct {
	delay      time.Duration // the wait before the next restart
	lastFinish time.Time     // FinishedAt of the instance whose restart set delay
	msg        string        // the last failure's message (Failed)
}

// NewBackOff returns an empty back-off.
func NewBackOff(initial, max time.Duration) *BackOff {
	return &BackOff{Initial: initial, Max: max, entries: map[string]backOffEntry{}}
}

// backOffKey is the key of a pod's container.
func backOffKey(namespace, name, uid, container string) string {
	return namespace + "/" + name + "/" + uid + "/" + container
}

func (b *BackOff) expired(e backOffEntry, finishedAt time.Time) bool {
	return finishedAt.Sub(e.lastFinish) > 2*b.Max
}

// Wait returns how much longer the container that finished at finishedAt must wait
// before its restart (0: restart now).
func (b *BackOff) Wait(key string, finishedAt, now time.Time) time.Duration {
	e, ok := b.entries[key]
	if !ok || b.expired(e, finishedAt) {
		return 0
	}
	if w := finishedAt.Add(e.delay).Sub(now); w > 0 {
		return w
	}
	return 0
}

// Restarted records a restart of the container whose previous instance finished at
// finishedAt, and so sets the wait before the next one.
func (b *BackOff) Restarted(key string, finishedAt time.Time) {
	e, ok := b.entries[key]
	switch {
	case !ok || b.expired(e, finishedAt):
		e.delay = b.Initial
	case e.lastFinish.Equal(finishedAt):
		return // the same instance restarted twice (a retried sync): no doubling
	default:
		e.delay = min(2*e.delay, b.Max)
	}
	e.lastFinish = finishedAt
	b.entries[key] = e
}

// Delay is the key's current back-off (the kubelet's "back-off 10s" in
// CrashLoopBackOff's message); 0 without an entry.
func (b *BackOff) Delay(key string) time.Duration { return b.entries[key].delay }

// Failed records a failure at at (an image pull) with its message: the next attempt
// waits (see Pending) Initial, then twice as long after each failure, at most Max;
// after more than 2*Max without a failure it starts over.
func (b *BackOff) Failed(key string, at time.Time, msg string) {
	b.Restarted(key, at)
	e := b.entries[key]
	e.msg = msg
	b.entries[key] = e
}

// Pending returns how much longer the key waits after its last failure at now (0: try
// now) and that failure's message.
func (b *BackOff) Pending(key string, now time.Time) (time.Duration, string) {
	e, ok := b.entries[key]
	if !ok || b.expired(e, now) {
		return 0, ""
	}
	if w := e.lastFinish.Add(e.delay).Sub(now); w > 0 {
		return w, e.msg
	}
	return 0, e.msg
}

// Forget drops every entry of the pod UID.
func (b *BackOff) Forget(uid string) {
	for k := range b.entries {
		if parts := strings.SplitN(k, "/", 4); len(parts) == 4 && parts[2] == uid {
			delete(b.entries, k)
		}
	}
}

// GC drops the entries that expired by now.
func (b *BackOff) GC(now time.Time) {
	for k, e := range b.entries {
		if b.expired(e, now) {
			delete(b.entries, k)
		}
	}
}

// Len is the number of entries.
func (b *BackOff) Len() int { return len(b.entries) }
