package interop

import (
	"bufio"
	"fmt"
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

// readSegments reads the counters of this network namespace.
func readSegments() (Segments, error) {
	var s Segments
	want := map[string]*int64{"Tcp:RetransSegs": &s.Retrans, "TcpExt:TCPDSACKRecv": &s.DSACKs, "TcpExt:TCPOFOQueue": &s.OutOfOrder}
	for _, f := range []string{"/proc/net/snmp", "/proc/net/netstat"} {
		if err := readCounters(f, want); err != nil {
			return s, err
		}
	}
	return s, nil
}

// readCounters fills want ("Proto:Name") from a file of /proc/net/snmp's
// shape: per protocol, a line of names and a line of values.
func readCounters(path string, want map[string]*int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	defer f.Close()
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
