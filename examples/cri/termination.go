package cri

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's bounds on a termination message: the file's last 4 KiB; from the log
// (FallbackToLogsOnError), its last 80 lines and of them the last 2 KiB.
const (
	maxTerminationMessage      = 4096
	maxTerminationMessageLines = 80
	maxTerminationMessageLog   = 2048
)

// withTerminationLog adds the container's termination-log mount to mounts, as the kubelet's
// makeMounts does: an empty file, mode 0666, pods/<uid>/containers/<name>/<8 hex digits>
// under Config.RootDir (a new one for each instance), bind-mounted at the container's
// terminationMessagePath (none when the path is empty).
func (r *Runtime) withTerminationLog(pod *v1.Pod, c *v1.Container, mounts []*runtimeapi.Mount) ([]*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" {
		return mounts, nil
	}
	dir := filepath.Join(r.podDir(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create termination log directory: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	p := filepath.Join(dir, hex.EncodeToString(b[:]))
	f, err := os.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create termination log: %w", err)
	}
	f.Close()
	// Whatever the umask: the container's user, whoever it is, writes it.
	if err := os.Chmod(p, 0o666); err != nil {
		return nil, fmt.Errorf("chmod termination log: %w", err)
	}
	return append(mounts, &runtimeapi.Mount{HostPath: p, ContainerPath: c.TerminationMessagePath}), nil
}

// terminationMessage is the message of an exited container, as the kubelet's
// toKubeContainerStatus makes it: the runtime's message, then ": " and the termination
// message, read from the file mounted at the container's terminationMessagePath (its last
// 4 KiB); with FallbackToLogsOnError, a container that failed (non-zero exit, not
// ContainerCannotRun) and left the file empty or missing gets its log's end instead.
func terminationMessage(st *runtimeapi.ContainerStatus) string {
	msg := st.GetMessage()
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return msg
	}
	ann := st.GetAnnotations()
	fallback := ann[AnnotationTerminationMessagePolicy] == string(v1.TerminationMessageFallbackToLogsOnError) &&
		st.GetExitCode() != 0 && st.GetReason() != "ContainerCannotRun"
	tmsg, checkLogs := readTerminationFile(st, ann[AnnotationTerminationMessagePath], fallback)
	if checkLogs {
		tmsg = lastLogString(st.GetLogPath())
	}
	if tmsg != "" {
		if msg != "" {
			msg += ": "
		}
		msg += tmsg
	}
	return msg
}

// readTerminationFile is the kubelet's getTerminationMessage: the termination file's end
// and whether to read the log instead.
func readTerminationFile(st *runtimeapi.ContainerStatus, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	for _, m := range st.GetMounts() {
		if m.GetContainerPath() != path {
			continue
		}
		data, err := readAtMost(m.GetHostPath(), maxTerminationMessage)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fallback
			}
			return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readAtMost reads the last n bytes of the file.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if size := fi.Size(); size > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// lastLogString is the kubelet's readLastStringFromContainerLogs: the contents of the
// CRI log file's last 80 lines (stdout and stderr, a partial line without its newline),
// of which the last 2 KiB.
func lastLogString(path string) string {
	data, err := tailLines(path, maxTerminationMessageLines)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	var out []byte
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		// <time> <stream> <P|F> <content>
		f := bytes.SplitN(line, []byte(" "), 4)
		if len(f) < 3 {
			continue
		}
		var content []byte
		if len(f) == 4 {
			content = f[3]
		}
		out = append(out, content...)
		if string(f[2]) != "P" {
			out = append(out, '\n')
		}
	}
	if len(out) > maxTerminationMessageLog {
		out = out[len(out)-maxTerminationMessageLog:]
	}
	return string(out)
}

// tailLines returns the file's last n lines, read backwards in blocks.
func tailLines(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const block = 8 << 10
	end := fi.Size()
	var buf []byte
	for off := end; off > 0; {
		size := min(int64(block), off)
		off -= size
		chunk := make([]byte, size)
		if _, err := f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		buf = append(chunk, buf...)
		// n lines end in n newlines, the last one's included: n+1 newlines bound them.
		if bytes.Count(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) >= n {
			break
		}
	}
	trimmed := bytes.TrimSuffix(buf, []byte("\n"))
	for i, k := len(trimmed)-1, 0; i >= 0; i-- {
		if trimmed[i] == '\n' {
			if k++; k == n {
				return buf[i+1:], nil
			}
		}
	}
	return buf, nil
}
