package engine

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// blockFile is an empty file for a sender's block: an unlinked file in
// $TMPDIR, as iperf3's -Z uses, or where none can be made a memfd. The
// file system's page cache serves sendfile(2) in large folios where a
// memfd (shmem without huge pages) splices page by page: -Z -l 1M cost
// 0.206 CPU-s/GB on loopback from /tmp (ext4) against 0.223 from a
// memfd (docs/BENCHMARKS.md, 2026-11-27).
func blockFile() (*os.File, error) {
	f, err := os.CreateTemp("", "tcpscope-block-*")
	if err == nil {
		if err = os.Remove(f.Name()); err == nil {
			return f, nil
		}
		f.Close()
	}
	fd, merr := unix.MemfdCreate("tcpscope-block", unix.MFD_CLOEXEC)
	if merr != nil {
		return nil, fmt.Errorf("memfd_create: %w", errors.Join(merr, err))
	}
	return os.NewFile(uintptr(fd), "tcpscope-block"), nil
}
