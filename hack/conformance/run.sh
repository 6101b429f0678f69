#!/usr/bin/env bash
# run.sh is hack/conformance.sh's part inside a cluster of hack/e2e.sh (PODLIFE_E2E_EXEC): it
# imports the images, starts the node of PODLIFE_CONFORMANCE_SIDE (podlife: examples/nodeagent
# -cri; kubelet: the real kubelet), runs the sig-node tests (arguments: the focus and skip
# regexes) with their JUnit reports in $PODLIFE_CONFORMANCE_OUT/junit-SIDE-N.xml, and stops the
# node. The environment is hack/e2e.sh's (PODLIFE_E2E_APISERVER, PODLIFE_E2E_CRI, ...).
set -euo pipefail

focus="$1" skip="$2"
side="$PODLIFE_CONFORMANCE_SIDE"
out="$PODLIFE_CONFORMANCE_OUT"
work="$PODLIFE_E2E_APISERVER"
sock="${PODLIFE_E2E_CRI#unix://}"
cdir="$(dirname "$sock")"
node_ip="10.87.0.2" # hack/e2e.sh's node address in its network namespace

# A cluster's controller manager runs every controller (hack/e2e.sh starts it with a few):
# the node lifecycle controller lifts the node's not-ready taint once it is Ready.
"$work/controlplane-ctl" controllers '*'

for t in busybox agnhost pause; do
	ctr --address "$sock" -n k8s.io images import --snapshotter "$(cat "$cdir/snapshotter")" "$out/images/$t.tar" >&2
done

node_pid=""
stop_node() {
	[[ -n "$node_pid" ]] || return 0
	kill -TERM "$node_pid" 2>/dev/null || return 0
	for ((i = 0; i < 300; i++)); do kill -0 "$node_pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$node_pid" 2>/dev/null || true
}
# unmount_node unmounts what the node left mounted under its directories (the volumes of the
# pods it did not get to tear down: tmpfs of secrets and projected volumes), deepest first,
# so that hack/e2e.sh can delete its work directory.
unmount_node() {
	local m
	for m in $(awk -v a="$work/kubelet/" -v b="$work/podlife/" 'index($5, a) == 1 || index($5, b) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
}
trap 'stop_node; unmount_node' EXIT

case "$side" in
podlife)
	# PODLIFE_CONFORMANCE_TIMELINE=1: the node's log has its timeline (every sync, container
	# start and status write, with times), not just its summary.
	quiet=-quiet
	if [[ -n "${PODLIFE_CONFORMANCE_TIMELINE:-}" ]]; then quiet=-quiet=false; fi
	"$out/nodeagent" -cri "$PODLIFE_E2E_CRI" -kubeconfig "$work/node1.kubeconfig" -node node1 \
		-pod-network runtime -log-root "$work/pods" -root-dir "$work/podlife" -timeout 6h "$quiet" \
		-client-ca-file "$work/ca.crt" -authentication-token-webhook \
		>"$out/node-$side.log" 2>&1 &
	node_pid=$!
	;;
kubelet)
	[[ -x "${PODLIFE_CONFORMANCE_KUBELET:-}" ]] || { echo "run.sh: no kubelet binary" >&2; exit 1; }
	mkdir -p "$work/kubelet"
	# What the kubelet needs on this machine (as examples/e2e/w8_test.go's kubeletConfig):
	# cgroup v1 allowed (v1.37 refuses it by default), no QOS cgroups and no node allocatable
	# enforcement, cgroupfs as containerd's runc, swap allowed; its API on the node address
	# with webhook authentication and authorization (the API server's kubelet client
	# certificate is signed by the cluster CA) like the podlife node's; eviction thresholds
	# low enough that the test machine's disk never triggers them; the files under $work.
	cat >"$work/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$work/ca.crt"}
authorization: {mode: Webhook}
containerRuntimeEndpoint: "$PODLIFE_E2E_CRI"
address: "$node_ip"
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1%", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
resolvConf: ""
podLogsDir: "$work/kubelet/logs"
volumePluginDir: "$work/kubelet/volume-plugins"
kubeAPIQPS: 100
kubeAPIBurst: 200
YAML
	"$PODLIFE_CONFORMANCE_KUBELET" --kubeconfig "$work/node1.kubeconfig" --config "$work/kubelet/config.yaml" \
		--root-dir "$work/kubelet/root" --cert-dir "$work/kubelet/pki" --hostname-override node1 --node-ip "$node_ip" \
		--v 2 >"$out/node-$side.log" 2>&1 &
	node_pid=$!
	;;
*) echo "run.sh: unknown side $side" >&2; exit 2 ;;
esac

# The node must be Ready before the tests start (within 2 minutes): a node that fails to
# start (a kubelet refusing its configuration) ends the run with its log's last lines rather
# than with every test failing.
server="$(awk '/server:/ {print $2; exit}' "$work/admin.kubeconfig")"
token="$(awk '/token:/ {print $2; exit}' "$work/admin.kubeconfig")"
ready=""
for ((i = 0; i < 240; i++)); do
	kill -0 "$node_pid" 2>/dev/null || break
	if curl -fsS --cacert "$work/ca.crt" -H "Authorization: Bearer $token" "$server/api/v1/nodes/node1" 2>/dev/null |
		tr -d ' \n' | grep -q '"type":"Ready","status":"True"'; then
		ready=1
		break
	fi
	sleep 0.5
done
if [[ -z "$ready" ]]; then
	echo "run.sh: $side: node1 did not get Ready (node log: $out/node-$side.log):" >&2
	tail -n 30 "$out/node-$side.log" >&2
	exit 1
fi
echo "run.sh: $side: node1 is Ready" >&2

# The set in PODLIFE_CONFORMANCE_SHARDS (default 4) shards run at once, each its own test
# process on the same cluster (every test has a namespace of its own): most of a failing
# test's time is a wait, so the set takes a fraction of its one-by-one time.
shards="${PODLIFE_CONFORMANCE_SHARDS:-4}"
list="$out/tests-$side.list"
"$PODLIFE_CONFORMANCE_TEST" --provider skeleton --ginkgo.dry-run --ginkgo.v --ginkgo.no-color \
	--ginkgo.focus "$focus" --ginkgo.skip "$skip" 2>/dev/null | grep -E '^\[sig-' | sed -E 's/ \[[^]]*,[^]]*\]$//' >"$list" || true
echo "run.sh: $side: $(wc -l <"$list") tests in $shards shards" >&2
pids=()
for ((i = 0; i < shards; i++)); do
	# The shard's tests: every shards-th line, as one regex of their quoted names (a name that
	# is part of a longer one may also run in that one's shard).
	re="$(awk -v n="$shards" -v i="$i" 'NR % n == i' "$list" | perl -pe 'chomp; s/([^A-Za-z0-9 _-])/\\$1/g; $_ = $_ . "|"' | sed 's/|$//')"
	[[ -n "$re" ]] || continue
	"$PODLIFE_CONFORMANCE_TEST" -test.timeout 6h --kubeconfig "$work/admin.kubeconfig" --provider skeleton \
		--ginkgo.focus "$re" --ginkgo.no-color --ginkgo.v --ginkgo.timeout 6h \
		--ginkgo.junit-report "$out/junit-$side-$i.xml" >"$out/tests-$side-$i.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
echo "run.sh: $side: done (logs: $out/tests-$side-*.log, node: $out/node-$side.log)" >&2
