package sockdiag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tcpscope/tcpscope/internal/sockdiag/inetdiag"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

var record = flag.Bool("record", false, "capture netlink replies about the test's own loopback sockets into inetdiag/testdata/*.hex")

// recordAddr is the IPv4 loopback address the recorded sockets use, both
// ends: an address of 127/8 no other program is likely to, so a dump
// filtered by it holds only this test's sockets.
const recordAddr = "127.45.67.89"

// TestRecord captures the kernel's replies, every batch as read, to dumps
// and lookups of sockets this test opens on loopback, for the codec's
// golden tests (package inetdiag, which replays them on any system). It
// only runs with -record:
//
//	go test -run TestRecord -record ./internal/sockdiag
//	go test -run Golden -update ./internal/sockdiag/inetdiag
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to capture new netlink replies")
	}
	about := fmt.Sprintf("Linux %s; recorded by go test -run TestRecord -record ./internal/sockdiag", tcpinfo.KernelRelease())
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A link of its own, fresh: its first batch is the small one the
	// kernel fills before any read, the next ones as big as the reads.
	l := c.links[0]

	// IPv4: a listener and six connections to it, from the same address;
	// the first client's congestion control is BBR, or CUBIC when BBR is
	// the host's default, so that the dump holds both.
	ln4, conns4 := recordConns(t, "tcp4", net.JoinHostPort(recordAddr, "0"), 6)
	other := "bbr"
	if cc, _ := tcpinfo.Congestion(conns4[1].(*net.TCPConn)); cc == "bbr" {
		other = "cubic"
	}
	if err := tcpinfo.SetCongestion(conns4[0].(*net.TCPConn), other); err != nil {
		t.Fatalf("the first client: %v", err)
	}
	f4, err := Parse("src " + recordAddr + " state all")
	if err != nil {
		t.Fatal(err)
	}
	bc4, _ := f4.Bytecode()
	v4 := recordRequest(t, l, inetdiag.FlagRequest|inetdiag.FlagDump, inetdiag.Request{
		Family: inetdiag.FamilyIPv4, Ext: inetdiag.ExtFull, States: f4.statesOrDefault(), Bytecode: bc4,
	})
	if len(v4) < 2 {
		t.Fatalf("the IPv4 dump came in %d batch of %d bytes; open more connections for a multi-part one", len(v4), len(v4[0]))
	}
	writeRecording(t, "dump-v4.hex", v4, "dump of AF_INET sockets, filter "+strconv.Quote(f4.String())+
		": a listener and six loopback connections, both ends (the first client "+other+")", about)

	// IPv6: a listener on ::1 and two connections; the dump filtered by
	// the listener's port holds it and the accepted ends.
	ln6, _ := recordConns(t, "tcp6", "[::1]:0", 2)
	f6, err := Parse("sport " + itoa(netip.MustParseAddrPort(ln6.Addr().String()).Port()) + " state all")
	if err != nil {
		t.Fatal(err)
	}
	bc6, _ := f6.Bytecode()
	v6 := recordRequest(t, l, inetdiag.FlagRequest|inetdiag.FlagDump, inetdiag.Request{
		Family: inetdiag.FamilyIPv6, Ext: inetdiag.ExtFull, States: f6.statesOrDefault(), Bytecode: bc6,
	})
	writeRecording(t, "dump-v6.hex", v6, "dump of AF_INET6 sockets, filter "+strconv.Quote(f6.String())+
		": a listener on ::1 and the server ends of two connections to it", about)

	// A list's dump: tcp_info and the congestion control only.
	brief := recordRequest(t, l, inetdiag.FlagRequest|inetdiag.FlagDump, inetdiag.Request{
		Family: inetdiag.FamilyIPv4, Ext: inetdiag.ExtInfo | inetdiag.ExtCong, States: f4.statesOrDefault(), Bytecode: bc4,
	})
	writeRecording(t, "list-v4.hex", brief, "the IPv4 dump as a connection list asks for it: tcp_info and congestion control only", about)

	// A lookup of the second client, by addresses and cookie: a single
	// reply. Then of a cookie no socket has: ENOENT.
	client := netip.MustParseAddrPort(conns4[1].LocalAddr().String())
	server := netip.MustParseAddrPort(ln4.Addr().String())
	sf, _ := Parse("sport " + itoa(client.Port()) + " dport " + itoa(server.Port()))
	socks, err := c.Dump(sf, 0, nil)
	if err != nil || len(socks) != 1 {
		t.Fatalf("dump of one client: %d sockets, %v", len(socks), err)
	}
	id := inetdiag.SockID{Local: client, Remote: server, Cookie: socks[0].Cookie}
	get := recordRequest(t, l, inetdiag.FlagRequest, inetdiag.Request{
		Family: inetdiag.FamilyIPv4, Ext: inetdiag.ExtFull, States: inetdiag.AllStates, ID: id,
	})
	writeRecording(t, "lookup.hex", get, "lookup of one client socket by its addresses and cookie", about)
	id.Cookie++
	gone := recordRequest(t, l, inetdiag.FlagRequest, inetdiag.Request{
		Family: inetdiag.FamilyIPv4, Ext: inetdiag.ExtFull, States: inetdiag.AllStates, ID: id,
	})
	writeRecording(t, "lookup-enoent.hex", gone, "lookup by a cookie no socket has: the kernel's NLMSG_ERROR", about)

	// Bad bytes, made from the IPv4 dump: its first batch cut in the
	// middle of a message, and its first message with an attribute
	// claiming more bytes than the message holds.
	first := v4[0]
	_, p, rest, err := inetdiag.Next(first)
	if err != nil {
		t.Fatal(err)
	}
	cut := first[:len(first)-len(rest)+inetdiag.HeaderLen+100]
	writeRecording(t, "truncated.hex", [][]byte{cut}, "the first batch of dump-v4.hex, cut 100 bytes into its second message's payload", about)
	bad := bytes.Clone(first[:len(first)-len(rest)])
	// The first attribute's length, after the header and inet_diag_msg.
	at := inetdiag.HeaderLen + 72
	binary.NativeEndian.PutUint16(bad[at:], uint16(len(p)))
	writeRecording(t, "garbage.hex", [][]byte{bad}, "the first message of dump-v4.hex, its first attribute's length set to its whole payload's", about)
}

// recordConns opens a listener at addr and n connections to it, each
// client having written some bytes the server has not read (its RecvQ).
// Clients dial from the listener's address.
func recordConns(t *testing.T, network, addr string, n int) (net.Listener, []net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	host := netip.MustParseAddrPort(ln.Addr().String()).Addr()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: host.AsSlice()}}
	var conns []net.Conn
	for i := range n {
		c, err := d.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := c.Write(make([]byte, 10_000*(i+1))); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return ln, conns
}

// recordRequest sends one request on l and returns the batches of its
// reply, each as read.
func recordRequest(t *testing.T, l *link, flags uint16, req inetdiag.Request) [][]byte {
	t.Helper()
	l.seq++
	if err := l.send(inetdiag.AppendRequest(nil, flags, l.seq, req)); err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	for {
		n, err := l.recv()
		if err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(l.buf[:n])
		batches = append(batches, b)
		done, err := inetdiag.Batch(b, l.seq, func([]byte) error { return nil })
		if _, ok := errors.AsType[inetdiag.Errno](err); !ok && err != nil {
			t.Fatal(err)
		}
		if done {
			return batches
		}
	}
}

// writeRecording writes batches to inetdiag/testdata/name as hex, 16
// bytes a line after an offset, each batch after a "# batch" line (the
// golden tests replay them one by one, as read), with comments first.
func writeRecording(t *testing.T, name string, batches [][]byte, comments ...string) {
	t.Helper()
	var out bytes.Buffer
	for _, c := range comments {
		fmt.Fprintf(&out, "# %s\n", c)
	}
	for i, b := range batches {
		fmt.Fprintf(&out, "# batch %d: %d bytes\n", i+1, len(b))
		for off := 0; off < len(b); off += 16 {
			fmt.Fprintf(&out, "%04x: % x\n", off, b[off:min(off+16, len(b))])
		}
	}
	path := filepath.Join("inetdiag", "testdata", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d batches", path, len(batches))
}
