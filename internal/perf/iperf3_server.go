package perf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// isI3Cookie reports whether the first bytes of a connection are iperf3's
// cookie: characters of a–z and 2–7 (tcpscope's magic is upper case).
func isI3Cookie(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// maxI3Params is iperf3's own cap on a parameters message.
const maxI3Params = 8 << 10

// iperf3Conn serves a connection from a stock iperf3 client, whose first
// bytes (head) were its cookie's: the control connection of a new test,
// or a data connection of a running one. seq is its place in the accept
// order.
func (s *Server) iperf3Conn(ctx context.Context, c *net.TCPConn, head []byte, seq uint64, admitted func()) {
	rest := make([]byte, i3CookieLen-len(head))
	if _, err := io.ReadFull(c, rest); err != nil || rest[len(rest)-1] != 0 || !isI3Cookie(rest[:len(rest)-1]) {
		c.Close()
		return
	}
	cookie := string(append(append([]byte{}, head...), rest...))
	s.mu.Lock()
	t := s.running[cookie]
	if t != nil {
		// A data connection: awaitStreams numbers it by seq.
		if t.full || t.udp || t.arrived >= t.nconn {
			s.mu.Unlock()
			_, _ = c.Write([]byte{i3AccessDenied})
			c.Close()
			return
		}
		t.arrived++
		s.mu.Unlock()
		_ = c.SetReadDeadline(time.Time{})
		t.data <- dataConn{conn: c, stream: -1, seq: seq}
		admitted()
		return
	}
	s.mu.Unlock()
	s.iperf3Control(ctx, c, []byte(cookie), admitted)
}

// iperf3Control runs one test for a stock iperf3 client.
func (s *Server) iperf3Control(ctx context.Context, conn *net.TCPConn, cookie []byte, admitted func()) {
	defer conn.Close()
	log := s.Logger.With("client", conn.RemoteAddr().String(), "tool", "iperf3")
	_ = conn.SetNoDelay(true)
	k := &i3Conn{c: conn}
	if _, err := conn.Write([]byte{i3ParamExchange}); err != nil {
		return
	}
	var p i3ParamsIn
	if err := k.recvJSON(&p, maxI3Params, handshakeTimeout); err != nil {
		log.Debug("iperf3 parameters", "err", err)
		return
	}
	user, err := s.iperf3Authorized(p.AuthToken)
	if err != nil {
		// As iperf3's own server refuses: "test authorization failed".
		s.refusals.note("iperf3-auth", conn.RemoteAddr(), err.Error())
		i3SendError(conn, i3ErrnoAuth, 0)
		return
	}
	if user != "" {
		log = log.With("iperf3_user", user)
	}
	cl := s.classOf(conn.RemoteAddr())
	cfg, err := p.config()
	if err == nil {
		err = Normalize(&cfg)
	}
	if err == nil {
		err = checkLimits(&cfg, cl, true)
	}
	if err != nil {
		s.refusals.note(refusalKind(err), conn.RemoteAddr(), err.Error())
		ierrno, errno := i3ErrnoFor(err, p.ClientVersion, &cfg, cl)
		i3SendError(conn, ierrno, errno)
		return
	}
	dirs := cfg.Directions()
	t := &serverTest{cookie: cookie, nconn: len(dirs), data: make(chan dataConn, len(dirs)),
		udp: cfg.IsUDP(), iperf3: true, wide: cfg.Counters64, admitted: time.Now(), class: cl}
	if ta, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		t.clientIP = ta.IP
	}
	if err := s.admit(t); err != nil {
		s.refusals.note(refusalKind(err), conn.RemoteAddr(), err.Error())
		_, _ = conn.Write([]byte{i3AccessDenied})
		return
	}
	defer s.release(t)
	admitted()
	log.Info("iperf3 test admitted", admissionAttrs(p.ClientVersion, cfg, cl)...)
	rec := TestRecord{Start: t.admitted, Client: conn.RemoteAddr().String(), Server: conn.LocalAddr().String(),
		Tool: "iperf3", ClientVersion: p.ClientVersion, Config: cfg, TokenSubject: user}
	rec.Report, rec.Ended, rec.Err = s.runIperf3(ctx, k, t, cfg, dirs, p.BlockCount > 0, p.ServerOutput != nil, log)
	rec.UDPPeers = s.udpPeersOf(t)
	if rec.Err != nil {
		log.Warn("iperf3 test failed", append([]any{"err", rec.Err}, peerAttrs(rec.UDPPeers)...)...)
	} else {
		log.Info("iperf3 test done", append(append([]any{"ended", rec.Ended, "client_version", p.ClientVersion}, peerAttrs(rec.UDPPeers)...), summaryAttrs(rec.Report)...)...)
	}
	if s.OnTest != nil {
		s.OnTest(rec)
	}
}

// iperf3Authorized checks a stock iperf3 client's credentials when the
// server requires them (Iperf3Auth, or Tokens: a server that admits only
// authorized tests admits iperf3 clients only through iperf3's own
// authentication), and returns the user.
func (s *Server) iperf3Authorized(authtoken string) (string, error) {
	switch {
	case s.Iperf3Auth != nil:
		return s.Iperf3Auth.Check(authtoken, time.Now())
	case s.Tokens != nil:
		return "", errors.New("access tokens required, and iperf3 clients cannot carry one: the server has no iperf3 authentication configured")
	}
	return "", nil
}

func (s *Server) runIperf3(ctx context.Context, k *i3Conn, t *serverTest, cfg model.TestConfig, dirs []model.Direction, blocks, serverOutput bool, log *slog.Logger) (model.EndReport, string, error) {
	var rep model.EndReport
	if t.udp {
		if err := s.awaitUDPTurn(ctx, t); err != nil {
			// As iperf3's own server answers a second client.
			_, _ = k.c.Write([]byte{i3AccessDenied})
			return rep, "", err
		}
	}
	if _, err := k.c.Write([]byte{i3CreateStreams}); err != nil {
		return rep, "", err
	}
	streams, err := s.awaitStreams(ctx, t, dirs)
	defer closeStreams(streams)
	switch {
	case errors.Is(err, errStreamsLate):
		i3SendError(k.c, i3ErrnoAccept, 0)
		return rep, "", err
	case err != nil:
		_, _ = k.c.Write([]byte{i3ServerTerminate})
		return rep, "", err
	}
	capped, readCap := serverEnd(cfg, t.class)
	for _, sm := range streams {
		if err := applyOptions(sm, &capped); err != nil {
			log.Warn("iperf3 socket options", "err", err)
		}
	}
	// A TCP sender writes at least DefaultLength per system call whatever
	// -l the client asked for: the byte stream is the same, and iperf3's
	// 128 KiB writes cost a fifth of the rate on fast paths. (UDP keeps
	// -l: it is the datagram size.)
	//
	// With -k, iperf3's client in -R counts its reads as blocks, one of
	// at most -l bytes each. Paced (-b), the server writes whole blocks
	// of -l, one when it is due, as iperf3's does: each read then takes
	// one block, where writes of 10 ms of the rate made k reads take k
	// such writes. At full speed the big writes stay: reads are full when
	// the sender keeps ahead of the reader, and these keep it further
	// ahead than -l writes.
	wholeBlocks := blocks && cfg.Bitrate > 0 && !cfg.IsUDP()
	ecfg := capped
	if !ecfg.IsUDP() && !wholeBlocks {
		ecfg.Length = max(ecfg.Length, DefaultLength)
	}
	e := newEnd(model.ServerSide, ecfg, streams, func(model.Interval) {})
	e.peerCloses = true
	e.readOn = true
	e.wholeBlocks = wholeBlocks
	// The client starts its clock and its senders on TEST_RUNNING: so
	// does this end, not after its own setup, which a busy server makes
	// take tens of milliseconds, a shorter time for the same bytes.
	e.t0 = time.Now()
	if _, err := k.c.Write([]byte{i3TestStart, i3TestRunning}); err != nil {
		return rep, "", err
	}
	e.hardStop = t.class.MaxDuration
	e.readCap = readCap
	if readCap > 0 {
		e.rateCap = t.class.MaxRate
	}
	// The client ends the test with TEST_END on the control connection;
	// a client that vanishes, or a server shutdown, ends it too.
	ended := make(chan string, 1)
	go func() {
		for {
			st, err := k.state(0)
			switch {
			case err != nil:
				ended <- "aborted"
				return
			case st == i3TestEnd:
				ended <- "complete"
				return
			case st == 12: // CLIENT_TERMINATE
				ended <- "interrupted"
				return
			}
		}
	}()
	how := "complete"
	// The streams run until the client ends the test; runOver closes
	// when every one has stopped, and runErr is theirs then.
	runOver := make(chan struct{})
	var runErr error
	go func() {
		runErr = e.run(context.Background())
		close(runOver)
	}()
	// endReads ends the receivers' reads now and waits for the streams.
	endReads := func() {
		e.finishReceivers()
		<-runOver
	}
	select {
	case how = <-ended:
		e.stop()
		if how == "complete" {
			// The receivers read on: what the client wrote before
			// TEST_END may still be on its way, in its send buffer or
			// in flight. They stop once they have what its results say
			// it sent (below), within the grace at most.
			e.drainReceivers(finishGrace)
		}
	case <-ctx.Done():
		how = "server-shutdown"
		_, _ = k.c.Write([]byte{i3ServerTerminate})
		e.abort()
		<-runOver
		return e.report(s.Version), how, ctx.Err()
	case <-runOver:
		// Our streams ended first (the client closed them, or the
		// server's duration limit): wait briefly for TEST_END.
		select {
		case how = <-ended:
		case <-time.After(5 * time.Second):
		}
	}
	if how != "complete" {
		endReads()
		return e.report(s.Version), how, runErr
	}
	// As iperf3's server does: close the streams this end sends on
	// before the results. A client in -R or --bidir reads them until
	// they close. (stop has ended their writing.)
	for _, st := range streams {
		if st.role == model.Sender {
			select {
			case <-st.done:
			case <-runOver: // they never started
			}
			st.close()
		}
	}
	// Results: the client sends first.
	if _, err := k.c.Write([]byte{i3ExchangeResults}); err != nil {
		endReads()
		return e.report(s.Version), how, err
	}
	var theirs i3ClientResults
	if err := k.recvJSON(&theirs, maxI3Results, finishGrace); err != nil {
		endReads()
		return e.report(s.Version), how, fmt.Errorf("iperf3 client results: %w", err)
	}
	e.awaitCounts(ctx, theirs.sent(e.streams), countStall(cfg.IsUDP(), controlRTT(k.c)), time.Now().Add(countWait))
	endReads()
	rep = e.report(s.Version)
	if err := movedNothing(&cfg, rep.Totals); err != nil {
		// Not a result: the client is told the test failed (its control
		// connection closes) rather than shown a clean zero.
		return rep, "aborted", err
	}
	res := i3ResultsOf(rep.Totals)
	switch {
	case serverOutput && s.OutputJSON:
		res.ServerOutputJSON = s.serverJSON(&cfg, &rep, k.c)
	case serverOutput:
		res.ServerOutputText = s.serverText(&cfg, &rep, k.c)
	}
	if err := k.sendJSON(res); err != nil {
		return rep, how, err
	}
	if _, err := k.c.Write([]byte{i3DisplayResults}); err != nil {
		return rep, how, err
	}
	_, _ = k.state(5 * time.Second) // IPERF_DONE
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

// i3ClientResults is what the server reads of a client's results: what
// each of its streams sent. A count may be absent, or not a count (-1,
// or 3.12's 2^64-1 for "none"): pointers tell.
type i3ClientResults struct {
	Streams []struct {
		ID      *float64 `json:"id"`
		Bytes   *float64 `json:"bytes"`
		Packets *float64 `json:"packets"`
	} `json:"streams"`
}

// sent is, for each of the server's streams (indexed as streams), what
// the client says it sent on it: for TCP the bytes of the measured
// period (iperf3 counts from its omit mark), for UDP the datagrams of the
// whole test (its highest sequence number). Absent for the server's
// sending streams, and where the client gives no usable count: those are
// not waited for.
func (r *i3ClientResults) sent(streams []*stream) []model.Opt[int64] {
	out := make([]model.Opt[int64], len(streams))
	for _, c := range r.Streams {
		id, ok := i3Count(c.ID)
		if !ok {
			continue
		}
		for i, st := range streams {
			if st.role != model.Receiver || int64(i3StreamID(st.id)) != id {
				continue
			}
			count := c.Bytes
			if st.udp != nil {
				count = c.Packets
			}
			if n, ok := i3Count(count); ok {
				out[i] = model.Some(n)
			}
		}
	}
	return out
}

// i3Count reads a count of an iperf3 results message: a whole number
// from 0 to 2^53 (past that a float64 is not exact, and iperf3 writes
// "none" as 2^64-1).
func i3Count(v *float64) (int64, bool) {
	if v == nil || *v < 0 || *v > 1<<53 || *v != math.Trunc(*v) {
		return 0, false
	}
	return int64(*v), true
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

// i3ParamsIn is the parameters JSON as a client sends it: booleans act by
// presence, so they are read as raw values.
type i3ParamsIn struct {
	TCP           json.RawMessage `json:"tcp"`
	UDP           json.RawMessage `json:"udp"`
	SCTP          json.RawMessage `json:"sctp"`
	Omit          float64         `json:"omit"`
	Time          float64         `json:"time"`
	Num           float64         `json:"num"`
	BlockCount    float64         `json:"blockcount"`
	Parallel      int             `json:"parallel"`
	Len           float64         `json:"len"`
	Window        float64         `json:"window"`
	MSS           int             `json:"MSS"`
	Bandwidth     float64         `json:"bandwidth"`
	FQRate        float64         `json:"fqrate"`
	Congestion    string          `json:"congestion"`
	Reverse       json.RawMessage `json:"reverse"`
	Bidirectional json.RawMessage `json:"bidirectional"`
	NoDelay       json.RawMessage `json:"nodelay"`
	ZeroCopy      json.RawMessage `json:"zerocopy"`
	Counters64    json.RawMessage `json:"udp_counters_64bit"`
	ServerOutput  json.RawMessage `json:"get_server_output"`
	ClientVersion string          `json:"client_version"`
	AuthToken     string          `json:"authtoken"`
}

// errI3Unsupported marks what this server does not serve to iperf3
// clients yet.
var errI3Unsupported = errors.New("not served to iperf3 clients yet")

// config turns iperf3's parameters into a test configuration.
func (p *i3ParamsIn) config() (model.TestConfig, error) {
	if p.SCTP != nil {
		return model.TestConfig{}, fmt.Errorf("SCTP tests are %w", errI3Unsupported)
	}
	// JSON numbers are float64s, and converting one out of int64's range
	// gives whatever the CPU gives (on amd64, the most negative int64):
	// each is checked in range first. Times are iperf3's own maximum
	// (86400 s for -t), counts 2^53 (exact in a float64).
	for _, v := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"time", p.Time, MaxTestDuration.Seconds()}, {"omit", p.Omit, MaxTestDuration.Seconds()},
		{"num", p.Num, 1 << 53}, {"blockcount", p.BlockCount, 1 << 53}, {"len", p.Len, 1 << 53},
		{"window", p.Window, 1 << 53}, {"bandwidth", p.Bandwidth, 1 << 53}, {"fqrate", p.FQRate, 1 << 53},
		{"blockcount × len", p.BlockCount * max(p.Len, 1), 1 << 53},
	} {
		if !(v.v >= 0 && v.v <= v.max) { // NaN fails both
			return model.TestConfig{}, errorf(CodeBadConfig, "check the client's options", "iperf3 parameter %s = %g out of range 0 to %g", v.name, v.v, v.max)
		}
	}
	cfg := model.TestConfig{
		Duration: time.Duration(p.Time * float64(time.Second)), Omit: time.Duration(p.Omit * float64(time.Second)),
		Bytes: model.Bytes(p.Num), Parallel: max(p.Parallel, 1), Length: model.Bytes(p.Len),
		Window: model.Bytes(p.Window), MSS: p.MSS, Bitrate: model.Bitrate(p.Bandwidth), FQRate: model.Bitrate(p.FQRate),
		Congestion: p.Congestion, Reverse: p.Reverse != nil, Bidir: p.Bidirectional != nil, NoDelay: p.NoDelay != nil,
		Counters64: p.Counters64 != nil, ZeroCopy: p.ZeroCopy != nil,
	}
	if p.UDP != nil {
		// iperf3 sends the UDP rate always (-b 0 omits it: unlimited),
		// and its TCP options only when set.
		cfg.Protocol = model.UDP
		cfg.Congestion, cfg.MSS, cfg.NoDelay, cfg.ZeroCopy = "", 0, false, false
	}
	if p.BlockCount > 0 {
		// -k: a count of writes of -l bytes each, per direction.
		cfg.Bytes = model.Bytes(p.BlockCount * max(p.Len, 1))
	}
	if cfg.Bytes > 0 {
		cfg.Duration = 0
	}
	return cfg, nil
}

// iperf3 error numbers (iperf_api.h) this server sends. A SERVER_ERROR
// carries two numbers and no text: iperf3's client prints its own text
// for the first (iperf_strerror), and for some (those marked "+ errno")
// appends the C library's text for the second. A number the client's
// version does not know prints as "int_errno=N" and says nothing, so each
// refusal uses one that every version since 3.9 knows, or the exact one
// when the client is new enough to know it.
const (
	i3ErrnoNewTest  = 100 // IENEWTEST "unable to create a new test" + errno
	i3ErrnoProtocol = 131 // IEPROTOCOL "protocol does not exist"
	i3ErrnoAccept   = 204 // IESTREAMACCEPT "unable to accept stream connection" + errno
	// IEMAXSERVERTESTDURATIONEXCEEDED "client's requested duration
	// exceeds the server's maximum permitted limit", since 3.20.
	i3ErrnoDuration = 37
	// IETOTALRATE "total required bandwidth is larger than server
	// limit", since 3.7.
	i3ErrnoTotalRate = 27
	// IEAUTHTEST "test authorization failed", since 3.2.
	i3ErrnoAuth = 142
)

// The C errno values sent beside i3ErrnoNewTest: from the range that
// Linux, the BSDs and macOS number alike, so the client's strerror
// prints the same text on each.
const (
	errnoInvalid = 22 // EINVAL "Invalid argument"
	errnoRange   = 34 // ERANGE "Numerical result out of range" (macOS: "Result too large")
	errnoAccess  = 13 // EACCES "Permission denied"
)

// i3ErrnoFor picks the error numbers that tell an iperf3 client of
// version clientVersion (as its parameters say, "3.12") why its test
// was refused.
// overDuration says the test was refused for the server's duration limit.
func i3ErrnoFor(err error, clientVersion string, cfg *model.TestConfig, cl *limits.Class) (ierrno, errno int32) {
	switch {
	case errors.Is(err, errI3Unsupported):
		return i3ErrnoProtocol, 0
	case CodeOf(err) == CodeDenied:
		// "unable to create a new test: Permission denied".
		return i3ErrnoNewTest, errnoAccess
	case CodeOf(err) == CodeLimit && span(cfg) > cl.MaxDuration && i3Minor(clientVersion) >= 20:
		return i3ErrnoDuration, 0
	case CodeOf(err) == CodeLimit && span(cfg) <= cl.MaxDuration && len(cfg.Directions()) <= cl.MaxStreams:
		// Over the class's rate cap: "total required bandwidth is
		// larger than server limit", as from iperf3's own
		// --server-bitrate-limit.
		return i3ErrnoTotalRate, 0
	case CodeOf(err) == CodeLimit:
		// Over one of the server's limits: "unable to create a new test:
		// Numerical result out of range". iperf3's own messages for a
		// duration or a stream count name iperf3's maxima (86400 s,
		// 128 streams), which are not this server's.
		return i3ErrnoNewTest, errnoRange
	}
	return i3ErrnoNewTest, errnoInvalid
}

// i3Minor is the minor version of an iperf3 3.x version string, or -1.
func i3Minor(v string) int {
	var minor int
	if _, err := fmt.Sscanf(v, "3.%d", &minor); err != nil {
		return -1
	}
	return minor
}

// i3SendError sends SERVER_ERROR with an iperf3 error number and a C
// errno (0: none).
func i3SendError(c net.Conn, ierrno, errno int32) {
	b := []byte{i3ServerError}
	b = binary.BigEndian.AppendUint32(b, uint32(ierrno))
	b = binary.BigEndian.AppendUint32(b, uint32(errno))
	_, _ = c.Write(b)
}

// serverText is the server's account of an iperf3 test as text, for a
// client that asked for it (--get-server-output): per stream and in sum,
// what this end moved, with its datagram account in UDP tests.
func (s *Server) serverText(cfg *model.TestConfig, rep *model.EndReport, c net.Conn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tcpscope server %s (kernel %s): accepted connection from %v\n", rep.Version, rep.Kernel, c.RemoteAddr())
	fmt.Fprintf(&b, "[ ID] %-8s %-8s %10s %14s\n", "Role", "Seconds", "Bytes", "Rate")
	var total model.Bytes
	var longest time.Duration
	for _, t := range rep.Totals {
		fmt.Fprintf(&b, "[%3d] %-8s %8.2f %10s %14s", i3StreamID(t.Stream), t.Role, t.Duration.Seconds(), t.Bytes.Decimal(), t.Rate)
		if u := t.UDP; u != nil && t.Role == model.Receiver {
			fmt.Fprintf(&b, "  jitter %.3f ms  lost %d/%d (%.2g%%)", float64(u.Jitter)/1e6, u.Lost, u.Packets, 100*u.LossRate())
		} else if u != nil {
			fmt.Fprintf(&b, "  datagrams %d", u.Packets)
		} else if t.Role == model.Sender {
			fmt.Fprintf(&b, "  retr %v", t.RetransSegs)
		}
		b.WriteByte('\n')
		total += t.Bytes
		longest = max(longest, t.Duration)
	}
	if len(rep.Totals) > 1 {
		fmt.Fprintf(&b, "[SUM] %-8s %8.2f %10s %14s\n", "", longest.Seconds(), total.Decimal(), model.RateOf(total, longest.Seconds()))
	}
	if s.Explain != nil {
		for _, line := range s.Explain(*cfg, *rep) {
			fmt.Fprintf(&b, "diagnosis: %s\n", line)
		}
	}
	return b.String()
}

// serverJSON is the server's account of an iperf3 test as JSON: the
// test as the server took it, its end's report and its diagnosis.
func (s *Server) serverJSON(cfg *model.TestConfig, rep *model.EndReport, c net.Conn) json.RawMessage {
	doc := struct {
		Server    string            `json:"server"`
		Client    string            `json:"client"`
		Config    *model.TestConfig `json:"config"`
		End       *model.EndReport  `json:"server_end"`
		Diagnosis []string          `json:"diagnosis,omitempty"`
	}{Server: "tcpscope " + s.Version, Client: c.RemoteAddr().String(), Config: cfg, End: rep}
	if s.Explain != nil {
		doc.Diagnosis = s.Explain(*cfg, *rep)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}
