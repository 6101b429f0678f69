#!/usr/bin/env bash
# copy-kubelet.sh copies, verbatim, the kubelet v1.37.2 files whose unexported code the
# side-by-side benchmarks drive, from the Go module cache into this module:
#
#   pkg/kubelet/config/{config,mux,sources}.go -> kubelet/config/   (podStorage.merge, W1)
#   pkg/kubelet/pod_workers.go                 -> kubelet/podworkers/ (podWorkers, W2)
#
# Nothing in a copy is changed: not even the package clause (a directory's name need not be
# its package's). The copies are git-ignored and never committed; the committed export_*.go
# file next to them (same package) is the only code of ours that sees their unexported names.
# Run by run.sh before every build; safe to run again (it overwrites).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
src=$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)
if [[ -z "$src" || ! -d "$src/pkg/kubelet" ]]; then
  echo "copy-kubelet.sh: k8s.io/kubernetes is not in the module cache (run: cd hack/bench && go mod download k8s.io/kubernetes)" >&2
  exit 1
fi
copy() { # copy FROM TO: byte for byte, writable
  install -m 0644 "$src/$1" "$here/$2"
}
mkdir -p kubelet/config kubelet/podworkers
for f in config.go mux.go sources.go; do
  copy "pkg/kubelet/config/$f" "kubelet/config/$f"
done
copy pkg/kubelet/pod_workers.go kubelet/podworkers/pod_workers.go
# Prove the copies are verbatim.
for pair in config/config.go:config/config.go config/mux.go:config/mux.go config/sources.go:config/sources.go pod_workers.go:podworkers/pod_workers.go; do
  cmp -s "$src/pkg/kubelet/${pair%%:*}" "kubelet/${pair##*:}" || { echo "copy-kubelet.sh: ${pair##*:} differs" >&2; exit 1; }
done
echo "copied from $src"
