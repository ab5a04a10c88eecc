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
	case cfg.Bytes > 0 && (cfg.Reverse || cfg.Bidir):
		return nil, errorf(CodeBadConfig, "use -t with -R or --bidir against iperf3 servers", "iperf3 counts -n at the sender; this client ends tests it sends")
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
	p := i3Params{Omit: int(cfg.Omit / time.Second), Time: int(cfg.Duration / time.Second), Num: int64(cfg.Bytes), Parallel: cfg.Parallel,
		Len: int(cfg.Length), Window: int64(cfg.Window), MSS: cfg.MSS, Bandwidth: int64(cfg.Bitrate), FQRate: int64(cfg.FQRate),
		Congestion: cfg.Congestion, PacingTimer: 1000, ClientVersion: "tcpscope " + c.Version}
	// iperf3 turns booleans on by their presence: send only the true ones.
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
			uc, err := c.dialUDP(ctx, addr, &cfg, role, i3UDPHello, nil)
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

	// The client ends an iperf3 test: TEST_END when the time is up (or on
	// interrupt); the server then closes its streams, which ends ours.
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
	var interrupted atomic.Bool
	var endOnce sync.Once
	endTest := func() { endOnce.Do(func() { _, _ = cc.Write([]byte{i3TestEnd}) }) }
	// When the time is up: TEST_END. UDP receivers read on until the
	// server answers it (above). A byte-count test ends when its senders
	// have sent (below).
	timeUp := func() {
		e.stop()
		endTest()
	}
	timer := time.AfterFunc(time.Hour, timeUp)
	timer.Stop()
	if cfg.Duration > 0 {
		timer = time.AfterFunc(cfg.Omit+cfg.Duration, timeUp)
	}
	interrupt := context.AfterFunc(ctx, func() { interrupted.Store(true); timeUp() })
	// The server closes its streams when it has our TEST_END; receivers
	// read to that close. Should it not come, stop reading after a grace.
	graceTimer := time.AfterFunc(cfg.Omit+cfg.Duration+finishGrace, e.finishReceivers)
	defer graceTimer.Stop()
	runErr := e.run(context.Background())
	timer.Stop()
	interrupt()
	if cfg.Bytes > 0 && !cfg.IsUDP() && runErr == nil && !interrupted.Load() {
		// iperf3's server stops counting when TEST_END arrives: what is
		// still queued here or in flight would go uncounted
		// (esnet/iperf#382). Let the server's kernel have every byte
		// first.
		drainSenders(ctx, streams)
	}
	// The engine's own clock may end the streams a moment before the
	// timer above fires (and is stopped): the server still needs to hear
	// TEST_END, or it never asks for results.
	endTest()
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

// drainPoll is how often drainSenders looks at the send queues.
const drainPoll = time.Millisecond

// drainSenders waits until the peer has acknowledged every byte written
// on the sending TCP streams (their SIOCOUTQ is empty), giving up on a
// stream once nothing has been acknowledged for stallLimit, or when ctx
// ends.
func drainSenders(ctx context.Context, streams []*stream) {
	for _, s := range streams {
		if s.role != model.Sender || s.conn == nil {
			continue
		}
		last, since := int64(-1), time.Now()
		for {
			smp, err := tcpinfo.Read(s.conn)
			q, ok := smp.SendQ.Get()
			if err != nil || !ok || q == 0 {
				break
			}
			if a := int64(smp.BytesAcked.V); a != last {
				last, since = a, time.Now()
			} else if time.Since(since) >= stallLimit {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(drainPoll):
			}
		}
	}
}

// uncounted says when a stock iperf3 server counted fewer bytes of a
// byte-count TCP test than were sent. It stops reading at TEST_END, and
// what its application had not read by then is never counted, even when
// its kernel has it all (esnet/iperf#382): nothing in TCP tells the
// sender how far the server's application has read.
func uncounted(run *model.Run) string {
	if run.Config.Bytes == 0 || run.Config.IsUDP() {
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
	return fmt.Sprintf("the iperf3 server counted %s of the %s sent: it stops reading when the test ends, and what its application had not yet read by then goes uncounted (iperf3's protocol; tcpscope ends the test only once every byte is acknowledged); the headline is what it counted",
		counted.Decimal(), sent.Decimal())
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
