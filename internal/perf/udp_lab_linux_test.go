package perf

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// TestNetnsUDPLossExact: a UDP stream at 90% of an emulated 1 Gbit/s
// bottleneck with 1% random loss counts as lost exactly the datagrams the
// emulator dropped (and the receiving socket, should it drop any), with
// GSO super-buffers and with single datagrams. One second each: the
// emulator's counters are the truth, so a short run proves as much as a
// long one. The two ends are the engine's own (sendUDP, receiveUDP) on
// bare sockets, so that nothing else crosses the path: a control
// connection's packets would be dropped too.
func TestNetnsUDPLossExact(t *testing.T) {
	for _, gso := range []bool{true, false} {
		name := "gso"
		if !gso {
			name = "no-gso"
		}
		t.Run(name, func(t *testing.T) {
			fwd := emulator.Impairment{Rate: 1000 * model.MbitPerSecond, Loss: 0.01}
			p := labtest.Pair(t, lab.PairConfig{Emulated: &emulator.Config{AtoB: fwd, Seed: 1}, Backend: lab.UseEmulator})
			// Without GSO the emulator reads 80k packets a second from A's
			// TUN device, more than it keeps up with on a busy machine, and
			// the device's queue (500 packets) drops the rest before the
			// emulator sees them, silently to the sender. A queue the
			// length of the whole run lets every datagram reach the
			// emulator, whose bottleneck then decides alone.
			if out, err := p.A.Command(t.Context(), "ip", "link", "set", "dev", "tun-a", "txqueuelen", "100000").CombinedOutput(); err != nil {
				t.Fatalf("ip link set tun-a txqueuelen: %v: %s", err, out)
			}
			var rc *net.UDPConn
			if err := p.B.Do(func() error {
				c, err := net.ListenPacket("udp", netip.AddrPortFrom(p.B.Addr, 0).String())
				if err == nil {
					rc = c.(*net.UDPConn)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			_ = rc.SetReadBuffer(4 << 20) // what the host may drop, it counts; best it drops nothing
			nc, err := p.A.Dial(t.Context(), "udp", rc.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			sc := nc.(*net.UDPConn)
			defer sc.Close()

			const size = 1400
			cfg := model.TestConfig{Protocol: model.UDP, Duration: time.Second, Bitrate: 900 * model.MbitPerSecond, Length: size, NoGSO: !gso}
			before := p.Emulator().Counters(emulator.AtoB)
			t0 := time.Now()
			snd := &End{side: model.ClientSide, cfg: cfg, t0: t0, payload: make([]byte, size), stopped: make(chan struct{})}
			rcv := &End{side: model.ServerSide, cfg: cfg, t0: t0, stopped: make(chan struct{})}
			ss := &Stream{role: model.Sender, udp: newUDPFlow(sc, true, true)}
			rs := &Stream{role: model.Receiver, udp: newUDPFlow(rc, true, true)}
			rerr := make(chan error, 1)
			go func() { rerr <- rcv.receiveUDP(rs) }()
			if err := snd.sendUDP(ss); err != nil {
				t.Fatal(err)
			}
			if err := <-rerr; err != nil {
				t.Fatal(err)
			}
			// A receiver that got no closing datagram waits out its
			// linger past the planned end.
			byFin := time.Since(t0) < cfg.Duration+udpLinger
			waitFor(t, "the emulator's queue to empty", func() bool { return p.Emulator().Counters(emulator.AtoB).Queued == 0 })
			// The receiver ended at the first closing datagram that came;
			// the others that came wait in its socket.
			fins := 0
			if byFin {
				fins = 1
			}
			_ = rc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			buf := make([]byte, 2048)
			for {
				n, err := rc.Read(buf)
				if err != nil {
					break
				}
				if n == udpHeader64 {
					fins++
				}
			}
			after := p.Emulator().Counters(emulator.AtoB)
			sent := ss.udp.packets.Load()
			d := rs.udp.datagrams()
			drops, ok := d.SocketDrops.Get()
			if !ok {
				t.Fatal("no socket drop count (SO_RXQ_OVFL): the host's share of the loss is unknown")
			}
			received := after.Received - before.Received
			emuDropped := (after.DroppedQueue + after.DroppedLoss + after.DroppedGE + after.DroppedPolice + after.DroppedMTU) -
				(before.DroppedQueue + before.DroppedLoss + before.DroppedGE + before.DroppedPolice + before.DroppedMTU)
			// The closing datagrams cross the path too (three of them);
			// those it dropped are in its count, not in the stream's loss.
			finsDropped := uint64(3 - fins)
			t.Logf("sent %d datagrams (%v), the emulator read %d packets and dropped %d (%d closing datagrams among them), the receiver counted %d packets, %d lost, socket drops %d",
				sent, model.Bitrate(float64(sent*size*8)/cfg.Duration.Seconds()), received, emuDropped, finsDropped, d.Packets, d.Lost, drops)
			if stray := int64(received) - sent - 3; stray != 0 {
				// Every datagram sent entered the emulator, and nothing
				// else did: else its counts are not the stream's.
				t.Fatalf("the emulator read %d packets for %d datagrams and 3 closing ones: %+d", received, sent, stray)
			}
			if emuDropped == 0 {
				t.Fatal("the emulator dropped nothing: the test's premise (1% loss) failed")
			}
			if d.Packets != sent {
				t.Errorf("the receiver counted %d packets, the sender sent %d", d.Packets, sent)
			}
			if want := int64(emuDropped-finsDropped) + drops; d.Lost != want {
				t.Errorf("lost %d; the emulator dropped %d datagrams and the socket %d: want %d", d.Lost, emuDropped-finsDropped, drops, want)
			}
		})
	}
}
