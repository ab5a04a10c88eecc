package inetdiag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// A lookup request is laid out as struct nlmsghdr and struct
// inet_diag_req_v2: host order but for the ports and addresses.
func TestAppendRequestLookup(t *testing.T) {
	id := SockID{
		Local:  netip.MustParseAddrPort("192.0.2.7:443"),
		Remote: netip.MustParseAddrPort("198.51.100.9:50000"),
		Cookie: 0x1122334455667788,
	}
	b := AppendRequest([]byte{0xee}, FlagRequest, 7, Request{Family: FamilyIPv4, Ext: ExtFull, States: AllStates, ID: id})
	if b[0] != 0xee {
		t.Fatal("the bytes before were overwritten")
	}
	b = b[1:]
	if len(b) != HeaderLen+reqLen {
		t.Fatalf("%d bytes, want %d", len(b), HeaderLen+reqLen)
	}
	h, p, rest, err := Next(b)
	if err != nil || len(rest) != 0 || h != (Header{Len: HeaderLen + reqLen, Type: SockDiagByFamily, Flags: FlagRequest, Seq: 7}) {
		t.Fatalf("header %+v, %d bytes after, %v", h, len(rest), err)
	}
	if p[0] != FamilyIPv4 || p[1] != 6 || p[2] != ExtFull || p[3] != 0 || binary.NativeEndian.Uint32(p[4:]) != 0xfff {
		t.Errorf("family, protocol, ext, states: % x", p[:8])
	}
	if !bytes.Equal(p[8:12], []byte{0x01, 0xbb, 0xc3, 0x50}) {
		t.Errorf("ports % x, want 443 and 50000 in network order", p[8:12])
	}
	if !bytes.Equal(p[12:28], append([]byte{192, 0, 2, 7}, make([]byte, 12)...)) || !bytes.Equal(p[28:44], append([]byte{198, 51, 100, 9}, make([]byte, 12)...)) {
		t.Errorf("addresses % x | % x", p[12:28], p[28:44])
	}
	if binary.NativeEndian.Uint32(p[44:]) != 0 || binary.NativeEndian.Uint32(p[48:]) != 0x55667788 || binary.NativeEndian.Uint32(p[52:]) != 0x11223344 {
		t.Errorf("interface and cookie % x", p[44:])
	}

	// IPv6, with an IPv4-mapped end written as such.
	id6 := SockID{Local: netip.MustParseAddrPort("[2001:db8::1]:80"), Remote: netip.MustParseAddrPort("192.0.2.1:9")}
	b = AppendRequest(nil, FlagRequest, 1, Request{Family: FamilyIPv6, ID: id6})
	p = b[HeaderLen:]
	if a := netip.AddrFrom16([16]byte(p[12:28])); a != id6.Local.Addr() {
		t.Errorf("local %v", a)
	}
	if a := netip.AddrFrom16([16]byte(p[28:44])); a != netip.MustParseAddr("::ffff:192.0.2.1") {
		t.Errorf("remote %v", a)
	}
	// An IPv6 address in an IPv4 request is left out, not a panic.
	b = AppendRequest(nil, FlagRequest, 1, Request{Family: FamilyIPv4, ID: id6})
	if !bytes.Equal(b[HeaderLen+12:HeaderLen+16], make([]byte, 4)) {
		t.Errorf("an IPv6 address in an IPv4 request: % x", b[HeaderLen+12:HeaderLen+16])
	}
}

// A dump request carries its bytecode as an attribute, padded.
func TestAppendRequestDump(t *testing.T) {
	bc := []byte{1, 2, 3, 4, 5, 6}
	b := AppendRequest(nil, FlagRequest|FlagDump, 3, Request{Family: FamilyIPv6, Ext: ExtInfo, States: 1 << 1, Bytecode: bc})
	if len(b) != HeaderLen+reqLen+12 || binary.NativeEndian.Uint32(b) != uint32(len(b)) {
		t.Fatalf("%d bytes, length field %d", len(b), binary.NativeEndian.Uint32(b))
	}
	if binary.NativeEndian.Uint16(b[6:]) != FlagRequest|FlagDump {
		t.Errorf("flags %#x", binary.NativeEndian.Uint16(b[6:]))
	}
	if !bytes.Equal(b[HeaderLen+8:HeaderLen+reqLen], make([]byte, reqLen-8)) {
		t.Error("a dump's socket id is not zero")
	}
	attr := b[HeaderLen+reqLen:]
	if binary.NativeEndian.Uint16(attr) != 4+6 || binary.NativeEndian.Uint16(attr[2:]) != reqBytecode || !bytes.Equal(attr[4:10], bc) || !bytes.Equal(attr[10:], []byte{0, 0}) {
		t.Errorf("bytecode attribute % x", attr)
	}
}

// message builds one netlink message.
func message(typ, flags uint16, seq uint32, payload []byte) []byte {
	b := appendHeader(nil, typ, flags, seq, len(payload))
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func errnoPayload(e int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(e)) }

// minimalMsg is an inet_diag_msg of family with no attributes.
func minimalMsg(family uint8) []byte {
	b := make([]byte, msgLen)
	b[0], b[1] = family, 1
	return b
}

// Batch ends a reply where netlink does, skips other requests' messages,
// and reads the kernel's errors.
func TestBatch(t *testing.T) {
	sock := minimalMsg(FamilyIPv4)
	cases := []struct {
		name  string
		b     []byte
		n     int
		done  bool
		err   error
		errIs error
	}{
		{"dump, then done", concat(message(SockDiagByFamily, FlagMulti, 5, sock), message(SockDiagByFamily, FlagMulti, 5, sock), message(typeDone, FlagMulti, 5, errnoPayload(0))), 2, true, nil, nil},
		{"dump goes on", concat(message(SockDiagByFamily, FlagMulti, 5, sock)), 1, false, nil, nil},
		{"lookup's single reply", concat(message(SockDiagByFamily, 0, 5, sock), message(SockDiagByFamily, 0, 5, sock)), 1, true, nil, nil},
		{"late reply skipped", concat(message(SockDiagByFamily, 0, 4, sock), message(typeNoop, 0, 5, nil), message(typeDone, FlagMulti, 5, nil)), 0, true, nil, nil},
		{"acknowledged", message(typeError, 0, 5, errnoPayload(0)), 0, true, nil, nil},
		{"ENOENT", message(typeError, 0, 5, errnoPayload(-2)), 0, true, Errno(2), nil},
		{"dump failed part way", concat(message(SockDiagByFamily, FlagMulti, 5, sock), message(typeDone, FlagMulti, 5, errnoPayload(-4))), 1, true, Errno(4), nil},
		{"short error", message(typeError, 0, 5, []byte{1}), 0, true, nil, ErrMalformed},
		{"overrun", message(typeOverrun, 0, 5, nil), 0, true, nil, ErrMalformed},
		{"unknown type", message(99, 0, 5, sock), 0, true, nil, ErrMalformed},
		{"length past the batch", message(SockDiagByFamily, 0, 5, sock)[:40], 0, false, nil, ErrMalformed},
		{"length under a header", []byte{8, 0, 0, 0, 20, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}, 0, false, nil, ErrMalformed},
		{"trailing bytes", append(message(SockDiagByFamily, FlagMulti, 5, sock), 1, 2), 1, false, nil, ErrMalformed},
	}
	for _, c := range cases {
		n := 0
		done, err := Batch(c.b, 5, func(p []byte) error {
			n++
			if len(p) != msgLen {
				t.Errorf("%s: payload of %d bytes", c.name, len(p))
			}
			return nil
		})
		if n != c.n || done != c.done || c.errIs == nil && err != c.err || c.errIs != nil && !errors.Is(err, c.errIs) {
			t.Errorf("%s: %d sockets, done %v, %v; want %d, %v, %v", c.name, n, done, err, c.n, c.done, c.err)
		}
	}
	stop := errors.New("stop")
	b := concat(message(SockDiagByFamily, FlagMulti, 5, sock), message(SockDiagByFamily, FlagMulti, 5, sock))
	n := 0
	if done, err := Batch(b, 5, func([]byte) error { n++; return stop }); !done || err != stop || n != 1 {
		t.Errorf("fn's error: %d sockets, done %v, %v", n, done, err)
	}
}

func concat(b ...[]byte) []byte { return bytes.Join(b, nil) }

// A message that is not inet_diag's is an error, not a socket.
func TestParseMsgErrors(t *testing.T) {
	var d Decoder
	var s model.Socket
	var sb model.SocketBrief
	bad := map[string][]byte{
		"short":           make([]byte, msgLen-1),
		"family":          minimalMsg(1),
		"attribute short": append(minimalMsg(FamilyIPv4), 3, 0, 2, 0),
		"attribute long":  append(minimalMsg(FamilyIPv4), 9, 0, 2, 0, 1, 2, 3, 4),
		"tcp_info short":  append(minimalMsg(FamilyIPv4), 8, 0, 2, 0, 1, 2, 3, 4),
	}
	// BBR's model too short, for a BBR socket.
	bad["bbr short"] = append(append(minimalMsg(FamilyIPv4), 8, 0, attrCong, 0, 'b', 'b', 'r', 0), 8, 0, attrBBRInfo, 0, 1, 2, 3, 4)
	for name, b := range bad {
		if err := d.Socket(b, &s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Socket: %v", name, err)
		}
		// A brief has no BBR model to read.
		if err := d.Brief(b, &sb); !errors.Is(err, ErrMalformed) && name != "bbr short" {
			t.Errorf("%s: Brief: %v", name, err)
		}
	}
	// Attributes it does not use are skipped; a stray byte or three
	// after the last one is not an attribute.
	ok := append(minimalMsg(FamilyIPv6), 8, 0, 42, 0, 1, 2, 3, 4, 0, 0)
	if err := d.Socket(ok, &s); err != nil || !s.IPv6 || s.TCP.State != 1 || s.TCP.KernelLen != 0 {
		t.Errorf("socket %+v, %v", s, err)
	}
}

// FuzzDecode: no bytes make the decoder panic; what it reads from a
// complete reply, it reads the same batch by batch.
func FuzzDecode(f *testing.F) {
	for _, name := range recordings {
		f.Add(bytes.Join(readBatches(f, name), nil))
	}
	f.Add([]byte{})
	f.Add(message(typeDone, FlagMulti, 1, errnoPayload(-1)))
	f.Add(message(SockDiagByFamily, 0, 1, minimalMsg(FamilyIPv4)))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, err := Decode(b)
		if err == nil && len(b) < HeaderLen {
			t.Fatalf("%d bytes decoded", len(b))
		}
		var d Decoder
		n := 0
		var sb model.SocketBrief
		h, _, _, herr := Next(b)
		if herr != nil {
			return
		}
		_, berr := Batch(b, h.Seq, func(p []byte) error {
			n++
			return d.Brief(p, &sb)
		})
		if err == nil && (berr != nil || n != len(socks)) {
			t.Fatalf("Decode read %d sockets; Batch and Brief %d, %v", len(socks), n, berr)
		}
		// Any bytes as one payload.
		var s model.Socket
		_ = d.Socket(b, &s)
	})
}
