//go:build linux || darwin

package nodeinfo

import "syscall"

// diskSize is the size in bytes of the file system holding path.
func diskSize(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}
