package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
	"github.com/tcpscope/tcpscope/internal/token"
)

// The native protocol's server side: a Protocol on a serve.Server's
// port, which takes the native control connections (plain, or inside
// TLS by ALPN), the data connections, and the UDP streams' hellos.

// native is the native protocol on a server's port.
type native struct{}

// Add adds the native protocol to srv and returns srv: its control and
// data connections on srv's port (control connections over TLS only
// when srv has TLS), and its UDP streams on the port's number over UDP.
func Add(srv *serve.Server) *serve.Server {
	srv.Handle(native{})
	return srv
}

// Name is the protocol's name in the server's counts and logs.
func (native) Name() string { return "tcpscope" }

// Match takes a control or a data connection.
func (native) Match(head []byte) bool {
	return string(head) == controlMagic || string(head) == dataMagic
}

// ALPN is the protocol's name in a TLS handshake.
func (native) ALPN() string { return ALPN }

// Serve serves a control or a data connection.
func (native) Serve(ctx context.Context, c *serve.Conn) {
	if string(c.Head) == dataMagic {
		data(c)
		return
	}
	serveControl(ctx, c)
}

// UDPHello reads a native UDP hello.
func (native) UDPHello(b []byte) (key []byte, id int, ok bool) { return parseUDPHello(b) }

// OpenUDP answers stream id's hello with a fresh token, which the
// client echoes in its start message before the stream is sent anything
// more (verifyUDP).
func (native) OpenUDP(sock *net.UDPConn, id int) (*engine.UDPFlow, []byte) {
	f := engine.NewUDPFlow(sock, true, true)
	token := newToken()
	f.AnswerHellos(isUDPHello, udpAnswer(id, token))
	return f, token
}

// checkToken verifies a hello's access token when the server requires
// one, and returns its subject.
func checkToken(tokens *token.Verifier, tok string) (string, error) {
	if tokens == nil {
		return "", nil
	}
	c, err := tokens.Verify(tok, time.Now())
	if err != nil {
		hint := "ask the server's operator for an access token, and pass it with {token}"
		if tok != "" {
			hint = "ask the server's operator for a new access token"
		}
		return "", fault.Errorf(fault.Denied, hint, "%v", err)
	}
	return c.Subject, nil
}

// serveControl serves a native control connection: inside TLS when the
// server has TLS, and then only there, so that its cookie and keys
// never cross in clear.
func serveControl(ctx context.Context, c *serve.Conn) {
	if c.Server.TLS != nil && c.TLS == nil {
		// The hello is read first: closing on it unread would reset
		// the connection before the client read why.
		cc := newCtrl(c.TCPConn, maxClientMessage)
		if _, err := cc.recv(handshakeTimeout); err == nil {
			cc.sendError(fault.TLS, "this server takes its control connections over TLS only", "test with {tls}")
		}
		c.Close()
		return
	}
	control(ctx, c, c.Conn)
}

// data hands a data connection to the stream its preamble names. Data
// connections are plain: one inside TLS is closed.
func data(c *serve.Conn) {
	if c.TLS != nil {
		c.Conn.Close()
		return
	}
	rest := make([]byte, dataPreambleLen-magicLen)
	if _, err := io.ReadFull(c, rest); err != nil {
		c.Close()
		return
	}
	key, id, err := parseDataPreamble(rest)
	if err != nil || !c.Server.JoinStream(key, id, c) {
		c.Close()
	}
}

// control runs one test from hello to bye on conn, c's connection or
// the TLS session over it.
func control(ctx context.Context, c *serve.Conn, conn net.Conn) {
	defer conn.Close()
	srv := c.Server
	log := srv.Log().With("client", conn.RemoteAddr().String())
	cc := newCtrl(conn, maxClientMessage)
	m, err := cc.recv(handshakeTimeout)
	if err != nil || m.Type != msgHello {
		log.Debug("handshake", "err", err)
		return
	}
	if m.Hello.Protocol != ProtocolVersion {
		cc.sendError(fault.Version, fmt.Sprintf("server speaks protocol %d, client %d", ProtocolVersion, m.Hello.Protocol),
			fmt.Sprintf("use the same tcpscope release on both ends (server has %s)", srv.Version))
		return
	}
	refuse := func(kind string, err error) {
		srv.Refused(kind, conn.RemoteAddr(), err)
		cc.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
	}
	subject, err := checkToken(srv.Tokens, m.Hello.Token)
	if err != nil {
		refuse("token", err)
		return
	}
	cfg := m.Hello.Config
	if err := engine.Normalize(&cfg); err != nil {
		cc.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return
	}
	cl := srv.Class(conn.RemoteAddr())
	if err := serve.CheckLimits(&cfg, cl, 0); err != nil {
		refuse("", err)
		return
	}
	keys := newKeys(len(cfg.Directions()))
	t, err := srv.Admit(serve.TestSpec{Key: newCookie(), StreamKeys: keys, Protocol: "tcpscope",
		Client: conn.RemoteAddr(), Config: cfg, Class: cl})
	if err != nil {
		refuse("", err)
		return
	}
	defer t.Release()
	c.Admitted()
	if subject != "" {
		log = log.With("token_subject", subject)
	}
	log.Info("test admitted", serve.AdmissionAttrs(m.Hello.Version, cfg, cl)...)

	rec := gate.Record{Start: t.Admitted(), Client: conn.RemoteAddr().String(), Server: conn.LocalAddr().String(),
		Tool: "tcpscope", ClientVersion: m.Hello.Version, Config: cfg, TokenSubject: subject}
	rec.Report, rec.Ended, rec.Err = runTest(ctx, cc, srv, t, cfg, keys)
	rec.UDPPeers = t.UDPPeers()
	if rec.Err != nil {
		log.Warn("test failed", append([]any{"client_version", m.Hello.Version, "err", rec.Err}, serve.PeerAttrs(rec.UDPPeers)...)...)
	} else {
		log.Info("test done", append(append([]any{"client_version", m.Hello.Version, "ended", rec.Ended}, serve.PeerAttrs(rec.UDPPeers)...), serve.SummaryAttrs(rec.Report)...)...)
	}
	t.Ended(rec)
}

// runTest runs an admitted test on its control connection: its streams
// opened and started, the test measured with its intervals sent as they
// come, and the totals exchanged for the client's bye. It returns this
// end's report and how the test ended.
func runTest(ctx context.Context, c *ctrl, srv *serve.Server, t *serve.Test, cfg model.TestConfig, keys [][]byte) (model.EndReport, string, error) {
	pinned, unpin := t.Pin(cfg.ServerCPU)
	defer unpin()
	streams, ecfg, readCap, err := startStreams(ctx, c, srv, t, cfg, keys, pinned)
	defer serve.CloseStreams(streams)
	if err != nil {
		return model.EndReport{}, "", err
	}

	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tick <-chan time.Time
	if cfg.Interval < batchEvery {
		ticker := time.NewTicker(batchEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	// A client that falls a queue behind is not reading, and the test is
	// aborted rather than left to pile up.
	out := startIntervalSender(c.send, tick, cancel)
	e := t.NewEnd(ecfg, streams, readCap, func(iv model.Interval) {
		if !out.add(iv) {
			cancel()
		}
	}, engine.EndOptions{})
	var ended endedAs
	bye := watchClient(c, e, &ended, cancel)
	stopBy := func(reason string) {
		ended.set(reason)
		_ = c.send(&message{Type: msgStop, Stop: &stop{Reason: reason}})
		e.Stop()
	}
	stopOnShutdown := context.AfterFunc(ctx, func() { stopBy("server-shutdown") })
	defer stopOnShutdown()
	// A byte-count test has no duration to check on admission; the limit
	// ends it cleanly, both ends' senders told. (A timed test was checked
	// on admission and ends by itself.)
	if engine.Span(&cfg) == 0 {
		limit := time.AfterFunc(t.Class().MaxDuration, func() { stopBy("server-limit") })
		defer limit.Stop()
	}

	runErr := e.Run(tctx)
	sendErr := out.close()
	rep := e.Report(srv.Version)
	how := ended.get()
	if runErr != nil {
		return rep, how, runErr
	}
	if sendErr != nil {
		return rep, how, sendErr
	}
	return rep, how, sendDone(c, rep, bye)
}

// startStreams welcomes an admitted test, waits for its data connections
// and the client's start, sets the streams' options and tells the client
// they are set. It returns the streams (to close, even on an error),
// this end's configuration and the rate its receivers may read at.
func startStreams(ctx context.Context, c *ctrl, srv *serve.Server, t *serve.Test, cfg model.TestConfig, keys [][]byte, pinned *int) ([]*engine.Stream, model.TestConfig, model.Bitrate, error) {
	var rateCap model.Bitrate
	if !cfg.IsUDP() {
		rateCap = t.Class().MaxRate
	}
	if err := c.send(&message{Type: msgWelcome, Welcome: &welcome{
		Protocol: ProtocolVersion, Version: srv.Version, Kernel: tcpinfo.KernelRelease(), Cookie: t.Key(), StreamKeys: keys, RateCap: rateCap,
		ServerCPU: pinned,
	}}); err != nil {
		return nil, cfg, 0, err
	}
	streams, err := t.AwaitStreams(ctx)
	switch {
	case errors.Is(err, serve.ErrStreamsLate):
		c.sendError(fault.Timeout, "data connections did not arrive in time", "a firewall may block new connections to the server's port")
		return streams, cfg, 0, err
	case err != nil:
		c.sendError(fault.Shutdown, "server shutting down", "run again later")
		return streams, cfg, 0, err
	}
	m, err := c.recv(handshakeTimeout)
	if err != nil || m.Type != msgStart {
		return streams, cfg, 0, fmt.Errorf("wait for start: %v", err)
	}
	if err := verifyUDP(streams, t.UDPTokens(), m.Start); err != nil {
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return streams, cfg, 0, err
	}
	ecfg, readCap := t.Capped(cfg)
	st, err := setStreams(c, streams, &ecfg)
	if err != nil {
		return streams, cfg, 0, err
	}
	return streams, ecfg, readCap, c.send(&message{Type: msgStarted, Started: st})
}

// setStreams applies this end's socket options to its streams, telling
// the client when the kernel refuses one, and says what the kernel
// granted and where each stream is bound.
func setStreams(c *ctrl, streams []*engine.Stream, ecfg *model.TestConfig) (*started, error) {
	st := &started{Setups: make([]model.SocketSetup, len(streams)), Addrs: make([]string, len(streams))}
	for i, sm := range streams {
		if err := sm.Apply(ecfg); err != nil {
			c.sendError(fault.Socket, fmt.Sprintf("server: %v", err), "check {congestion}, {mss} and {fq_rate} against the server's kernel")
			return nil, err
		}
		var err error
		if st.Setups[i], err = sm.Setup(ecfg.TOS != 0); err != nil {
			return nil, err
		}
		st.Addrs[i] = sm.LocalAddr().String()
	}
	return st, nil
}

// endedAs is how a test ended: complete, unless something ended it
// first (the first reason given stands).
type endedAs struct {
	mu  sync.Mutex
	how string
}

func (e *endedAs) set(how string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.how == "" {
		e.how = how
	}
}

func (e *endedAs) get() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.how == "" {
		return "complete"
	}
	return e.how
}

// watchClient reads the client's control messages while its test runs:
// it may ask to stop, say bye, or vanish. The bye, or the loss of the
// connection (which aborts the test), comes on the returned channel.
func watchClient(c *ctrl, e *engine.End, ended *endedAs, cancel func()) <-chan error {
	bye := make(chan error, 1)
	go func() {
		for {
			m, err := c.recv(0)
			if err != nil {
				ended.set("aborted")
				bye <- err
				cancel()
				return
			}
			switch m.Type {
			case msgStop:
				ended.set("interrupted")
				e.Stop()
			case msgBye:
				bye <- nil
				return
			}
		}
	}()
	return bye
}

// sendDone sends the client this end's totals (its intervals went out
// live) and waits for the client's bye.
func sendDone(c *ctrl, rep model.EndReport, bye <-chan error) error {
	done := rep
	done.Intervals = nil
	if err := c.send(&message{Type: msgDone, Done: &done}); err != nil {
		return err
	}
	select {
	case err := <-bye:
		if err != nil {
			return fmt.Errorf("wait for bye: %w", err)
		}
	case <-time.After(handshakeTimeout):
		return errors.New("client did not acknowledge the results")
	}
	return nil
}
