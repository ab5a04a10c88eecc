package iperf3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/i3auth"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// Handler serves stock iperf3 clients on a serve.Server's port, beside
// tcpscope's own protocol: add it with the server's Handle. Its tests
// count against the server's limits as any other, and many run at once.
type Handler struct {
	// Auth, when set, admits a client only with iperf3's own
	// credentials (--username, --rsa-public-key-path). A server that
	// requires access tokens (serve.Server.Tokens) admits iperf3 clients,
	// who cannot carry one, only through Auth.
	Auth *i3auth.Authenticator
	// Explain, when set, diagnoses the server's end of a test in a few
	// lines, for clients that ask for the server's output.
	Explain func(cfg model.TestConfig, rep model.EndReport, client, server string) []string
	// OutputJSON: the server's output returned to clients that ask for
	// it is JSON (server_output_json), as from an iperf3 -s -J;
	// otherwise text.
	OutputJSON bool
}

// Match reports whether a connection's first bytes are iperf3's cookie:
// characters of a–z and 2–7 (tcpscope's magic is upper case).
func (h *Handler) Match(head []byte) bool { return isCookie(head) }

// Name names the protocol in the server's counts.
func (h *Handler) Name() string { return "iperf3" }

// isCookie reports whether b could be (the start of) an iperf3 cookie.
func isCookie(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Serve serves a connection from a stock iperf3 client, whose first
// bytes were its cookie's: the control connection of a new test, or a
// data connection of a running one.
func (h *Handler) Serve(ctx context.Context, c *serve.Conn) {
	rest := make([]byte, cookieLen-len(c.Head))
	if _, err := io.ReadFull(c, rest); err != nil || rest[len(rest)-1] != 0 || !isCookie(rest[:len(rest)-1]) {
		c.Close()
		return
	}
	cookie := append(append([]byte{}, c.Head...), rest...)
	found, taken := c.Server.Join(cookie, c)
	switch {
	case found && !taken:
		_, _ = c.Write([]byte{stateAccessDenied})
		c.Close()
	case !found:
		h.control(ctx, c, cookie)
	}
}

// serverTest is one test the Handler runs for a client.
type serverTest struct {
	h    *Handler
	srv  *serve.Server
	conn *serve.Conn
	k    *ctlConn
	cfg  model.TestConfig
	p    paramsIn
	test *serve.Test
	log  *slog.Logger
}

// control runs one test for a stock iperf3 client, from its parameters
// to its results.
func (h *Handler) control(ctx context.Context, conn *serve.Conn, cookie []byte) {
	defer conn.Close()
	srv := conn.Server
	t := &serverTest{h: h, srv: srv, conn: conn, k: &ctlConn{c: conn}, log: srv.Log().With("client", conn.RemoteAddr().String(), "tool", "iperf3")}
	_ = conn.SetNoDelay(true)
	user, ok := t.admit(cookie)
	if !ok {
		return
	}
	defer t.test.Release()
	conn.Admitted()
	t.log.Info("iperf3 test admitted", serve.AdmissionAttrs(t.p.ClientVersion, t.cfg, srv.Class(conn.RemoteAddr()))...)
	rec := gate.Record{Start: t.test.Admitted(), Client: conn.RemoteAddr().String(), Server: conn.LocalAddr().String(),
		Tool: "iperf3", ClientVersion: t.p.ClientVersion, Config: t.cfg, TokenSubject: user}
	rec.Report, rec.Ended, rec.Err = t.run(ctx)
	rec.UDPPeers = t.test.UDPPeers()
	if rec.Err != nil {
		t.log.Warn("iperf3 test failed", append([]any{"err", rec.Err}, serve.PeerAttrs(rec.UDPPeers)...)...)
	} else {
		t.log.Info("iperf3 test done", append(append([]any{"ended", rec.Ended, "client_version", t.p.ClientVersion}, serve.PeerAttrs(rec.UDPPeers)...), serve.SummaryAttrs(rec.Report)...)...)
	}
	t.test.Ended(rec)
}

// admit reads the client's parameters, checks its credentials and the
// test against the server's limits, and has the server admit it; the
// client hears why not. It returns the authenticated user, if any.
func (t *serverTest) admit(cookie []byte) (user string, ok bool) {
	conn, srv := t.conn, t.srv
	if _, err := conn.Write([]byte{stateParamExchange}); err != nil {
		return "", false
	}
	if err := t.k.recvJSON(&t.p, maxParams, engine.HandshakeTimeout); err != nil {
		t.log.Debug("iperf3 parameters", "err", err)
		return "", false
	}
	user, err := t.h.authorized(srv, t.p.AuthToken)
	if err != nil {
		// As iperf3's own server refuses: "test authorization failed".
		srv.Refused("iperf3-auth", conn.RemoteAddr(), err)
		sendError(conn, ierrAuth, 0)
		return "", false
	}
	if user != "" {
		t.log = t.log.With("iperf3_user", user)
	}
	cl := srv.Class(conn.RemoteAddr())
	t.cfg, err = t.p.config()
	if err == nil {
		err = engine.Normalize(&t.cfg)
	}
	if err == nil {
		err = serve.CheckLimits(&t.cfg, cl, limits.Iperf3)
	}
	if err != nil {
		srv.Refused("", conn.RemoteAddr(), err)
		ierrno, errno := errnosFor(err, t.p.ClientVersion, &t.cfg, cl)
		sendError(conn, ierrno, errno)
		return "", false
	}
	t.test, err = srv.Admit(serve.TestSpec{Key: cookie, Protocol: "iperf3", Client: conn.RemoteAddr(), Config: t.cfg, Class: cl,
		UDPHello: isUDPHello, UDPReply: udpReply})
	if err != nil {
		srv.Refused("", conn.RemoteAddr(), err)
		_, _ = conn.Write([]byte{stateAccessDenied})
		return "", false
	}
	return user, true
}

// authorized checks a client's credentials when the server requires them
// (Auth, or the server's Tokens: a server that admits only authorized
// tests admits iperf3 clients only through iperf3's own authentication),
// and returns the user.
func (h *Handler) authorized(srv *serve.Server, authtoken string) (string, error) {
	switch {
	case h.Auth != nil:
		return h.Auth.Check(authtoken, time.Now())
	case srv.Tokens != nil:
		return "", errors.New("access tokens required, and iperf3 clients cannot carry one: the server has no iperf3 authentication configured")
	}
	return "", nil
}

// run runs an admitted test: its streams, the test, its results. A
// client's -A n,m (server_affinity) pins the server for the test as a
// native client's does, by the server's policy (serve.Test.Pin); iperf3
// has no answer to it, so only the server's log says when it did not.
func (t *serverTest) run(ctx context.Context) (model.EndReport, string, error) {
	_, unpin := t.test.Pin(t.cfg.ServerCPU)
	defer unpin()
	streams, err := t.openStreams(ctx)
	defer func() {
		for _, st := range streams {
			if st != nil {
				st.Close()
			}
		}
	}()
	if err != nil {
		return model.EndReport{}, "", err
	}
	r, err := t.start(ctx, streams)
	if err != nil {
		return model.EndReport{}, "", err
	}
	how := r.awaitEnd(ctx)
	switch {
	case how == "server-shutdown":
		return r.e.Report(t.srv.Version), how, ctx.Err()
	case how != "complete":
		r.endReads()
		return r.e.Report(t.srv.Version), how, r.err
	}
	return t.results(ctx, r, streams)
}

// openStreams tells the client to open its streams, and gathers them.
func (t *serverTest) openStreams(ctx context.Context) ([]*engine.Stream, error) {
	if t.cfg.IsUDP() {
		if err := t.test.AwaitUDPTurn(ctx); err != nil {
			// As iperf3's own server answers a second client.
			_, _ = t.conn.Write([]byte{stateAccessDenied})
			return nil, err
		}
	}
	if _, err := t.conn.Write([]byte{stateCreateStreams}); err != nil {
		return nil, err
	}
	streams, err := t.test.AwaitStreams(ctx)
	switch {
	case errors.Is(err, serve.ErrStreamsLate):
		sendError(t.conn, ierrAccept, 0)
	case err != nil:
		_, _ = t.conn.Write([]byte{stateServerTerminate})
	}
	return streams, err
}

// serverRun is a running test's end at the server.
type serverRun struct {
	e *engine.End
	// over closes when every stream has stopped, and err is theirs then.
	over chan struct{}
	err  error
	// ended says how the client ended the test (readEnd).
	ended chan string
	conn  *serve.Conn
}

// start starts the server's end of the test and tells the client.
func (t *serverTest) start(ctx context.Context, streams []*engine.Stream) (*serverRun, error) {
	// A TCP sender writes the client's -l per system call (iperf3's
	// 128 KiB unless it asked for another), as iperf3's server does.
	// Writes of 1 MiB moved twice the rate on loopback, but the stock
	// client saw the server's own mechanism in its numbers: 86-163
	// retransmissions in -R -t 2 against stock's 4-15, and 49-66k
	// against 15-23k across a veth pair (with the sending thread locked,
	// 128 KiB writes: 4-18 and 14-24k). The numbers win.
	//
	// With -k, iperf3's client in -R counts its reads as blocks, one of
	// at most -l bytes each. Paced (-b), the server writes whole blocks
	// of -l, one when it is due, as iperf3's does: each read then takes
	// one block, where writes of 10 ms of the rate made k reads take k
	// such writes.
	wholeBlocks := t.p.BlockCount > 0 && t.cfg.Bitrate > 0 && !t.cfg.IsUDP()
	// The streams wait for hold while Run sets the end up; they start as
	// the client does, on TEST_RUNNING.
	hold := make(chan struct{})
	// Stock iperf3 (3.12, Debian's) moves every stream of a test from
	// one thread: so does this end (engine.EndOptions.OneCPU), or a stock
	// client on loopback or a veth counts retransmissions that iperf3 -s
	// never causes.
	o := engine.EndOptions{PeerCloses: true, ReadOn: true, WholeBlocks: wholeBlocks, Hold: hold, OneCPU: true}
	e, err := t.test.ServerEnd(t.cfg, streams, o)
	if err != nil {
		t.log.Warn("iperf3 socket options", "err", err)
	}
	// The client starts its clock and its senders on TEST_RUNNING: so
	// does this end, as it sends it: not after Run starts (a shorter
	// time for the same bytes), nor before the setup above, which a busy
	// server makes take milliseconds, a longer one (a stock -n 256M
	// client's two ends were 6-10% apart on loopback, stock's 0-4%).
	e.StartClock(time.Now())
	r := &serverRun{e: e, over: make(chan struct{}), ended: make(chan string, 1), conn: t.conn}
	go func() {
		r.err = e.Run(context.Background())
		close(r.over)
	}()
	if _, err := t.conn.Write([]byte{stateTestStart, stateTestRunning}); err != nil {
		e.Abort()
		close(hold)
		<-r.over
		return nil, err
	}
	close(hold)
	go r.readEnd(t.k)
	return r, nil
}

// readEnd waits for the client to end the test with TEST_END on the
// control connection; a client that vanishes ends it too.
func (r *serverRun) readEnd(k *ctlConn) {
	for {
		st, err := k.state(0)
		switch {
		case err != nil:
			r.ended <- "aborted"
			return
		case st == stateTestEnd:
			r.ended <- "complete"
			return
		case st == stateClientTerminate:
			r.ended <- "interrupted"
			return
		}
	}
}

// awaitEnd waits for the test's end and says how it ended. A server
// shutdown stops it at once ("server-shutdown").
func (r *serverRun) awaitEnd(ctx context.Context) string {
	how := "complete"
	select {
	case how = <-r.ended:
		r.e.Stop()
		if how == "complete" {
			// The receivers read on: what the client wrote before
			// TEST_END may still be on its way, in its send buffer or
			// in flight. They stop once they have what its results say
			// it sent (results), within the grace at most.
			r.e.DrainReceivers(engine.FinishGrace)
		}
	case <-ctx.Done():
		_, _ = r.conn.Write([]byte{stateServerTerminate})
		r.e.Abort()
		<-r.over
		return "server-shutdown"
	case <-r.over:
		// Our streams ended first (the client closed them, or the
		// server's duration limit): wait briefly for TEST_END.
		select {
		case how = <-r.ended:
		case <-time.After(5 * time.Second):
		}
	}
	return how
}

// endReads ends the receivers' reads now and waits for the streams.
func (r *serverRun) endReads() {
	r.e.FinishReceivers()
	<-r.over
}

// results closes the streams this end sent on, exchanges the results,
// and returns the end's report.
func (t *serverTest) results(ctx context.Context, r *serverRun, streams []*engine.Stream) (model.EndReport, string, error) {
	const how = "complete"
	// As iperf3's server does: close the streams this end sends on
	// before the results. A client in -R or --bidir reads them until
	// they close. (Stop has ended their writing.)
	for _, st := range streams {
		if st.Role() == model.Sender {
			select {
			case <-st.Done():
			case <-r.over: // they never started
			}
			st.Close()
		}
	}
	// Results: the client sends first.
	if _, err := t.conn.Write([]byte{stateExchangeResults}); err != nil {
		r.endReads()
		return r.e.Report(t.srv.Version), how, err
	}
	var theirs clientResults
	if err := t.k.recvJSON(&theirs, maxResults, engine.FinishGrace); err != nil {
		r.endReads()
		return r.e.Report(t.srv.Version), how, fmt.Errorf("iperf3 client results: %w", err)
	}
	r.e.AwaitCounts(ctx, theirs.sent(r.e.Streams()), countStall(t.cfg.IsUDP(), controlRTT(t.conn.TCPConn)), time.Now().Add(countWait))
	r.endReads()
	rep := r.e.Report(t.srv.Version)
	if err := movedNothing(&t.cfg, rep.Totals); err != nil {
		// Not a result: the client is told the test failed (its control
		// connection closes) rather than shown a clean zero.
		return rep, "aborted", err
	}
	res := resultsOf(rep.Totals, rep.CPU)
	switch {
	case t.p.ServerOutput != nil && t.h.OutputJSON:
		res.ServerOutputJSON = t.h.serverJSON(t.srv.Version, &t.cfg, &rep, t.conn)
	case t.p.ServerOutput != nil:
		addrs := make([]streamAddrs, len(streams))
		for i, st := range streams {
			addrs[i] = streamAddrs{id: st.ID(), local: st.LocalAddr(), remote: st.RemoteAddr()}
		}
		res.ServerOutputText = t.h.serverText(&t.cfg, &rep, t.conn, addrs)
	}
	if err := t.k.sendJSON(res); err != nil {
		return rep, how, err
	}
	if _, err := t.conn.Write([]byte{stateDisplayResults}); err != nil {
		return rep, how, err
	}
	_, _ = t.k.state(5 * time.Second) // IPERF_DONE
	return rep, how, nil
}

// The server's receivers read on past TEST_END until each stream has
// what the client's results say it sent: bytes still in the client's send
// buffer or in flight at TEST_END arrive after it, and iperf3's own server,
// which stops reading at TEST_END, never counts them (esnet/iperf#382).
// The wait is bounded whatever the client claims.
const (
	// countWait bounds it from the client's results on: well under the
	// 10 s an iperf3 client since 3.16 waits for the server's results
	// (its Nread gives up then), and time to deliver a full 4 MiB send
	// buffer (tcp_wmem's usual maximum) at 10 Mbit/s (3.4 s). A slower
	// path with a full buffer is cut short: its last bytes go uncounted,
	// as before. A client that trickles bytes to a claim it never meets
	// holds its test this long.
	countWait = 4 * time.Second
	// countStallTCP, plus four round trips, is how long the wait goes on
	// with nothing arriving: a send buffer drains steadily, and a gap is
	// a loss being repaired, by a retransmission timeout at worst (Linux's
	// floor is 200 ms, then 400 ms on its first backoff). A client that
	// claims more than it sent costs no more than this.
	countStallTCP = 600 * time.Millisecond
	// countStallUDP, plus four round trips: a datagram is never resent,
	// so one sent before TEST_END comes at most a little behind it (its
	// sender's host or the path queued it apart from the control
	// connection), or never, when it was lost.
	countStallUDP = 50 * time.Millisecond
)

// countStall is how long the wait for the client's counts goes on with
// nothing arriving, on a control connection of round trip rtt (0: not
// known).
func countStall(udp bool, rtt time.Duration) time.Duration {
	if udp {
		return countStallUDP + 4*rtt
	}
	return countStallTCP + 4*rtt
}

// movedNothing reports a TCP stream of a timed test that moved no byte at
// all. Its sender writes from the first moment, so such a stream was
// broken (on loopback, a stream whose two ends both waited to read), and
// a report of it would read as a clean result of zero. In a byte-count
// test a stream may legitimately get none of the shared budget.
func movedNothing(cfg *model.TestConfig, totals []model.StreamTotal) error {
	if cfg.IsUDP() || cfg.Duration == 0 {
		return nil
	}
	for _, t := range totals {
		if t.AllBytes == 0 {
			return fmt.Errorf("stream %d (%s) moved no data in a %v test", t.Stream, t.Role, cfg.Duration)
		}
	}
	return nil
}

// serverJSON is the server's account of an iperf3 test as JSON: the
// test as the server took it, its end's report and its diagnosis.
func (h *Handler) serverJSON(version string, cfg *model.TestConfig, rep *model.EndReport, c net.Conn) json.RawMessage {
	doc := struct {
		Server    string            `json:"server"`
		Client    string            `json:"client"`
		Config    *model.TestConfig `json:"config"`
		End       *model.EndReport  `json:"server_end"`
		Diagnosis []string          `json:"diagnosis,omitempty"`
	}{Server: "tcpscope " + version, Client: c.RemoteAddr().String(), Config: cfg, End: rep}
	if h.Explain != nil {
		doc.Diagnosis = h.Explain(*cfg, *rep, c.RemoteAddr().String(), c.LocalAddr().String())
	}
	b, err := json.Marshal(doc)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}
