#!/usr/bin/env bash
# containerd.sh runs a private containerd (CRI v1) for the end-to-end suite, and builds and
# imports the test image (hack/testimage) into it. hack/e2e.sh uses it; it also runs alone:
#
#   hack/containerd.sh start DIR   # start containerd with root, state, socket and log under DIR;
#                                  # prints the CRI endpoint (unix://DIR/containerd.sock)
#   hack/containerd.sh image DIR   # build the test image and import it; prints its name
#   hack/containerd.sh stop DIR    # kill every container, stop containerd, remove its state
#   hack/containerd.sh up          # start + image in a new directory under $TMPDIR; prints the
#                                  # exports a test run needs and the stop command
#   hack/containerd.sh install     # only install what is missing (containerd, runc, and with
#                                  # PODLIFE_CNI_SUBNET Debian's containernetworking-plugins)
#
# When containerd or runc is missing and it runs as root, it installs Debian's packages
# (apt-get install -y containerd runc; bookworm's containerd 1.6.20 and runc 1.1.5 run CRI
# sandboxes). containerd gets its own configuration: nothing under /etc, /var/lib/containerd
# or /run/containerd's socket is used or changed (the runc shims keep their sockets under
# /run/containerd/s, named after our socket's path). The CRI plugin runs with
# disable_apparmor and restrict_oom_score_adj, with disable_cgroup when no cgroup can be
# created here, without CNI unless PODLIFE_CNI_SUBNET is set, with the test image as the
# sandbox ("pause") image, and with the overlayfs snapshotter when an overlay mounts here,
# else native. On a failure it prints containerd's log.
#
# Environment: PODLIFE_TESTIMAGE (the test image's name, default podlife.test/testimage:v1),
# PODLIFE_CONTAINERD_DISABLE_CGROUP (true/false: skip the probe), PODLIFE_CNI_SUBNET (a pod
# network: pods that are not hostNetwork get an address of this range, e.g. 10.88.0.0/16, on
# a bridge podlife0 through Debian's CNI plugins (bridge, host-local, loopback) linked into
# DIR/cni/bin, the IPAM state under DIR/cni; the bridge is made in the network namespace
# containerd runs in: hack/e2e.sh runs it in a namespace of its own, never on the host's).
# stop removes the network namespaces of its sandboxes too.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
image="${PODLIFE_TESTIMAGE:-podlife.test/testimage:v1}"
ns="k8s.io" # the CRI plugin's namespace

die() { echo "containerd.sh: $*" >&2; exit 1; }

# alive: the process exists and is not a zombie.
alive() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$st" && "$st" != Z* ]]; }

show_log() {
	local dir="$1"
	if [[ -f "$dir/containerd.log" ]]; then
		echo "containerd.sh: the last lines of $dir/containerd.log:" >&2
		tail -n 40 "$dir/containerd.log" >&2
	fi
}

# cni_dir is where Debian's containernetworking-plugins puts the plugins.
cni_dir=/usr/lib/cni

ensure_installed() {
	local pkgs=(containerd runc)
	if [[ -n "${PODLIFE_CNI_SUBNET:-}" ]]; then pkgs+=(containernetworking-plugins); fi
	if command -v containerd >/dev/null && command -v runc >/dev/null && command -v ctr >/dev/null &&
		{ [[ -z "${PODLIFE_CNI_SUBNET:-}" ]] || [[ -x "$cni_dir/bridge" ]]; }; then
		return
	fi
	[[ "$(id -u)" == 0 ]] || die "missing: ${pkgs[*]}; install them (Debian: apt-get install ${pkgs[*]}) or run as root"
	command -v apt-get >/dev/null || die "${pkgs[*]} are missing and there is no apt-get"
	echo "containerd.sh: installing ${pkgs[*]} (apt-get)" >&2
	# An index older than a day may name package versions the mirror no longer has.
	if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n 1)" ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
}

# write_cni links the plugins into dir/cni/bin and writes the pod network's configuration: a
# bridge podlife0 on $PODLIFE_CNI_SUBNET with its first address as the pods' gateway, no
# masquerading (nothing outside the namespace is reached), host-local's state under dir/cni.
write_cni() {
	local dir="$1" subnet="$PODLIFE_CNI_SUBNET" p
	for p in bridge host-local loopback portmap; do
		ln -sf "$cni_dir/$p" "$dir/cni/bin/$p"
	done
	cat >"$dir/cni/conf/10-podlife.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "podlife",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "podlife0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$dir/cni/ipam",
        "ranges": [[{"subnet": "$subnet"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
JSON
}

# snapshotter prints overlayfs when an overlay mounts in dir, else native.
snapshotter() {
	local d="$1/overlay-probe" s=native
	mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/merged"
	if mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" "$d/merged" 2>/dev/null; then
		umount "$d/merged"
		s=overlayfs
	fi
	rm -rf "$d"
	echo "$s"
}

# disable_cgroup prints false when a cgroup can be created here (the hierarchy is ours to
# use), else true.
disable_cgroup() {
	if [[ -n "${PODLIFE_CONTAINERD_DISABLE_CGROUP:-}" ]]; then
		echo "$PODLIFE_CONTAINERD_DISABLE_CGROUP"
		return
	fi
	local probe
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		probe="/sys/fs/cgroup/podlife-probe-$$" # cgroup v2
	else
		probe="/sys/fs/cgroup/memory/podlife-probe-$$" # cgroup v1
	fi
	if mkdir "$probe" 2>/dev/null; then
		rmdir "$probe"
		echo false
	else
		echo true
	fi
}

write_config() {
	local dir="$1" snap="$2" nocg="$3"
	mkdir -p "$dir/root" "$dir/state" "$dir/cni/bin" "$dir/cni/conf"
	cat >"$dir/config.toml" <<TOML
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$dir/containerd.sock"

[ttrpc]
  address = "$dir/containerd.sock.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$image"
  disable_cgroup = $nocg
  disable_apparmor = true
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snap"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$dir/cni/bin"
    conf_dir = "$dir/cni/conf"
TOML
	if [[ -n "${PODLIFE_CNI_SUBNET:-}" ]]; then write_cni "$dir"; fi
	echo "$snap" >"$dir/snapshotter"
}

cmd_start() {
	local dir="$1"
	ensure_installed
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if [[ -f "$dir/containerd.pid" ]] && alive "$(cat "$dir/containerd.pid")"; then
		die "containerd already runs for $dir (pid $(cat "$dir/containerd.pid"))"
	fi
	local snap nocg
	snap="$(snapshotter "$dir")"
	nocg="$(disable_cgroup)"
	write_config "$dir" "$snap" "$nocg"
	local sock="$dir/containerd.sock"
	rm -f "$sock"
	# Its own session: a Ctrl-C in the terminal does not reach it; stop does.
	setsid containerd --config "$dir/config.toml" >"$dir/containerd.log" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$dir/containerd.pid"
	local i
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || { show_log "$dir"; die "containerd exited during startup"; }
		if [[ -S "$sock" ]] && ctr --address "$sock" version >/dev/null 2>&1; then
			echo "containerd.sh: containerd $(containerd --version | awk '{print $3}') ready at $sock (snapshotter $snap, disable_cgroup $nocg)" >&2
			echo "unix://$sock"
			return
		fi
		sleep 0.1
	done
	show_log "$dir"
	die "containerd not ready after 30 s"
}

cmd_image() {
	local dir="$1"
	dir="$(cd "$dir" && pwd)"
	local sock="$dir/containerd.sock" snap
	[[ -S "$sock" ]] || die "no containerd socket in $dir (start it first)"
	snap="$(cat "$dir/snapshotter" 2>/dev/null || echo overlayfs)"
	(cd "$here/testimage" && CGO_ENABLED=0 go run ./mkimage -o "$dir/testimage.tar" -name "$image") >&2 ||
		die "building the test image failed"
	if ! ctr --address "$sock" -n "$ns" images import --snapshotter "$snap" "$dir/testimage.tar" >&2; then
		show_log "$dir"
		die "importing the test image failed"
	fi
	echo "$image"
}

cmd_stop() {
	local dir="$1"
	[[ -d "$dir" ]] || return 0
	dir="$(cd "$dir" && pwd)"
	local sock="$dir/containerd.sock" pid="" id i
	[[ -f "$dir/containerd.pid" ]] && pid="$(cat "$dir/containerd.pid")"
	local netns=()
	if [[ -n "$pid" ]] && alive "$pid" && [[ -S "$sock" ]]; then
		# The sandboxes' network namespaces (containerd's /var/run/netns/cni-*, named in each
		# container's spec): removed once the tasks are gone, so their veths go with them.
		for id in $(ctr --address "$sock" -n "$ns" containers ls -q 2>/dev/null); do
			netns+=($(ctr --address "$sock" -n "$ns" containers info "$id" 2>/dev/null |
				grep -o '"/var/run/netns/cni-[0-9a-f-]*"' | tr -d '"' || true))
		done
		# Every task (container and sandbox) first: runc shims outlive containerd.
		for id in $(ctr --address "$sock" -n "$ns" tasks ls -q 2>/dev/null); do
			ctr --address "$sock" -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
		done
		for id in $(ctr --address "$sock" -n "$ns" tasks ls -q 2>/dev/null); do
			for ((i = 0; i < 50; i++)); do
				ctr --address "$sock" -n "$ns" tasks delete "$id" >/dev/null 2>&1 && break
				sleep 0.1
			done
		done
	fi
	if [[ -n "$pid" ]] && alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
		if alive "$pid"; then
			echo "containerd.sh: containerd ($pid) did not stop in 10 s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	# Shims still serving our socket (a task that would not delete): by pid, found by the
	# socket's path on their command line.
	local p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "containerd-shim.*-address $sock "; then
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
	# Mounts left under the directory (rootfs, shm), deepest first.
	local m
	for m in $(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	local n
	for n in $(printf '%s\n' "${netns[@]}" | sort -u); do
		[[ -e "$n" ]] || continue
		ip netns del "$(basename "$n")" 2>/dev/null || { umount "$n" 2>/dev/null; rm -f "$n"; } || true
	done
	rm -rf "$dir/root" "$dir/state" "$sock" "$sock.ttrpc" "$dir/containerd.pid" "$dir/testimage.tar" "$dir/cni/ipam"
}

cmd_up() {
	local dir endpoint img
	dir="$(mktemp -d "${TMPDIR:-/tmp}/podlife-containerd.XXXXXX")"
	endpoint="$(cmd_start "$dir")" || { cmd_stop "$dir"; exit 1; }
	img="$(cmd_image "$dir")" || { cmd_stop "$dir"; exit 1; }
	echo "export PODLIFE_E2E_CRI=$endpoint PODLIFE_E2E_IMAGE=$img"
	echo "# stop: $0 stop $dir"
}

case "${1:-}" in
start) [[ $# == 2 ]] || die "usage: containerd.sh start DIR"; cmd_start "$2" ;;
image) [[ $# == 2 ]] || die "usage: containerd.sh image DIR"; cmd_image "$2" ;;
stop) [[ $# == 2 ]] || die "usage: containerd.sh stop DIR"; cmd_stop "$2" ;;
up) cmd_up ;;
install) ensure_installed ;;
*) die "usage: containerd.sh start|image|stop DIR, or containerd.sh up|install" ;;
esac
