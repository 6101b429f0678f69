//go:build !linux

package cri

import "errors"

// errNoMount: this system cannot mount a tmpfs (not Linux).
var errNoMount = errors.New("cri: no tmpfs mounts on this system")

func mountTmpfs(string, *int64) error { return errNoMount }

func isMountPoint(string) (bool, error) { return false, nil }

func unmountUnder(string) error { return nil }
