// Package podgctest helps test code that uses package podgc, as net/http/httptest does for
// net/http.
//
//   - Server is an in-memory API server for pods and nodes that implements podgc.Lister,
//     podgc.PodWriter and podgc.NodeChecker. Its pods live in an apitest.Server, the fake
//     API server statusmgrtest uses too, which answers the garbage collector's writes as
//     the API server does (status-subresource patches, delete options with grace periods
//     and UID preconditions, NotFound and Conflict errors). It records every write (with
//     a delete's options: a scenario's trace flags a delete that is not grace 0 with a UID
//     precondition), and fails calls on request (FailNext) or hides nodes from the list as
//     a stale cache would (HideNode).
//   - RunScenario runs a text script of commands (add nodes and pods, inject failures,
//     advance a fake clock, run a cycle) against a podgc.Runner over a Server and checks the
//     trace each command prints against the expected output written in the script; it can
//     rewrite the script with the actual outputs.
//
// Scripts are in the format every podlife harness reads (datadriven style): a command line,
// a line "----", the output the command must print (often nothing), and a blank line that
// ends the case; lines starting with '#' are comments. An output with blank lines goes
// between two "----" lines and two "----" lines. For example:
//
//	# an unscheduled terminating pod is deleted
//	pod default/u terminating
//	----
//
//	cycle
//	----
//	cycle at t=0s
//	  patch default/u -> phase=Failed
//	  delete default/u
//	  deleted default/u (unscheduled)
//
// Nothing here starts a goroutine or reads the wall clock.
package podgctest
