package node

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// HostnameMaxLen is the longest hostname a pod's sandbox gets: 63 characters (the
// kernel's 64 bytes less the terminating NUL), as the kubelet caps it.
const HostnameMaxLen = 63

// ErrHostname is wrapped by PodHostname's error for a hostname that is empty once
// truncated.
var ErrHostname = errors.New("node: invalid pod hostname")

// PodHostname returns the hostname a runtime gives the sandbox of a pod that does not use
// the host's network, as the kubelet does (GeneratePodHostNameAndDomain,
// truncatePodHostnameIfNeeded): spec.hostname when set, else the pod's name; cut to
// HostnameMaxLen characters, then trailing '-' and '.' removed. It returns an error
// wrapping ErrHostname when nothing is left (a nil pod included).
func PodHostname(pod *v1.Pod) (string, error) {
	if pod == nil {
		return "", fmt.Errorf("%w: nil pod", ErrHostname)
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	return TruncateHostname(hostname)
}

// TruncateHostname returns hostname unchanged when it has at most HostnameMaxLen
// characters; otherwise its first HostnameMaxLen characters with trailing '-' and '.'
// removed (the kubelet's truncatePodHostnameIfNeeded). It returns an error wrapping
// ErrHostname when the result is empty.
func TruncateHostname(hostname string) (string, error) {
	if len(hostname) <= HostnameMaxLen {
		if hostname == "" {
			return "", fmt.Errorf("%w: empty", ErrHostname)
		}
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:HostnameMaxLen], "-.")
	if truncated == "" {
		return "", fmt.Errorf("%w: %q", ErrHostname, hostname)
	}
	return truncated, nil
}
