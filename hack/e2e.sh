#!/usr/bin/env bash
# e2e.sh runs the end-to-end suite against a real kube-apiserver backed by a real etcd, both
# built from the Go module proxy by hack/build-apiserver.sh (the first run builds them: 15-20
# minutes on 2 cores; later runs reuse them), and a real containerd (hack/containerd.sh: as
# root it installs Debian's containerd and runc when they are missing) for the CRI tests.
#
#   hack/e2e.sh                      # runs `go test -race -count=1 -p 1 -timeout 45m -run E2E ./...` in examples/
#   hack/e2e.sh -v -run E2ECreation  # extra arguments go to `go test` (a later -run wins)
#   PODLIFE_E2E_KEEP=1 hack/e2e.sh   # keep the work directory (certificates, logs) afterwards
#   PODLIFE_E2E_AUDIT=1 hack/e2e.sh  # also the API server's audit log of every pod write
#                                    # (who, when, which UID precondition): $work/audit.log
#   PODLIFE_E2E_KUBELET=1 hack/e2e.sh -race=false -timeout 30m -v -run W8SideBySide
#                                    # W8 against the real kubelet (hack/build-kubelet.sh first)
#   PODLIFE_E2E_EXEC=CMD hack/e2e.sh ARGS # CMD ARGS instead of the suite (hack/conformance.sh)
#   PODLIFE_E2E_NO_NETNS=1 hack/e2e.sh # run in the host's network namespace, without a pod
#                                    # network (the pod network tests skip)
#
# As root it runs everything in a network namespace of its own (podlife-e2e-PID), made for
# the run and deleted afterwards, as a test host: loopback, a node address 10.87.0.2 on a
# veth pair inside it (agent.Config.HostIPs' default finds it, as the kubelet's node IP), and
# a pod network (PODLIFE_CNI_SUBNET=10.88.0.0/16: containerd's CNI bridge podlife0, Debian's
# containernetworking-plugins), so pods need not be hostNetwork; no address of the host's
# is used or added. What needs the network is done before it enters the namespace (the
# binaries built or found, Debian's packages installed, the Go modules the tests and the
# scripts need downloaded); PODLIFE_E2E_CNI tells the tests the pod network's range.
#
# It makes certificates with openssl (a CA, a serving certificate for 127.0.0.1, the API
# server's client certificate for the nodes' kubelet API at their InternalIP (CN
# kube-apiserver-kubelet-client, in system:masters), and a service-account key pair) and a token file (an admin in system:masters and the node
# identity system:node:node1 in system:nodes), starts etcd and kube-apiserver on 127.0.0.1
# only (free high ports), waits for /readyz, and runs the tests with PODLIFE_E2E_APISERVER set
# to the work directory, which holds admin.kubeconfig, node1.kubeconfig and apiserver-ctl
# (`apiserver-ctl stop|start`, for tests of an API outage). It then starts kube-scheduler and
# kube-controller-manager (built with kube-apiserver; the controller manager with the controllers
# every test can live with, `controlplane-ctl controllers LIST [FLAGS]` restarts it with others)
# and waits for the ServiceAccount admission plugin's "default" ServiceAccount. It starts a private containerd
# (socket, root and state under the work directory) and imports the test image
# (hack/testimage) into it, and sets PODLIFE_E2E_CRI (its CRI endpoint) and PODLIFE_E2E_IMAGE
# for the CRI tests; PODLIFE_E2E_NO_CRI=1, or not being root, leaves containerd out (those
# tests then skip). The tests run with -json through e2esummary (hack/e2esummary), which
# prints what go test prints (everything with -v) and ends with a summary: PASS or FAIL, the
# top-level tests passed, skipped and failed per package, and the versions of etcd,
# kube-apiserver, containerd and runc. On every exit path it stops containerd (every
# container first) and kube-apiserver before etcd (stopping etcd first hangs the
# apiserver), each with SIGTERM and a wait for it to exit (SIGKILL only if it has not after
# 30 s), and says how long each took. The servers are disowned jobs: bash never reports them
# ("Killed", "Terminated"), whoever stops them.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
export PATH="$PATH:/usr/local/go/bin"
node="node1"

# --- A network namespace of its own (root) ------------------------------------------------
netns_subnet="10.88.0.0/16" # the pods' addresses
netns_node_ip="10.87.0.2"   # the node's, on a veth pair inside the namespace
if [[ "$(id -u)" == 0 && -z "${PODLIFE_E2E_NETNS:-}" && -z "${PODLIFE_E2E_NO_NETNS:-}" && -z "${PODLIFE_E2E_NO_CRI:-}" ]]; then
	# Everything that needs the network first (the namespace has only its own addresses).
	"$here/build-apiserver.sh" >/dev/null
	PODLIFE_CNI_SUBNET="$netns_subnet" "$here/containerd.sh" install
	(cd "$root/examples" && go list -deps -test ./... >/dev/null)
	# A run killed before its cleanup (kill -9, a lost machine) leaves its namespace:
	# remove those whose run is gone.
	for stale in $(ip netns list 2>/dev/null | awk '$1 ~ /^podlife-e2e-[0-9]+$/ {print $1}'); do
		if [[ ! -d "/proc/${stale#podlife-e2e-}" ]]; then
			ip netns del "$stale" && echo "e2e: removed the network namespace $stale of a run that is gone" >&2
		fi
	done
	netns="podlife-e2e-$$"
	if ip netns add "$netns" 2>/dev/null; then
		rc=0
		{
			ip netns exec "$netns" ip link set lo up &&
				ip netns exec "$netns" ip link add node0 type veth peer name node0-peer &&
				ip netns exec "$netns" ip addr add "$netns_node_ip/24" dev node0 &&
				ip netns exec "$netns" ip link set node0-peer up &&
				ip netns exec "$netns" ip link set node0 up
		} || rc=$?
		if [[ $rc == 0 ]]; then
			echo "e2e: in network namespace $netns (node address $netns_node_ip, pods on $netns_subnet)" >&2
			# nsenter, not ip netns exec: that one remounts /sys, which hides the cgroup
			# file system runc needs.
			nsenter --net="/var/run/netns/$netns" env PODLIFE_E2E_NETNS="$netns" "$0" "$@" || rc=$?
		else
			echo "e2e: could not set up network namespace $netns" >&2
		fi
		ip netns del "$netns" || rc=1
		exit "$rc"
	fi
	echo "e2e: no network namespace here (ip netns add failed): running in the host's, without a pod network" >&2
fi

bin="$("$here/build-apiserver.sh" | tail -n 1)"
work="$(mktemp -d "${TMPDIR:-/tmp}/podlife-e2e.XXXXXX")"
etcd_pid=""
apiserver_pid=""
scheduler_pid=""
containerd_dir=""

# alive: the process exists and is not a zombie (kill -0 succeeds on a zombie).
alive() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$st" && "$st" != Z* ]]; }

# stop ends a process (ours, or one apiserver-ctl started): TERM, then KILL if it is still
# there after $2 seconds; $3 names it in the line saying how long it took.
stop() {
	local pid="$1" wait_s="$2" what="$3" i t0
	[[ -n "$pid" ]] || return 0
	alive "$pid" || return 0
	t0=$(($(date +%s%N) / 1000000))
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < wait_s * 10; i++)); do
		if ! alive "$pid"; then
			echo "e2e: $what stopped (SIGTERM) in $(($(date +%s%N) / 1000000 - t0)) ms" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "e2e: $what ($pid) did not stop in ${wait_s}s after SIGTERM; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do alive "$pid" || return 0; sleep 0.1; done
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# The apiserver first: it hangs when etcd goes away under it. A test may have restarted
	# it (apiserver-ctl): the pid file names the current one.
	if [[ -f "$work/apiserver.pid" ]]; then apiserver_pid="$(cat "$work/apiserver.pid")"; fi
	# The controllers before the API server they talk to (a test may have restarted the
	# controller manager: its pid file names the current one).
	stop "$scheduler_pid" 10 kube-scheduler
	if [[ -f "$work/controller-manager.pid" ]]; then stop "$(cat "$work/controller-manager.pid")" 10 kube-controller-manager; fi
	stop "$apiserver_pid" 30 kube-apiserver
	stop "$etcd_pid" 10 etcd
	if [[ -n "$containerd_dir" ]]; then "$here/containerd.sh" stop "$containerd_dir" || rc=1; fi
	local summary=""
	if [[ -f "$work/summary.txt" ]]; then summary="$(cat "$work/summary.txt")"; fi
	if [[ -n "${PODLIFE_E2E_KEEP:-}" || $rc -ne 0 ]]; then
		echo "e2e: logs and certificates kept in $work" >&2
	else
		rm -rf "$work"
	fi
	# The summary last, once everything is stopped.
	if [[ -n "$summary" ]]; then printf '\n%s\n' "$summary"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# free_port prints a TCP port of 127.0.0.1 nothing listens on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# --- Certificates and tokens ------------------------------------------------------------
cd "$work"
openssl_q() { openssl "$@" >/dev/null 2>&1; }
openssl_q req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj "/CN=podlife-e2e-ca"
openssl_q req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=kube-apiserver"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
openssl_q x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile server.ext
# The API server's client certificate for the nodes' kubelet API (logs, exec, port-forward).
openssl_q req -newkey rsa:2048 -nodes -keyout kubelet-client.key -out kubelet-client.csr -subj "/O=system:masters/CN=kube-apiserver-kubelet-client"
printf 'extendedKeyUsage=clientAuth\n' >kubelet-client.ext
openssl_q x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet-client.crt -days 1 -extfile kubelet-client.ext
openssl_q genrsa -out sa.key 2048
openssl_q rsa -in sa.key -pubout -out sa.pub
admin_token="$(openssl rand -hex 16)"
node_token="$(openssl rand -hex 16)"
scheduler_token="$(openssl rand -hex 16)"
cm_token="$(openssl rand -hex 16)"
{
	echo "$admin_token,admin,admin,\"system:masters\""
	echo "$node_token,system:node:$node,node-$node,\"system:nodes\""
	echo "$scheduler_token,system:kube-scheduler,system:kube-scheduler"
	echo "$cm_token,system:kube-controller-manager,system:kube-controller-manager"
} >tokens.csv
chmod 600 tokens.csv ca.key server.key sa.key kubelet-client.key

etcd_port="$(free_port)"
peer_port="$(free_port)"
api_port="$(free_port)"
while [[ "$peer_port" == "$etcd_port" ]]; do peer_port="$(free_port)"; done
while [[ "$api_port" == "$etcd_port" || "$api_port" == "$peer_port" ]]; do api_port="$(free_port)"; done
server="https://127.0.0.1:$api_port"

kubeconfig() { # name user token
	cat >"$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $server
    certificate-authority: $work/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: e2e
  context:
    cluster: e2e
    user: $2
current-context: e2e
KC
}
kubeconfig admin admin "$admin_token"
kubeconfig "$node" "system:node:$node" "$node_token"
kubeconfig scheduler system:kube-scheduler "$scheduler_token"
kubeconfig controller-manager system:kube-controller-manager "$cm_token"

# --- etcd and kube-apiserver, loopback only ----------------------------------------------
start_ms=$(($(date +%s%N) / 1000000))
# Job control puts each server in its own process group, so a Ctrl-C (SIGINT to the
# terminal's group) reaches the tests and this script but not the servers: cleanup stops
# them, in order.
set -m
"$bin/etcd" --name e2e --data-dir "$work/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
	--initial-cluster "e2e=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn \
	>"$work/etcd.log" 2>&1 &
etcd_pid=$!
disown "$etcd_pid"

api_args=(
	--etcd-servers "http://127.0.0.1:$etcd_port"
	--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port"
	--endpoint-reconciler-type none
	--cert-dir "$work/apiserver-certs"
	--tls-cert-file "$work/server.crt" --tls-private-key-file "$work/server.key"
	--client-ca-file "$work/ca.crt" --token-auth-file "$work/tokens.csv"
	--kubelet-client-certificate "$work/kubelet-client.crt" --kubelet-client-key "$work/kubelet-client.key"
	--kubelet-preferred-address-types InternalIP
	--authorization-mode Node,RBAC
	--enable-admission-plugins NodeRestriction
	--service-account-key-file "$work/sa.pub" --service-account-signing-key-file "$work/sa.key"
	--service-account-issuer https://kubernetes.default.svc.cluster.local
	--service-cluster-ip-range 10.96.0.0/24
	--profiling=false
)
# PODLIFE_E2E_AUDIT=1: an audit log of every write to a pod (its user, user agent, time and,
# for a delete, its options with the preconditions), to find who changed a pod and when.
# The work directory is kept so it can be read afterwards.
if [[ -n "${PODLIFE_E2E_AUDIT:-}" ]]; then
	cat >"$work/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [delete, deletecollection]
  resources: [{group: "", resources: [pods]}]
- level: Metadata
  verbs: [create, update, patch]
  resources: [{group: "", resources: [pods, pods/status]}]
- level: None
POLICY
	api_args+=(--audit-policy-file "$work/audit-policy.yaml" --audit-log-path "$work/audit.log"
		--audit-log-mode blocking --audit-log-maxsize 0)
	PODLIFE_E2E_KEEP=1
	echo "e2e: PODLIFE_E2E_AUDIT is set: pod writes are logged to $work/audit.log" >&2
fi
printf '%q ' "$bin/kube-apiserver" "${api_args[@]}" >"$work/apiserver.cmd"
echo "$admin_token" >"$work/admin.token"
echo "$server" >"$work/server.url"
chmod 600 "$work/admin.token"
"$bin/kube-apiserver" "${api_args[@]}" >"$work/apiserver.log" 2>&1 &
apiserver_pid=$!
disown "$apiserver_pid"
echo "$apiserver_pid" >"$work/apiserver.pid"
set +m

# apiserver-ctl lets a test stop kube-apiserver and start it again (an outage), keeping etcd.
cat >"$work/apiserver-ctl" <<'CTL'
#!/usr/bin/env bash
# apiserver-ctl stop|start: stops the e2e kube-apiserver, or starts it again and waits for
# /readyz. The pid file always names the current process, so hack/e2e.sh stops that one.
set -euo pipefail
work="$(cd "$(dirname "$0")" && pwd)"
pid="$(cat "$work/apiserver.pid")"
# alive: the process exists and is not a zombie (the first apiserver is hack/e2e.sh's child,
# which is busy running the tests and cannot reap it; kill -0 succeeds on a zombie).
alive() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$st" && "$st" != Z* ]]; }
case "${1:-}" in
stop)
	# It stops listening at once but, with clients' watches open, takes over 30 s to exit:
	# KILL it after 5 s (an outage either way; etcd keeps everything).
	kill -TERM "$pid" 2>/dev/null || exit 0
	for ((i = 0; i < 50; i++)); do alive "$pid" || exit 0; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	# Gone only once the kernel has reaped its threads (a loaded machine takes a moment):
	# a start right after must not find it alive.
	for ((i = 0; i < 100; i++)); do alive "$pid" || exit 0; sleep 0.1; done
	echo "apiserver-ctl: $pid still alive 10 s after SIGKILL" >&2; exit 1
	;;
start)
	if alive "$pid"; then echo "apiserver-ctl: already running" >&2; exit 1; fi
	eval "cmd=( $(cat "$work/apiserver.cmd") )"
	set -m # its own process group, like the first one
	"${cmd[@]}" >>"$work/apiserver.log" 2>&1 </dev/null &
	echo $! >"$work/apiserver.pid"
	disown $!
	for ((i = 0; i < 1200; i++)); do
		if curl -sf --max-time 2 --cacert "$work/ca.crt" -H "Authorization: Bearer $(cat "$work/admin.token")" \
			"$(cat "$work/server.url")/readyz" >/dev/null 2>&1; then exit 0; fi
		sleep 0.1
	done
	echo "apiserver-ctl: not ready after 120 s" >&2; exit 1
	;;
*) echo "usage: apiserver-ctl stop|start" >&2; exit 2 ;;
esac
CTL
chmod +x "$work/apiserver-ctl"

ready=""
for ((i = 0; i < 1200; i++)); do
	alive "$apiserver_pid" || { echo "e2e: kube-apiserver exited; see $work/apiserver.log" >&2; tail -n 20 "$work/apiserver.log" >&2; exit 1; }
	alive "$etcd_pid" || { echo "e2e: etcd exited; see $work/etcd.log" >&2; tail -n 20 "$work/etcd.log" >&2; exit 1; }
	if curl -sf --max-time 2 --cacert "$work/ca.crt" -H "Authorization: Bearer $admin_token" "$server/readyz" >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
[[ -n "$ready" ]] || { echo "e2e: kube-apiserver not ready after 120 s; see $work/apiserver.log" >&2; exit 1; }
echo "e2e: kube-apiserver ready at $server after $(($(date +%s%N) / 1000000 - start_ms)) ms" >&2

# --- kube-scheduler and kube-controller-manager ------------------------------------------------
# Both as the control plane's own identities (system:kube-scheduler, system:kube-controller-manager),
# no leader election, no serving port. The scheduler places pods created without nodeName on the
# registered nodes. The controller manager runs, by default, only the controllers every test can
# live with: service accounts and their tokens (the ServiceAccount admission plugin is on: a pod
# waits for its namespace's "default" ServiceAccount), kube-root-ca.crt, namespaces, the garbage
# collector and the aggregated cluster roles. The node lifecycle controller and PodGC would act
# on node1, which most tests do not register: a test that wants them runs
# `controlplane-ctl controllers '*' [flags...]` (the controller manager started again with these
# controllers) and `controlplane-ctl controllers default` when it ends.
cm_default_controllers="serviceaccount-token-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,namespace-controller,garbage-collector-controller,clusterrole-aggregation-controller"
start_ms=$(($(date +%s%N) / 1000000))
set -m
"$bin/kube-scheduler" --kubeconfig "$work/scheduler.kubeconfig" --leader-elect=false --secure-port 0 \
	>"$work/scheduler.log" 2>&1 </dev/null &
scheduler_pid=$!
disown "$scheduler_pid"
set +m
printf '%q ' "$bin/kube-controller-manager" --kubeconfig "$work/controller-manager.kubeconfig" --leader-elect=false \
	--secure-port 0 --service-account-private-key-file "$work/sa.key" --root-ca-file "$work/ca.crt" \
	--use-service-account-credentials >"$work/controller-manager.cmd"
echo "$cm_default_controllers" >"$work/controller-manager.default"
cat >"$work/controlplane-ctl" <<'CTL'
#!/usr/bin/env bash
# controlplane-ctl controllers LIST|default [FLAGS...]: starts the e2e kube-controller-manager
# again with --controllers LIST (default: the suite's set) and the extra flags. The pid file
# always names the current process, so hack/e2e.sh stops that one.
set -euo pipefail
work="$(cd "$(dirname "$0")" && pwd)"
alive() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$st" && "$st" != Z* ]]; }
[[ "${1:-}" == controllers && $# -ge 2 ]] || { echo "usage: controlplane-ctl controllers LIST|default [FLAGS...]" >&2; exit 2; }
list="$2"
shift 2
[[ "$list" != default ]] || list="$(cat "$work/controller-manager.default")"
if [[ -f "$work/controller-manager.pid" ]]; then
	pid="$(cat "$work/controller-manager.pid")"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
fi
eval "cmd=( $(cat "$work/controller-manager.cmd") )"
set -m
"${cmd[@]}" --controllers "$list" "$@" >>"$work/controller-manager.log" 2>&1 </dev/null &
echo $! >"$work/controller-manager.pid"
disown $!
echo "controlplane-ctl: kube-controller-manager ($!) with --controllers $list $*" >&2
CTL
chmod +x "$work/controlplane-ctl"
"$work/controlplane-ctl" controllers default 2>/dev/null
# The test namespace's "default" ServiceAccount, made by the controller manager: pods wait for it.
# The suite's own pods do not mount its token (automountServiceAccountToken false on it), so a
# test that wants a token volume says so; the rest of a real cluster's pods, e.g. the
# conformance tests' in their own namespaces, get it as usual.
sa_url="$server/api/v1/namespaces/default/serviceaccounts/default"
for ((i = 0; i < 600; i++)); do
	if curl -sf --max-time 2 --cacert "$work/ca.crt" -H "Authorization: Bearer $admin_token" "$sa_url" >/dev/null 2>&1; then break; fi
	alive "$(cat "$work/controller-manager.pid")" || { echo "e2e: kube-controller-manager exited; see $work/controller-manager.log" >&2; tail -n 20 "$work/controller-manager.log" >&2; exit 1; }
	sleep 0.1
done
curl -sf --max-time 5 --cacert "$work/ca.crt" -H "Authorization: Bearer $admin_token" -X PATCH \
	-H 'Content-Type: application/merge-patch+json' -d '{"automountServiceAccountToken":false}' "$sa_url" >/dev/null ||
	{ echo "e2e: no default ServiceAccount in namespace default after 60 s; see $work/controller-manager.log" >&2; exit 1; }
alive "$scheduler_pid" || { echo "e2e: kube-scheduler exited; see $work/scheduler.log" >&2; tail -n 20 "$work/scheduler.log" >&2; exit 1; }
echo "e2e: kube-scheduler and kube-controller-manager running after $(($(date +%s%N) / 1000000 - start_ms)) ms" >&2

# --- containerd and the test image -----------------------------------------------------------
if [[ -n "${PODLIFE_E2E_NO_CRI:-}" ]]; then
	echo "e2e: PODLIFE_E2E_NO_CRI is set: no containerd, the CRI tests skip" >&2
elif [[ "$(id -u)" != 0 ]]; then
	echo "e2e: not root: no containerd, the CRI tests skip" >&2
else
	start_ms=$(($(date +%s%N) / 1000000))
	containerd_dir="$work/containerd"
	if [[ -n "${PODLIFE_E2E_NETNS:-}" ]]; then
		export PODLIFE_CNI_SUBNET="$netns_subnet" PODLIFE_E2E_CNI="$netns_subnet"
	fi
	PODLIFE_E2E_CRI="$("$here/containerd.sh" start "$containerd_dir")"
	PODLIFE_E2E_IMAGE="$("$here/containerd.sh" image "$containerd_dir")"
	export PODLIFE_E2E_CRI PODLIFE_E2E_IMAGE
	echo "e2e: containerd at $PODLIFE_E2E_CRI with $PODLIFE_E2E_IMAGE after $(($(date +%s%N) / 1000000 - start_ms)) ms" >&2
fi

# --- The kubelet, for the W8 side-by-side measurement (never built here) ---------------------
if [[ "${PODLIFE_E2E_KUBELET:-}" == 1 ]]; then
	kubelet_bin="${PODLIFE_CACHE:-$HOME/.cache/podlife}/bin/kubelet"
	if [[ -x "$kubelet_bin" ]]; then
		export PODLIFE_E2E_KUBELET_BIN="$kubelet_bin"
		echo "e2e: PODLIFE_E2E_KUBELET=1: the W8 measurement runs $kubelet_bin" >&2
	else
		echo "e2e: PODLIFE_E2E_KUBELET=1 but $kubelet_bin is missing (hack/build-kubelet.sh builds it): the W8 measurement skips" >&2
	fi
fi

# --- The suite ------------------------------------------------------------------------------
export PODLIFE_E2E_APISERVER="$work"
# PODLIFE_E2E_EXEC: another command instead of the suite, on the same cluster and containerd
# (hack/conformance.sh runs the Kubernetes sig-node tests so), with the arguments.
if [[ -n "${PODLIFE_E2E_EXEC:-}" ]]; then
	"$PODLIFE_E2E_EXEC" "$@"
	exit 0
fi
cd "$root/examples"
# The summary's versions of what the tests run against.
components="etcd $("$bin/etcd" --version 2>/dev/null | awk '/^etcd Version/ {print $3}'), kube-apiserver $("$bin/kube-apiserver" --version 2>/dev/null | awk '{print $2}')"
if [[ -n "$containerd_dir" ]]; then
	components+=", containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR == 1 {print $3}')"
else
	components+=", no containerd (the CRI tests skip)"
fi
components+=", $(go env GOVERSION)"
summary_v=()
for a in "$@"; do [[ "$a" == -v || "$a" == -v=true || "$a" == -test.v ]] && summary_v=(-v); done
(cd "$here/e2esummary" && go build -o "$work/e2esummary" .)
# -p 1: test binaries run one at a time, since every package's agents serve the same node.
go test -json -race -count=1 -p 1 -timeout 45m -run E2E ./... "$@" | "$work/e2esummary" "${summary_v[@]}" -components "$components" -summary "$work/summary.txt"
