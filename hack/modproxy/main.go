// Command modproxy writes a Go module proxy directory (the file:// protocol of `go help
// goproxy`) holding podlife's two published modules, github.com/podlife/podlife (the
// repository's root) and github.com/podlife/podlife/examples (examples/), made from the
// repository's tree at the version in VERSION: for each, @v/list, and the version's .info,
// .mod and .zip (golang.org/x/mod/zip: the files git tracks or would track, nested modules
// left out, as the real proxy makes them from the tag). A module outside the repository
// then requires them by version, as a user does once the tags are published:
//
//	cd hack/modproxy && go run . -repo ../.. -out /tmp/podlife-proxy
//	GOPROXY=file:///tmp/podlife-proxy,https://proxy.golang.org GONOSUMDB=github.com/podlife \
//		go get github.com/podlife/podlife/examples@v0.1.0
//
// Before writing anything it checks the release invariants (-check: only them): VERSION is a
// valid version for the library's module path; examples/go.mod requires the library at
// exactly that version and has no replace or exclude directive (`go install pkg@version`
// refuses a module with one); examples/go.work replaces that version of the library by the
// tree (so the repository builds against itself); hack/bench/go.mod requires that version.
// hack/release.sh bump keeps the four in step.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

const (
	libPath      = "github.com/podlife/podlife"
	examplesPath = "github.com/podlife/podlife/examples"
)

// errRelease prefixes every broken release invariant.
var errRelease = errors.New("modproxy: release invariant")

func main() {
	repo := flag.String("repo", ".", "the repository's root (holding VERSION)")
	out := flag.String("out", "", "the proxy directory to write (created; existing versions are kept in @v/list)")
	check := flag.Bool("check", false, "only check the release invariants, write nothing")
	flag.Parse()
	version, err := Check(*repo)
	if err == nil && !*check {
		if *out == "" {
			err = errors.New("modproxy: -out is required")
		} else {
			err = Write(*repo, *out, version)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if !*check {
		fmt.Println(version)
	}
}

// Check checks the release invariants of the repository at repo and returns the version
// VERSION names.
func Check(repo string) (string, error) {
	b, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("%w: %w", errRelease, err)
	}
	version := strings.TrimSpace(string(b))
	if err := module.Check(libPath, version); err != nil || semver.Canonical(version) != version {
		return "", fmt.Errorf("%w: VERSION %q is not a canonical version of %s", errRelease, version, libPath)
	}
	var errs []error
	mf, err := parseMod(filepath.Join(repo, "examples", "go.mod"))
	if err != nil {
		return "", err
	}
	if got := required(mf, libPath); got != version {
		errs = append(errs, fmt.Errorf("%w: examples/go.mod requires %s %s, VERSION says %s", errRelease, libPath, orNone(got), version))
	}
	if len(mf.Replace) > 0 || len(mf.Exclude) > 0 {
		errs = append(errs, fmt.Errorf("%w: examples/go.mod has replace or exclude directives (go install pkg@version refuses it; the workspace examples/go.work replaces the library)", errRelease))
	}
	wb, err := os.ReadFile(filepath.Join(repo, "examples", "go.work"))
	if err != nil {
		return "", fmt.Errorf("%w: %w", errRelease, err)
	}
	wf, err := modfile.ParseWork("examples/go.work", wb, nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errRelease, err)
	}
	if !slices.ContainsFunc(wf.Replace, func(r *modfile.Replace) bool {
		return r.Old.Path == libPath && r.Old.Version == version && path.Clean(filepath.ToSlash(r.New.Path)) == ".."
	}) {
		errs = append(errs, fmt.Errorf("%w: examples/go.work does not replace %s %s by ../", errRelease, libPath, version))
	}
	bf, err := parseMod(filepath.Join(repo, "hack", "bench", "go.mod"))
	if err != nil {
		return "", err
	}
	if got := required(bf, libPath); got != version {
		errs = append(errs, fmt.Errorf("%w: hack/bench/go.mod requires %s %s, VERSION says %s", errRelease, libPath, orNone(got), version))
	}
	return version, errors.Join(errs...)
}

func parseMod(file string) (*modfile.File, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRelease, err)
	}
	mf, err := modfile.Parse(file, b, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRelease, err)
	}
	return mf, nil
}

func required(mf *modfile.File, modPath string) string {
	for _, r := range mf.Require {
		if r.Mod.Path == modPath {
			return r.Mod.Version
		}
	}
	return ""
}

func orNone(v string) string {
	if v == "" {
		return "(not at all)"
	}
	return v
}

// Write writes both modules at version into the proxy directory out.
func Write(repo, out, version string) error {
	for _, m := range []struct{ path, dir string }{
		{libPath, repo},
		{examplesPath, filepath.Join(repo, "examples")},
	} {
		if err := writeModule(out, module.Version{Path: m.path, Version: version}, m.dir); err != nil {
			return fmt.Errorf("modproxy: %s: %w", m.path, err)
		}
	}
	return nil
}

func writeModule(out string, m module.Version, dir string) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, escVer+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, escVer+".info"), info, 0o644); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(vdir, escVer+".zip"))
	if err != nil {
		return err
	}
	files, err := gitFiles(dir)
	if err == nil {
		err = zip.Create(zf, m, files)
	} else {
		// Not a git work tree (an exported copy): every file on disk.
		err = zip.CreateFromDir(zf, m, dir)
	}
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return addToList(filepath.Join(vdir, "list"), m.Version)
}

// gitFiles lists the files under dir that git tracks or would track (untracked files not
// ignored), as they are on disk; zip.Create leaves out those of nested modules.
func gitFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	outb, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var files []zip.File
	for _, name := range strings.Split(string(outb), "\x00") {
		if name == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		info, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{name: name, path: p, info: info})
	}
	return files, nil
}

type diskFile struct {
	name, path string
	info       os.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

func addToList(file, version string) error {
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(b))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(file, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
