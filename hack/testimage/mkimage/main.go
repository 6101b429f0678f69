// Command mkimage builds the test image: it compiles the testimage program (the parent
// directory) as a static binary and writes an OCI image layout, as a tar file, holding it:
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

// epoch is every file's modification time: the same binary gives the same image.
var epoch = time.Unix(0, 0).UTC()

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

func build(out, name, src string) error {
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return fmt.Errorf("image name %q has no tag", name)
	}
	tag := name[i+1:]

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

	// The layer: the binary and the directories runc mounts onto.
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, d := range []string{"dev/", "etc/", "proc/", "sys/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "testimage", Mode: 0o755, Size: int64(len(exe)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(exe); err != nil {
		return err
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

	config, err := json.Marshal(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Entrypoint": []string{"/testimage"},
			"Env":        []string{"PATH=/"},
			"WorkingDir": "/",
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(layer.Bytes())}},
		"history": []map[string]string{{"created": epoch.Format(time.RFC3339), "created_by": "podlife hack/testimage/mkimage"}},
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
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest), Size: len(manifest),
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag},
			Platform:    &platform{Architecture: runtime.GOARCH, OS: "linux"},
		}},
	})
	if err != nil {
		return err
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	ow := tar.NewWriter(f)
	add := func(name string, b []byte) error {
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := ow.Write(b)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	for _, e := range []struct {
		name string
		b    []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/sha256/" + strings.TrimPrefix(digest(manifest), "sha256:"), manifest},
		{"blobs/sha256/" + strings.TrimPrefix(digest(config), "sha256:"), config},
		{"blobs/sha256/" + strings.TrimPrefix(digest(gz.Bytes()), "sha256:"), gz.Bytes()},
	} {
		if err := add(e.name, e.b); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	if err := ow.Close(); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkimage: %s (%s, layer %d bytes) written to %s\n", name, digest(manifest)[:19], gz.Len(), out)
	return nil
}
