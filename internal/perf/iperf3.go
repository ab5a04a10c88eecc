package perf

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// iperf3's control states (iperf_api.h), one signed byte each.
const (
	i3TestStart       = 1
	i3TestRunning     = 2
	i3TestEnd         = 4
	i3ParamExchange   = 9
	i3CreateStreams   = 10
	i3ServerTerminate = 11
	i3ExchangeResults = 13
	i3DisplayResults  = 14
	i3Done            = 16
	i3AccessDenied    = 0xff // -1
	i3ServerError     = 0xfe // -2
)

// i3CookieLen is iperf3's cookie: 36 characters from a–z2–7, then NUL.
const i3CookieLen = 37

// i3Cookie makes a cookie as iperf3's make_cookie does.
func i3Cookie() []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, i3CookieLen)
	_, _ = rand.Read(b[:36])
	for i := range 36 {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	b[36] = 0
	return b
}

// i3Params is the parameters JSON a client sends. iperf3 turns booleans on
// by their presence, so they are pointers sent only when true.
type i3Params struct {
	TCP           *bool  `json:"tcp,omitempty"`
	UDP           *bool  `json:"udp,omitempty"`
	Omit          int    `json:"omit"`
	Time          int    `json:"time"`
	Num           int64  `json:"num"`
	BlockCount    int64  `json:"blockcount"`
	Parallel      int    `json:"parallel"`
	Len           int    `json:"len"`
	Window        int64  `json:"window,omitempty"`
	MSS           int    `json:"MSS,omitempty"`
	Bandwidth     int64  `json:"bandwidth,omitempty"`
	FQRate        int64  `json:"fqrate,omitempty"`
	Congestion    string `json:"congestion,omitempty"`
	Reverse       *bool  `json:"reverse,omitempty"`
	Bidirectional *bool  `json:"bidirectional,omitempty"`
	NoDelay       *bool  `json:"nodelay,omitempty"`
	Counters64    *int   `json:"udp_counters_64bit,omitempty"`
	ServerOutput  *int   `json:"get_server_output,omitempty"`
	ZeroCopy      *int   `json:"zerocopy,omitempty"`
	PacingTimer   int    `json:"pacing_timer"`
	ClientVersion string `json:"client_version"`
}

// i3Results is the results JSON each side sends. Counters may come as -1
// or, from 3.12–3.13, as 18446744073709551615: float64 holds both.
type i3Results struct {
	CPUTotal             float64    `json:"cpu_util_total"`
	CPUUser              float64    `json:"cpu_util_user"`
	CPUSystem            float64    `json:"cpu_util_system"`
	SenderHasRetransmits float64    `json:"sender_has_retransmits"`
	CongestionUsed       string     `json:"congestion_used,omitempty"`
	Streams              []i3Stream `json:"streams"`
	// The server's own output, for a client that asked for it
	// (--get-server-output): text, or the server's -J document.
	ServerOutputText string          `json:"server_output_text,omitempty"`
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
}

type i3Stream struct {
	ID          int     `json:"id"`
	Bytes       float64 `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      float64 `json:"errors"`
	Packets     float64 `json:"packets"`
	// The omitted start's share of errors and packets (3.14+), both or
	// neither: 3.21 takes a missing pair to mean every datagram was in
	// the omitted start.
	OmittedErrors  *float64 `json:"omitted_errors,omitempty"`
	OmittedPackets *float64 `json:"omitted_packets,omitempty"`
	StartTime      float64  `json:"start_time"`
	EndTime        float64  `json:"end_time"`
}

// i3StreamID numbers streams as iperf3 does: 1, 3, 4, 5, … (the gap is a
// historical quirk both ends keep).
func i3StreamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// maxI3Results bounds a results message: iperf3 has no cap, but a
// hundred streams' results are a few kB.
const maxI3Results = 4 << 20

// i3Error turns an iperf3 SERVER_ERROR's codes into an Error.
func i3Error(ierrno, errno int32) error {
	msg := fmt.Sprintf("iperf3 server error %d (errno %d)", ierrno, errno)
	switch ierrno {
	case 6:
		msg = "iperf3 server refused the number of streams"
	case 37, 160:
		msg = "iperf3 server refused the test's duration (--server-max-duration)"
	}
	return &Error{Code: CodeAborted, Msg: msg, Hint: "see the iperf3 server's output"}
}

// i3Conn is the client's side of an iperf3 control connection.
type i3Conn struct {
	c net.Conn
}

func (k *i3Conn) state(timeout time.Duration) (byte, error) {
	if timeout > 0 {
		_ = k.c.SetReadDeadline(time.Now().Add(timeout))
		defer k.c.SetReadDeadline(time.Time{})
	}
	var b [1]byte
	if _, err := io.ReadFull(k.c, b[:]); err != nil {
		return 0, err
	}
	if b[0] == i3ServerError {
		var codes [8]byte
		if _, err := io.ReadFull(k.c, codes[:]); err != nil {
			return 0, i3Error(-1, 0)
		}
		return 0, i3Error(int32(binary.BigEndian.Uint32(codes[:4])), int32(binary.BigEndian.Uint32(codes[4:])))
	}
	return b[0], nil
}

// expect reads states until want, failing on the ones that end a test.
func (k *i3Conn) expect(want byte, timeout time.Duration) error {
	s, err := k.state(timeout)
	switch {
	case err != nil:
		return err
	case s == want:
		return nil
	case s == i3AccessDenied:
		return errorf(CodeBusy, "iperf3 servers run one test at a time; try again, or use tcpscope server", "the iperf3 server is busy")
	case s == i3ServerTerminate:
		return errorf(CodeShutdown, "", "the iperf3 server was stopped")
	}
	return errorf(CodeProtocol, "is it an iperf3 server?", "iperf3 server sent state %d, expected %d", int8(s), want)
}

func (k *i3Conn) sendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	_, err = k.c.Write(msg)
	return err
}

// recvJSON reads one length-prefixed JSON message of at most max bytes.
func (k *i3Conn) recvJSON(v any, max uint32, timeout time.Duration) error {
	_ = k.c.SetReadDeadline(time.Now().Add(timeout))
	defer k.c.SetReadDeadline(time.Time{})
	var n [4]byte
	if _, err := io.ReadFull(k.c, n[:]); err != nil {
		return err
	}
	l := binary.BigEndian.Uint32(n[:])
	if l > max {
		return errorf(CodeProtocol, "", "iperf3 message of %d bytes, at most %d", l, max)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(k.c, b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &Error{Code: CodeProtocol, Msg: "iperf3 message is not JSON", Err: err}
	}
	return nil
}

// RunIperf3 runs a TCP test against a stock iperf3 server (3.x): iperf3's
// control protocol, with tcpscope's own client-side kernel samples. The
// server's side is what iperf3 returns in its results: bytes, duration and
// retransmissions per stream, without intervals. Tests run by duration
// (whole seconds, as iperf3 takes them).
func (c *Client) RunIperf3(ctx context.Context, addr string, cfg model.TestConfig) (*model.Run, error) {
	if err := Normalize(&cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Bytes > 0 && (cfg.Reverse || cfg.Bidir) && cfg.IsUDP():
		return nil, errorf(CodeBadConfig, "use -t with -u -R or -u --bidir against iperf3 servers", "against an iperf3 server, a UDP test this client receives cannot end on -n or -k yet")
	case c.Blocks > 0 && model.Bytes(c.Blocks)*cfg.Length != cfg.Bytes:
		return nil, errorf(CodeBadConfig, "", "a block count of %d blocks of %d B is not the %d B to send", c.Blocks, cfg.Length, cfg.Bytes)
	case cfg.Duration%time.Second != 0 || cfg.Omit%time.Second != 0:
		return nil, errorf(CodeBadConfig, "use whole seconds for -t and -O", "iperf3 takes -t and -O in whole seconds")
	case cfg.Length > model.MiB:
		return nil, errorf(CodeBadConfig, "use -l up to 1M", "iperf3 servers take writes up to 1 MiB")
	case cfg.ReadRate > 0:
		return nil, errorf(CodeBadConfig, "drop --read-rate", "--read-rate needs a tcpscope server")
	}
	run := c.newRun(addr, cfg)
	run.Remote.Version = "iperf3"
	run.Remote.NoKernelState = true

	cc, err := c.dialer(nil, "").DialContext(ctx, c.network(), addr)
	if err != nil {
		return nil, classifyDial(err, addr)
	}
	defer cc.Close()
	_ = cc.(*net.TCPConn).SetNoDelay(true)
	// Until the test runs, an interrupt breaks the handshake off; once it
	// runs, it ends the test the iperf3 way (below) and keeps the results.
	stopWatch := context.AfterFunc(ctx, func() { cc.SetDeadline(time.Unix(1, 0)) })
	defer stopWatch()
	k := &i3Conn{c: cc}
	cookie := i3Cookie()
	run.Cookie = string(cookie[:i3CookieLen-1])
	if _, err := cc.Write(cookie); err != nil {
		return nil, &Error{Code: CodeAborted, Msg: "send cookie", Err: err}
	}
	if err := k.expect(i3ParamExchange, handshakeTimeout); err != nil {
		return nil, i3Wrap(err, addr)
	}
	yes, one := true, 1
	p := i3Params{Omit: int(cfg.Omit / time.Second), Time: int(cfg.Duration / time.Second), Num: int64(cfg.Bytes), BlockCount: c.Blocks, Parallel: cfg.Parallel,
		Len: int(cfg.Length), Window: int64(cfg.Window), MSS: cfg.MSS, Bandwidth: int64(cfg.Bitrate), FQRate: int64(cfg.FQRate),
		Congestion: cfg.Congestion, PacingTimer: 1000, ClientVersion: "tcpscope " + c.Version}
	// iperf3 turns booleans on by their presence: send only the true ones.
	if c.Blocks > 0 {
		p.Num = 0 // as iperf3's client: one count or the other
	}
	if cfg.IsUDP() {
		p.UDP = &yes
	} else {
		p.TCP = &yes
	}
	if cfg.Counters64 {
		p.Counters64 = &one
	}
	if c.ServerOutput {
		p.ServerOutput = &one
	}
	if cfg.Reverse {
		p.Reverse = &yes
	}
	if cfg.Bidir {
		p.Bidirectional = &yes
	}
	if cfg.NoDelay {
		p.NoDelay = &yes
	}
	if cfg.ZeroCopy {
		// A server that sends (-R, --bidir) sends so too.
		p.ZeroCopy = &one
	}
	if err := k.sendJSON(p); err != nil {
		return nil, &Error{Code: CodeAborted, Msg: "send parameters", Err: err}
	}
	if err := k.expect(i3CreateStreams, handshakeTimeout); err != nil {
		return nil, i3Wrap(err, addr)
	}
	// Streams in iperf3's order: in --bidir the sending ones first, as
	// Directions lists them.
	var streams []*stream
	defer func() {
		for _, s := range streams {
			s.close()
		}
	}()
	for i, d := range cfg.Directions() {
		role := model.RoleOf(model.ClientSide, d)
		if cfg.IsUDP() {
			// iperf3's server binds its next UDP listener after each
			// answer: one stream after another.
			uc, err := c.dialUDP(ctx, addr, &cfg, role, i3UDPHello, func(b []byte) bool { return len(b) == 4 })
			if err != nil {
				return nil, err
			}
			streams = append(streams, &stream{id: i, role: role, udp: newUDPFlow(uc, cfg.Counters64, false)})
			run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: uc.LocalAddr().String(), ServerAddr: addr})
			continue
		}
		dc, err := c.dialer(&cfg, role).DialContext(ctx, c.network(), addr)
		if err != nil {
			return nil, classifyDial(err, addr)
		}
		tc := dc.(*net.TCPConn)
		streams = append(streams, &stream{id: i, role: role, conn: tc})
		_ = tc.SetNoDelay(cfg.NoDelay)
		if _, err := tc.Write(cookie); err != nil {
			return nil, &Error{Code: CodeAborted, Msg: fmt.Sprintf("open stream %d", i), Err: err}
		}
		run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: tc.LocalAddr().String(), ServerAddr: addr})
	}
	if err := k.expect(i3TestStart, handshakeTimeout); err != nil {
		return nil, i3Wrap(err, addr)
	}
	if err := k.expect(i3TestRunning, handshakeTimeout); err != nil {
		return nil, i3Wrap(err, addr)
	}
	// The server's clock started when it sent TEST_RUNNING, and its
	// senders with it: this end's runs from its arrival, not from when
	// the streams below are set going, a millisecond or two later.
	running := time.Now()
	if !stopWatch() {
		return nil, &Error{Code: CodeAborted, Msg: "interrupted before the test started", Err: ctx.Err()}
	}
	for i := range run.Streams {
		setup, err := setupOf(streams[i])
		if err != nil {
			return nil, wrapSocket(err, "read socket options")
		}
		run.Streams[i].Client = &setup
	}
	if c.Observer != nil {
		c.Observer.Begin(run)
	}
	e := newEnd(model.ClientSide, cfg, streams, func(iv model.Interval) {
		if c.Observer != nil {
			c.Observer.Interval(model.ClientSide, &iv)
		}
	})
	e.peerCloses = true
	e.t0 = running

	// The client ends an iperf3 test with TEST_END: when its time is up,
	// its senders have sent their count, its receivers have read theirs
	// (as iperf3's client counts a test it receives), or on interrupt.
	// The server then closes its streams, which ends ours.
	states := make(chan byte, 4)
	ctlErr := make(chan error, 1)
	go func() {
		for {
			s, err := k.state(0)
			if err != nil {
				e.finishReceivers()
				ctlErr <- err
				return
			}
			if s == i3ExchangeResults && cfg.IsUDP() {
				// The server has stopped sending: as iperf3's client,
				// UDP receivers count until now, no stream closing to
				// tell them. What it sent before left before this
				// message did; a round trip more lets stragglers land.
				e.drainReceivers(max(controlRTT(cc), time.Millisecond))
			}
			states <- s
			// The results follow EXCHANGE_RESULTS on this connection:
			// the test's flow reads them (and what comes after).
			if s == i3ExchangeResults || s == i3DisplayResults {
				return
			}
		}
	}()
	// The server closes its streams when it has our TEST_END; receivers
	// read to that close. Should it not come, stop reading after a grace.
	grace := time.AfterFunc(time.Hour, e.finishReceivers)
	grace.Stop()
	defer grace.Stop()
	var endOnce sync.Once
	endTest := func() {
		endOnce.Do(func() {
			e.tellEnd()
			_, _ = cc.Write([]byte{i3TestEnd})
			grace.Reset(finishGrace)
		})
	}
	var interrupted atomic.Bool
	endNow := make(chan struct{})
	var endNowOnce sync.Once
	stopTest := func() { endNowOnce.Do(func() { close(endNow) }) }
	if goal := i3ReadGoal(cfg); goal != nil {
		e.onRead = func(n int) {
			if goal.add(n) {
				stopTest()
			}
		}
	}
	var senders []*stream
	for _, s := range streams {
		if s.role == model.Sender {
			senders = append(senders, s)
		}
	}
	runDone := make(chan struct{})
	sent := make(chan struct{}) // every sender has stopped writing
	go func() {
		for _, s := range senders {
			select {
			case <-s.done:
			case <-runDone: // it never started
			}
		}
		close(sent)
	}()
	var ownEnd <-chan struct{} // senders that end the test themselves
	if len(senders) > 0 {
		ownEnd = sent
	}
	// A test broken off does not wait for the server to read.
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		w := newPeerWindows(senders, cfg.Bidir)
		tick := time.NewTicker(windowPoll)
	wait:
		for {
			select {
			case <-endNow:
				break wait
			case <-ownEnd:
				break wait
			case <-tick.C:
				w.poll()
			}
		}
		tick.Stop()
		e.stop()
		<-sent
		if !interrupted.Load() {
			// iperf3's server stops counting when TEST_END arrives:
			// what is in flight, queued here or unread there would go
			// uncounted (esnet/iperf#382).
			w.awaitRead(waitCtx)
		}
		endTest()
	}()
	timer := time.AfterFunc(time.Hour, stopTest)
	timer.Stop()
	if cfg.Duration > 0 {
		timer = time.AfterFunc(time.Until(running.Add(cfg.Omit+cfg.Duration)), stopTest)
	}
	interrupt := context.AfterFunc(ctx, func() { interrupted.Store(true); stopTest() })
	runErr := e.run(context.Background())
	close(runDone)
	if runErr != nil {
		cancelWait()
	}
	// The streams may all end before anything above ends the test (the
	// senders' own clock, a broken stream): the server still needs to
	// hear TEST_END, or it never asks for results.
	stopTest()
	<-ended
	timer.Stop()
	interrupt()
	run.Client = e.report(c.Version)

	// Results: wait for EXCHANGE_RESULTS, send ours, read the server's.
	var server i3Results
	err = func() error {
		for {
			select {
			case s := <-states:
				switch s {
				case i3ExchangeResults:
					ours := i3ResultsOf(run.Client.Totals)
					if ours.CongestionUsed == "" && !cfg.IsUDP() && len(run.Streams) > 0 && run.Streams[0].Client != nil {
						// iperf3 reports its sockets' algorithm whatever
						// their role; a receiving client has no sender's
						// final sample to take it from.
						ours.CongestionUsed = run.Streams[0].Client.Congestion
					}
					if u := run.Client.CPU; u != nil {
						ours.CPUTotal, ours.CPUUser, ours.CPUSystem = u.Total, u.User, u.System
					}
					if err := k.sendJSON(ours); err != nil {
						return err
					}
					return k.recvJSON(&server, maxI3Results, finishGrace)
				case i3AccessDenied, i3ServerTerminate:
					return errorf(CodeAborted, "", "the iperf3 server ended the test (state %d)", int8(s))
				}
			case err := <-ctlErr:
				return err
			case <-time.After(finishGrace):
				return errorf(CodeTimeout, "", "the iperf3 server sent no results")
			}
		}
	}()
	if err == nil {
		if s, serr := k.state(5 * time.Second); serr == nil && s == i3DisplayResults {
			_, _ = cc.Write([]byte{i3Done})
		}
		run.Remote.Totals = serverTotals(&server, run)
		if w := uncounted(run); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
		// iperf3 always reports its process's CPU use (cpu_util), and
		// for TCP the congestion control its sockets used.
		run.Remote.CPU = &model.CPUUse{Total: server.CPUTotal, User: server.CPUUser, System: server.CPUSystem}
		if !cfg.IsUDP() {
			run.Remote.Congestion = server.CongestionUsed
		}
		run.ServerOutput = server.ServerOutputText
		if len(server.ServerOutputJSON) > 0 {
			run.ServerOutput = string(server.ServerOutputJSON)
		}
	} else {
		run.Warnings = append(run.Warnings, "the iperf3 server's results are missing: "+err.Error())
	}
	run.Ended = "complete"
	if interrupted.Load() {
		run.Ended = "interrupted"
	}
	run.Summary = model.Summarize(run)
	if runErr == nil {
		runErr = err
	}
	if runErr != nil {
		run.Ended = "aborted"
		if CodeOf(runErr) == "" {
			runErr = &Error{Code: CodeAborted, Msg: "iperf3 test broke off", Err: runErr}
		}
		return run, runErr
	}
	return run, nil
}

// i3Wrap names the server in a handshake error.
func i3Wrap(err error, addr string) error {
	var ne net.Error
	switch {
	case CodeOf(err) != "":
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return errorf(CodeTimeout, "is "+addr+" an iperf3 server?", "no answer from %s", addr)
	case errors.Is(err, io.EOF):
		return errorf(CodeProtocol, "is "+addr+" an iperf3 server?", "%s closed the connection", addr)
	}
	return &Error{Code: CodeAborted, Msg: "iperf3 control connection", Err: err}
}

// i3ResultsOf is the results message of one end, client or server: per
// stream the bytes its application moved in the measured period and, for
// its senders, the retransmissions.
func i3ResultsOf(totals []model.StreamTotal) i3Results {
	r := i3Results{SenderHasRetransmits: -1}
	for _, t := range totals {
		s := i3Stream{ID: i3StreamID(t.Stream), Bytes: float64(t.Bytes), Retransmits: -1, EndTime: t.Duration.Seconds()}
		if u := t.UDP; u != nil {
			// A sender counts datagrams sent; a receiver those expected,
			// lost ("errors") and its jitter in seconds. iperf3 counts
			// the omitted start in, and says how much of it it was.
			var o model.Datagrams
			if t.UDPOmitted != nil {
				o = *t.UDPOmitted
			}
			oe, op := float64(o.Lost), float64(o.Packets)
			s.Packets = float64(u.Packets) + op
			s.Errors = float64(u.Lost) + oe
			s.Jitter = u.Jitter.Seconds()
			s.OmittedErrors, s.OmittedPackets = &oe, &op
			r.Streams = append(r.Streams, s)
			continue
		}
		if n, ok := t.RetransSegs.Get(); ok && t.Role == model.Sender {
			s.Retransmits = float64(n)
			r.SenderHasRetransmits = 1
		}
		if t.Final != nil && t.Role == model.Sender {
			r.CongestionUsed = t.Final.Congestion
		}
		r.Streams = append(r.Streams, s)
	}
	return r
}

// serverTotals turns the server's results into its end's totals, matched
// by stream id.
func serverTotals(r *i3Results, run *model.Run) []model.StreamTotal {
	var out []model.StreamTotal
	for _, s := range r.Streams {
		idx := -1
		for i := range run.Streams {
			if i3StreamID(i) == s.ID {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		role := model.RoleOf(model.ServerSide, run.Streams[idx].Direction)
		d := time.Duration((s.EndTime - s.StartTime) * float64(time.Second))
		t := model.StreamTotal{Stream: idx, Role: role, Bytes: model.Bytes(s.Bytes), AllBytes: model.Bytes(s.Bytes), Duration: d}
		if d > 0 {
			t.Rate = model.RateOf(t.Bytes, d.Seconds())
		}
		if role == model.Sender && r.SenderHasRetransmits == 1 && s.Retransmits >= 0 && s.Retransmits < math.MaxUint32 {
			t.RetransSegs = model.Some(uint32(s.Retransmits))
		}
		if run.Config.IsUDP() {
			// iperf3 counts the omitted start in (3.14+ says how much).
			packets, errs := s.Packets, s.Errors
			if s.OmittedPackets != nil && s.OmittedErrors != nil {
				packets, errs = packets-*s.OmittedPackets, errs-*s.OmittedErrors
			} else if own := ownTotal(run, idx); own != nil && own.UDPOmitted != nil {
				// Older servers do not say: this end's own omitted count
				// stands in for theirs, as iperf3's client does.
				packets -= float64(own.UDPOmitted.Packets)
			}
			t.UDP = &model.Datagrams{Packets: int64(packets)}
			if role == model.Receiver {
				t.UDP.Lost, t.UDP.Jitter = int64(max(errs, 0)), time.Duration(s.Jitter*float64(time.Second))
			}
		}
		out = append(out, t)
	}
	return out
}

// ownTotal is this end's total for stream idx.
func ownTotal(run *model.Run, idx int) *model.StreamTotal {
	for i := range run.Client.Totals {
		if run.Client.Totals[i].Stream == idx {
			return &run.Client.Totals[i]
		}
	}
	return nil
}

// The pace of watching a stock server's windows: while the test runs,
// for their largest (what an emptied receive buffer advertises); once the
// senders stop, for the acknowledgement of the last byte and the window's
// reopening.
const (
	windowPoll = 10 * time.Millisecond
	drainPoll  = time.Millisecond
)

// The wait, past the acknowledgement of a stream's last byte, for the
// server's application to read what its kernel holds is bounded: every
// moment of it lengthens the server's time for the stream (it ends at
// TEST_END) and not the sender's (it ends when writing stopped), so the
// two ends' rates drift apart by the wait's share of the test. At most
// readWaitShare of the stream's writing time, and at most maxReadWait.
const (
	readWaitShare = 0.01
	maxReadWait   = time.Second
)

// readGrace is the wait, past the acknowledgement of a stream's last
// byte and its window back at its largest, for a server's read loop to
// take the bytes the window's scale hides: a turn of its loop.
const readGrace = 2 * time.Millisecond

// peerWindows follows the window a stock iperf3 server advertises on each
// sending TCP stream (tcp_info's snd_wnd): it shrinks by what the server's
// kernel holds unread, and reopens as its application reads.
type peerWindows struct {
	streams []*stream
	max     []model.Bytes
	// bounded: the whole wait, the acknowledgements' too, is bounded by
	// readWaitShare. A server that also sends (--bidir) reads slowly once
	// this end stops sending, its one thread writing up to ten blocks
	// for each it reads, and its time for what it receives runs on until
	// TEST_END: waiting for every acknowledgement set its clock up to 3%
	// past this end's (10 runs at loopback speed), and it still had not
	// read all.
	bounded bool
}

func newPeerWindows(senders []*stream, bounded bool) *peerWindows {
	w := &peerWindows{bounded: bounded}
	for _, s := range senders {
		if s.conn != nil {
			w.streams = append(w.streams, s)
		}
	}
	w.max = make([]model.Bytes, len(w.streams))
	return w
}

// poll notes each stream's window.
func (w *peerWindows) poll() {
	for i, s := range w.streams {
		if smp, err := tcpinfo.Read(s.conn); err == nil {
			w.note(i, &smp)
		}
	}
}

func (w *peerWindows) note(i int, smp *model.Sample) {
	if v, ok := smp.SndWnd.Get(); ok && v > w.max[i] {
		w.max[i] = v
	}
}

// awaitRead waits, once the senders have stopped, until the server has
// every byte and its application has likely read them: iperf3 stops
// counting at TEST_END, and what is then in flight, queued here or
// unread there goes uncounted (esnet/iperf#382). First every byte is
// acknowledged (the send queue empties; a stream whose acknowledgements
// stall for stallLimit is given up). Then the server's window reopens as
// its application reads: a stream is done when its window is back to its
// largest and readGrace has passed since its last byte was acknowledged
// (the window's scale hides the last few bytes unread). Linux receivers
// announce a reopening only while the window is under half its ceiling,
// so a window may stay short though all was read;
// its shortfall is what was unread at its last announcement, and the
// application reads it at the stream's rate or faster: a stream is done
// once that time (and two round trips) has passed since the window last
// moved, and at most readWaitShare of its writing time after its last
// byte was acknowledged. (A server that sends too, --bidir, reads far
// slower once this end stops sending: its loop writes up to ten blocks
// for each one it reads. There the bound decides, from the start of the
// wait: see peerWindows.bounded.) Without snd_wnd
// (kernels before 5.4), the acknowledgement is all there is to wait for.
func (w *peerWindows) awaitRead(ctx context.Context) {
	type progress struct {
		done           bool
		acked          model.Bytes // bytes acknowledged, and since when
		ackedSince     time.Time
		allAcked       time.Time
		wnd            model.Bytes // the window, once all is acknowledged, and since when
		wndSince       time.Time
		bytesPerSecond float64
		budget         time.Duration
	}
	begin := time.Now()
	ps := make([]progress, len(w.streams))
	for i, s := range w.streams {
		// The stream's writing, done by now.
		if d := s.finished.Seconds(); d > 0 {
			ps[i].bytesPerSecond = float64(s.moved.Load()) / d
		}
		ps[i].budget = min(time.Duration(float64(s.finished)*readWaitShare), maxReadWait)
	}
	for {
		pending := false
		now := time.Now()
		for i, s := range w.streams {
			p := &ps[i]
			if p.done {
				continue
			}
			smp, err := tcpinfo.Read(s.conn)
			q, qok := smp.SendQ.Get()
			if err != nil || !qok {
				p.done = true // nothing to tell by
				continue
			}
			w.note(i, &smp)
			if q > 0 {
				if w.bounded && now.Sub(begin) >= p.budget {
					p.done = true
					continue
				}
				if a := smp.BytesAcked.V; p.ackedSince.IsZero() || a != p.acked {
					p.acked, p.ackedSince = a, now
				} else if now.Sub(p.ackedSince) >= stallLimit {
					p.done = true
					continue
				}
				pending = true
				continue
			}
			if p.allAcked.IsZero() {
				p.allAcked = now
			}
			wnd, ok := smp.SndWnd.Get()
			if !ok || p.bytesPerSecond == 0 {
				p.done = true
				continue
			}
			if wnd >= w.max[i] {
				// The window moves in steps of its scale (1 KiB with a
				// 32 MiB buffer), so back at its largest it may still
				// hide a few bytes unread: the tail of the server's
				// last read, which its loop takes on its next turn,
				// microseconds later (a stock server left 53 bytes of
				// 1.49 GB uncounted without this wait).
				if now.Sub(p.allAcked) >= min(readGrace, p.budget) {
					p.done = true
					continue
				}
				pending = true
				continue
			}
			if p.wndSince.IsZero() || wnd != p.wnd {
				p.wnd, p.wndSince = wnd, now
			}
			unread := float64(w.max[i]-wnd) / p.bytesPerSecond
			due := p.wndSince.Add(time.Duration(unread*float64(time.Second)) + 2*smp.RTT)
			if due.Before(p.allAcked.Add(readGrace)) {
				due = p.allAcked.Add(readGrace) // the window's scale hides bytes here too
			}
			if now.After(due) || now.Sub(p.allAcked) >= p.budget {
				p.done = true
				continue
			}
			pending = true
		}
		if !pending {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(drainPoll):
		}
	}
}

// readGoal is the bytes a client receiving a byte or block count test
// reads before it ends the test, as iperf3's client does. A block count
// is counted in bytes too, Blocks × Length: iperf3's client counts each
// read as a block, and a read that catches part of a block (one of its
// segments still on the way) makes it end a few blocks short of the
// count, more so on a busy machine.
type readGoal struct {
	want int64
	got  atomic.Int64
}

// i3ReadGoal is the goal of a TCP test whose client receives a count (-n
// or -k with -R or --bidir); nil when none.
func i3ReadGoal(cfg model.TestConfig) *readGoal {
	if cfg.Bytes == 0 || !(cfg.Reverse || cfg.Bidir) || cfg.IsUDP() {
		return nil
	}
	return &readGoal{want: int64(cfg.Bytes)}
}

// add counts a read of n bytes, and reports whether the goal is met.
func (g *readGoal) add(n int) bool { return g.got.Add(int64(n)) >= g.want }

// uncounted says when a stock iperf3 server counted fewer bytes of a TCP
// test than were sent. It stops reading at TEST_END, and what its
// application had not read by then is never counted, even when its
// kernel has it all (esnet/iperf#382): only its window tells the sender
// how far it has read, and not always (awaitRead). With -O each end
// counts from its own omit mark, and the counts differ by design.
func uncounted(run *model.Run) string {
	if run.Config.IsUDP() || run.Config.Omit > 0 {
		return ""
	}
	var sent, counted model.Bytes
	for _, t := range run.Client.Totals {
		if t.Role == model.Sender {
			sent += t.Bytes
		}
	}
	for _, t := range run.Remote.Totals {
		if t.Role == model.Receiver {
			counted += t.Bytes
		}
	}
	if counted >= sent {
		return ""
	}
	return fmt.Sprintf("the iperf3 server counted %s of the %s sent: it stops reading when the test ends, and what its application had not yet read by then goes uncounted (iperf3's protocol; tcpscope ends the test once every byte is acknowledged and the server's window has reopened, waiting for that at most %.0f%% of the test); the headline is what it counted",
		counted.Decimal(), sent.Decimal(), 100*readWaitShare)
}

// controlRTT is the smoothed RTT of the control connection, 0 when it
// cannot be read.
func controlRTT(c net.Conn) time.Duration {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	smp, err := tcpinfo.Read(tc)
	if err != nil {
		return 0
	}
	return smp.RTT
}
