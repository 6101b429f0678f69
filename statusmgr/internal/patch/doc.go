// Package patch is statusmgr's status patch encoder: the strategic merge patch between two
// pod statuses (Status, Append), and the field comparisons it rests on (FieldsEqual,
// ConditionEqual).
//
// It holds a fast encoder and its simple twin:
//
//   - typed (the default, patch.go): the fields a pod status carries are compared and
//     written by hand-written code into a pooled buffer, with a reflective fallback for
//     the fields and members the typed code does not name (one a later k8s.io/api adds).
//   - Reference (reference.go): the reflective encoder as it was before the typed one
//     (issue 16), simpler and slower, with the same rules and the same bytes. It is the
//     oracle the typed encoder is compared with byte for byte (TestStatusMatchesReference
//     and FuzzStatusMatchesReference here, statusmgr's TestStatusPatchMatchesReference).
//
// Building with the tag podlife_simple (go build -tags podlife_simple, or go test) makes
// Status and Append, and so every patch statusmgr sends, Reference's (encoder_simple.go
// instead of encoder_fast.go), to rule the typed encoder out while debugging; Simple says
// which one the build uses. The field comparisons (FieldsEqual, ConditionEqual) stay the
// typed ones in both builds. The package's equivalence and fuzz tests check the typed
// encoder and the build's Status against Reference under both tags.
package patch
