package engine

import (
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestParseRecvOOB: the drop counter and the GRO segment size are read
// from a receive's control messages, in either order, and a truncated
// message is left alone.
func TestParseRecvOOB(t *testing.T) {
	cmsg := func(level, typ int32, v uint32) []byte {
		b := make([]byte, unix.CmsgSpace(4))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(4))
		binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], v)
		return b
	}
	drops := cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 7)
	gro := cmsg(unix.SOL_UDP, unix.UDP_GRO, 1400)
	for _, tc := range []struct {
		oob   []byte
		drops int64
		have  bool
		seg   int
	}{
		{append(append([]byte{}, drops...), gro...), 7, true, 1400},
		{append(append([]byte{}, gro...), drops...), 7, true, 1400},
		{drops, 7, true, 0},
		{gro[:unix.CmsgLen(0)+2], 0, false, 0},
		{nil, 0, false, 0},
	} {
		d, ok, seg := parseRecvOOB(tc.oob)
		if d != tc.drops || ok != tc.have || seg != tc.seg {
			t.Errorf("% x: drops %d %v, segment %d; want %d %v, %d", tc.oob, d, ok, seg, tc.drops, tc.have, tc.seg)
		}
	}
}

// TestUDPBatchesLoopback: datagrams sent in GSO super-buffers (or
// sendmmsg batches) and read with recvmmsg (or GRO) are each their own
// datagram: every one is accounted once, received or lost, none out of
// order, and the bytes received are whole datagrams.
func TestUDPBatchesLoopback(t *testing.T) {
	for _, tc := range []struct {
		name       string
		noGSO, gro bool
	}{{"gso", false, false}, {"gso+gro", false, true}, {"sendmmsg", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			_ = rc.SetReadBuffer(int(udpReceiveBuffer))
			sc, err := net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			const size = 1400
			cfg := model.TestConfig{Protocol: model.UDP, Duration: 300 * time.Millisecond, Bitrate: 200 * model.MbitPerSecond, Length: size, NoGSO: tc.noGSO, GRO: tc.gro}
			ss, rs := sendUDPPair(t, cfg, sc, rc)
			sent := ss.udp.packets.Load()
			d := rs.udp.datagrams()
			got := rs.moved.Load()
			t.Logf("sent %d, received %d bytes: packets %d, lost %d, out of order %d, socket drops %v", sent, got, d.Packets, d.Lost, d.OutOfOrder, d.SocketDrops)
			if sent < 100 {
				t.Fatalf("sent %d datagrams in 300 ms at 200 Mbit/s", sent)
			}
			if got%size != 0 || d.Packets != sent || got/size+d.Lost != sent || d.OutOfOrder != 0 {
				t.Errorf("sent %d datagrams; received %d bytes, packets %d, lost %d, out of order %d: each datagram once, whole", sent, got, d.Packets, d.Lost, d.OutOfOrder)
			}
			if drops, ok := d.SocketDrops.Get(); ok == tc.gro || (ok && drops != d.Lost) {
				t.Errorf("socket drops %v with GRO %v, lost %d: want the loss without GRO, none with it", d.SocketDrops, tc.gro, d.Lost)
			}
		})
	}
}

// sendUDPPair sends cfg's datagrams from sc to rc, each socket a UDP
// stream of an End of its own on one clock (tcpscope's, both ends:
// 64-bit counters and closing datagrams), and returns the two streams
// once the receiver has seen the sender's end.
func sendUDPPair(t *testing.T, cfg model.TestConfig, sc, rc *net.UDPConn) (sent, received *Stream) {
	t.Helper()
	t0 := time.Now()
	snd := &End{side: model.ClientSide, cfg: cfg, t0: t0, payload: make([]byte, cfg.Length), stopped: make(chan struct{})}
	rcv := &End{side: model.ServerSide, cfg: cfg, t0: t0, stopped: make(chan struct{})}
	ss := &Stream{role: model.Sender, udp: NewUDPFlow(sc, true, true)}
	rs := &Stream{role: model.Receiver, udp: NewUDPFlow(rc, true, true)}
	rerr := make(chan error, 1)
	go func() { rerr <- rcv.receiveUDP(rs) }()
	if err := snd.sendUDP(ss); err != nil {
		t.Fatal(err)
	}
	if err := <-rerr; err != nil {
		t.Fatal(err)
	}
	return ss, rs
}
