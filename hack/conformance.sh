#!/usr/bin/env bash
# conformance.sh runs a named set of the Kubernetes sig-node end-to-end tests (k8s.io/kubernetes
# v1.37.2: test/e2e/common/node and test/e2e/node, built from the Go module proxy) against
# podlife's CRI node (examples/nodeagent -cri on containerd), and with -kubelet against the
# real kubelet v1.37.2 (hack/build-kubelet.sh) on the same machine, then prints per test
# pass, fail or skip for each side and the totals (docs/CONFORMANCE.md has the last results).
# Opt-in: CI does not run it. It needs root (containerd, a network namespace).
#
#   hack/conformance.sh                  # the podlife node
#   hack/conformance.sh -kubelet         # both sides, one after the other
#   hack/conformance.sh -only kubelet    # one side (podlife or kubelet)
#   hack/conformance.sh -focus 'Pods should get a host IP'   # another set (a ginkgo regex)
#
# Each side runs on a cluster of its own, made by hack/e2e.sh (PODLIFE_E2E_EXEC: etcd,
# kube-apiserver and the controllers on loopback, containerd with a CNI bridge, all inside a
# network namespace of its own made for the run and deleted afterwards); the node is node1 with
# the node identity system:node:node1, the node address 10.87.0.2, pods on 10.88.0.0/16. No
# registry is reachable: the images the tests name are built here (hack/conformance/mkimages:
# busybox from Debian's busybox-static, agnhost from its source in k8s.io/kubernetes v1.37.2,
# pause as agnhost's pause) and imported into the run's containerd. The test binary, agnhost and
# busybox are cached in ~/.cache/podlife (first run: about 20 minutes of building on 2 cores).
# Results (JUnit, logs, the report) go to $PODLIFE_CONFORMANCE_OUT (default a new directory
# under $TMPDIR, printed).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
cache="${PODLIFE_CACHE:-$HOME/.cache/podlife}"
bin="$cache/bin"
mkdir -p "$bin"

# The named set (issue 30): the [Conformance] tests of these sig-node groups, without the
# [Slow], [Serial] and [Disruptive] ones.
focus='\[sig-node\] (Pods|Pods Extended|InitContainer|Container Runtime|Containers|Downward API|Variable Expansion|PreStop|Ephemeral Containers|Probing container|Container Lifecycle Hook) .*\[Conformance\]'
skip='\[Slow\]|\[Serial\]|\[Disruptive\]'
sides=(podlife)
while [[ $# -gt 0 ]]; do
	case "$1" in
	-kubelet) sides=(podlife kubelet) ;;
	-only) sides=("$2"); shift ;;
	-focus) focus="$2"; shift ;;
	-skip) skip="$2"; shift ;;
	*) echo "usage: conformance.sh [-kubelet | -only podlife|kubelet] [-focus REGEX] [-skip REGEX]" >&2; exit 2 ;;
	esac
	shift
done
[[ "$(id -u)" == 0 ]] || { echo "conformance.sh: needs root (containerd, a network namespace)" >&2; exit 1; }
out="${PODLIFE_CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/podlife-conformance.XXXXXX")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
echo "conformance: results in $out" >&2

# cached NAME STAMP CMD...: runs CMD (which writes $bin/NAME) unless $bin/NAME was made with
# the same stamp.
cached() {
	local name="$1" stamp="$2"
	shift 2
	if [[ -x "$bin/$name" && "$(cat "$bin/.stamp-$name" 2>/dev/null)" == "$stamp" ]]; then
		echo "conformance: reusing $bin/$name" >&2
		return
	fi
	local t0=$SECONDS
	rm -f "$bin/.stamp-$name"
	"$@"
	echo "$stamp" >"$bin/.stamp-$name"
	echo "conformance: built $bin/$name in $((SECONDS - t0)) s" >&2
}
mod_stamp="$(cat "$here/conformance/go.mod" "$here/conformance/go.sum" "$here/conformance/suite/"*.go | sha256sum | cut -d' ' -f1)"
cached signode.test "$mod_stamp" bash -c "cd '$here/conformance' && nice -n 10 go test -c -trimpath -o '$bin/signode.test.tmp' ./suite && mv '$bin/signode.test.tmp' '$bin/signode.test'"
cached agnhost "$mod_stamp" bash -c "cd '$here/conformance' && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags='-s -w' -o '$bin/agnhost.tmp' k8s.io/kubernetes/test/images/agnhost && mv '$bin/agnhost.tmp' '$bin/agnhost'"
if [[ ! -x "$cache/busybox-static/bin/busybox" ]]; then
	echo "conformance: fetching Debian's busybox-static (apt-get download)" >&2
	d="$(mktemp -d)"
	(cd "$d" && apt-get download -q busybox-static >&2 && dpkg-deb -x busybox-static_*.deb "$cache/busybox-static")
	rm -rf "$d"
fi
mkdir -p "$out/images"
(cd "$here/conformance" && go run ./mkimages -busybox "$cache/busybox-static/bin/busybox" -agnhost "$bin/agnhost" -o "$out/images")
(cd "$root/examples" && go build -o "$out/nodeagent" ./nodeagent)
kubelet_bin=""
if [[ " ${sides[*]} " == *" kubelet "* ]]; then
	kubelet_bin="$("$here/build-kubelet.sh" | tail -n 1)"
fi

export PODLIFE_CONFORMANCE_OUT="$out" PODLIFE_CONFORMANCE_TEST="$bin/signode.test" PODLIFE_CONFORMANCE_KUBELET="$kubelet_bin"
reports=()
for side in "${sides[@]}"; do
	echo "conformance: $side: running the set" >&2
	t0=$SECONDS
	PODLIFE_CONFORMANCE_SIDE="$side" PODLIFE_E2E_EXEC="$here/conformance/run.sh" "$here/e2e.sh" "$focus" "$skip" ||
		echo "conformance: $side: the cluster run failed (see above)" >&2
	echo "conformance: $side: done in $((SECONDS - t0)) s" >&2
	for f in "$out/junit-$side"-*.xml; do
		if [[ -f "$f" ]]; then reports+=("$side=$f"); fi
	done
done
[[ ${#reports[@]} -gt 0 ]] || { echo "conformance: no report" >&2; exit 1; }
(cd "$here/conformance" && go run ./report "${reports[@]}") | tee "$out/report.txt"
(cd "$here/conformance" && go run ./report -md "${reports[@]}") >"$out/report.md"
echo "conformance: $out/report.txt, $out/report.md" >&2
