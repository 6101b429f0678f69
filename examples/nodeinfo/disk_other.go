//go:build !linux && !darwin

package nodeinfo

import "errors"

// diskSize is not known here: ephemeral-storage is left out.
func diskSize(string) (int64, error) { return 0, errors.New("nodeinfo: no statfs") }
