package kubeletapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrBadLogLine is a line of a CRI log file that is not "<time> <stream> <P|F> <text>".
var ErrBadLogLine = errors.New("kubeletapi: bad CRI log line")

// LogOptions are the kubelet's /containerLogs query parameters (v1.PodLogOptions).
type LogOptions struct {
	Follow     bool
	Timestamps bool
	TailLines  *int64 // nil: all
	LimitBytes *int64 // nil: no limit
	SinceTime  *time.Time
}

// logEntry is one line of a CRI log file.
type logEntry struct {
	ts      time.Time
	partial bool // "P": the text goes on in the next entry, with no newline
	text    []byte
}

// parseLogLine parses one line of the CRI log format (without its newline).
func parseLogLine(line []byte) (logEntry, error) {
	f := bytes.SplitN(line, []byte{' '}, 4)
	if len(f) < 3 {
		return logEntry{}, fmt.Errorf("%w: %q", ErrBadLogLine, line)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(f[0]))
	if err != nil {
		return logEntry{}, fmt.Errorf("%w: %w", ErrBadLogLine, err)
	}
	e := logEntry{ts: ts, partial: string(f[2]) == "P"}
	if len(f) == 4 {
		e.text = f[3]
	}
	return e, nil
}

// logWriter writes entries as the kubelet does: the text (a newline after a full line),
// with the timestamp first if asked, up to the byte limit.
type logWriter struct {
	w    io.Writer
	opts LogOptions
	left int64 // bytes left under LimitBytes; -1: none
}

var errLimit = errors.New("kubeletapi: byte limit reached")

func (lw *logWriter) write(e logEntry) error {
	if lw.opts.SinceTime != nil && e.ts.Before(*lw.opts.SinceTime) {
		return nil
	}
	var b []byte
	if lw.opts.Timestamps {
		b = append(b, e.ts.Format(time.RFC3339Nano)...)
		b = append(b, ' ')
	}
	b = append(b, e.text...)
	if !e.partial {
		b = append(b, '\n')
	}
	if lw.left >= 0 && int64(len(b)) > lw.left {
		b = b[:lw.left]
	}
	if _, err := lw.w.Write(b); err != nil {
		return err
	}
	if f, ok := lw.w.(interface{ Flush() }); ok && lw.opts.Follow {
		f.Flush()
	}
	if lw.left >= 0 {
		lw.left -= int64(len(b))
		if lw.left == 0 {
			return errLimit
		}
	}
	return nil
}

// ReadLogs writes the CRI log file at path to w as opts asks. With Follow it keeps
// reading what is appended, every poll, until running reports false (and the rest is
// read) or ctx ends.
func ReadLogs(ctx context.Context, path string, opts LogOptions, w io.Writer, running func() bool, poll <-chan time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kubeletapi: %w", err)
	}
	defer f.Close()
	lw := &logWriter{w: w, opts: opts, left: -1}
	if opts.LimitBytes != nil {
		lw.left = max(*opts.LimitBytes, 0)
		if lw.left == 0 {
			return nil
		}
	}
	r := bufio.NewReader(f)
	var pending []byte // a line read up to EOF without its newline yet
	// The file as it is now: keep the last TailLines entries (all of them without it).
	var tail []logEntry
	readLine := func() ([]byte, bool, error) {
		b, err := r.ReadBytes('\n')
		if err == io.EOF {
			pending = append(pending, b...)
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		line := append(pending, b[:len(b)-1]...)
		pending = nil
		return line, true, nil
	}
	for {
		line, ok, err := readLine()
		if err != nil {
			return fmt.Errorf("kubeletapi: %w", err)
		}
		if !ok {
			break
		}
		e, err := parseLogLine(line)
		if err != nil {
			continue // the kubelet skips a line it cannot parse
		}
		if opts.TailLines == nil {
			if err := lw.write(e); err != nil {
				return ignoreLimit(err)
			}
			continue
		}
		tail = append(tail, e)
		if n := *opts.TailLines; int64(len(tail)) > n {
			tail = tail[int64(len(tail))-max(n, 0):]
		}
	}
	for _, e := range tail {
		if err := lw.write(e); err != nil {
			return ignoreLimit(err)
		}
	}
	if !opts.Follow {
		return nil
	}
	for {
		line, ok, err := readLine()
		if err != nil {
			return fmt.Errorf("kubeletapi: %w", err)
		}
		if ok {
			if e, err := parseLogLine(line); err == nil {
				if err := lw.write(e); err != nil {
					return ignoreLimit(err)
				}
			}
			continue
		}
		if !running() {
			// One more read: what the container wrote before it stopped.
			for {
				line, ok, err := readLine()
				if err != nil || !ok {
					return nil
				}
				if e, err := parseLogLine(line); err == nil {
					if err := lw.write(e); err != nil {
						return ignoreLimit(err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poll:
		}
	}
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}
