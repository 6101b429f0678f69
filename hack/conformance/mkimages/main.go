// Command mkimages builds, without a registry, the images the sig-node end-to-end tests
// name, as OCI image layout tar files that `ctr images import` reads:
//
//   - busybox (registry.k8s.io/e2e-test-images/busybox:1.37.0-2): Debian's busybox-static
//     with a link in /bin for each of its applets, /etc/passwd and /etc/group; Cmd sh.
//   - agnhost (registry.k8s.io/e2e-test-images/agnhost:2.66.1 and 2.55): the same userland
//     plus the real agnhost program of k8s.io/kubernetes v1.37.2 (test/images/agnhost, built
//     by hack/conformance.sh) as /agnhost, the image's Dockerfile's /agnhost-2 link, /uploads
//     and its user-defined-in-image (1000) and group-defined-in-image (50000); Entrypoint
//     /agnhost, Cmd pause. The real image has curl (Alpine's), which the lifecycle hook tests'
//     exec hooks run ("sh -c 'curl http://IP:8080/echo?msg=prestop'"); busybox has no curl,
//     so /usr/bin/curl here is a shell script that GETs its last URL argument with busybox's
//     wget and prints the body (enough for a plain "curl URL"; curl's options are ignored).
//   - pause (registry.k8s.io/pause:3.10.2): agnhost alone, Entrypoint /agnhost pause.
//
// Every file's time is the epoch, so the same inputs give the same images.
//
//	go run ./mkimages -busybox /path/to/busybox -agnhost /path/to/agnhost -o DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/podlife/podlife/hack/testimage/ociimage"
)

// The names the tests use (test/utils/image/manifest.go of v1.37.2).
const (
	busyboxName = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	agnhostName = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	agnhostPrev = "registry.k8s.io/e2e-test-images/agnhost:2.55"
	pauseName   = "registry.k8s.io/pause:3.10.2"
)

func main() {
	busybox := flag.String("busybox", "", "a static busybox binary (Debian's busybox-static: bin/busybox)")
	agnhost := flag.String("agnhost", "", "the agnhost binary (static)")
	out := flag.String("o", ".", "the directory to write busybox.tar, agnhost.tar and pause.tar to")
	flag.Parse()
	if *busybox == "" || *agnhost == "" {
		fmt.Fprintln(os.Stderr, "mkimages: -busybox and -agnhost are required")
		os.Exit(2)
	}
	if err := run(*busybox, *agnhost, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimages:", err)
		os.Exit(1)
	}
}

// image is what one image holds.
type image struct {
	names      []string
	entries    []ociimage.Entry
	entrypoint []string
	cmd        []string
}

func run(busyboxPath, agnhostPath, out string) error {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return err
	}
	ag, err := os.ReadFile(agnhostPath)
	if err != nil {
		return err
	}
	applets, err := appletList(busyboxPath)
	if err != nil {
		return err
	}
	base := userland(bb, applets, "")
	agnhostUsers := "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"
	agnhostGroups := "group-defined-in-image:x:50000:user-defined-in-image\nuser-defined-in-image:x:1000:\n"
	agEntries := append(userland(bb, applets, agnhostUsers+"\x00"+agnhostGroups),
		ociimage.Entry{Name: "agnhost", Mode: 0o755, Data: ag},
		ociimage.Entry{Name: "agnhost-2", Link: "agnhost"},
		ociimage.Entry{Name: "usr/bin/curl", Mode: 0o755, Data: []byte(curlScript)},
		ociimage.Entry{Name: "uploads/", Mode: 0o755, Dir: true},
		ociimage.Entry{Name: "home/user-defined-in-image/", Mode: 0o755, Dir: true})
	images := map[string]image{
		"busybox.tar": {names: []string{busyboxName}, entries: base, cmd: []string{"sh"}},
		"agnhost.tar": {names: []string{agnhostName, agnhostPrev}, entries: agEntries,
			entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
		"pause.tar": {names: []string{pauseName}, entries: append(skeleton(), ociimage.Entry{Name: "agnhost", Mode: 0o755, Data: ag}),
			entrypoint: []string{"/agnhost", "pause"}},
	}
	for _, file := range []string{"busybox.tar", "agnhost.tar", "pause.tar"} {
		if err := write(filepath.Join(out, file), images[file]); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// curlScript is the agnhost image's curl: busybox's wget on the last argument that is not an
// option; it fails as wget does (exit 1 on a refused connection or an HTTP error).
const curlScript = `#!/bin/sh
# curl (hack/conformance/mkimages): busybox wget on the URL, the body to stdout.
url=
for a in "$@"; do
	case "$a" in
	-*) ;;
	*) url="$a" ;;
	esac
done
[ -n "$url" ] || { echo "curl: no URL specified" >&2; exit 2; }
exec wget -q -O - "$url"
`

// appletList is busybox's applets with their paths (bin/sh, usr/bin/env, ...).
func appletList(busybox string) ([]string, error) {
	b, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	var list []string
	for _, l := range strings.Fields(string(b)) {
		if l = strings.TrimPrefix(l, "/"); l != "" && l != "bin/busybox" {
			list = append(list, l)
		}
	}
	return list, nil
}

// skeleton is the directories every image has (runc mounts onto some of them).
func skeleton() []ociimage.Entry {
	var es []ociimage.Entry
	for _, d := range []string{"dev/", "etc/", "proc/", "sys/", "root/", "home/", "var/", "usr/", "usr/bin/", "usr/sbin/", "bin/", "sbin/"} {
		es = append(es, ociimage.Entry{Name: d, Mode: 0o755, Dir: true})
	}
	return append(es, ociimage.Entry{Name: "tmp/", Mode: 0o1777, Dir: true})
}

// userland is busybox with its applet links, /etc/passwd and /etc/group (extra: more
// passwd lines, a NUL, more group lines).
func userland(busybox []byte, applets []string, extra string) []ociimage.Entry {
	users, groups, _ := strings.Cut(extra, "\x00")
	es := append(skeleton(), ociimage.Entry{Name: "bin/busybox", Mode: 0o755, Data: busybox})
	for _, a := range applets {
		es = append(es, ociimage.Entry{Name: a, Link: "/bin/busybox"})
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n" + users
	group := "root:x:0:\nnobody:x:65534:\n" + groups
	return append(es,
		ociimage.Entry{Name: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		ociimage.Entry{Name: "etc/group", Mode: 0o644, Data: []byte(group)},
		ociimage.Entry{Name: "etc/hosts", Mode: 0o644, Data: []byte("127.0.0.1 localhost\n")})
}

// write writes img as an OCI image layout tar at path, its manifest listed once per name.
func write(path string, img image) error {
	cfg := map[string]any{"Env": []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "WorkingDir": "/"}
	if img.entrypoint != nil {
		cfg["Entrypoint"] = img.entrypoint
	}
	if img.cmd != nil {
		cfg["Cmd"] = img.cmd
	}
	_, layerSize, err := ociimage.Write(path, ociimage.Image{Names: img.names, Entries: img.entries, Config: cfg,
		CreatedBy: "podlife hack/conformance/mkimages"})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkimages: %s (layer %d bytes) written to %s\n", strings.Join(img.names, ", "), layerSize, path)
	return nil
}
