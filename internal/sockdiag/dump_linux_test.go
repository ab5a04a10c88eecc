package sockdiag

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag/inetdiag"
)

// The kernel takes the split bytecode, and its parts, dumped one after
// the other, hold the sockets one whole dump finds, each once.
func TestSplitDumpLoopback(t *testing.T) {
	// Both ends on an address of 127/8 of the test's own, so that the
	// dumps, filtered by it, find the test's sockets and no other
	// program's (a connection opened between two dumps made them differ).
	const addr = "127.45.67.90"
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	defer ln.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 40 {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c, a)
	}
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, _ := Parse("src " + addr + " state established")
	whole := &Conn{links: c.links[:1]}
	all, err := whole.Dump(f, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []uint64
	for _, s := range all {
		want = append(want, s.Cookie)
	}
	for part := range 2 {
		bc, err := f.partBytecode(part, 2)
		if err != nil {
			t.Fatal(err)
		}
		err = c.links[0].dump(unix.AF_INET, f.statesOrDefault(), inetdiag.ExtInfo, bc, func(b []byte) error {
			m, err := inetdiag.ParseMsg(b)
			got = append(got, m.Cookie)
			return err
		})
		if err != nil {
			t.Fatalf("part %d: %v", part, err)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) != 80 || !slices.Equal(got, want) {
		t.Errorf("parts found %d sockets, one dump %d", len(got), len(want))
	}
	if len(c.links) > 1 {
		// As if the last dump had found enough sockets to split the next.
		c.last, c.dumped = [2]int{splitMin, 0}, true
		split, err := c.Dump(f, 0, nil)
		if err != nil || len(split) != len(all) {
			t.Errorf("split dump: %d sockets, %v; one dump %d", len(split), err, len(all))
		}
		if c.last[0] != len(all) {
			t.Errorf("the split dump counted %d sockets", c.last[0])
		}
	}
}

// List finds what Dump does, with the brief of each socket's sample.
func TestListMatchesDump(t *testing.T) {
	client, _ := loopbackTransfer(t)
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := netip.MustParseAddrPort(client.LocalAddr().String()).Port()
	peer := netip.MustParseAddrPort(client.RemoteAddr().String()).Port()
	f, _ := Parse("src 127.0.0.1 dport " + itoa(port) + " sport " + itoa(peer))
	own, _ := Parse("src 127.0.0.1 sport " + itoa(port) + " dport " + itoa(peer))
	procs := &Procs{}
	// Twice: the second time the slices start at the first's sizes.
	for range 2 {
		full, err := c.Dump(f, time.Second, procs)
		if err != nil {
			t.Fatal(err)
		}
		brief, err := c.List(f, time.Second, procs)
		if err != nil {
			t.Fatal(err)
		}
		byCookie := map[uint64]model.SocketBrief{}
		for _, s := range brief {
			byCookie[s.Cookie] = s
		}
		mine, err := c.List(own, time.Second, procs)
		if err != nil || len(mine) != 1 || mine[0].PID == 0 || mine[0].TCP.BytesAcked.V < 100_000 {
			t.Errorf("the test's own connection listed as %+v, %v", mine, err)
		}
		if len(full) != 1 || len(brief) != 1 {
			t.Errorf("%d sockets dumped, %d listed, want the server's end", len(full), len(brief))
		}
		for _, s := range full {
			b, ok := byCookie[s.Cookie]
			if !ok {
				t.Errorf("%s → %s dumped, not listed", s.Local, s.Remote)
				continue
			}
			if b.Local != s.Local || b.Remote != s.Remote || b.Inode != s.Inode || b.PID != s.PID || b.Process != s.Process ||
				b.TCP.State != s.TCP.State || b.TCP.Congestion != s.TCP.Congestion || b.TCP.At != time.Second || b.TCP.SndMSS != s.TCP.SndMSS {
				t.Errorf("listed %+v, dumped %+v", b, s)
			}
		}
	}
}

// The first dump's sizes come from the kernel's socket counts.
func TestSockstat(t *testing.T) {
	loopbackTransfer(t)
	v4, _ := sockstat(false)
	if all, _ := sockstat(true); all < v4 {
		t.Errorf("with time-wait, %d IPv4 sockets; without, %d", all, v4)
	}
	if v4 < 2 {
		t.Errorf("sockstat counts %d IPv4 TCP sockets with a loopback connection open", v4)
	}
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if e := c.expect(Filter{}); e[0] != v4 {
		t.Errorf("a first dump expects %d IPv4 sockets of %d", e[0], v4)
	}
	established, _ := Parse("state established")
	if e := c.expect(established); e != [2]int{} {
		t.Errorf("a filtered first dump expects %v sockets", e)
	}
}

// Without ShowAll, the kernel leaves time-wait (and listening) sockets
// out of the dump, as ss does without -a; with it, they are listed.
func TestDefaultStatesHideTimeWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	local := netip.MustParseAddrPort(client.LocalAddr().String())
	lport := netip.MustParseAddrPort(ln.Addr().String()).Port()
	// The client closes first: its end goes to time-wait once the
	// server's FIN comes.
	client.Close()
	server.Close()
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, _ := Parse("sport " + itoa(local.Port()) + " dport " + itoa(lport))
	waitFor(t, "the client's end in time-wait", func() bool {
		socks, err := c.List(f.ShowAll(), 0, nil)
		return err == nil && len(socks) == 1 && socks[0].TCP.State == model.TCPTimeWait
	})
	if socks, err := c.List(f, 0, nil); err != nil || len(socks) != 0 {
		t.Errorf("default states: %d sockets (%v), want the time-wait one left out", len(socks), err)
	}
	if socks, err := c.Dump(f, 0, nil); err != nil || len(socks) != 0 {
		t.Errorf("default states, dump: %d sockets (%v)", len(socks), err)
	}
	// The listener: only with ShowAll.
	lf, _ := Parse("sport " + itoa(lport) + " src 127.0.0.1")
	if socks, _ := c.List(lf, 0, nil); len(socks) != 0 {
		t.Errorf("the listener is listed by default: %+v", socks)
	}
	if socks, _ := c.List(lf.ShowAll(), 0, nil); len(socks) != 1 || socks[0].TCP.State != model.TCPListen {
		t.Errorf("ShowAll does not list the listener: %+v", socks)
	}
}
