package engine

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
			// Nothing but the test's datagrams may cross: no IPv6
			// router solicitations or listener reports from the devices.
			for _, h := range []struct {
				h   *lab.Host
				dev string
			}{{p.A, "tun-a"}, {p.B, "tun-b"}} {
				if err := h.h.SetSysctl("net.ipv6.conf."+h.dev+".disable_ipv6", "1"); err != nil {
					t.Logf("no IPv6 to disable on %s: %v", h.dev, err)
				}
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
			// The IPv4 packets' lengths: the emulator counts those.
			const dataLen, finLen = 20 + 8 + size, 20 + 8 + udpHeader64
			cfg := model.TestConfig{Protocol: model.UDP, Duration: time.Second, Bitrate: 900 * model.MbitPerSecond, Length: size, NoGSO: !gso}
			// Whatever the devices sent as IPv6 went away (a 48-byte
			// packet once entered the emulator's count mid-test, one
			// run in three) has crossed before the count starts: the
			// A-to-B counts hold still for 200 ms.
			var before emulator.Counters
			quiet := time.Now()
			waitFor(t, "the path to fall quiet before the test", func() bool {
				c := p.Emulator().Counters(emulator.AtoB)
				if c != before {
					before, quiet = c, time.Now()
				}
				return time.Since(quiet) >= 200*time.Millisecond
			})
			ss, rs := sendUDPPair(t, cfg, sc, rc)
			// Every packet sent is in the emulator's counts (the
			// datagrams and three closing ones) and none waits there.
			sent := ss.udp.packets.Load()
			waitFor(t, "the emulator to pass every datagram on", func() bool {
				c := p.Emulator().Counters(emulator.AtoB)
				return c.Received-before.Received >= uint64(sent)+3 && c.Queued == 0
			})
			after := p.Emulator().Counters(emulator.AtoB)
			d := rs.udp.datagrams()
			drops, ok := d.SocketDrops.Get()
			if !ok {
				t.Fatal("no socket drop count (SO_RXQ_OVFL): the host's share of the loss is unknown")
			}
			received := after.Received - before.Received
			emuDropped := (after.DroppedQueue + after.DroppedLoss + after.DroppedGE + after.DroppedPolice + after.DroppedMTU) -
				(before.DroppedQueue + before.DroppedLoss + before.DroppedGE + before.DroppedPolice + before.DroppedMTU)
			if stray := int64(received) - sent - 3; stray != 0 || after.ReceivedBytes-before.ReceivedBytes != uint64(sent)*dataLen+3*finLen {
				// Every datagram sent entered the emulator, and nothing
				// else did: else its counts are not the stream's.
				t.Fatalf("the emulator read %d packets, %d bytes for %d datagrams and 3 closing ones: %+d packets",
					received, after.ReceivedBytes-before.ReceivedBytes, sent, stray)
			}
			// The closing datagrams cross the path too, and those it
			// dropped are in its count, not in the stream's loss. Their
			// size tells them apart in what it forwarded: forwarded =
			// data + fins, bytes = data × dataLen + fins × finLen.
			out, outBytes := after.Forwarded-before.Forwarded, after.ForwardedBytes-before.ForwardedBytes
			x := out*dataLen - outBytes
			if x%(dataLen-finLen) != 0 || x/(dataLen-finLen) > 3 {
				t.Fatalf("the emulator forwarded %d packets, %d bytes: no whole number of %d-byte datagrams and up to 3 %d-byte closing ones", out, outBytes, dataLen, finLen)
			}
			finsDropped := 3 - x/(dataLen-finLen)
			t.Logf("sent %d datagrams (%v), the emulator read %d packets and dropped %d (%d closing datagrams among them), the receiver counted %d packets, %d lost, socket drops %d",
				sent, model.Bitrate(float64(sent*size*8)/cfg.Duration.Seconds()), received, emuDropped, finsDropped, d.Packets, d.Lost, drops)
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
