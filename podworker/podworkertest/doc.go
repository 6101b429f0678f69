// Package podworkertest runs scripted scenarios against a podworker.Machine or a
// podworker.Runner and prints the transition trace, so users can script their own
// lifecycle scenarios the way podlife's own tests do.
//
// A scenario file is in the script format every podlife harness reads (datadriven style):
// a command line, a line "----", the trace the command must print, and a blank line that
// ends the case; lines starting with '#' are comments. An output with blank lines goes
// between two "----" lines and two "----" lines. Run the tests with -rewrite (RunFile's
// rewrite) to write the actual traces into the file, then read the diff:
//
//	# a pod is created and synced
//	create a
//	----
//	a: none -> syncing
//	a: SyncPod(create), status any
//	a: SyncPod done: ok
//
//	hold a
//	----
//
// The same file runs against the Machine (driven synchronously by
// the harness) and the Runner (inside a testing/synctest bubble with a fake clock); both
// must print the same trace. Trace lines of a command are grouped per pod (pods sorted by
// UID, each pod's lines in the order they happened), which keeps the trace deterministic
// although the Runner syncs different pods concurrently.
//
// Commands (pods are named by UID; the name defaults to the UID):
//
//	config [max=N] [resync=D] [backoff=D] [backoff-max=D] [by-name]   rebuild the target with this config (before any pod)
//	create UID [name=N] [ns=N] [static] [phase=P] [grace=S]   UpdatePod(create) of a new pod
//	update UID [type=update|sync|create] [phase=P]             UpdatePod with the pod (changed)
//	delete UID [grace=S]                 set deletionTimestamp and deletion grace S (default 30), UpdatePod(update)
//	kill UID [evict] [override=S] [wait] [statusfn]           UpdatePod(kill) with KillPodOptions
//	kill-runtime UID [name=N] [wait] [type=update]   UpdatePod(kill) of a runtime-only pod
//	storm UID N                          N UpdatePod(update) calls with the same pod
//	hold UID / release UID               later syncer calls of the pod block until finish / return at once
//	finish UID [err=MSG] [terminal]      complete the pod's held call
//	fail UID sync|terminating|runtime|terminated [times=N] [err=MSG]   next calls fail
//	terminal UID                         the next SyncPod reports the pod terminal
//	runtime UID running|stopped          what the runtime status cache reports for the pod
//	advance DURATION                     move the fake clock
//	sync-known [UID...]                  SyncKnownPods with these pods desired
//	query UID                            print the query methods for the pod
//	state                                print the PodState of every pod
package podworkertest
