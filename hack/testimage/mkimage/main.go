// Command mkimage builds the test image: it compiles the testimage program (the parent
// directory) as a static binary and writes an OCI image layout, as a tar file, holding it
// (package ociimage):
//
//	oci-layout, index.json (the manifest, named by io.containerd.image.name and
//	org.opencontainers.image.ref.name), blobs/sha256/{manifest, config, layer}
//
// The layer is a gzip'ed tar of /testimage and a few empty directories; the config's
// Entrypoint is /testimage. `ctr -n k8s.io images import` names the image after the
// annotation. Nothing is downloaded.
//
//	go run ./mkimage -o testimage.tar -name podlife.test/testimage:v1
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/podlife/podlife/hack/testimage/ociimage"
)

func main() {
	out := flag.String("o", "testimage.tar", "the OCI layout tar file to write")
	name := flag.String("name", "podlife.test/testimage:v1", "the image's name (repository:tag)")
	src := flag.String("src", ".", "the testimage program's directory")
	flag.Parse()
	if err := build(*out, *name, *src); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func build(out, name, src string) error {
	if _, err := ociimage.Tag(name); err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "mkimage")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "testimage")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}

	// The layer: the directories runc mounts onto and the binary.
	var entries []ociimage.Entry
	for _, d := range []string{"dev/", "etc/", "proc/", "sys/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		entries = append(entries, ociimage.Entry{Name: d, Mode: mode, Dir: true})
	}
	entries = append(entries, ociimage.Entry{Name: "testimage", Mode: 0o755, Data: exe})
	manifest, layerSize, err := ociimage.Write(out, ociimage.Image{
		Names:   []string{name},
		Entries: entries,
		Config: map[string]any{
			"Entrypoint": []string{"/testimage"},
			"Env":        []string{"PATH=/"},
			"WorkingDir": "/",
		},
		CreatedBy: "podlife hack/testimage/mkimage",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkimage: %s (%s, layer %d bytes) written to %s\n", name, manifest[:19], layerSize, out)
	return nil
}
