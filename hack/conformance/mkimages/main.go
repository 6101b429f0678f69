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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
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

// epoch is every file's modification time.
var epoch = time.Unix(0, 0).UTC()

// entry is one file of a layer: a directory, a regular file (data) or a symlink (link).
type entry struct {
	name string
	mode int64
	data []byte
	link string
	dir  bool
}

// image is what one image holds.
type image struct {
	names      []string
	entries    []entry
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
		entry{name: "agnhost", mode: 0o755, data: ag},
		entry{name: "agnhost-2", link: "agnhost"},
		entry{name: "usr/bin/curl", mode: 0o755, data: []byte(curlScript)},
		entry{name: "uploads/", mode: 0o755, dir: true},
		entry{name: "home/user-defined-in-image/", mode: 0o755, dir: true})
	images := map[string]image{
		"busybox.tar": {names: []string{busyboxName}, entries: base, cmd: []string{"sh"}},
		"agnhost.tar": {names: []string{agnhostName, agnhostPrev}, entries: agEntries,
			entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
		"pause.tar": {names: []string{pauseName}, entries: append(skeleton(), entry{name: "agnhost", mode: 0o755, data: ag}),
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
func skeleton() []entry {
	var es []entry
	for _, d := range []string{"dev/", "etc/", "proc/", "sys/", "root/", "home/", "var/", "usr/", "usr/bin/", "usr/sbin/", "bin/", "sbin/"} {
		es = append(es, entry{name: d, mode: 0o755, dir: true})
	}
	return append(es, entry{name: "tmp/", mode: 0o1777, dir: true})
}

// userland is busybox with its applet links, /etc/passwd and /etc/group (extra: more
// passwd lines, a NUL, more group lines).
func userland(busybox []byte, applets []string, extra string) []entry {
	users, groups, _ := strings.Cut(extra, "\x00")
	es := append(skeleton(), entry{name: "bin/busybox", mode: 0o755, data: busybox})
	for _, a := range applets {
		es = append(es, entry{name: a, link: "/bin/busybox"})
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n" + users
	group := "root:x:0:\nnobody:x:65534:\n" + groups
	return append(es,
		entry{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		entry{name: "etc/group", mode: 0o644, data: []byte(group)},
		entry{name: "etc/hosts", mode: 0o644, data: []byte("127.0.0.1 localhost\n")})
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// write writes img as an OCI image layout tar at path, its manifest listed once per name.
func write(path string, img image) error {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	seen := map[string]bool{}
	for _, e := range img.entries {
		if seen[e.name] {
			continue
		}
		seen[e.name] = true
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(layer.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	cfg := map[string]any{"Env": []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "WorkingDir": "/"}
	if img.entrypoint != nil {
		cfg["Entrypoint"] = img.entrypoint
	}
	if img.cmd != nil {
		cfg["Cmd"] = img.cmd
	}
	config, err := json.Marshal(map[string]any{
		"created": epoch.Format(time.RFC3339), "architecture": runtime.GOARCH, "os": "linux", "config": cfg,
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(layer.Bytes())}},
		"history": []map[string]string{{"created": epoch.Format(time.RFC3339), "created_by": "podlife hack/conformance/mkimages"}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digest(gz.Bytes()), Size: gz.Len()}},
	})
	if err != nil {
		return err
	}
	var manifests []descriptor
	for _, name := range img.names {
		tag := name[strings.LastIndex(name, ":")+1:]
		manifests = append(manifests, descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest),
			Size: len(manifest), Platform: &platform{Architecture: runtime.GOARCH, OS: "linux"},
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag}})
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	ow := tar.NewWriter(f)
	files := []struct {
		name string
		b    []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/sha256/" + strings.TrimPrefix(digest(manifest), "sha256:"), manifest},
		{"blobs/sha256/" + strings.TrimPrefix(digest(config), "sha256:"), config},
		{"blobs/sha256/" + strings.TrimPrefix(digest(gz.Bytes()), "sha256:"), gz.Bytes()},
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	for _, e := range files {
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.b)), ModTime: epoch}); err != nil {
			return errors.Join(err, f.Close())
		}
		if _, err := ow.Write(e.b); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	if err := errors.Join(ow.Close(), f.Close()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkimages: %s (layer %d bytes) written to %s\n", strings.Join(img.names, ", "), gz.Len(), path)
	return nil
}
