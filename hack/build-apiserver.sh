#!/usr/bin/env bash
# build-apiserver.sh builds the control plane the end-to-end suite runs, kube-apiserver,
# kube-scheduler and kube-controller-manager (k8s.io/kubernetes v1.37.2) and etcd (v3.7.0), from
# the Go module proxy, as pinned by hack/go.mod, into a cache folder, and reuses them when
# present.
#
#   hack/build-apiserver.sh            # prints the bin folder on its last line
#                                      # (~/.cache/podlife/control-plane-HASH)
#   PODLIFE_CACHE=/some/dir hack/build-apiserver.sh
#   PODLIFE_REBUILD=1 hack/build-apiserver.sh   # ignore the cached binaries
#
# The binaries are reused only if they were built from the same hack/go.mod and hack/go.sum (the
# folder is named after their hash; a stamp file says the build finished). A cold build takes 25-30 minutes and ~2.5 GB of memory on
# 2 cores (kube-apiserver 15-20, then the scheduler and the controller manager, which share
# most of its packages); it runs under `nice` so other work on the machine keeps going.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${PODLIFE_CACHE:-$HOME/.cache/podlife}"

export PATH="$PATH:/usr/local/go/bin"
stamp_want="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)"
# One folder per hack/go.mod and go.sum: checkouts of different versions (worktrees, branches)
# each keep their own binaries instead of rebuilding over each other's.
bin="$cache/control-plane-${stamp_want:0:12}"
mkdir -p "$bin"
stamp_file="$bin/.stamp"

if [[ -z "${PODLIFE_REBUILD:-}" && -x "$bin/kube-apiserver" && -x "$bin/kube-scheduler" &&
	-x "$bin/kube-controller-manager" && -x "$bin/etcd" && -f "$stamp_file" &&
	"$(cat "$stamp_file")" == "$stamp_want" ]]; then
	echo "build-apiserver: reusing $bin/kube-apiserver, kube-scheduler, kube-controller-manager and etcd" >&2
	echo "$bin"
	exit 0
fi

cd "$here"
start=$(date +%s)
# The same version variables the Kubernetes release build sets, so /version reports v1.37.2.
k8s_ver="v1.37.2"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

rm -f "$stamp_file"
echo "build-apiserver: building etcd v3.7.0 into $bin (cold: a few minutes)" >&2
nice -n 10 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$bin/etcd.tmp" "$bin/etcd"
echo "build-apiserver: building kube-apiserver $k8s_ver into $bin (cold: 15-20 minutes on 2 cores)" >&2
nice -n 10 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$bin/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin/kube-apiserver.tmp" "$bin/kube-apiserver"
for cmd in kube-scheduler kube-controller-manager; do
	echo "build-apiserver: building $cmd $k8s_ver into $bin (after kube-apiserver: a few minutes)" >&2
	nice -n 10 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
	mv "$bin/$cmd.tmp" "$bin/$cmd"
done
echo "$stamp_want" >"$stamp_file"
echo "build-apiserver: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
