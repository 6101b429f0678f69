package nodestatus

import (
	"bufio"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SystemInfo fills in of info what this host tells (Linux): kernelVersion
// (/proc/sys/kernel/osrelease), osImage (PRETTY_NAME of /etc/os-release), bootID
// (/proc/sys/kernel/random/boot_id), machineID (/etc/machine-id, else
// /var/lib/dbus/machine-id) and systemUUID (/sys/class/dmi/id/product_uuid, readable by
// root only). What cannot be read stays as it was.
func SystemInfo(info v1.NodeSystemInfo) v1.NodeSystemInfo {
	set := func(field *string, paths ...string) {
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				if s := strings.TrimSpace(string(b)); s != "" {
					*field = s
					return
				}
			}
		}
	}
	set(&info.KernelVersion, "/proc/sys/kernel/osrelease")
	set(&info.BootID, "/proc/sys/kernel/random/boot_id")
	set(&info.MachineID, "/etc/machine-id", "/var/lib/dbus/machine-id")
	set(&info.SystemUUID, "/sys/class/dmi/id/product_uuid")
	if f, err := os.Open("/etc/os-release"); err == nil {
		if s := PrettyName(f); s != "" {
			info.OSImage = s
		}
		f.Close()
	}
	return info
}

// PrettyName is PRETTY_NAME of an os-release file, unquoted; empty when absent.
func PrettyName(osRelease io.Reader) string {
	s := bufio.NewScanner(osRelease)
	for s.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v
	}
	return ""
}
