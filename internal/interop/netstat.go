package interop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Segments is what the kernel counted of one run's TCP segments, host
// wide (nstat's counters, differences over the run): the runs are one
// at a time on loopback, so both ends' sockets are in them and nothing
// else moves. They are what a stock iperf3 user reads as "Retr", and
// what tells a real loss from a receiver's mechanism that made the
// sender resend in vain.
type Segments struct {
	// Retrans: segments retransmitted (Tcp RetransSegs).
	Retrans int64 `json:"retrans"`
	// DSACKs: duplicate-SACK blocks received (TcpExt TCPDSACKRecv), each
	// a retransmission the receiver already had: spurious.
	DSACKs int64 `json:"dsacks"`
	// OutOfOrder: segments a receiver queued out of order (TcpExt
	// TCPOFOQueue).
	OutOfOrder int64 `json:"out_of_order"`
}

// sub is s less earlier.
func (s Segments) sub(earlier Segments) Segments {
	return Segments{Retrans: s.Retrans - earlier.Retrans, DSACKs: s.DSACKs - earlier.DSACKs, OutOfOrder: s.OutOfOrder - earlier.OutOfOrder}
}

// counterFiles are where the kernel keeps them, per network namespace.
var counterFiles = []string{"/proc/net/snmp", "/proc/net/netstat"}

// segments reads the counters where the runs are: this network
// namespace, or across a path both hosts' (summed: each end's sockets
// count in its own).
func (h *Harness) segments(ctx context.Context) (Segments, error) {
	if h.Across == nil {
		return readSegments(func(path string) (io.ReadCloser, error) { return os.Open(path) })
	}
	var sum Segments
	for _, ns := range []string{h.Across.ClientNS, h.Across.ServerNS} {
		s, err := readSegments(func(path string) (io.ReadCloser, error) {
			out, err := h.command(ctx, ns, "cat", path).Output()
			return io.NopCloser(bytes.NewReader(out)), err
		})
		if err != nil {
			return sum, fmt.Errorf("%s: %w", ns, err)
		}
		sum.Retrans, sum.DSACKs, sum.OutOfOrder = sum.Retrans+s.Retrans, sum.DSACKs+s.DSACKs, sum.OutOfOrder+s.OutOfOrder
	}
	return sum, nil
}

// readSegments reads the counters from the files open opens.
func readSegments(open func(path string) (io.ReadCloser, error)) (Segments, error) {
	var s Segments
	want := map[string]*int64{"Tcp:RetransSegs": &s.Retrans, "TcpExt:TCPDSACKRecv": &s.DSACKs, "TcpExt:TCPOFOQueue": &s.OutOfOrder}
	for _, path := range counterFiles {
		f, err := open(path)
		if err != nil {
			return s, fmt.Errorf("read counters: %w", err)
		}
		err = readCounters(f, path, want)
		f.Close()
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// readCounters fills want ("Proto:Name") from a file of /proc/net/snmp's
// shape: per protocol, a line of names and a line of values.
func readCounters(f io.Reader, path string, want map[string]*int64) error {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if names == nil || names[0] != fields[0] {
			names = fields
			continue
		}
		for i := 1; i < len(fields) && i < len(names); i++ {
			if p, ok := want[strings.TrimSuffix(names[0], ":")+":"+names[i]]; ok {
				v, err := strconv.ParseInt(fields[i], 10, 64)
				if err != nil {
					return fmt.Errorf("read counters: %s %s: %w", path, names[i], err)
				}
				*p = v
			}
		}
		names = nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	return nil
}
