package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

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
// or a data connection of a running one.
func (s *Server) iperf3Conn(ctx context.Context, c *net.TCPConn, head []byte) {
	rest := make([]byte, i3CookieLen-len(head))
	if _, err := io.ReadFull(c, rest); err != nil || rest[len(rest)-1] != 0 || !isI3Cookie(rest[:len(rest)-1]) {
		c.Close()
		return
	}
	cookie := string(append(append([]byte{}, head...), rest...))
	s.mu.Lock()
	t := s.running[cookie]
	if t != nil {
		// A data connection: streams are numbered in arrival order.
		if t.full || t.next >= t.nconn {
			s.mu.Unlock()
			_, _ = c.Write([]byte{i3AccessDenied})
			c.Close()
			return
		}
		id := t.next
		t.next++
		s.mu.Unlock()
		_ = c.SetReadDeadline(time.Time{})
		t.data <- dataConn{conn: c, stream: id}
		return
	}
	s.mu.Unlock()
	s.iperf3Control(ctx, c, []byte(cookie))
}

// iperf3Control runs one test for a stock iperf3 client.
func (s *Server) iperf3Control(ctx context.Context, conn *net.TCPConn, cookie []byte) {
	defer conn.Close()
	log := s.Logger.With("client", conn.RemoteAddr().String(), "protocol", "iperf3")
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
	cfg, err := p.config()
	if err == nil {
		err = Normalize(&cfg)
	}
	if err == nil {
		err = checkLimits(&cfg, s.Limits)
	}
	if err != nil {
		log.Info("refused", "reason", err)
		i3SendError(conn, i3ErrnoFor(err))
		return
	}
	dirs := cfg.Directions()
	t := &serverTest{cookie: cookie, nconn: len(dirs), data: make(chan dataConn, len(dirs)),
		udp: cfg.IsUDP(), iperf3: true, wide: cfg.Counters64, admitted: time.Now()}
	if ta, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		t.clientIP = ta.IP
	}
	if err := s.admit(t); err != nil {
		log.Info("refused", "reason", err)
		_, _ = conn.Write([]byte{i3AccessDenied})
		return
	}
	defer s.release(t)
	rec := TestRecord{Start: t.admitted, Client: conn.RemoteAddr().String(), Server: conn.LocalAddr().String(),
		Tool: "iperf3", ClientVersion: p.ClientVersion, Config: cfg}
	rec.Report, rec.Ended, rec.Err = s.runIperf3(ctx, k, t, cfg, dirs, p.ServerOutput != nil, log)
	if rec.Err != nil {
		log.Warn("iperf3 test failed", "err", rec.Err)
	} else {
		log.Info("iperf3 test done", append([]any{"ended", rec.Ended, "client_version", p.ClientVersion}, summaryAttrs(rec.Report)...)...)
	}
	if s.OnTest != nil {
		s.OnTest(rec)
	}
}

func (s *Server) runIperf3(ctx context.Context, k *i3Conn, t *serverTest, cfg model.TestConfig, dirs []model.Direction, serverOutput bool, log *slog.Logger) (model.EndReport, string, error) {
	var rep model.EndReport
	if _, err := k.c.Write([]byte{i3CreateStreams}); err != nil {
		return rep, "", err
	}
	streams, err := s.awaitStreams(ctx, t, dirs)
	defer closeStreams(streams)
	switch {
	case errors.Is(err, errStreamsLate):
		i3SendError(k.c, i3ErrnoStreams)
		return rep, "", err
	case err != nil:
		_, _ = k.c.Write([]byte{i3ServerTerminate})
		return rep, "", err
	}
	for _, sm := range streams {
		if err := applyOptions(sm, &cfg); err != nil {
			log.Warn("iperf3 socket options", "err", err)
		}
	}
	if _, err := k.c.Write([]byte{i3TestStart, i3TestRunning}); err != nil {
		return rep, "", err
	}
	// A TCP sender writes at least DefaultLength per system call whatever
	// -l the client asked for: the byte stream is the same, and iperf3's
	// 128 KiB writes cost a fifth of the rate on fast paths. (UDP keeps
	// -l: it is the datagram size.)
	ecfg := cfg
	if !ecfg.IsUDP() {
		ecfg.Length = max(ecfg.Length, DefaultLength)
	}
	e := newEnd(model.ServerSide, ecfg, streams, func(model.Interval) {})
	e.peerCloses = true
	e.hardStop = s.Limits.MaxDuration
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
	runDone := make(chan error, 1)
	go func() { runDone <- e.run(context.Background()) }()
	var runErr error
	select {
	case how = <-ended:
		e.stop()
		e.finishReceivers()
		runErr = <-runDone
	case <-ctx.Done():
		how = "server-shutdown"
		_, _ = k.c.Write([]byte{i3ServerTerminate})
		e.abort()
		<-runDone
		return e.report(s.Version), how, ctx.Err()
	case runErr = <-runDone:
		// Our streams ended first (the client closed them, or the
		// server's duration limit): wait briefly for TEST_END.
		select {
		case how = <-ended:
		case <-time.After(5 * time.Second):
		}
	}
	rep = e.report(s.Version)
	if how != "complete" {
		return rep, how, runErr
	}
	// As iperf3's server does: close the streams before the results. A
	// client in -R reads its streams until they close.
	for _, st := range streams {
		st.close()
	}
	// Results: the client sends first.
	if _, err := k.c.Write([]byte{i3ExchangeResults}); err != nil {
		return rep, how, err
	}
	var theirs i3Results
	if err := k.recvJSON(&theirs, maxI3Results, finishGrace); err != nil {
		return rep, how, fmt.Errorf("iperf3 client results: %w", err)
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
	Counters64    json.RawMessage `json:"udp_counters_64bit"`
	ServerOutput  json.RawMessage `json:"get_server_output"`
	ClientVersion string          `json:"client_version"`
}

// errI3Unsupported marks what this server does not serve to iperf3
// clients yet.
var errI3Unsupported = errors.New("not served to iperf3 clients yet")

// config turns iperf3's parameters into a test configuration.
func (p *i3ParamsIn) config() (model.TestConfig, error) {
	if p.SCTP != nil {
		return model.TestConfig{}, fmt.Errorf("SCTP tests are %w", errI3Unsupported)
	}
	cfg := model.TestConfig{
		Duration: time.Duration(p.Time * float64(time.Second)), Omit: time.Duration(p.Omit * float64(time.Second)),
		Bytes: model.Bytes(p.Num), Parallel: max(p.Parallel, 1), Length: model.Bytes(p.Len),
		Window: model.Bytes(p.Window), MSS: p.MSS, Bitrate: model.Bitrate(p.Bandwidth), FQRate: model.Bitrate(p.FQRate),
		Congestion: p.Congestion, Reverse: p.Reverse != nil, Bidir: p.Bidirectional != nil, NoDelay: p.NoDelay != nil,
		Counters64: p.Counters64 != nil,
	}
	if p.UDP != nil {
		// iperf3 sends the UDP rate always (-b 0 omits it: unlimited),
		// and its TCP options only when set.
		cfg.Protocol = model.UDP
		cfg.Congestion, cfg.MSS, cfg.NoDelay = "", 0, false
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

// iperf3 error numbers (iperf_api.h) this server sends.
const (
	i3ErrnoStreams  = 6   // IENUMSTREAMS
	i3ErrnoDuration = 37  // IEMAXSERVERTESTDURATIONEXCEEDED
	i3ErrnoProtocol = 111 // IEPROTOCOL: protocol not supported
)

func i3ErrnoFor(err error) int32 {
	switch {
	case errors.Is(err, errI3Unsupported):
		return i3ErrnoProtocol
	case CodeOf(err) == CodeLimit:
		return i3ErrnoDuration
	}
	return i3ErrnoStreams
}

// i3SendError sends SERVER_ERROR with an iperf3 error number.
func i3SendError(c net.Conn, ierrno int32) {
	b := []byte{i3ServerError, 0, 0, 0, 0, 0, 0, 0, 0}
	b[1], b[2], b[3], b[4] = byte(ierrno>>24), byte(ierrno>>16), byte(ierrno>>8), byte(ierrno)
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
