// Package nodeinfo describes the node an example agent runs on as a *v1.Node: its
// allocatable resources (from the machine, or given) and the kubelet's well-known labels.
// Admission (admission.PredicateConfig.Node) checks pods against it; registering the
// node with the API server posts the same object.
//
// The machine's resources are the kubelet's capacity without reservations
// (kube-reserved, system-reserved and the eviction thresholds are not subtracted):
// cpu from runtime.NumCPU, memory from /proc/meminfo's MemTotal, pods the kubelet's
// default maxPods (110), ephemeral-storage the size of the file system of a directory
// (the log root's, as the kubelet takes its root directory's).
package nodeinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxPods is the kubelet's default maxPods, the node's pods resource.
const DefaultMaxPods = 110

// ErrInvalid is wrapped by the errors of ParseResources and New for bad input.
var ErrInvalid = errors.New("nodeinfo: invalid")

// Config describes a node.
type Config struct {
	// Name is the node's name (and its kubernetes.io/hostname label). Required.
	Name string
	// Allocatable overrides the machine's resources, resource by resource (see
	// ParseResources); the others come from the machine.
	Allocatable v1.ResourceList
	// DiskPath is a directory on the file system whose size is the node's
	// ephemeral-storage; empty: "/".
	DiskPath string
	// Labels are added to the well-known ones (and may override them).
	Labels map[string]string
}

// New returns the node cfg describes: status.capacity and status.allocatable are the
// machine's resources (Machine) with cfg.Allocatable's in their place, the labels are
// kubernetes.io/hostname (cfg.Name), kubernetes.io/os and kubernetes.io/arch
// (runtime.GOOS and GOARCH, also as the beta.kubernetes.io labels) and cfg.Labels, and
// status.nodeInfo names the OS and architecture.
func New(cfg Config) (*v1.Node, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("%w: empty node name", ErrInvalid)
	}
	resources, err := Machine(cfg.DiskPath)
	if err != nil {
		return nil, err
	}
	for name, q := range cfg.Allocatable {
		resources[name] = q.DeepCopy()
	}
	return NewNode(cfg.Name, resources, cfg.Labels), nil
}

// NewNode is the node named name with these resources as its capacity and allocatable,
// without looking at the machine; labels as New's.
func NewNode(name string, resources v1.ResourceList, labels map[string]string) *v1.Node {
	l := map[string]string{
		v1.LabelHostname:          name,
		v1.LabelOSStable:          runtime.GOOS,
		v1.LabelArchStable:        runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range labels {
		l[k] = v
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: v1.NodeStatus{
			Capacity:    resources.DeepCopy(),
			Allocatable: resources.DeepCopy(),
			NodeInfo:    v1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH},
		},
	}
}

// Machine returns this machine's resources: cpu (runtime.NumCPU), memory (MemTotal of
// /proc/meminfo), pods (DefaultMaxPods) and ephemeral-storage (the size of the file
// system holding diskPath, "/" when empty). Where /proc/meminfo or the file system
// cannot be read, that resource is left out (admission then refuses pods requesting it).
func Machine(diskPath string) (v1.ResourceList, error) {
	if diskPath == "" {
		diskPath = "/"
	}
	rl := v1.ResourceList{
		v1.ResourceCPU:  *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourcePods: *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		mem, err := MemTotal(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		rl[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	if size, err := diskSize(diskPath); err == nil {
		rl[v1.ResourceEphemeralStorage] = *resource.NewQuantity(size, resource.BinarySI)
	}
	return rl, nil
}

// MemTotal reads MemTotal from /proc/meminfo's text, in bytes.
func MemTotal(meminfo io.Reader) (int64, error) {
	s := bufio.NewScanner(meminfo)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 || (len(f) == 2 && f[1] != "kB") {
			return 0, fmt.Errorf("%w: meminfo line %q", ErrInvalid, s.Text())
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: meminfo line %q", ErrInvalid, s.Text())
		}
		if len(f) == 2 {
			n *= 1024
		}
		return n, nil
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("nodeinfo: reading meminfo: %w", err)
	}
	return 0, fmt.Errorf("%w: no MemTotal in meminfo", ErrInvalid)
}

// ParseResources parses "cpu=2,memory=4Gi,pods=110,ephemeral-storage=20Gi" (any
// resource name, quantities as in a pod spec; spaces around items are ignored; empty:
// none).
func ParseResources(s string) (v1.ResourceList, error) {
	rl := v1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return rl, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: resource %q is not name=quantity", ErrInvalid, item)
		}
		if _, dup := rl[v1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%w: resource %q given twice", ErrInvalid, name)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("%w: resource %s: quantity %q", ErrInvalid, name, value)
		}
		rl[v1.ResourceName(name)] = q
	}
	return rl, nil
}

// HostIPs returns the node's addresses for pod statuses (status.hostIP/hostIPs, and a
// hostNetwork pod's podIPs) when none is given, as the kubelet picks its node IP without
// --node-ip: the first global unicast address of an interface that is up and not a
// loopback, IPv4 first, then the first of the other family; a host without one gets
// 127.0.0.1 (the only address its pods can be reached at).
func HostIPs() ([]string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("nodeinfo: the host's interfaces: %w", err)
	}
	var v4, v6 string
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			switch {
			case ipn.IP.To4() != nil && v4 == "":
				v4 = ipn.IP.String()
			case ipn.IP.To4() == nil && v6 == "":
				v6 = ipn.IP.String()
			}
		}
	}
	var out []string
	for _, ip := range []string{v4, v6} {
		if ip != "" {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		out = []string{"127.0.0.1"}
	}
	return out, nil
}
