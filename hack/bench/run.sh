#!/usr/bin/env bash
# run.sh: the side-by-side benchmarks in one command (see hack/README.md).
#   hack/bench/run.sh [-pairs N] [-only W1-informer,W3,...]
# Makes the verbatim kubelet copies (copy-kubelet.sh), builds cmd/sidebyside once and runs
# it: every run of every workload is a fresh process, the kubelet's side and podlife's
# alternating, and it prints one table of medians.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
./copy-kubelet.sh >&2
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/sidebyside" ./cmd/sidebyside
"$bin/sidebyside" "$@"
