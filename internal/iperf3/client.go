package iperf3

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
)

// Client runs tests against stock iperf3 servers (3.x): iperf3's control
// protocol, with tcpscope's own client-side kernel samples.
type Client struct {
	// Dialer opens the connections: address family, --bind, and the
	// connect timeout, as a native client's.
	Dialer dial.Dialer
	// Version is the client's, in the run and in what the server is
	// told (its client_version).
	Version string
	// Observer, when set, sees the test while it runs.
	Observer model.Observer
	// Now is the wall clock for the run's start stamp (default
	// time.Now).
	Now func() time.Time
	// ServerOutput asks the server for its own output
	// (--get-server-output).
	ServerOutput bool
	// Blocks is -k: the server is told the count in blocks, as iperf3's
	// client tells it; the test's byte count is Blocks blocks of its
	// length. 0 for none.
	Blocks int64
	// fallback: the test falls back from the native protocol (Fallback),
	// and says so in a warning from its start.
	fallback bool
}

// newRun starts the record of a test against addr, stamped now.
func (c *Client) newRun(addr string, cfg model.TestConfig) *model.Run {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return model.NewRun(addr, cfg, now(), c.Version)
}

// fallbackWarning is the warning of a test that fell back to iperf3's
// protocol.
const fallbackWarning = "the server is a stock iperf3: the test used iperf3's protocol, and the server's side is what iperf3 reports (no kernel samples)"

// Fallback runs the test with iperf3's protocol against a server that a
// native test found to be a stock iperf3 (perf.ErrIperf3Server). The
// server may still be dropping the native client's connection (it runs
// one test at a time, and re-creates its listener after a failed one):
// an attempt that gets no test started is retried briefly.
func (c *Client) Fallback(ctx context.Context, addr string, cfg model.TestConfig) (*model.Run, error) {
	fc := *c
	fc.fallback = true
	c = &fc
	var run *model.Run
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return nil, &fault.Error{Code: fault.Aborted, Msg: "interrupted while connecting to " + addr, Err: ctx.Err()}
			}
		}
		run, err = c.Run(ctx, addr, cfg)
		// Busy, or reset or refused while it re-creates its listener
		// after our first connection (it answered a moment ago, so a
		// refusal is that window): nothing ran yet, try again.
		if run != nil || err == nil {
			break
		}
		if code := fault.CodeOf(err); code != fault.Busy && code != fault.Aborted && code != fault.Protocol && code != fault.Refused {
			break
		}
	}
	return run, err
}

// check refuses what a stock iperf3 server cannot run.
func (c *Client) check(cfg *model.TestConfig) error {
	if err := engine.Normalize(cfg); err != nil {
		return err
	}
	switch {
	case cfg.Bytes > 0 && (cfg.Reverse || cfg.Bidir) && cfg.IsUDP():
		return fault.Errorf(fault.BadConfig, "use {duration_ns} with {udp} {reverse} or {udp} {bidir} against iperf3 servers", "against an iperf3 server, a UDP test this client receives cannot end on -n or -k yet")
	case c.Blocks > 0 && model.Bytes(c.Blocks)*cfg.Length != cfg.Bytes:
		return fault.Errorf(fault.BadConfig, "", "a block count of %d blocks of %d B is not the %d B to send", c.Blocks, cfg.Length, cfg.Bytes)
	case cfg.Duration%time.Second != 0 || cfg.Omit%time.Second != 0:
		return fault.Errorf(fault.BadConfig, "use whole seconds for {duration_ns} and {omit_ns}", "iperf3 takes -t and -O in whole seconds")
	case cfg.Length > model.MiB:
		return fault.Errorf(fault.BadConfig, "use {length} up to 1M", "iperf3 servers take writes up to 1 MiB")
	case cfg.ReadRate > 0:
		return fault.Errorf(fault.BadConfig, "drop {read_rate}", "--read-rate needs a tcpscope server")
	}
	return nil
}

// Run runs a test against a stock iperf3 server. The server's side is
// what iperf3 returns in its results: bytes, duration and retransmissions
// per stream, without intervals. Tests run by duration (whole seconds, as
// iperf3 takes them) or by count.
func (c *Client) Run(ctx context.Context, addr string, cfg model.TestConfig) (*model.Run, error) {
	if err := c.check(&cfg); err != nil {
		return nil, err
	}
	t := &clientTest{c: c, addr: addr, cfg: cfg, run: c.newRun(addr, cfg)}
	t.run.Remote.Version = "iperf3"
	t.run.Remote.NoKernelState = true
	if c.fallback {
		// Before the Observer's Begin, so that the text output says it
		// above the results, not after them.
		t.run.Warnings = append(t.run.Warnings, fallbackWarning)
	}
	defer t.close()
	if err := t.handshake(ctx); err != nil {
		return nil, err
	}
	if err := t.openStreams(ctx); err != nil {
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	runErr := t.measure(ctx)
	return t.finish(runErr, t.exchangeResults())
}

// clientTest is one test of a Client, from dial to results.
type clientTest struct {
	c      *Client
	addr   string
	cfg    model.TestConfig
	run    *model.Run
	cc     *net.TCPConn
	k      *ctlConn
	cookie []byte
	// stopWatch ends the handshake's watch on ctx (see handshake).
	stopWatch func() bool
	streams   []*engine.Stream
	e         *engine.End
	// running is when TEST_RUNNING arrived: the server's clock started
	// when it sent it, and its senders with it.
	running time.Time
	// states carries the server's states to the results exchange, and
	// ctlErr the control connection's failure (readStates).
	states      chan byte
	ctlErr      chan error
	interrupted atomic.Bool
}

func (t *clientTest) close() {
	for _, s := range t.streams {
		s.Close()
	}
	if t.stopWatch != nil {
		t.stopWatch()
	}
	if t.cc != nil {
		t.cc.Close()
	}
}

// handshake opens the control connection, sends the cookie and the
// parameters, and waits for CREATE_STREAMS.
func (t *clientTest) handshake(ctx context.Context) error {
	began := time.Now()
	cc, err := t.c.Dialer.TCP(ctx, t.addr, nil, "")
	if err != nil {
		return err
	}
	t.cc, t.k = cc, &ctlConn{c: cc}
	_ = cc.SetNoDelay(true)
	// Until the test runs, an interrupt breaks the handshake off; once it
	// runs, it ends the test the iperf3 way (measure) and keeps the
	// results.
	t.stopWatch = context.AfterFunc(ctx, func() { cc.SetDeadline(time.Unix(1, 0)) })
	t.cookie = newCookie()
	t.run.Cookie = string(t.cookie[:cookieLen-1])
	if _, err := cc.Write(t.cookie); err != nil {
		return &fault.Error{Code: fault.Aborted, Msg: "send cookie", Err: err}
	}
	// The first answer within what is left of --connect-timeout.
	if err := t.k.expect(stateParamExchange, t.c.Dialer.AnswerWait(began)); err != nil {
		err = wrapHandshake(err, t.addr)
		if t.c.Dialer.ConnectTimeout > 0 && fault.CodeOf(err) == fault.Timeout {
			err = fault.Errorf(fault.Timeout, fmt.Sprintf("is %s an iperf3 server, and not busy with a stuck client? a longer {connect_timeout} waits more", t.addr),
				"no answer from %s within the connect timeout of %v", t.addr, t.c.Dialer.ConnectTimeout)
		}
		return err
	}
	if err := t.k.sendJSON(t.c.params(&t.cfg)); err != nil {
		return &fault.Error{Code: fault.Aborted, Msg: "send parameters", Err: err}
	}
	if err := t.k.expect(stateCreateStreams, engine.HandshakeTimeout); err != nil {
		return wrapHandshake(err, t.addr)
	}
	return nil
}

// params are the parameters a test's client sends. iperf3 turns booleans
// on by their presence: only the true ones are sent.
func (c *Client) params(cfg *model.TestConfig) params {
	yes, one := true, 1
	on := func(b bool) *bool {
		if b {
			return &yes
		}
		return nil
	}
	onInt := func(b bool) *int {
		if b {
			return &one
		}
		return nil
	}
	p := params{Omit: int(cfg.Omit / time.Second), Time: int(cfg.Duration / time.Second), Num: int64(cfg.Bytes), BlockCount: c.Blocks, Parallel: cfg.Parallel,
		Len: int(cfg.Length), Window: int64(cfg.Window), MSS: cfg.MSS, Bandwidth: int64(cfg.Bitrate), FQRate: int64(cfg.FQRate),
		Congestion: cfg.Congestion, TOS: cfg.TOS, ServerAffinity: cfg.ServerCPU, PacingTimer: 1000, ClientVersion: "tcpscope " + c.Version,
		UDP: on(cfg.IsUDP()), TCP: on(!cfg.IsUDP()), Reverse: on(cfg.Reverse), Bidirectional: on(cfg.Bidir), NoDelay: on(cfg.NoDelay),
		// A server that sends (-R, --bidir) sends with zero copy too.
		Counters64: onInt(cfg.Counters64), ServerOutput: onInt(c.ServerOutput), ZeroCopy: onInt(cfg.ZeroCopy),
		// A server that receives reads with MSG_TRUNC (3.19+; older
		// servers ignore it and copy).
		SkipRxCopy: onInt(cfg.SkipRxCopy)}
	if c.Blocks > 0 {
		p.Num = 0 // as iperf3's client: one count or the other
	}
	return p
}

// openStreams opens the streams in iperf3's order: in --bidir the sending
// ones first, as Directions lists them.
func (t *clientTest) openStreams(ctx context.Context) error {
	cfg := &t.cfg
	for i, d := range cfg.Directions() {
		role := model.RoleOf(model.ClientSide, d)
		var s *engine.Stream
		if cfg.IsUDP() {
			// iperf3's server binds its next UDP listener after each
			// answer: one stream after another.
			uc, err := t.c.Dialer.UDP(ctx, t.addr, cfg, role, udpHello, isUDPReply)
			if err != nil {
				return err
			}
			s = engine.NewUDPStream(i, role, uc, cfg.Counters64)
		} else {
			tc, err := t.c.Dialer.TCP(ctx, t.addr, cfg, role)
			if err != nil {
				return err
			}
			s = engine.NewTCPStream(i, role, tc)
			_ = tc.SetNoDelay(cfg.NoDelay)
			if _, err := tc.Write(t.cookie); err != nil {
				t.streams = append(t.streams, s)
				return &fault.Error{Code: fault.Aborted, Msg: fmt.Sprintf("open stream %d", i), Err: err}
			}
		}
		t.streams = append(t.streams, s)
		t.run.Streams = append(t.run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: s.LocalAddr().String(), ServerAddr: t.addr})
	}
	return nil
}

// start waits for the server to start the test, and tells the Observer.
func (t *clientTest) start(ctx context.Context) error {
	if err := t.k.expect(stateTestStart, engine.HandshakeTimeout); err != nil {
		return wrapHandshake(err, t.addr)
	}
	if err := t.k.expect(stateTestRunning, engine.HandshakeTimeout); err != nil {
		return wrapHandshake(err, t.addr)
	}
	// The server's clock started when it sent TEST_RUNNING, and its
	// senders with it: this end's runs from its arrival, not from when
	// the streams are set going, a millisecond or two later.
	t.running = time.Now()
	if !t.stopWatch() {
		return &fault.Error{Code: fault.Aborted, Msg: "interrupted before the test started", Err: ctx.Err()}
	}
	for i := range t.run.Streams {
		setup, err := t.streams[i].Setup(t.cfg.TOS != 0)
		if err != nil {
			return err
		}
		t.run.Streams[i].Client = &setup
	}
	if o := t.c.Observer; o != nil {
		o.Begin(t.run)
	}
	return nil
}

// measure runs the test until it ends and the server has heard TEST_END,
// and returns the streams' error. The client ends an iperf3 test with
// TEST_END: when its time is up, its senders have sent their count, its
// receivers have read theirs (as iperf3's client counts a test it
// receives), or on interrupt. The server then closes its streams, which
// ends ours.
func (t *clientTest) measure(ctx context.Context) error {
	// One CPU, as a stock client's one thread (see the server's).
	o := engine.EndOptions{Start: t.running, PeerCloses: true, OneCPU: true}
	ender := newEnder(t)
	if goal := newReadGoal(t.cfg); goal != nil {
		o.OnRead = func(n int) {
			if goal.add(n) {
				ender.stopTest()
			}
		}
	}
	t.e = engine.NewEnd(model.ClientSide, t.cfg, t.streams, func(iv model.Interval) {
		if obs := t.c.Observer; obs != nil {
			obs.Interval(model.ClientSide, &iv)
		}
	}, o)
	t.states, t.ctlErr = make(chan byte, 4), make(chan error, 1)
	go t.readStates()

	// A test broken off does not wait for the server to read.
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	ended := ender.watch(waitCtx)
	timer := time.AfterFunc(time.Hour, ender.stopTest)
	timer.Stop()
	if t.cfg.Duration > 0 {
		timer = time.AfterFunc(time.Until(t.running.Add(t.cfg.Omit+t.cfg.Duration)), ender.stopTest)
	}
	interrupt := context.AfterFunc(ctx, func() { t.interrupted.Store(true); ender.stopTest() })
	runErr := t.e.Run(context.Background())
	close(ender.runDone)
	if runErr != nil {
		cancelWait()
	}
	// The streams may all end before anything above ends the test (the
	// senders' own clock, a broken stream): the server still needs to
	// hear TEST_END, or it never asks for results.
	ender.stopTest()
	<-ended
	ender.grace.Stop()
	timer.Stop()
	interrupt()
	t.run.Client = t.e.Report(t.c.Version)
	return runErr
}

// readStates reads the server's states during the test, until the
// results follow (EXCHANGE_RESULTS) or the connection fails.
func (t *clientTest) readStates() {
	for {
		s, err := t.k.state(0)
		if err != nil {
			t.e.FinishReceivers()
			t.ctlErr <- err
			return
		}
		if s == stateExchangeResults && t.cfg.IsUDP() {
			// The server has stopped sending: as iperf3's client, UDP
			// receivers count until now, no stream closing to tell
			// them. What it sent before left before this message did; a
			// round trip more lets stragglers land.
			t.e.DrainReceivers(max(controlRTT(t.cc), time.Millisecond))
		}
		t.states <- s
		// The results follow EXCHANGE_RESULTS on this connection: the
		// results exchange reads them (and what comes after).
		if s == stateExchangeResults || s == stateDisplayResults {
			return
		}
	}
}

// ender ends a client's test: once something stops it (stopTest: the
// time, a count, an interrupt) or its senders end it themselves, it stops
// the senders, waits for the server to have read what they sent, and
// sends TEST_END.
type ender struct {
	t        *clientTest
	endNow   chan struct{}
	stopOnce sync.Once
	// runDone is closed once the streams have all stopped.
	runDone chan struct{}
	// grace ends the receivers' reads should the server not close its
	// streams after TEST_END; in a timed TCP test it cuts them (cutWait).
	grace *time.Timer
}

func newEnder(t *clientTest) *ender {
	d := &ender{t: t, endNow: make(chan struct{}), runDone: make(chan struct{})}
	d.grace = time.AfterFunc(time.Hour, func() {
		if d.timedTCP() {
			t.e.CutReceivers()
		} else {
			t.e.FinishReceivers()
		}
	})
	d.grace.Stop()
	return d
}

// timedTCP says whether the test is a timed TCP test, whose receivers the
// grace cuts.
func (d *ender) timedTCP() bool { return d.t.cfg.Duration > 0 && !d.t.cfg.IsUDP() }

// cutWait is how long after TEST_END the receivers read on: a stock
// server stops writing at TEST_END, but what it wrote before (its send
// buffer, -w 8M: seconds of a slow path) still drains, and its streams
// close only behind it. A timed TCP test's receivers count it until
// engine.CutAfter past the planned end, as a native receiver does, and at
// least two round trips after TEST_END, for what was in flight then;
// others until the server closes its streams, at most engine.FinishGrace.
func (d *ender) cutWait() time.Duration {
	if !d.timedTCP() {
		return engine.FinishGrace
	}
	planned := d.t.running.Add(d.t.cfg.Omit + d.t.cfg.Duration + engine.CutAfter)
	return max(time.Until(planned), 2*controlRTT(d.t.cc)+10*time.Millisecond)
}

// stopTest ends the test, once.
func (d *ender) stopTest() { d.stopOnce.Do(func() { close(d.endNow) }) }

// watch runs the ending on its own goroutine; the channel it returns
// closes once TEST_END is sent.
func (d *ender) watch(waitCtx context.Context) <-chan struct{} {
	var senders []*engine.Stream
	for _, s := range d.t.streams {
		if s.Role() == model.Sender {
			senders = append(senders, s)
		}
	}
	sent := d.allStopped(senders)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		w := newPeerWindows(senders, d.t.cfg.Bidir)
		d.await(w, d.ownEnd(sent, senders))
		d.t.e.Stop()
		<-sent
		if !d.t.interrupted.Load() {
			// iperf3's server stops counting when TEST_END arrives:
			// what is in flight, queued here or unread there would go
			// uncounted (esnet/iperf#382).
			var cutBy time.Time
			if span := d.t.cfg.Duration; span > 0 {
				cutBy = d.t.running.Add(d.t.cfg.Omit + span + engine.CutAfter)
			}
			if w.awaitRead(waitCtx, cutBy) {
				d.t.e.CutSenders()
			}
		}
		d.t.e.TellEnd()
		_, _ = d.t.cc.Write([]byte{stateTestEnd})
		d.grace.Reset(d.cutWait())
	}()
	return ended
}

// allStopped closes its channel once every sender has stopped writing.
func (d *ender) allStopped(senders []*engine.Stream) <-chan struct{} {
	sent := make(chan struct{})
	go func() {
		for _, s := range senders {
			select {
			case <-s.Done():
			case <-d.runDone: // it never started
			}
		}
		close(sent)
	}()
	return sent
}

// ownEnd is sent (closed once the senders are done) when this end has
// senders: they end the test themselves (their clock, their count). Nil
// otherwise.
func (d *ender) ownEnd(sent <-chan struct{}, senders []*engine.Stream) <-chan struct{} {
	if len(senders) > 0 {
		return sent
	}
	return nil
}

// await waits for the test's end, polling the server's windows meanwhile.
func (d *ender) await(w *peerWindows, ownEnd <-chan struct{}) {
	tick := time.NewTicker(windowPoll)
	defer tick.Stop()
	for {
		select {
		case <-d.endNow:
			return
		case <-ownEnd:
			return
		case <-tick.C:
			w.poll()
		}
	}
}

// exchangeResults waits for EXCHANGE_RESULTS, sends this end's results
// and reads the server's into the run.
func (t *clientTest) exchangeResults() error {
	var server results
	if err := t.swapResults(&server); err != nil {
		return err
	}
	if s, serr := t.k.state(5 * time.Second); serr == nil && s == stateDisplayResults {
		_, _ = t.cc.Write([]byte{stateDone})
	}
	run := t.run
	run.Remote.Totals = serverTotals(&server, run)
	if w := uncounted(run); w != "" {
		run.Warnings = append(run.Warnings, w)
	}
	// iperf3 always reports its process's CPU use (cpu_util), and for
	// TCP the congestion control its sockets used.
	run.Remote.CPU = &model.CPUUse{Total: server.CPUTotal, User: server.CPUUser, System: server.CPUSystem}
	if !t.cfg.IsUDP() {
		run.Remote.Congestion = server.CongestionUsed
	}
	run.ServerOutput = server.ServerOutputText
	if len(server.ServerOutputJSON) > 0 {
		run.ServerOutput = string(server.ServerOutputJSON)
	}
	return nil
}

// swapResults sends this end's results when the server asks, and reads
// the server's.
func (t *clientTest) swapResults(server *results) error {
	for {
		select {
		case s := <-t.states:
			switch s {
			case stateExchangeResults:
				if err := t.k.sendJSON(t.ownResults()); err != nil {
					return err
				}
				return t.k.recvJSON(server, maxResults, engine.FinishGrace)
			case stateAccessDenied, stateServerTerminate:
				return fault.Errorf(fault.Aborted, "", "the iperf3 server ended the test (state %d)", int8(s))
			}
		case err := <-t.ctlErr:
			return err
		case <-time.After(engine.FinishGrace):
			return fault.Errorf(fault.Timeout, "", "the iperf3 server sent no results")
		}
	}
}

// ownResults is this end's results message.
func (t *clientTest) ownResults() results {
	run := t.run
	ours := resultsOf(run.Client.Totals, run.Client.CPU)
	if ours.CongestionUsed == "" && !t.cfg.IsUDP() && len(run.Streams) > 0 && run.Streams[0].Client != nil {
		// iperf3 reports its sockets' algorithm whatever their role; a
		// receiving client has no sender's final sample to take it from.
		ours.CongestionUsed = run.Streams[0].Client.Congestion
	}
	return ours
}

// finish closes the run's record: how it ended, its summary, and the
// error of the streams (runErr) or of the results exchange (resErr).
func (t *clientTest) finish(runErr, resErr error) (*model.Run, error) {
	run := t.run
	if resErr != nil {
		run.Warnings = append(run.Warnings, "the iperf3 server's results are missing: "+resErr.Error())
	}
	run.Ended = "complete"
	if t.interrupted.Load() {
		run.Ended = "interrupted"
	}
	run.Summary = model.Summarize(run)
	err := runErr // the streams' failure first: it is the cause
	if err == nil {
		err = resErr
	}
	if err == nil {
		return run, nil
	}
	run.Ended = "aborted"
	if fault.CodeOf(err) == "" {
		err = &fault.Error{Code: fault.Aborted, Msg: "iperf3 test broke off", Err: err}
	}
	return run, err
}
