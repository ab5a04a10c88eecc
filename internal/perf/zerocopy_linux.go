package perf

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// blockFile is an empty file in memory for a sender's block: a memfd,
// which no file system holds.
func blockFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("tcpscope-block", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), "tcpscope-block"), nil
}
