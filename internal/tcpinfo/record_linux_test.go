package tcpinfo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

var record = flag.Bool("record", false, "capture new kernel bytes from a loopback transfer into testdata/*.hex")

// TestRecord captures the raw struct tcp_info of both ends of a loopback
// transfer, and the sender's BBR state, for the golden tests. It only runs
// with -record; afterwards run with -update to rewrite the goldens.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to capture new kernel bytes")
	}
	client, server := loopbackPair(t, SocketOptions{})
	setBBR(t, client)
	// A small receive buffer and a transfer lasting several jiffies make
	// the chrono counters (busy, rwnd-limited) non-zero.
	const rcvBuf = 256 << 10
	if err := SetBuffers(server, 0, rcvBuf); err != nil {
		t.Fatal(err)
	}
	// The receiver only sends ACKs, so a pacing cap there records a present
	// max_pacing_rate without slowing the transfer.
	if err := SetMaxPacingRate(server, model.GbitPerSecond); err != nil {
		t.Fatal(err)
	}
	const n = 64 << 20
	transfer(t, client, server, n)
	about := fmt.Sprintf("Linux %s, %s; %d-byte loopback transfer into a %d-byte SO_RCVBUF, receiver capped at 1 Gbit/s; recorded by go test -run TestRecord -record",
		KernelRelease(), byteOrderName(), n, rcvBuf)
	captures := []struct {
		file, what string
		c          syscall.Conn
		opt        int
	}{
		{"sender.hex", "struct tcp_info of the sending end (bbr)", client, unix.TCP_INFO},
		{"receiver.hex", "struct tcp_info of the receiving end", server, unix.TCP_INFO},
		{"sender-bbr.hex", "struct tcp_bbr_info (TCP_CC_INFO) of the sending end", client, unix.TCP_CC_INFO},
	}
	for _, c := range captures {
		var buf [512]byte
		var got int
		err := control(c.c, "record", func(fd int) error {
			var err error
			got, err = getsockopt(uintptr(fd), unix.IPPROTO_TCP, c.opt, buf[:])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if err := os.WriteFile(path, formatHex(buf[:got], c.what, about), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, got)
	}
}

func byteOrderName() string {
	if hostBigEndian() {
		return "big-endian"
	}
	return "little-endian"
}
