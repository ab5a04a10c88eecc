package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tcpscope/tcpscope/internal/daemon"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/health"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// Server is a configured server, ready to Run or to Check.
type Server struct {
	cfg Config
	srv *serve.Server
	i3  *iperf3.Handler
	pin string // the TLS certificate's pin, "" without TLS
	// first is the first test's record: a one-test server's outcome.
	first chan gate.Record
}

// New builds the server cfg describes: its policy, keys and certificate
// loaded (a fault.BadConfig error says what is wrong with which), stock
// iperf3 clients and HTTP's health check served on its port, each
// test's server-end diagnosis in the log.
func New(cfg Config) (*Server, error) {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	policy, err := cfg.policy()
	if err != nil {
		return nil, err
	}
	tokens, err := cfg.tokens()
	if err != nil {
		return nil, err
	}
	auth, err := cfg.iperf3Auth()
	if err != nil {
		return nil, err
	}
	srv := perf.Add(&serve.Server{Policy: &policy, Tokens: tokens, Version: cfg.Version, Logger: cfg.Logger,
		AllowAffinity: cfg.AllowAffinity, OneTest: cfg.OneTest, IdleTimeout: cfg.IdleTimeout})
	pin, err := cfg.tls(srv)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, srv: srv, pin: pin, first: make(chan gate.Record, 1)}
	// Every test gets the server end's diagnosis in the log: for a stock
	// iperf3 client it is the only one anybody sees.
	srv.Subscribe(gate.OnEnded(s.logDiagnosis))
	// A one-test server's exit says how its test went: the first record
	// is that test's.
	srv.Subscribe(gate.OnEnded(func(rec gate.Record) {
		select {
		case s.first <- rec:
		default:
		}
	}))
	// Stock iperf3 clients on the same port; those that ask for the
	// server's output get the server end's diagnosis in it.
	s.i3 = &iperf3.Handler{Auth: auth, OutputJSON: cfg.JSONLog, Explain: explain}
	srv.Handle(s.i3)
	// HTTP on the same port: the health check anyone may read (lame
	// duck stays on the operator's listener).
	srv.HTTP = health.Public(s.status)
	return s, nil
}

func (s *Server) logDiagnosis(rec gate.Record) {
	if rec.Err != nil || s.cfg.Logger == nil {
		return
	}
	for _, fd := range diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server) {
		if fd.Primary {
			s.cfg.Logger.Info("diagnosis", "client", rec.Client, "direction", string(fd.Direction), "finding", fd.ID, "summary", fd.Summary)
		}
	}
}

// explain is the server end's diagnosis in an iperf3 server's output.
func explain(cfg model.TestConfig, rep model.EndReport, client, server string) []string {
	var out []string
	for _, fd := range diagnose.ServerEnd(cfg, rep, client, server) {
		out = append(out, fmt.Sprintf("%s: %s", fd.ID, fd.Summary))
	}
	return out
}

// status is the server's state as its health check reports it.
func (s *Server) status() health.Status {
	st := s.srv.Status()
	return health.Status{Draining: st.Draining, Running: st.Running, Streams: st.Streams}
}

// Check prints the policy and who may test (server --check).
func (s *Server) Check(w io.Writer) {
	s.srv.Policy.Format(w)
	fmt.Fprintln(w)
	tokens, auth := s.srv.Tokens, s.i3.Auth
	switch {
	case tokens != nil:
		fmt.Fprintf(w, "access     tokens required (%d keys; audience %q, issuer %q, at most %v)\n",
			len(tokens.Keys), tokens.Audience, tokens.Issuer, tokens.MaxLifetime)
	default:
		fmt.Fprintln(w, "access     anyone (no --require-token)")
	}
	switch {
	case auth != nil:
		fmt.Fprintf(w, "iperf3     users of %s (PKCS #1 v1.5 padding %s)\n", auth.UsersFile, map[bool]string{true: "accepted", false: "refused"}[auth.PKCS1])
	case tokens != nil:
		fmt.Fprintln(w, "iperf3     refused: tokens are required and no iperf3 authentication is set")
	default:
		fmt.Fprintln(w, "iperf3     anyone")
	}
	if s.pin != "" {
		fmt.Fprintf(w, "tls        control connections over TLS only; pin %s\n", s.pin)
	} else {
		fmt.Fprintln(w, "tls        off: control connections in clear")
	}
}

// Run serves until ctx ends or the server stops of its own accord (lame
// duck drained, its one test done, idle), then says how it ended: for a
// one-test server, its test's error.
func (s *Server) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ln, err := serve.Listen(ctx, s.cfg.Listen)
	if fault.CodeOf(err) == fault.AddrInUse {
		return &fault.Error{Code: fault.AddrInUse, Msg: fmt.Sprintf("listen on %s: address already in use", s.cfg.Listen),
			Hint: fmt.Sprintf("another server is listening on %s: stop it or use -p", s.cfg.Listen)}
	}
	if err != nil {
		return err
	}
	if s.cfg.Pidfile != "" {
		remove, err := daemon.WritePidfile(s.cfg.Pidfile)
		if err != nil {
			ln.Close()
			return fault.Errorf(fault.BadConfig, "give a file the server may write", "-I %s: %v", s.cfg.Pidfile, err)
		}
		defer remove()
	}
	s.announce(ln.Addr().String())
	// Lame duck (SIGUSR1, or POST /lameduck): admit nothing new, and
	// stop once the running tests have finished.
	lameDuck := func() {
		idle := s.srv.LameDuck()
		go func() {
			select {
			case <-idle:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		select {
		case <-usr1:
			lameDuck()
		case <-ctx.Done():
		}
	}()
	if s.cfg.Health != "" {
		hs, err := health.Start(ctx, s.cfg.Health, s.status, lameDuck)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--health: %w", err)
		}
		defer hs.Close()
	}
	if s.cfg.Ready != nil {
		s.cfg.Ready()
	}
	err = s.srv.Serve(ctx, ln)
	idled := errors.Is(err, serve.ErrIdle)
	if idled {
		err = nil
	}
	s.say("server stopped", "tcpscope server stopped")
	if err != nil || !s.cfg.OneTest {
		return err
	}
	return s.outcome(idled)
}

// outcome is a one-test server's: how its test went.
func (s *Server) outcome(idled bool) error {
	select {
	case rec := <-s.first:
		if rec.Err != nil {
			return fmt.Errorf("the one test (-1) with %s: %w", rec.Client, rec.Err)
		}
		return nil
	default:
	}
	if idled {
		return &fault.Error{Code: fault.Timeout, Msg: fmt.Sprintf("no test came within --idle-timeout %v", s.cfg.IdleTimeout),
			Hint: "start the client sooner, or give a longer --idle-timeout"}
	}
	return nil // stopped (a signal) before its test came
}

// say writes a line: to the log as msg with --json-log, else text to
// Stdout.
func (s *Server) say(msg, text string, attrs ...any) {
	if s.cfg.JSONLog && s.cfg.Logger != nil {
		s.cfg.Logger.Info(msg, attrs...)
		return
	}
	fmt.Fprintln(s.cfg.Stdout, text)
}

// announce says where the server listens and under which limits. With
// --json-log every line is JSON, the first and the last too: a log
// shipper takes them as they come.
func (s *Server) announce(addr string) {
	policy, cfg := s.srv.Policy, &s.cfg
	d := policy.Default
	switch {
	case len(policy.Classes) == 0:
		s.say("server listening", fmt.Sprintf("tcpscope %s server listening on %s (up to %d tests, %d per client address, %v each, %d streams)",
			cfg.Version, addr, policy.Server.MaxTests, d.MaxTestsPerAddr, d.MaxDuration, d.MaxStreams),
			"version", cfg.Version, "address", addr, "limits", policy.Source, "classes", 0, "max_tests", policy.Server.MaxTests)
	default:
		s.say("server listening", fmt.Sprintf("tcpscope %s server listening on %s (up to %d tests; limits from %s, %d classes)",
			cfg.Version, addr, policy.Server.MaxTests, policy.Source, len(policy.Classes)),
			"version", cfg.Version, "address", addr, "limits", policy.Source, "classes", len(policy.Classes), "max_tests", policy.Server.MaxTests)
	}
	var habits []string
	if cfg.OneTest {
		habits = append(habits, "serving one test (-1), then exiting")
	}
	if cfg.IdleTimeout > 0 {
		habits = append(habits, fmt.Sprintf("exiting if no test comes for %v (--idle-timeout)", cfg.IdleTimeout))
	}
	if len(habits) > 0 {
		s.say("server plan", strings.Join(habits, "; "), "one_off", cfg.OneTest, "idle_timeout", cfg.IdleTimeout.String())
	}
	if s.pin != "" {
		s.say("tls", "TLS for control connections; clients may pin this certificate with --tls-pin "+s.pin, "certificate_pin", s.pin)
	}
}
