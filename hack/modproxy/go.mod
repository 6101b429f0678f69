// Module modproxy writes a file:// Go module proxy of podlife's published modules from the
// repository's tree (hack/release.sh and examples/release_test.go use it); a tiny module of
// its own, so building it needs golang.org/x/mod only.
module github.com/podlife/podlife/hack/modproxy

go 1.26.0

require golang.org/x/mod v0.43.0
