#!/usr/bin/env bash
# release.sh keeps podlife's two published modules in step and tags them. The library
# (github.com/podlife/podlife, the repository's root) and the examples module
# (github.com/podlife/podlife/examples) are released together at the version in VERSION: tag
# vX.Y.Z for the library, examples/vX.Y.Z for the examples module (Go's convention for a
# module in a subdirectory). examples/go.mod requires the library at exactly that version,
# with no replace directive, so `go get github.com/podlife/podlife/examples@vX.Y.Z` and
# `go install github.com/podlife/podlife/examples/nodeagent@vX.Y.Z` work; inside the repository
# examples/go.work replaces that version by the tree, so examples builds against its own library
# (before the tag exists anywhere) and `cd examples && go test ./...` needs nothing else.
#
#   hack/release.sh check           # the invariants (hack/modproxy -check): VERSION, examples/go.mod,
#                                   # examples/go.work and hack/bench/go.mod name the same version
#   hack/release.sh bump vX.Y.Z     # the next version: VERSION, the three files above and the
#                                   # README's Install lines, in step
#   hack/release.sh tag             # check, then tag HEAD vX.Y.Z and examples/vX.Y.Z (a clean
#                                   # tree, tags not yet there); prints the push command
#   hack/release.sh proxy DIR       # a file:// module proxy of both modules from the tree (hack/modproxy)
#   hack/release.sh tidy            # `go mod tidy` in examples (outside the workspace, against
#                                   # a proxy of the tree: plain `go mod tidy` there would fetch the
#                                   # unpublished library version and fail)
#
# The tests never need the tags: examples/release_test.go builds a module outside the repository
# against a proxy made by hack/modproxy. After `tag`, push the tags (the Go module proxy fetches
# them from GitHub on the first `go get`); bump to the next version when development moves on.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
lib=github.com/podlife/podlife

modproxy() { (cd "$here/modproxy" && GOWORK=off go run . -repo "$root" "$@"); }

case "${1:-}" in
check)
	modproxy -check
	echo "release: $(cat "$root/VERSION"): the modules are in step"
	;;
bump)
	new="${2:?usage: release.sh bump vX.Y.Z}"
	old="$(cat "$root/VERSION")"
	echo "$new" >"$root/VERSION"
	(cd "$root/examples" && go mod edit -require "$lib@$new" &&
		go work edit -dropreplace "$lib@$old" -replace "$lib@$new=../")
	(cd "$here/bench" && go mod edit -require "$lib@$new")
	sed -i "/github.com\/podlife\/podlife/s/@$old\b/@$new/g" "$root/README.md" # the Install lines
	modproxy -check || { echo "release: bump to $new left the modules out of step" >&2; exit 1; }
	echo "release: $old -> $new (VERSION, examples/go.mod, examples/go.work, hack/bench/go.mod, README.md)"
	;;
tag)
	modproxy -check
	v="$(cat "$root/VERSION")"
	cd "$root"
	if [[ -n "$(git status --porcelain)" ]]; then
		echo "release: the work tree is not clean" >&2
		exit 1
	fi
	for t in "$v" "examples/$v"; do
		if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
			echo "release: tag $t exists" >&2
			exit 1
		fi
	done
	git tag -a "$v" -m "podlife $v"
	git tag -a "examples/$v" -m "podlife examples $v"
	echo "release: tagged $(git rev-parse --short HEAD) $v and examples/$v; publish with:"
	echo "  git push origin $v examples/$v"
	;;
proxy)
	dir="${2:?usage: release.sh proxy DIR}"
	mkdir -p "$dir"
	modproxy -out "$(cd "$dir" && pwd)" >/dev/null
	echo "release: GOPROXY=file://$(cd "$dir" && pwd),$(go env GOPROXY) GONOSUMDB=github.com/podlife"
	;;
tidy)
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/podlife-tidy.XXXXXX")"
	trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
	modproxy -out "$tmp/proxy" >/dev/null
	# A module cache of its own, so the tree's version never lands in the shared one; the
	# shared cache serves as a proxy for everything else.
	(cd "$root/examples" && GOWORK=off GOFLAGS=-modcacherw GOMODCACHE="$tmp/mod" GONOSUMDB=github.com/podlife \
		GOPROXY="file://$tmp/proxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go mod tidy)
	# The library's checksums are the tree's of today, not the release's: never recorded.
	sed -i "\|^$lib |d" "$root/examples/go.sum"
	echo "release: examples/go.mod and go.sum tidied"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
