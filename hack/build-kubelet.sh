#!/usr/bin/env bash
# build-kubelet.sh builds the kubelet of k8s.io/kubernetes v1.37.2 from the Go module proxy into
# the cache folder of build-apiserver.sh, and reuses it when present. The W8 side-by-side
# measurement (PODLIFE_E2E_KUBELET=1 hack/e2e.sh ..., see hack/README.md) and the kubelet side
# of hack/conformance.sh (-kubelet, -only kubelet) run it; CI never builds it.
#
#   hack/build-kubelet.sh            # prints the kubelet's path on its last line
#   PODLIFE_CACHE=/some/dir hack/build-kubelet.sh
#   PODLIFE_REBUILD=1 hack/build-kubelet.sh   # ignore the cached binary
#
# The kubelet needs a few modules kube-apiserver does not (cadvisor, cri-streaming, the CSI
# spec, ...): their go.sum lines are in hack/kubelet.sum, and the build runs on a copy of
# hack/go.mod with hack/go.sum plus those lines (`go build -modfile`), so hack/go.mod and go.sum,
# and with them the apiserver's cached binaries, stay as they are. To make kubelet.sum again
# after a change of hack/go.mod (a build then fails with "missing go.sum entry"):
#
#   d=$(mktemp -d) && cp hack/go.mod "$d/k.mod" && cp hack/go.sum "$d/k.sum" &&
#     (cd hack && go build -modfile="$d/k.mod" -mod=mod -o /dev/null k8s.io/kubernetes/cmd/kubelet) &&
#     grep -vxFf hack/go.sum "$d/k.sum" >hack/kubelet.sum
#
# The binary is reused only if it was built from the same go.mod, go.sum and kubelet.sum (a
# stamp file records their hash). With the build cache warm from build-apiserver.sh it takes
# about 3 minutes of CPU (13 min wall on the loaded 2-core machine); it runs under `nice`.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${PODLIFE_CACHE:-$HOME/.cache/podlife}"
bin="$cache/bin"
mkdir -p "$bin"

export PATH="$PATH:/usr/local/go/bin"
stamp_want="$(cat "$here/go.mod" "$here/go.sum" "$here/kubelet.sum" | sha256sum | cut -d' ' -f1)"
stamp_file="$bin/.stamp-kubelet"

if [[ -z "${PODLIFE_REBUILD:-}" && -x "$bin/kubelet" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_want" ]]; then
	echo "build-kubelet: reusing $bin/kubelet" >&2
	echo "$bin/kubelet"
	exit 0
fi

cd "$here"
start=$(date +%s)
# The version variables the Kubernetes release build sets, so the Node reports v1.37.2.
k8s_ver="v1.37.2"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

rm -f "$stamp_file"
mod="$(mktemp -d)"
trap 'rm -rf "$mod"' EXIT
cp go.mod "$mod/kubelet.mod"
cat go.sum kubelet.sum >"$mod/kubelet.sum"
echo "build-kubelet: building kubelet $k8s_ver into $bin (warm build cache: about 3 minutes of CPU)" >&2
nice -n 10 go build -modfile="$mod/kubelet.mod" -mod=readonly -trimpath -ldflags "$ldflags" \
	-o "$bin/kubelet.tmp" k8s.io/kubernetes/cmd/kubelet
mv "$bin/kubelet.tmp" "$bin/kubelet"
echo "$stamp_want" >"$stamp_file"
echo "build-kubelet: built in $(($(date +%s) - start)) s" >&2
echo "$bin/kubelet"
