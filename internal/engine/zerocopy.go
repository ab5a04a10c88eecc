package engine

import (
	"fmt"
	"io"
	"net"
	"os"
)

// zeroCopy sends a sender's block with sendfile(2) from a file that holds
// it (blockFile), as iperf3's -Z does: the kernel takes the file's pages into
// the socket, and the application copies nothing per write. Each stream
// has its own, as sendfile moves the file's offset.
type zeroCopy struct {
	f  *os.File
	lr io.LimitedReader // reused: one allocation per stream, not per write
}

func newZeroCopy(block []byte) (*zeroCopy, error) {
	f, err := blockFile()
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(block); err != nil {
		f.Close()
		return nil, fmt.Errorf("fill the block's file: %w", err)
	}
	z := &zeroCopy{f: f}
	z.lr.R = f
	return z, nil
}

// send sends the block's first n bytes on c. The net package turns a
// copy from a file into sendfile(2), with c's write deadline.
func (z *zeroCopy) send(c *net.TCPConn, n int) (int, error) {
	if _, err := z.f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("rewind the block's file: %w", err)
	}
	z.lr.N = int64(n)
	m, err := c.ReadFrom(&z.lr)
	return int(m), err
}

// Close releases the file.
func (z *zeroCopy) Close() error { return z.f.Close() }
