// Module e2esummary is hack/e2e.sh's reader of `go test -json`: the standard library only,
// so building it needs nothing from the network.
module github.com/podlife/podlife/hack/e2esummary

go 1.26
