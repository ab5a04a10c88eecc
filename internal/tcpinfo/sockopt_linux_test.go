package tcpinfo

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// loopbackPair connects a client, dialled with opts, to a server on
// 127.0.0.1. Both are closed when the test ends.
func loopbackPair(t testing.TB, opts SocketOptions) (client, server *net.TCPConn) {
	t.Helper()
	ctx := context.Background()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	d := net.Dialer{Control: DialControl(opts)}
	c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := <-accepted
	if s == nil {
		t.FailNow()
	}
	t.Cleanup(func() { s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// transfer writes n bytes from one end and reads them all at the other.
func transfer(t testing.TB, from, to net.Conn, n int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := from.Write(make([]byte, n))
		errc <- err
	}()
	if _, err := io.CopyN(io.Discard, to, int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// readSysctl reads an integer from /proc/sys.
func readSysctl(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("cannot read %s: %v", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func TestReadLoopback(t *testing.T) {
	client, server := loopbackPair(t, SocketOptions{})
	const n = 256 << 10
	transfer(t, client, server, n)
	for _, end := range []struct {
		name string
		c    *net.TCPConn
	}{{"sender", client}, {"receiver", server}} {
		s, err := Read(end.c)
		if err != nil {
			t.Fatalf("%s: %v", end.name, err)
		}
		if s.KernelLen < baseLen {
			t.Errorf("%s: KernelLen = %d, want >= %d", end.name, s.KernelLen, baseLen)
		}
		if s.State.String() != "established" {
			t.Errorf("%s: State = %v, want established", end.name, s.State)
		}
		if s.SndMSS <= 0 {
			t.Errorf("%s: SndMSS = %d, want > 0", end.name, s.SndMSS)
		}
		if s.RTT <= 0 {
			t.Errorf("%s: RTT = %v, want > 0", end.name, s.RTT)
		}
		if s.Congestion == "" {
			t.Errorf("%s: Congestion is empty", end.name)
		}
		if s.At != 0 {
			t.Errorf("%s: At = %v, want 0 for the caller to stamp", end.name, s.At)
		}
		t.Logf("%s: len %d rtt %v cwnd %d cc %s options %v", end.name, s.KernelLen, s.RTT, s.SndCwnd, s.Congestion, s.Options)
	}
	s, err := Read(server)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.BytesReceived.Get(); ok && got < n {
		t.Errorf("receiver BytesReceived = %d, want >= %d", got, n)
	}
}

func TestReadErrors(t *testing.T) {
	client, _ := loopbackPair(t, SocketOptions{})
	client.Close()
	if _, err := Read(client); err == nil {
		t.Error("Read of a closed connection succeeded")
	}
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if _, err := Read(udp.(syscall.Conn)); err == nil {
		t.Error("Read of a UDP socket succeeded")
	}
}

func TestBuffers(t *testing.T) {
	client, _ := loopbackPair(t, SocketOptions{})
	const req = 64 * model.KiB
	if err := SetBuffers(client, req, req); err != nil {
		t.Fatal(err)
	}
	snd, rcv, err := Buffers(client)
	if err != nil {
		t.Fatal(err)
	}
	// Linux doubles the request after clamping it to the sysctl maximum.
	wmax := model.Bytes(readSysctl(t, "/proc/sys/net/core/wmem_max"))
	rmax := model.Bytes(readSysctl(t, "/proc/sys/net/core/rmem_max"))
	if want := 2 * min(req, wmax); snd != want {
		t.Errorf("SO_SNDBUF = %d, want %d", snd, want)
	}
	if want := 2 * min(req, rmax); rcv != want {
		t.Errorf("SO_RCVBUF = %d, want %d", rcv, want)
	}
	// 0 leaves a buffer alone.
	if err := SetBuffers(client, 0, 0); err != nil {
		t.Fatal(err)
	}
	if s2, r2, _ := Buffers(client); s2 != snd || r2 != rcv {
		t.Errorf("SetBuffers(0, 0) changed the buffers to %d/%d", s2, r2)
	}
	if err := SetBuffers(client, -1, 0); err == nil {
		t.Error("SetBuffers(-1) succeeded")
	}
}

func TestCongestion(t *testing.T) {
	client, _ := loopbackPair(t, SocketOptions{})
	if err := SetCongestion(client, "reno"); err != nil {
		t.Fatal(err)
	}
	if got, err := Congestion(client); err != nil || got != "reno" {
		t.Errorf("Congestion = %q, %v; want reno", got, err)
	}
	if s, err := Read(client); err != nil || s.Congestion != "reno" || s.BBR != nil {
		t.Errorf("Read: Congestion %q BBR %v err %v; want reno, nil BBR", s.Congestion, s.BBR, err)
	}
	err := SetCongestion(client, "nonexistent")
	if !errors.Is(err, unix.ENOENT) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetCongestion(nonexistent) = %v, want ENOENT", err)
	}
	if len(AvailableCongestion()) > 0 && (err == nil || !strings.Contains(err.Error(), "available: ")) {
		t.Errorf("SetCongestion(nonexistent) = %v, want the available algorithms named", err)
	}
	t.Log(err)
}

func TestAvailableCongestion(t *testing.T) {
	def, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skip(err)
	}
	if avail := AvailableCongestion(); !slices.Contains(avail, strings.TrimSpace(string(def))) {
		t.Errorf("AvailableCongestion() = %q, does not include the default %q", avail, def)
	}
}

// setBBR switches c to BBR, skipping the test where the kernel lacks it.
func setBBR(t testing.TB, c syscall.Conn) {
	t.Helper()
	if err := SetCongestion(c, "bbr"); errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
		t.Skipf("BBR unavailable: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

func TestReadBBR(t *testing.T) {
	client, server := loopbackPair(t, SocketOptions{})
	setBBR(t, client)
	transfer(t, client, server, 1<<20)
	s, err := Read(client)
	if err != nil {
		t.Fatal(err)
	}
	if s.Congestion != "bbr" || s.BBR == nil {
		t.Fatalf("Congestion %q BBR %v, want bbr with its model", s.Congestion, s.BBR)
	}
	if s.BBR.BW <= 0 || s.BBR.MinRTT <= 0 || s.BBR.PacingGain <= 0 || s.BBR.CwndGain <= 0 {
		t.Errorf("BBR model %+v, want positive bandwidth, min RTT and gains", *s.BBR)
	}
	t.Logf("BBR %+v mode %s", *s.BBR, s.BBR.Mode())
}

func TestDialControl(t *testing.T) {
	opts := SocketOptions{
		SndBuf:        128 * model.KiB,
		RcvBuf:        128 * model.KiB,
		MSS:           1000,
		Congestion:    "reno",
		MaxPacingRate: 100 * model.MbitPerSecond,
	}
	client, server := loopbackPair(t, opts)
	if cc, err := Congestion(client); err != nil || cc != "reno" {
		t.Errorf("Congestion = %q, %v; want reno", cc, err)
	}
	if mss, err := MSS(client); err != nil || mss <= 0 || mss > opts.MSS {
		t.Errorf("MSS = %d, %v; want 1..%d", mss, err, opts.MSS)
	}
	// The client advertised the limit in its SYN, so the server obeys it too.
	if s, err := Read(server); err != nil || s.SndMSS <= 0 || s.SndMSS > model.Bytes(opts.MSS) {
		t.Errorf("server SndMSS = %d, %v; want 1..%d", s.SndMSS, err, opts.MSS)
	}
	s, err := Read(client)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxPacingRate != model.Some(opts.MaxPacingRate) {
		t.Errorf("MaxPacingRate = %v, want %v", s.MaxPacingRate, opts.MaxPacingRate)
	}
	wmax := model.Bytes(readSysctl(t, "/proc/sys/net/core/wmem_max"))
	if snd, _, err := Buffers(client); err != nil || snd != 2*min(opts.SndBuf, wmax) {
		t.Errorf("SO_SNDBUF = %d, %v; want %d", snd, err, 2*min(opts.SndBuf, wmax))
	}
	if err := DialControl(SocketOptions{Congestion: "nonexistent"})("tcp4", "", rawConn(t, client)); !errors.Is(err, unix.ENOENT) {
		t.Errorf("DialControl(nonexistent) = %v, want ENOENT", err)
	}
}

func rawConn(t *testing.T, c syscall.Conn) syscall.RawConn {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestApplyAndPacing(t *testing.T) {
	_, server := loopbackPair(t, SocketOptions{})
	if err := Apply(server, SocketOptions{}); err != nil {
		t.Errorf("Apply(zero) = %v", err)
	}
	// reno: without CAP_NET_ADMIN only tcp_allowed_congestion_control may be
	// chosen, and reno is always on it.
	if err := Apply(server, SocketOptions{Congestion: "reno", MaxPacingRate: 10 * model.MbitPerSecond}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(server)
	if err != nil {
		t.Fatal(err)
	}
	if s.Congestion != "reno" || s.MaxPacingRate != model.Some(10*model.MbitPerSecond) {
		t.Errorf("after Apply: Congestion %q MaxPacingRate %v; want reno, 10 Mbit/s", s.Congestion, s.MaxPacingRate)
	}
	// A rate ≤ 0 lifts the cap, which tcp_info reports as unlimited (absent).
	if err := SetMaxPacingRate(server, 0); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(server); err != nil || s.MaxPacingRate.OK {
		t.Errorf("after SetMaxPacingRate(0): MaxPacingRate %v, %v; want absent", s.MaxPacingRate, err)
	}
}

func TestSetMSS(t *testing.T) {
	client, _ := loopbackPair(t, SocketOptions{})
	if err := SetMSS(client, 1200); err != nil {
		t.Errorf("SetMSS(1200) = %v", err)
	}
	// Below TCP_MIN_MSS (88) the kernel refuses.
	if err := SetMSS(client, 1); !errors.Is(err, unix.EINVAL) {
		t.Errorf("SetMSS(1) = %v, want EINVAL", err)
	}
}

func TestKernelRelease(t *testing.T) {
	if r := KernelRelease(); r == "" {
		t.Error("KernelRelease is empty")
	} else {
		t.Log(r)
	}
}

func TestPacingBytes(t *testing.T) {
	for _, c := range []struct {
		r    model.Bitrate
		want uint64
	}{
		{0, ^uint64(0)},
		{-1, ^uint64(0)},
		{model.Bitrate(math.NaN()), ^uint64(0)},
		{1e40, ^uint64(0)},
		{1, 1},
		{10 * model.MbitPerSecond, 1_250_000},
		{10*model.MbitPerSecond + 1, 1_250_001},
	} {
		if got := pacingBytes(c.r); got != c.want {
			t.Errorf("pacingBytes(%v) = %d, want %d", float64(c.r), got, c.want)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	client, server := loopbackPair(b, SocketOptions{})
	setBBR(b, client)
	transfer(b, client, server, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(client); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQueues: bytes written by the peer and not read show in RecvQ, and
// the writer's SendQ empties once they are acknowledged.
func TestQueues(t *testing.T) {
	client, server := loopbackPair(t, SocketOptions{})
	const n = 10_000
	if _, err := client.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		s, err := Read(server)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Read(client)
		if err != nil {
			t.Fatal(err)
		}
		if s.RecvQ.V == n && c.SendQ.OK && c.SendQ.V == 0 {
			// The send buffer's size comes with them, as SO_SNDBUF reads.
			if want, _, err := Buffers(client); err != nil || !c.SndBuf.OK || c.SndBuf.V != want {
				t.Fatalf("client send buffer %v, want SO_SNDBUF's %v (%v)", c.SndBuf, want, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server RecvQ %v, client SendQ %v; want %d and 0", s.RecvQ, c.SendQ, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
