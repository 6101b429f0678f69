package cri

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The kubelet's atomic writer (pkg/volume/util/atomic_writer.go) keeps a configMap,
// secret, downwardAPI or projected volume's files in a timestamped directory that the
// ..data symlink names; each top-level name the user sees is a symlink through ..data. An
// update writes a new timestamped directory and renames a new ..data_tmp symlink over
// ..data, so a reader sees either the old files or the new ones, never a mix.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// maxFileNameLength and maxPathLength bound a payload path (the kubelet's).
	maxFileNameLength = 255
	maxPathLength     = 4096
)

// fileProjection is one file of a volume's payload.
type fileProjection struct {
	Data []byte
	Mode int32
}

// validatePayloadPath is the atomic writer's check of a payload path: relative, no ".."
// element, not starting with "..", and within the length limits.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	for _, item := range strings.Split(p, string(os.PathSeparator)) {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(p, "..") {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// writeAtomic makes dir hold exactly payload, as the kubelet's atomic writer: nothing is
// written when the files are the same (only missing user-visible symlinks are made);
// otherwise a new timestamped directory and a ..data symlink swap. now names the new
// directory. It reports whether it wrote.
func writeAtomic(dir string, payload map[string]fileProjection, now time.Time) (bool, error) {
	clean := make(map[string]fileProjection, len(payload))
	for p, f := range payload {
		if err := validatePayloadPath(p); err != nil {
			return false, err
		}
		clean[filepath.Clean(p)] = f
	}
	dataDir := filepath.Join(dir, dataDirName)
	oldTs, err := os.Readlink(dataDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var remove map[string]bool
	write := true
	if oldTs != "" {
		if remove, err = pathsToRemove(clean, filepath.Join(dir, oldTs)); err != nil {
			return false, err
		}
		same, err := samePayload(clean, filepath.Join(dir, oldTs))
		if err != nil {
			return false, err
		}
		if same && len(remove) == 0 {
			write, oldTs = false, ""
		}
	}
	if write {
		tsDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
		if err != nil {
			return false, err
		}
		// 0755 whatever the umask, so that group and other can reach the files.
		if err := os.Chmod(tsDir, 0o755); err != nil {
			return false, err
		}
		for p, f := range clean {
			full := filepath.Join(tsDir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return false, err
			}
			if err := os.WriteFile(full, f.Data, fs.FileMode(f.Mode)); err != nil {
				return false, err
			}
			if err := os.Chmod(full, fs.FileMode(f.Mode)); err != nil {
				return false, err
			}
		}
		tmp := filepath.Join(dir, newDataDirName)
		os.Remove(tmp) // a leftover of an interrupted write
		if err := os.Symlink(filepath.Base(tsDir), tmp); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
		if err := os.Rename(tmp, dataDir); err != nil {
			os.Remove(tmp)
			os.RemoveAll(tsDir)
			return false, err
		}
	}
	for p := range clean {
		top, _, _ := strings.Cut(p, string(os.PathSeparator))
		visible := filepath.Join(dir, top)
		if _, err := os.Readlink(visible); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDirName, top), visible); err != nil {
				return false, err
			}
		}
	}
	var lastErr error
	for p := range remove {
		if strings.Contains(p, string(os.PathSeparator)) {
			continue // only the top-level symlinks are the user's
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			lastErr = err
		}
	}
	if lastErr != nil {
		return write, lastErr
	}
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			return write, err
		}
	}
	return write, nil
}

// samePayload reports whether every file of payload is in oldTsDir with the same content.
func samePayload(payload map[string]fileProjection, oldTsDir string) (bool, error) {
	for p, f := range payload {
		old, err := os.ReadFile(filepath.Join(oldTsDir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !bytes.Equal(old, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

// pathsToRemove are the paths of the old timestamped directory (files and their parent
// directories) that payload no longer has.
func pathsToRemove(payload map[string]fileProjection, oldTsDir string) (map[string]bool, error) {
	remove := map[string]bool{}
	err := filepath.WalkDir(oldTsDir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(oldTsDir, path)
		if err != nil || rel == "." {
			return err
		}
		remove[rel] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p := range payload {
		// A kept file keeps its parent directories.
		for q := p; q != "." && q != string(os.PathSeparator); q = filepath.Dir(q) {
			delete(remove, q)
		}
	}
	return remove, nil
}
