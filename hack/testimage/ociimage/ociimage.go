// Package ociimage writes a one-layer image as an OCI image layout tar file, without a
// registry or a daemon: oci-layout, index.json (the manifest once per name, named by
// io.containerd.image.name and org.opencontainers.image.ref.name, for the machine's
// architecture) and blobs/sha256/{manifest, config, layer}, the layer a gzip'ed tar. Every
// file's time is the epoch, so the same image gives the same bytes. `ctr images import`
// reads it and names the image after the annotation.
//
// hack/testimage/mkimage (the end-to-end tests' image) and hack/conformance/mkimages (the
// images the sig-node tests name) use it.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Epoch is every file's modification time and the image's creation time.
var Epoch = time.Unix(0, 0).UTC()

// Entry is one file of the layer: a directory (Dir), a symlink (Link; its mode is 0777)
// or a regular file (Data).
type Entry struct {
	Name string
	Mode int64
	Data []byte
	Link string
	Dir  bool
}

// Image is what one image holds.
type Image struct {
	// Names are the image's names, repository:tag each.
	Names []string
	// Entries are the layer's files in order; a name given twice is written once, the
	// first.
	Entries []Entry
	// Config is the image configuration's config (Entrypoint, Cmd, Env, WorkingDir).
	Config map[string]any
	// CreatedBy is the history's created_by.
	CreatedBy string
}

// Tag is the tag of name (repository:tag); a name without one is an error.
func Tag(name string) (string, error) {
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return "", fmt.Errorf("image name %q has no tag", name)
	}
	return name[i+1:], nil
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

// Write writes img as an OCI image layout tar file at path. It returns the manifest's
// digest and the size of the compressed layer.
func Write(path string, img Image) (manifestDigest string, layerSize int, err error) {
	var tags []string
	for _, name := range img.Names {
		tag, err := Tag(name)
		if err != nil {
			return "", 0, err
		}
		tags = append(tags, tag)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	seen := map[string]bool{}
	for _, e := range img.Entries {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		h := &tar.Header{Name: e.Name, Mode: e.Mode, ModTime: Epoch}
		switch {
		case e.Dir:
			h.Typeflag = tar.TypeDir
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return "", 0, err
		}
		if _, err := tw.Write(e.Data); err != nil {
			return "", 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", 0, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(layer.Bytes()); err != nil {
		return "", 0, err
	}
	if err := zw.Close(); err != nil {
		return "", 0, err
	}
	config, err := json.Marshal(map[string]any{
		"created": Epoch.Format(time.RFC3339), "architecture": runtime.GOARCH, "os": "linux", "config": img.Config,
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(layer.Bytes())}},
		"history": []map[string]string{{"created": Epoch.Format(time.RFC3339), "created_by": img.CreatedBy}},
	})
	if err != nil {
		return "", 0, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digest(gz.Bytes()), Size: gz.Len()}},
	})
	if err != nil {
		return "", 0, err
	}
	var manifests []descriptor
	for i, name := range img.Names {
		manifests = append(manifests, descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest),
			Size: len(manifest), Platform: &platform{Architecture: runtime.GOARCH, OS: "linux"},
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tags[i]}})
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
	if err != nil {
		return "", 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
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
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: Epoch}); err != nil {
			return "", 0, errors.Join(err, f.Close())
		}
	}
	for _, e := range files {
		if err := ow.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.b)), ModTime: Epoch}); err != nil {
			return "", 0, errors.Join(err, f.Close())
		}
		if _, err := ow.Write(e.b); err != nil {
			return "", 0, errors.Join(err, f.Close())
		}
	}
	if err := errors.Join(ow.Close(), f.Close()); err != nil {
		return "", 0, err
	}
	return digest(manifest), gz.Len(), nil
}
