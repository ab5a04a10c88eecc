package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// startServer serves lim on a fresh loopback port until the test ends;
// the cancel function stops it sooner.
func startServer(t *testing.T, lim serve.Limits) (string, context.CancelFunc) {
	t.Helper()
	return serveOn(t, Add(&serve.Server{Limits: lim, Version: "test"}))
}

// serve runs srv on a fresh loopback port until the test ends, or until
// the returned function is called, and fails the test if Serve fails or
// does not stop.
func serveOn(t *testing.T, srv *serve.Server) (string, context.CancelFunc) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("server did not stop")
		}
	})
	return ln.Addr().String(), cancel
}

// awaitRunning waits until srv runs n tests (admitted, streams opening
// or running): a condition, where a sleep guessed how long admission
// takes.
func awaitRunning(t *testing.T, srv *serve.Server, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d tests running", n), func() bool { return srv.Status().Running >= n })
}

// waitFor polls cond every 2 ms until it holds, and fails t if it does
// not within 10 s: a condition to wait on, where a sleep would guess.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 10 s", what)
		}
	}
}

// bothEnds is an Observer that calls f once, as soon as both ends have
// reported an interval: a test is then under way with something to show
// from each end.
type bothEnds struct {
	f    func()
	mu   sync.Mutex
	seen map[model.Side]bool
	once sync.Once
}

func (o *bothEnds) Begin(*model.Run) {}

func (o *bothEnds) Interval(side model.Side, _ *model.Interval) {
	o.mu.Lock()
	if o.seen == nil {
		o.seen = map[model.Side]bool{}
	}
	o.seen[side] = true
	both := len(o.seen) == 2
	o.mu.Unlock()
	if both {
		o.once.Do(o.f)
	}
}

// quick is cfg with a short test and intervals, for tests whose
// assertions need a complete run with a few intervals, not its length.
func quick(c model.TestConfig) model.TestConfig {
	if c.Duration == 0 && c.Bytes == 0 {
		c.Duration = 300 * time.Millisecond
	}
	if c.Interval == 0 {
		c.Interval = 100 * time.Millisecond
	}
	return c
}

// paced is cfg at 10 Mbit/s a stream, for a test that must be running
// while something else happens (it holds a slot): it waits on the clock,
// not the CPU, and so may run beside the other paced tests.
func paced(c model.TestConfig) model.TestConfig {
	c.Bitrate = 10 * model.MbitPerSecond
	return quick(c)
}

// checkRun asserts the invariants every complete run must satisfy.
func checkRun(t *testing.T, run *model.Run) {
	t.Helper()
	if len(run.Client.Intervals) == 0 || len(run.Remote.Intervals) == 0 {
		t.Fatalf("intervals: client %d, server %d; want both ends present", len(run.Client.Intervals), len(run.Remote.Intervals))
	}
	nstreams := len(run.Streams)
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		if len(e.Totals) != nstreams {
			t.Fatalf("%s totals for %d streams, want %d", e.Side, len(e.Totals), nstreams)
		}
		var prevEnd time.Duration
		for i, iv := range e.Intervals {
			if iv.Index != i || iv.Start != prevEnd || iv.End < iv.Start {
				t.Fatalf("%s interval %d: index %d span %v-%v after %v: not monotonic", e.Side, i, iv.Index, iv.Start, iv.End, prevEnd)
			}
			prevEnd = iv.End
			if len(iv.Streams) != nstreams {
				t.Fatalf("%s interval %d has %d streams", e.Side, i, len(iv.Streams))
			}
			for _, si := range iv.Streams {
				if si.TCP.KernelLen < 104 || si.TCP.SndMSS == 0 {
					t.Fatalf("%s interval %d stream %d: no kernel sample: %+v", e.Side, i, si.Stream, si.TCP)
				}
			}
		}
	}
	// Samples move forward: time, and the kernel's cumulative counters.
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		for id := range nstreams {
			var prev *model.Sample
			for i := range e.Intervals {
				cur := &e.Intervals[i].Streams[id].TCP
				if prev != nil && (cur.At < prev.At || cur.TotalRetrans < prev.TotalRetrans ||
					cur.BytesAcked.V < prev.BytesAcked.V || cur.BytesReceived.V < prev.BytesReceived.V ||
					cur.SegsOut.V < prev.SegsOut.V) {
					t.Fatalf("%s stream %d interval %d: sample went backwards: %+v after %+v", e.Side, id, i, cur, prev)
				}
				prev = cur
			}
		}
	}
	// Bytes agree between ends: the sender's half-close and the receiver's
	// read to end of file leave nothing uncounted.
	for _, s := range run.Streams {
		snd, rcv := &run.Client, &run.Remote
		if s.Direction == model.ServerToClient {
			snd, rcv = rcv, snd
		}
		sent, got := snd.Totals[s.ID], rcv.Totals[s.ID]
		if sent.Role != model.Sender || got.Role != model.Receiver {
			t.Fatalf("stream %d roles %s/%s", s.ID, sent.Role, got.Role)
		}
		if sent.AllBytes != got.AllBytes {
			t.Fatalf("stream %d: sender wrote %d B, receiver read %d B", s.ID, sent.AllBytes, got.AllBytes)
		}
		if b, ok := got.Final.BytesReceived.Get(); ok && b < got.AllBytes {
			t.Fatalf("stream %d: kernel says %d B received, application read %d", s.ID, b, got.AllBytes)
		}
		// Each end read the handshake's round trip before data moved: a
		// minimum no later sample can be under (model.EndReport.MinRTT).
		for _, tot := range []model.StreamTotal{sent, got} {
			if m, ok := tot.StartMinRTT.Get(); !ok || m <= 0 || m < tot.Final.MinRTT.V {
				t.Fatalf("stream %d %s: start min RTT %v, final %v: want a reading at or over the final", s.ID, tot.Role, tot.StartMinRTT, tot.Final.MinRTT)
			}
		}
		// Interval bytes add up to the total at each end.
		for _, e := range []*model.EndReport{snd, rcv} {
			var sum model.Bytes
			for _, iv := range e.Intervals {
				sum += iv.Streams[s.ID].Bytes
			}
			if sum != e.Totals[s.ID].AllBytes {
				t.Fatalf("%s stream %d: intervals sum to %d B, total %d B", e.Side, s.ID, sum, e.Totals[s.ID].AllBytes)
			}
		}
		// What the sender's kernel saw acknowledged, interval by
		// interval, adds up to what the receiver read: no FIN, no SYN.
		// Interval by interval they follow the kernel's counter: while
		// the connection is established, the two differ by a constant
		// (the SYN and the preamble), not by a write in progress.
		var acked model.Bytes
		offset := model.Opt[model.Bytes]{}
		for i, iv := range snd.Intervals {
			si := &iv.Streams[s.ID]
			a, ok := si.AckedBytes.Get()
			if !ok {
				t.Fatalf("stream %d interval %d: the sender's acked bytes absent", s.ID, i)
			}
			acked += a
			if si.TCP.State != model.TCPEstablished {
				continue
			}
			o := si.TCP.BytesAcked.V - acked
			if offset.OK && o == offset.V+1 && si.TCP.SendQ.OK && si.TCP.SendQ.V == 0 {
				// Everything acknowledged and one more: the end of file,
				// in a sample that read the state before the ACK came
				// (tcp_info reads it before it locks the socket).
				continue
			}
			if offset.OK && o != offset.V {
				t.Fatalf("stream %d interval %d: %d B acked in intervals, the kernel's count %d B: off by %d, before by %d",
					s.ID, i, acked, si.TCP.BytesAcked.V, o, offset.V)
			}
			offset = model.Some(si.TCP.BytesAcked.V - acked)
		}
		if acked != got.AllBytes {
			t.Fatalf("stream %d: the sender's intervals acknowledged %d B, receiver read %d B", s.ID, acked, got.AllBytes)
		}
	}
	// Each end reports its process's CPU use, the server in its done
	// report (what -f iperf3-json prints as host_* and remote_*).
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		if u := e.CPU; u == nil || u.User < 0 || u.System < 0 || math.Abs(u.Total-u.User-u.System) > 1e-9 {
			t.Fatalf("%s CPU use %+v", e.Side, e.CPU)
		}
		// And per interval, the server's carried in its interval
		// messages, with the CPUs it may use to judge them by.
		for i, iv := range e.Intervals {
			if u := iv.CPU; u == nil || u.User < 0 || u.System < 0 || math.Abs(u.Total-u.User-u.System) > 1e-9 {
				t.Fatalf("%s interval %d CPU use %+v", e.Side, i, iv.CPU)
			}
		}
		if n, ok := e.CPUs.Get(); !ok || n < 1 {
			t.Fatalf("%s CPUs %v", e.Side, e.CPUs)
		}
	}
	if len(run.Cookie) != 2*cookieLen {
		t.Fatalf("cookie %q", run.Cookie)
	}
	for _, d := range run.Summary {
		// With an omitted start each end cuts at its own moment.
		if (run.Config.Omit == 0 && d.ReceiverBytes.V != d.SenderBytes.V) || d.Goodput.V <= 0 || d.Duration.V <= 0 || !d.Goodput.OK || !d.ReceiverBytes.OK {
			t.Fatalf("summary %+v", d)
		}
	}
}

func TestLoopbackModes(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	cases := []struct {
		name string
		cfg  model.TestConfig
		dirs map[model.Direction]int
	}{
		{"upload", model.TestConfig{}, map[model.Direction]int{model.ClientToServer: 1}},
		{"parallel", model.TestConfig{Parallel: 3}, map[model.Direction]int{model.ClientToServer: 3}},
		{"reverse", model.TestConfig{Reverse: true, Parallel: 2}, map[model.Direction]int{model.ServerToClient: 2}},
		{"bidir", model.TestConfig{Bidir: true}, map[model.Direction]int{model.ClientToServer: 1, model.ServerToClient: 1}},
		// Buffers far smaller than a write: the kernel acknowledges
		// bytes of a write still in progress.
		{"small buffers", model.TestConfig{Window: 16 * model.KiB}, map[model.Direction]int{model.ClientToServer: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, err := (&Client{Version: "test"}).Run(context.Background(), addr, quick(c.cfg))
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, run)
			if len(run.Summary) != len(c.dirs) {
				t.Fatalf("summary has %d directions, want %d", len(run.Summary), len(c.dirs))
			}
			for _, d := range run.Summary {
				if c.dirs[d.Direction] != d.Streams {
					t.Fatalf("direction %s has %d streams, want %d", d.Direction, d.Streams, c.dirs[d.Direction])
				}
			}
			if run.Ended != "complete" {
				t.Fatalf("ended %q", run.Ended)
			}
		})
	}
}

func TestByteCount(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	const n = 10_000_000
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Bytes: n, Parallel: 3, Length: 100_000, Bidir: true}))
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, run)
	for _, d := range run.Summary {
		if d.SenderBytes.V != n || d.ReceiverBytes.V != n {
			t.Fatalf("%s: sent %d, received %d, want exactly %d", d.Direction, d.SenderBytes.V, d.ReceiverBytes.V, n)
		}
	}
}

func TestOmit(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Omit: 300 * time.Millisecond, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, run)
	if !run.Client.Intervals[0].Omitted || run.Client.Intervals[len(run.Client.Intervals)-1].Omitted {
		t.Fatal("first intervals must be marked omitted, the last not")
	}
	tot := run.Client.Totals[0]
	if tot.Bytes >= tot.AllBytes || tot.Duration > 600*time.Millisecond || tot.Duration < 400*time.Millisecond {
		t.Fatalf("omit not applied: %d of %d B over %v", tot.Bytes, tot.AllBytes, tot.Duration)
	}
}

func TestWindowGrant(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Window: 64 * model.KiB, Duration: 200 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	s := run.Streams[0]
	// Linux doubles the request (64 KiB is below every default maximum).
	for _, got := range []model.Bytes{s.Client.SndBuf, s.Client.RcvBuf, s.Server.SndBuf, s.Server.RcvBuf} {
		if got != 128*model.KiB {
			t.Fatalf("granted %v, want 128 KiB: %+v", got, s)
		}
	}
	if len(run.Warnings) != 0 {
		t.Fatalf("unexpected warnings %v", run.Warnings)
	}
}

func TestConcurrentClients(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{}))
			if err == nil && (len(run.Remote.Totals) != 1 || run.Summary[0].ReceiverBytes.V == 0) {
				err = fmt.Errorf("incomplete run %+v", run.Summary)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestLimits(t *testing.T) {
	t.Parallel() // its one running test is paced; the others are refused
	srv := Add(&serve.Server{Limits: serve.Limits{MaxTests: 1, MaxDuration: 5 * time.Second, MaxStreams: 4}, Version: "test"})
	addr, _ := serveOn(t, srv)
	c := &Client{}
	_, err := c.Run(context.Background(), addr, quick(model.TestConfig{Duration: 10 * time.Second}))
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "limit of 5s") {
		t.Fatalf("long test: %v", err)
	}
	_, err = c.Run(context.Background(), addr, quick(model.TestConfig{Parallel: 3, Bidir: true}))
	if fault.CodeOf(err) != fault.Limit {
		t.Fatalf("6 streams over a limit of 4: %v", err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), addr, paced(model.TestConfig{Duration: 1500 * time.Millisecond}))
		first <- err
	}()
	awaitRunning(t, srv, 1)
	_, err = c.Run(context.Background(), addr, quick(model.TestConfig{}))
	if fault.CodeOf(err) != fault.Busy || !strings.Contains(err.Error(), "server busy (1 running, limit 1)") {
		t.Fatalf("second client: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first client: %v", err)
	}
}

func TestRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{}))
	if fault.CodeOf(err) != fault.Refused || fault.HintOf(err) == "" {
		t.Fatalf("got %v (code %q)", err, fault.CodeOf(err))
	}
}

func TestBadCongestion(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	_, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Congestion: "no-such-cc"}))
	if fault.CodeOf(err) != fault.Socket {
		t.Fatalf("got %v (code %q)", err, fault.CodeOf(err))
	}
}

// rawHello speaks the control protocol by hand.
func rawHello(t *testing.T, addr string, h hello) *message {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(controlMagic))
	if err := writeMessage(c, &message{Type: msgHello, Hello: &h}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, err := readMessage(bufio.NewReader(c), maxMessage)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestVersionMismatch(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	m := rawHello(t, addr, hello{Protocol: 99, Config: model.TestConfig{}})
	if m.Type != msgError || m.Error.Code != fault.Version || m.Error.Hint == "" {
		t.Fatalf("got %+v", m)
	}
	m = rawHello(t, addr, hello{Protocol: ProtocolVersion, Config: model.TestConfig{Parallel: 1000}})
	if m.Type != msgError || m.Error.Code != fault.BadConfig {
		t.Fatalf("got %+v", m)
	}
}

// A server must shrug off anything a client sends and keep serving.
func TestHostileClients(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	huge := make([]byte, 4)
	binary.BigEndian.PutUint32(huge, 1<<31)
	junk := [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		[]byte(controlMagic),
		append([]byte(controlMagic), huge...),
		append([]byte(controlMagic), 0, 0, 0, 5, '{', '"', 't'),
		append([]byte(controlMagic), 0, 0, 0, 2, '{', '}'),
		append([]byte(dataMagic), bytes.Repeat([]byte{7}, 18)...),
		[]byte(dataMagic[:4]),
		append(append([]byte(controlMagic), 0, 0, 0, 17), []byte(`{"type":"hello"}`+" ")...),
	}
	for _, j := range junk {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(j)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		var buf [256]byte
		for {
			if _, err := c.Read(buf[:]); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("server kept a hostile connection open: %q", j)
				}
				break
			}
		}
		c.Close()
	}
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{}))
	if err != nil {
		t.Fatalf("server broken after hostile input: %v", err)
	}
	checkRun(t, run)
}

func TestServerShutdown(t *testing.T) {
	addr, stopServer := startServer(t, serve.Limits{})
	// Stopped mid-test, once each end has an interval to report.
	run, err := (&Client{Observer: &bothEnds{f: stopServer}}).Run(context.Background(), addr, quick(model.TestConfig{Duration: 5 * time.Second, Bidir: true}))
	if err != nil {
		t.Fatal(err)
	}
	if run.Ended != "server-shutdown" {
		t.Fatalf("ended %q", run.Ended)
	}
	checkRun(t, run)
	if d := run.Summary[0].Duration.V; d > 3*time.Second {
		t.Fatalf("test ran %v after shutdown", d)
	}
}

func TestClientInterrupt(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted mid-test, once each end has an interval to report.
	run, err := (&Client{Observer: &bothEnds{f: cancel}}).Run(ctx, addr, quick(model.TestConfig{Duration: 5 * time.Second, Reverse: true}))
	if err != nil {
		t.Fatal(err)
	}
	if run.Ended != "interrupted" {
		t.Fatalf("ended %q", run.Ended)
	}
	checkRun(t, run)
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"type":"hello","hello":{"protocol":1,"config":{"parallel":2}}}`))
	f.Add([]byte(`{"type":"interval","interval":{"index":1,"streams":[{"stream":0,"tcp":{"state":"established","snd_wnd":5}}]}}`))
	f.Add([]byte(`{"type":"error","error":{"code":"busy"}}`))
	f.Add([]byte(`{"type":"bye"}`))
	f.Add([]byte{0xff, 0x00})
	f.Add([]byte(`{"type":"hello","hello":{"protocol":1,"config":{"omit_ns":9223372035854775807,"duration_ns":2000000000}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err == nil && m == nil {
			t.Fatal("nil message without error")
		}
		if err != nil && !errors.Is(err, errProtocol) {
			t.Fatalf("error %v not marked as a protocol error", err)
		}
		// Framed, the same bytes must decode identically or fail cleanly.
		var buf bytes.Buffer
		binary.Write(&buf, binary.BigEndian, uint32(len(b)))
		buf.Write(b)
		_, ferr := readMessage(bufio.NewReader(&buf), maxMessage)
		if (ferr == nil) != (err == nil) && len(b) > 0 {
			t.Fatalf("framed decode disagrees: %v vs %v", ferr, err)
		}
		if err == nil && m.Hello != nil {
			cfg := m.Hello.Config
			if cl := fuzzClass(); engine.Normalize(&cfg) == nil && serve.CheckLimits(&cfg, cl, 0) == nil {
				acceptedWithin(t, cfg, cl)
			}
		}
	})
}

// A byte-count test has no duration to check on admission; the server's
// duration limit must end it cleanly, both ends told, bytes still agreeing.
func TestServerLimitEndsByteCount(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{MaxDuration: 400 * time.Millisecond})
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Bytes: 1 << 50, Bidir: true}))
	if err != nil {
		t.Fatal(err)
	}
	if run.Ended != "server-limit" {
		t.Fatalf("ended %q", run.Ended)
	}
	checkRun(t, run)
}

// brokenServer speaks the protocol until the test runs, then vanishes, as a
// crashed or killed server would.
func brokenServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		accept := func(magic string, rest int) net.Conn {
			c, err := ln.Accept()
			if err != nil {
				return nil
			}
			conns = append(conns, c)
			b := make([]byte, magicLen+rest)
			if _, err := io.ReadFull(c, b); err != nil || string(b[:magicLen]) != magic {
				return nil
			}
			return c
		}
		ctl := accept(controlMagic, 0)
		if ctl == nil {
			return
		}
		r := bufio.NewReader(ctl)
		if m, err := readMessage(r, maxClientMessage); err != nil || m.Type != msgHello {
			return
		}
		writeMessage(ctl, &message{Type: msgWelcome, Welcome: &welcome{Protocol: ProtocolVersion, Cookie: make([]byte, cookieLen), StreamKeys: newKeys(1)}})
		if accept(dataMagic, cookieLen+2) == nil {
			return
		}
		if m, err := readMessage(r, maxClientMessage); err != nil || m.Type != msgStart {
			return
		}
		writeMessage(ctl, &message{Type: msgStarted, Started: &started{Setups: make([]model.SocketSetup, 1)}})
		// The time passing is the scenario: the test runs a while, and
		// then the server is gone without a word.
		time.Sleep(300 * time.Millisecond)
	}()
	return ln.Addr().String()
}

func TestServerVanishes(t *testing.T) {
	t.Parallel() // the server runs a while and vanishes: waits on the clock
	run, err := (&Client{}).Run(context.Background(), brokenServer(t), quick(model.TestConfig{Duration: 3 * time.Second}))
	if fault.CodeOf(err) != fault.Aborted {
		t.Fatalf("got %v (code %q), want aborted", err, fault.CodeOf(err))
	}
	if run == nil || run.Ended != "aborted" || len(run.Warnings) == 0 {
		t.Fatalf("partial run must be returned and marked: %+v", run)
	}
}

func TestSocketOptions(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	c := &Client{Dialer: dial.Dialer{Network: "tcp4", Bind: netip.MustParseAddr("127.0.0.1")}}
	run, err := c.Run(context.Background(), addr, quick(model.TestConfig{MSS: 1000, Congestion: "reno", NoDelay: true, Bidir: true}))
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, run)
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		for _, tot := range e.Totals {
			// The client's clamp shapes its SYN, so both directions obey it
			// (the kernel subtracts the timestamp option from the MSS).
			if tot.Final.SndMSS > 1000 || tot.Final.SndMSS < 900 || tot.Final.Congestion != "reno" {
				t.Fatalf("%s stream %d: mss %v cc %q, want ≤ 1000 B and reno", e.Side, tot.Stream, tot.Final.SndMSS, tot.Final.Congestion)
			}
		}
	}
	if host, _, _ := net.SplitHostPort(run.Streams[0].ClientAddr); host != "127.0.0.1" {
		t.Fatalf("bound to %s", run.Streams[0].ClientAddr)
	}
}

// Pacing is a rate the kernel enforces: on loopback, where nothing else
// limits, a 200 Mbit/s pace must measure as about 200 Mbit/s.
func TestPacingRate(t *testing.T) {
	t.Parallel() // paced at 200 Mbit/s, a few percent of a CPU on loopback
	addr, _ := startServer(t, serve.Limits{})
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{
		FQRate: 200 * model.MbitPerSecond, Duration: 2 * time.Second, Omit: 500 * time.Millisecond, Reverse: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := run.Summary[0].Goodput.V
	if got < 170*model.MbitPerSecond || got > 205*model.MbitPerSecond {
		t.Fatalf("goodput %v with a 200 Mbit/s pacing cap", got)
	}
	if r, ok := run.Remote.Totals[0].Final.MaxPacingRate.Get(); !ok || r != 200*model.MbitPerSecond {
		t.Fatalf("max pacing rate %v, want 200 Mbit/s", r)
	}
}

func TestIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (Add(&serve.Server{})).Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	run, err := (&Client{Dialer: dial.Dialer{Network: "tcp6"}}).Run(context.Background(), ln.Addr().String(), quick(model.TestConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, run)
	if !strings.HasPrefix(run.Streams[0].ClientAddr, "[::1]") {
		t.Fatalf("client address %s", run.Streams[0].ClientAddr)
	}
}

func TestTotalStreamsLimit(t *testing.T) {
	t.Parallel() // its running tests are paced; the other is refused
	srv := Add(&serve.Server{Limits: serve.Limits{MaxTotalStreams: 3}, Version: "test"})
	addr, _ := serveOn(t, srv)
	first := make(chan error, 1)
	go func() {
		_, err := (&Client{}).Run(context.Background(), addr, paced(model.TestConfig{Parallel: 2, Duration: 1500 * time.Millisecond}))
		first <- err
	}()
	awaitRunning(t, srv, 1)
	_, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Parallel: 2}))
	if fault.CodeOf(err) != fault.Busy || !strings.Contains(err.Error(), "2 streams running, limit 3") {
		t.Fatalf("second client: %v", err)
	}
	// One more stream still fits.
	if _, err := (&Client{}).Run(context.Background(), addr, paced(model.TestConfig{})); err != nil {
		t.Fatalf("third client: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first client: %v", err)
	}
}

// A timed test that asks for exactly the server's limit is complete, not
// cut short by it.
func TestDurationAtLimit(t *testing.T) {
	t.Parallel() // paced: the limit is a timer, not a load
	addr, _ := startServer(t, serve.Limits{MaxDuration: time.Second})
	run, err := (&Client{}).Run(context.Background(), addr, paced(model.TestConfig{Duration: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if run.Ended != "complete" {
		t.Fatalf("ended %q", run.Ended)
	}
}

// Native UDP tests on loopback: each mode completes, and the receiver
// expects exactly the datagrams the sender sent.
func TestUDPLoopback(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	addr, _ := startServer(t, serve.Limits{})
	for i, cfg := range []model.TestConfig{
		{Protocol: model.UDP, Duration: time.Second, Bitrate: 20 * model.MbitPerSecond},
		{Protocol: model.UDP, Duration: time.Second, Bitrate: 20 * model.MbitPerSecond, Reverse: true},
		{Protocol: model.UDP, Duration: time.Second, Bitrate: 10 * model.MbitPerSecond, Bidir: true, Parallel: 2},
		{Protocol: model.UDP, Bytes: 2 * model.MiB, Bitrate: 50 * model.MbitPerSecond, Length: 8000},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			udpLoopback(t, addr, cfg)
		})
	}
}

// udpLoopback runs one native UDP test and checks its accounts.
func udpLoopback(t *testing.T, addr string, cfg model.TestConfig) {
	start := time.Now()
	run, err := (&Client{Version: "test"}).Run(context.Background(), addr, quick(cfg))
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	// Closing datagrams end the receivers at once: no linger.
	if took := time.Since(start); took > time.Second+engine.Span(&cfg)+engine.UDPLinger/2 {
		t.Errorf("%+v: took %v", cfg, took)
	}
	for _, s := range run.Summary {
		var sent int64
		for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
			for _, tot := range e.Totals {
				if tot.Role == model.Sender && run.Streams[tot.Stream].Direction == s.Direction {
					sent += tot.UDP.Packets
				}
			}
		}
		if s.UDP == nil || s.UDP.Packets != sent || s.UDP.Packets == 0 || s.ReceiverBytes.V > s.SenderBytes.V {
			t.Errorf("%+v %s: sent %d datagrams, the receiver accounts %+v", cfg, s.Direction, sent, s.UDP)
		}
		if cfg.Bytes > 0 && s.SenderBytes.V < cfg.Bytes {
			t.Errorf("byte count: sent %v of %v", s.SenderBytes.V, cfg.Bytes)
		}
	}
}

// A UDP test refuses TCP's options and bad datagram sizes.
func TestUDPConfig(t *testing.T) {
	for _, cfg := range []model.TestConfig{
		{Protocol: model.UDP, Length: 8}, {Protocol: model.UDP, Length: 70000},
		{Protocol: model.UDP, Congestion: "cubic"}, {Protocol: model.UDP, ReadRate: 1e6}, {Protocol: "sctp"},
	} {
		if err := engine.Normalize(&cfg); fault.CodeOf(err) != fault.BadConfig {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	c := model.TestConfig{Protocol: model.UDP}
	if err := engine.Normalize(&c); err != nil || c.Length != engine.DefaultUDPLength {
		t.Errorf("defaults: %v, %+v", err, c)
	}
}

// A UDP receiver's time runs until the sender's closing datagram, so at a
// low rate (a datagram every 117 ms) its rate is the sender's, in both
// directions. Timed from the first datagram to the last, it was a
// datagram's worth (here a tenth) higher.
func TestUDPReceiverTime(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	addr, _ := startServer(t, serve.Limits{})
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			t.Parallel()
			run, err := (&Client{Version: "test"}).Run(context.Background(), addr, model.TestConfig{
				Protocol: model.UDP, Duration: time.Second, Bitrate: 100 * model.KbitPerSecond, Length: 1460, Reverse: reverse})
			if err != nil {
				t.Fatal(err)
			}
			s := run.Summary[0]
			t.Logf("reverse %v: sender %d B at %v, receiver %d B in %v: %v", reverse, s.SenderBytes.V, s.SenderRate, s.ReceiverBytes.V, s.Duration, s.Goodput)
			if s.UDP != nil && s.UDP.Lost > 0 {
				return // a lost datagram is not a time's fault
			}
			if s.SenderBytes != s.ReceiverBytes || math.Abs(float64(s.Goodput.V-s.SenderRate.V)) > 0.02*float64(s.SenderRate.V) {
				t.Errorf("reverse %v: goodput %v against the sender's %v", reverse, s.Goodput, s.SenderRate)
			}
		})
	}
}

// A rate beyond any link, from a flag or a hostile hello, is refused
// before any arithmetic with it: -b 1e99 once throttled a test to
// 5.7 Gbit/s.
func TestRatesOutOfRange(t *testing.T) {
	for _, cfg := range []model.TestConfig{
		{Bitrate: 1e99}, {FQRate: 1e16}, {ReadRate: model.MaxBitrate * 2}, {Protocol: model.UDP, Bitrate: 1e99},
	} {
		if err := engine.Normalize(&cfg); fault.CodeOf(err) != fault.BadConfig {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	if c := (model.TestConfig{Bitrate: model.MaxBitrate}); engine.Normalize(&c) != nil {
		t.Error("the maximum rate itself refused")
	}
}
