package main

import (
	"os"
	"strings"
	"testing"
	"testing/synctest"
)

// TestRun runs the command in a synctest bubble, where its real-clock waits take no time,
// and checks that the timeline shows the whole lifecycle of both pods.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-pods", "2", "-grace", "5", "-stop-delay", "2s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, want := range []string{
			"# creating 2 pod(s) on node node1",
			"default/busybox-1      ADD",
			"SyncPod (create), 0 running container(s)",
			"patched status: phase Pending",
			"ContainerStarted",
			"patched status: phase Running",
			"DELETE (graceful, 5s)",
			"SyncTerminatingPod (grace 5s), 1 running container(s)",
			"terminating -> terminated",
			"SyncTerminatedPod",
			"deleted from the API (grace 0, UID precondition",
			"default/busybox-2      REMOVE",
			"# every pod is gone after",
			"2 delete",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("timeline lacks %q:\n%s", want, text)
			}
		}
	})
}

// TestRunVK runs the command with the pods on the in-memory virtual-kubelet provider: the
// provider takes the stop delay to stop each pod, and the object goes once it has.
func TestRunVK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run([]string{"-vk", "-pods", "2", "-grace", "30", "-stop-delay", "3s"}, &out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, want := range []string{
			"# creating 2 pod(s) on node node1",
			"patched status: phase Running",
			"DELETE (graceful, 30s)",
			"SyncTerminatingPod (grace 30s), 1 running container(s)",
			"ContainerDied",
			"SyncTerminatedPod",
			"patched status: phase Succeeded",
			"deleted from the API (grace 0, UID precondition",
			"# every pod is gone after",
			"(deletion took 3s;",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("timeline lacks %q:\n%s", want, text)
			}
		}
	})
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-pods", "0"}, &out); err == nil {
		t.Error("run with -pods 0 succeeded")
	}
}

func TestRunRejectsBadNodeFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "grace under a second", args: []string{"-shutdown-grace-period", "500ms"}, want: "must be either zero or otherwise >= 1 sec"},
		{name: "critical above grace", args: []string{"-shutdown-grace-period", "5s", "-shutdown-grace-period-critical-pods", "6s"},
			want: "must be <= GracePeriod"},
		{name: "bad allocatable", args: []string{"-allocatable", "cpu"}, want: "-allocatable: nodeinfo: invalid"},
		{name: "shutdown without a cluster", args: []string{"-shutdown-grace-period", "10s"}, want: "need a real cluster"},
		{name: "allocatable without a cluster", args: []string{"-allocatable", "cpu=1"}, want: "need a real cluster"},
		{name: "node-ip without a cluster", args: []string{"-node-ip", "10.0.0.5"}, want: "need a real cluster"},
		{name: "bad node-ip", args: []string{"-node-ip", "10.0.0"}, want: `-node-ip: "10.0.0" is not an IP address`},
		{name: "bad kubelet-port", args: []string{"-kubelet-port", "0"}, want: "-kubelet-port: 0 is not a port"},
		{name: "bad pod-network", args: []string{"-pod-network", "cni"}, want: `-pod-network: "cni" is not refuse, runtime or node`},
		{name: "bad port", args: []string{"-port", "70000"}, want: "-port: 70000 is not a port"},
		{name: "manifest path without a cluster", args: []string{"-pod-manifest-path", "/etc/kubernetes/manifests"}, want: "need a real cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.args, &out); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run %v: err = %v, want one containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestRunRejectsBadClusterFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "kubeconfig and server", args: []string{"-kubeconfig", "x", "-server", "https://127.0.0.1:1", "-token", "t"}},
		{name: "server without token", args: []string{"-server", "https://127.0.0.1:1"}},
		{name: "missing kubeconfig", args: []string{"-kubeconfig", t.TempDir() + "/nope"}},
		{name: "in-cluster and kubeconfig", args: []string{"-in-cluster", "-kubeconfig", "x"}},
		{name: "in-cluster outside a cluster", args: []string{"-in-cluster"}},
		{name: "empty node", args: []string{"-server", "https://127.0.0.1:1", "-token", "t", "-node", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "in-cluster outside a cluster" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
				t.Skip("running in a cluster")
			}
			var out strings.Builder
			if err := run(tt.args, &out); err == nil {
				t.Errorf("run %v succeeded", tt.args)
			}
		})
	}
}

func TestRunRejectsBadCRIFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-cri", "unix:///x.sock", "-vk"},
		{"-cri", "tcp://127.0.0.1:1"},
		{"-cri", "unix://" + t.TempDir() + "/none.sock", "-log-root", "relative"},
	} {
		var out strings.Builder
		if err := run(args, &out); err == nil {
			t.Errorf("run %v succeeded", args)
		}
	}
}
