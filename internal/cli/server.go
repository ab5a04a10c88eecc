package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/daemon"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/health"
	"github.com/tcpscope/tcpscope/internal/i3auth"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/token"
)

type serverFlags struct {
	listen     string
	port       int    // iperf3's -p: replaces the port of --listen
	bind       string // iperf3's -B: replaces the host of --listen
	limits     perf.Limits
	limitsFile string
	check      bool
	health     string
	// Access tokens (native clients) and iperf3's own authentication.
	requireToken  bool
	tokenKeys     []string
	tokenAudience string
	tokenIssuer   string
	tokenLifetime time.Duration
	rsaKey        string
	usersFile     string
	skew          int
	pkcs1         bool
	tlsCert       string
	tlsKey        string
	jsonLog       bool
	debug         bool
	// iperf3's server habits.
	oneOff      bool
	daemon      bool
	pidfile     string
	logfile     string
	idleTimeout time.Duration

	// allowAffinity: clients may pin the server's process (test -A n,m).
	allowAffinity bool
}

// limitFlags are the flags a limits file replaces.
var limitFlags = []string{"max-tests", "max-duration", "max-streams", "max-total-streams", "max-tests-per-address", "max-pending-per-address", "max-pending"}

// newServerCmd is the server command; args are the whole command line,
// which -D runs again in the background.
func newServerCmd(args []string, stdout, stderr io.Writer) *cobra.Command {
	f := &serverFlags{limits: perf.DefaultLimits, tokenLifetime: 24 * time.Hour}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve tcpscope tests, many clients at once",
		Long: `Serve memory-to-memory tests. Unlike iperf3's server, several clients can
test at once, up to --max-tests; a client over a limit gets a clear
"server busy" error. SIGINT or SIGTERM stops the running tests cleanly:
their clients still get results. SIGUSR1 (or POST /lameduck on --health)
puts the server in lame-duck mode: it admits no new test, /healthz says
"draining" (503), and it exits once the running tests have finished.
GET /healthz is also served over HTTP (HTTPS with --tls-cert) on the
server's own port, which serves tcpscope and iperf3 clients too.

For a public server, --limits FILE gives each class of client networks
its own limits (allow or deny, tests, streams, duration, TCP and UDP rate
caps, protocols); --check prints what a file means and exits. An example
is deploy/limits.toml in tcpscope's source.

iperf3's server habits: -1 serves one test and exits, 0 when it completed
(the exit code of its failure otherwise); connections refused before a
test is admitted (a bad hello, failed authentication, a limit) do not use
it up, and other clients hear "server busy" while it runs. -D runs the
server in the background, detached from the terminal (output to --logfile,
or nowhere), once it listens; -I writes its pid. --idle-timeout stops a
server no test has come to for that long (iperf3 restarts a stuck server;
here every test is bounded by --max-duration, so idle only means nobody
came): exit 0, or 5 with -1, whose test never came.`,
		Args: noArgs("tcpscope server --listen :5201"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			child := daemon.Child()
			if f.daemon && child == nil {
				return startDaemon(args, f, stdout, stderr)
			}
			if f.logfile != "" {
				lf, err := os.OpenFile(f.logfile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					child.Fail("--logfile: " + err.Error())
					return usagef("give a file the server may write", "--logfile: %v", err)
				}
				defer lf.Close()
				stdout, stderr = lf, lf
			}
			err := runServer(cmd, f, child, stdout, stderr)
			if err == nil {
				return nil
			}
			code, line := errorLine(err)
			child.Fail(line)
			switch {
			case f.jsonLog:
				// With --json-log even the error that ends the server
				// is a JSON line, for the log shipper that reads them.
				slog.New(slog.NewJSONHandler(stderr, nil)).Error("server failed", "err", line, "exit_code", code)
				return &exitError{code: code}
			case f.logfile != "":
				fmt.Fprintln(stderr, "tcpscope: "+line) // the log says why it ended too
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", ":5201", "address to listen on")
	fl.IntVarP(&f.port, "port", "p", 0, "port to listen on, as iperf3 -s -p (overrides the one in --listen)")
	fl.StringVarP(&f.bind, "bind", "B", "", "address to listen on, as iperf3 -s -B (overrides the host in --listen)")
	fl.IntVar(&f.limits.MaxTests, "max-tests", f.limits.MaxTests, "concurrent tests")
	fl.Var(seconds{&f.limits.MaxDuration}, "max-duration", "longest test, omitted start included")
	fl.IntVar(&f.limits.MaxStreams, "max-streams", f.limits.MaxStreams, "streams per test, both directions counted")
	fl.IntVar(&f.limits.MaxTotalStreams, "max-total-streams", f.limits.MaxTotalStreams, "streams of all running tests together (bounds buffer memory)")
	fl.IntVar(&f.limits.MaxTestsPerAddr, "max-tests-per-address", f.limits.MaxTestsPerAddr, "concurrent tests from one client address")
	fl.IntVar(&f.limits.MaxPendingPerAddr, "max-pending-per-address", f.limits.MaxPendingPerAddr, "connections from one address not yet part of a test (more are closed at once)")
	fl.IntVar(&f.limits.MaxPending, "max-pending", f.limits.MaxPending, "connections from all addresses not yet part of a test")
	fl.StringVar(&f.limitsFile, "limits", "", "limits file: classes of client networks, each with its own limits (TOML; see deploy/limits.toml)")
	fl.BoolVar(&f.check, "check", false, "check the limits (of --limits, or the flags), print them and exit")
	fl.StringVar(&f.health, "health", "", "serve GET /healthz and POST /lameduck (from loopback) over HTTP at this address, e.g. 127.0.0.1:9201")
	fl.BoolVar(&f.requireToken, "require-token", false, "admit only tests with an access token (native clients: --token; iperf3 clients: iperf3's own authentication)")
	fl.StringArrayVar(&f.tokenKeys, "token-key", nil, "key that verifies access tokens: an Ed25519 public key (PEM or JSON Web Key) or an HMAC secret file; repeat for several")
	fl.StringVar(&f.tokenAudience, "token-audience", "", "this server's name, which a token's audience must include (recommended: a token for one server is then no pass to another)")
	fl.StringVar(&f.tokenIssuer, "token-issuer", "", "the issuer a token must name")
	fl.Var(seconds{&f.tokenLifetime}, "token-max-lifetime", "refuse tokens valid for longer than this from now")
	fl.StringVar(&f.rsaKey, "rsa-private-key-path", "", "iperf3 authentication: the RSA private key that decrypts clients' credentials (as iperf3 -s)")
	fl.StringVar(&f.usersFile, "authorized-users-path", "", "iperf3 authentication: the file of user,sha256 lines (as iperf3 -s)")
	fl.IntVar(&f.skew, "time-skew-threshold", 10, "iperf3 authentication: the largest clock difference allowed, in seconds")
	fl.BoolVar(&f.pkcs1, "use-pkcs1-padding", false, "iperf3 authentication: also accept PKCS #1 v1.5 padding, as clients before iperf3 3.17 send (a decryption-oracle risk: CVE-2024-26306)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve native control connections over TLS only, with this certificate (PEM; data connections stay plain)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fl.BoolVar(&f.jsonLog, "json-log", false, "log in JSON lines")
	fl.BoolVar(&f.debug, "debug", false, "log connection details")
	fl.BoolVarP(&f.oneOff, "one-off", "1", false, "serve one test, then exit, as iperf3 -s -1 (refused connections do not count)")
	fl.BoolVarP(&f.daemon, "daemon", "D", false, "run in the background, detached from the terminal, as iperf3 -D (output to --logfile, or discarded)")
	fl.StringVarP(&f.pidfile, "pidfile", "I", "", "write the server's process id to this file (removed at exit), as iperf3 -I")
	fl.StringVar(&f.logfile, "logfile", "", "append the server's output and log to this file instead of stdout and stderr")
	fl.Var(seconds{&f.idleTimeout}, "idle-timeout", "exit when no test has run for this long (seconds, or 10m)")
	fl.BoolVar(&f.allowAffinity, "allow-affinity", false, "let a client pin this server's process to a CPU for its test (test -A n,m), one test at a time; off: ignored with a warning (the pin holds every test, so a public server must not let a client choose it)")
	return cmd
}

// startDaemon is -D: the same command line again, in the background; this
// process exits once that one listens, or with its error.
func startDaemon(args []string, f *serverFlags, stdout, stderr io.Writer) error {
	if f.check {
		return usagef("drop -D: --check prints and exits", "-D with --check")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-D: find this program: %w", err)
	}
	pid, err := daemon.Start(self, args, f.logfile, 30*time.Second)
	var ce *daemon.ChildError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "tcpscope: "+ce.Line)
		if ce.Code <= 0 {
			ce.Code = ExitFailure
		}
		return &exitError{code: ce.Code}
	}
	if err != nil {
		return err
	}
	where := "output discarded (--logfile FILE keeps it)"
	if f.logfile != "" {
		where = "output to " + f.logfile
	}
	fmt.Fprintf(stdout, "tcpscope server running in the background, pid %d, %s\n", pid, where)
	return nil
}

// serverPolicy is the server's policy: the limits file's, or the flags'.
func serverPolicy(cmd *cobra.Command, f *serverFlags) (limits.Table, error) {
	if f.limitsFile == "" {
		if f.limits.MaxTests < 1 || f.limits.MaxStreams < 1 || f.limits.MaxTotalStreams < 1 || f.limits.MaxDuration < time.Second ||
			f.limits.MaxTestsPerAddr < 1 || f.limits.MaxPendingPerAddr < 1 || f.limits.MaxPending < 1 {
			return limits.Table{}, usagef("limits must be positive, --max-duration at least 1s", "bad server limits")
		}
		t := f.limits.Table()
		if err := t.Check(); err != nil {
			return limits.Table{}, usagef("see tcpscope server --help for each limit's range", "bad server limits: %v", err)
		}
		return t, nil
	}
	for _, name := range limitFlags {
		if cmd.Flags().Changed(name) {
			return limits.Table{}, usagef("set it in the limits file instead, in its [server] or [default] section", "--%s and --limits together", name)
		}
	}
	data, err := os.ReadFile(f.limitsFile)
	if err != nil {
		return limits.Table{}, usagef("give the path of a limits file; deploy/limits.toml is an example", "read limits: %v", err)
	}
	t, err := limits.Parse(data, limits.Builtin())
	if err != nil {
		return limits.Table{}, usagef("fix the file, then check it with tcpscope server --limits FILE --check", "limits file %s: %v", f.limitsFile, err)
	}
	t.Source = f.limitsFile
	return t, nil
}

// serverAuth builds the server's token verifier and iperf3
// authenticator from the flags (nil where not asked for).
func serverAuth(f *serverFlags) (*token.Verifier, *i3auth.Authenticator, error) {
	var v *token.Verifier
	switch {
	case f.requireToken && len(f.tokenKeys) == 0:
		return nil, nil, usagef("give the key that verifies them: --token-key FILE (tcpscope token keygen makes one)", "--require-token without --token-key")
	case !f.requireToken && len(f.tokenKeys) > 0:
		return nil, nil, usagef("add --require-token, or drop --token-key", "--token-key without --require-token")
	case f.requireToken:
		v = &token.Verifier{Issuer: f.tokenIssuer, Audience: f.tokenAudience, MaxLifetime: f.tokenLifetime, Leeway: 30 * time.Second}
		for _, name := range f.tokenKeys {
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, nil, usagef("give a readable key file", "read --token-key: %v", err)
			}
			k, err := token.ParseKey(data)
			if err != nil {
				return nil, nil, usagef("an Ed25519 public key (PEM or JSON Web Key), or an HMAC secret of 32 bytes or more", "--token-key %s: %v", name, err)
			}
			v.Keys = append(v.Keys, k)
		}
	}
	if (f.rsaKey == "") != (f.usersFile == "") {
		return nil, nil, usagef("iperf3 authentication needs both, as iperf3 -s does", "--rsa-private-key-path and --authorized-users-path go together")
	}
	if f.rsaKey == "" {
		return v, nil, nil
	}
	data, err := os.ReadFile(f.rsaKey)
	if err != nil {
		return nil, nil, usagef("give a readable RSA private key (PEM)", "read --rsa-private-key-path: %v", err)
	}
	key, err := i3auth.ParsePrivateKey(data)
	if err != nil {
		return nil, nil, usagef("an RSA private key in PEM, e.g. from openssl genrsa -out private.pem 2048", "--rsa-private-key-path %s: %v", f.rsaKey, err)
	}
	if _, err := os.Stat(f.usersFile); err != nil {
		return nil, nil, usagef("give the authorized-users file (lines of user,sha256 of {user}password)", "--authorized-users-path: %v", err)
	}
	if f.skew < 1 {
		return nil, nil, usagef("use a positive number of seconds", "bad --time-skew-threshold %d", f.skew)
	}
	return v, &i3auth.Authenticator{Key: key, UsersFile: f.usersFile, Skew: time.Duration(f.skew) * time.Second, PKCS1: f.pkcs1}, nil
}

// serverTLS loads --tls-cert and --tls-key into srv, and says the
// certificate's pin for clients to pin it by ("" without TLS).
func serverTLS(srv *perf.Server, f *serverFlags) (string, error) {
	if f.tlsCert == "" && f.tlsKey == "" {
		return "", nil
	}
	if f.tlsCert == "" || f.tlsKey == "" {
		return "", usagef("give both, the certificate and its key", "--tls-cert and --tls-key go together")
	}
	cfg, pin, err := perf.LoadServerTLS(f.tlsCert, f.tlsKey)
	if err != nil {
		return "", usagef("PEM files of a certificate and its private key", "load --tls-cert and --tls-key: %v", err)
	}
	srv.TLS = cfg
	return pin, nil
}

// listenAddr is --listen with iperf3's -p and -B applied.
func listenAddr(f *serverFlags) (string, error) {
	if f.port == 0 && f.bind == "" {
		return f.listen, nil
	}
	host, port, err := net.SplitHostPort(f.listen)
	if err != nil {
		return "", usagef("--listen takes HOST:PORT, e.g. :5201 or [::1]:5201", "bad --listen %q", f.listen)
	}
	if f.port != 0 {
		if f.port < 1 || f.port > 65535 {
			return "", usagef("a port is 1 to 65535", "bad --port %d", f.port)
		}
		port = fmt.Sprint(f.port)
	}
	if f.bind != "" {
		host = f.bind
	}
	return net.JoinHostPort(host, port), nil
}

// newServer is the server the flags describe, stock iperf3 clients
// served on its port, and its TLS pin ("" without TLS).
func newServer(cmd *cobra.Command, f *serverFlags, logger *slog.Logger) (*perf.Server, *iperf3.Handler, string, error) {
	policy, err := serverPolicy(cmd, f)
	if err != nil {
		return nil, nil, "", err
	}
	tokens, iperf3Auth, err := serverAuth(f)
	if err != nil {
		return nil, nil, "", err
	}
	srv := &perf.Server{Policy: &policy, Tokens: tokens, Version: Version, Logger: logger}
	srv.AllowAffinity = f.allowAffinity
	pin, err := serverTLS(srv, f)
	if err != nil {
		return nil, nil, "", err
	}
	// Every test gets the server end's diagnosis in the log: for a stock
	// iperf3 client it is the only one anybody sees.
	srv.Subscribe(gate.OnEnded(func(rec gate.Record) {
		if rec.Err != nil {
			return
		}
		for _, fd := range diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server) {
			if fd.Primary {
				logger.Info("diagnosis", "client", rec.Client, "direction", string(fd.Direction), "finding", fd.ID, "summary", fd.Summary)
			}
		}
	}))
	// Stock iperf3 clients on the same port; those that ask for the
	// server's output get the server end's diagnosis in it.
	i3 := &iperf3.Handler{Auth: iperf3Auth, OutputJSON: f.jsonLog, Explain: func(cfg model.TestConfig, rep model.EndReport, client, server string) []string {
		var out []string
		for _, fd := range diagnose.ServerEnd(cfg, rep, client, server) {
			out = append(out, fmt.Sprintf("%s: %s", fd.ID, fd.Summary))
		}
		return out
	}}
	srv.Handle(i3)
	// HTTP on the same port: the health check anyone may read (lame
	// duck stays on --health, the operator's listener).
	srv.HTTP = health.Public(serverStatus(srv))
	return srv, i3, pin, nil
}

// serverStatus is the server's state as its health check reports it.
func serverStatus(srv *perf.Server) func() health.Status {
	return func() health.Status {
		st := srv.Status()
		return health.Status{Draining: st.Draining, Running: st.Running, Streams: st.Streams}
	}
}

// printCheck is --check: the policy and who may test.
func printCheck(w io.Writer, srv *perf.Server, i3 *iperf3.Handler) {
	srv.Policy.Format(w)
	fmt.Fprintln(w)
	tokens, auth := srv.Tokens, i3.Auth
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
}

// serverLogger logs as the flags say: text or JSON lines, debug or not.
func serverLogger(f *serverFlags, stderr io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if f.debug {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if f.jsonLog {
		return slog.New(slog.NewJSONHandler(stderr, opts))
	}
	return slog.New(slog.NewTextHandler(stderr, opts))
}

// announce says where the server listens and under which limits. With
// --json-log every line is JSON, the first and the last too: a log
// shipper takes them as they come.
func announce(stdout io.Writer, logger *slog.Logger, f *serverFlags, srv *perf.Server, addr, pin string) {
	policy := srv.Policy
	switch {
	case f.jsonLog:
		logger.Info("server listening", "version", Version, "address", addr, "limits", policy.Source,
			"classes", len(policy.Classes), "max_tests", policy.Server.MaxTests)
	case len(policy.Classes) == 0:
		d := policy.Default
		fmt.Fprintf(stdout, "tcpscope %s server listening on %s (up to %d tests, %d per client address, %v each, %d streams)\n",
			Version, addr, policy.Server.MaxTests, d.MaxTestsPerAddr, d.MaxDuration, d.MaxStreams)
	default:
		fmt.Fprintf(stdout, "tcpscope %s server listening on %s (up to %d tests; limits from %s, %d classes)\n",
			Version, addr, policy.Server.MaxTests, policy.Source, len(policy.Classes))
	}
	var habits []string
	if f.oneOff {
		habits = append(habits, "serving one test (-1), then exiting")
	}
	if f.idleTimeout > 0 {
		habits = append(habits, fmt.Sprintf("exiting if no test comes for %v (--idle-timeout)", f.idleTimeout))
	}
	switch {
	case len(habits) == 0:
	case f.jsonLog:
		logger.Info("server plan", "one_off", f.oneOff, "idle_timeout", f.idleTimeout.String())
	default:
		fmt.Fprintln(stdout, strings.Join(habits, "; "))
	}
	switch {
	case pin == "":
	case f.jsonLog:
		logger.Info("tls", "certificate_pin", pin)
	default:
		fmt.Fprintf(stdout, "TLS for control connections; clients may pin this certificate with --tls-pin %s\n", pin)
	}
}

// runServer serves until stopped; ready hears once it listens (-D).
func runServer(cmd *cobra.Command, f *serverFlags, ready *daemon.Reporter, stdout, stderr io.Writer) error {
	logger := serverLogger(f, stderr)
	srv, i3, pin, err := newServer(cmd, f, logger)
	if err != nil {
		return err
	}
	srv.OneTest, srv.IdleTimeout = f.oneOff, f.idleTimeout
	// -1's exit code is its test's outcome: the first record is that test.
	first := make(chan gate.Record, 1)
	srv.Subscribe(gate.OnEnded(func(rec gate.Record) {
		select {
		case first <- rec:
		default:
		}
	}))
	if f.check {
		printCheck(stdout, srv, i3)
		if srv.TLS != nil {
			fmt.Fprintf(stdout, "tls        control connections over TLS only; pin %s\n", pin)
		} else {
			fmt.Fprintln(stdout, "tls        off: control connections in clear")
		}
		return nil
	}
	addr, err := listenAddr(f)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	ln, err := perf.Listen(ctx, addr)
	if fault.CodeOf(err) == fault.AddrInUse {
		return &fault.Error{Code: fault.AddrInUse, Msg: fmt.Sprintf("listen on %s: address already in use", addr),
			Hint: fmt.Sprintf("another server is listening on %s: stop it or use -p", addr)}
	}
	if err != nil {
		return err
	}
	if f.pidfile != "" {
		remove, err := daemon.WritePidfile(f.pidfile)
		if err != nil {
			ln.Close()
			return usagef("give a file the server may write", "-I %s: %v", f.pidfile, err)
		}
		defer remove()
	}
	announce(stdout, logger, f, srv, ln.Addr().String(), pin)
	// Lame duck (SIGUSR1, or POST /lameduck): admit nothing new, and
	// stop once the running tests have finished.
	lameDuck := func() {
		idle := srv.LameDuck()
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
	if f.health != "" {
		hs, err := health.Start(ctx, f.health, serverStatus(srv), lameDuck)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--health: %w", err)
		}
		defer hs.Close()
	}
	ready.Ready()
	err = srv.Serve(ctx, ln)
	idled := errors.Is(err, perf.ErrIdle)
	if idled {
		err = nil
	}
	if f.jsonLog {
		logger.Info("server stopped")
	} else {
		fmt.Fprintln(stdout, "tcpscope server stopped")
	}
	if err != nil || !f.oneOff {
		return err
	}
	// -1: the exit code says how its one test went.
	select {
	case rec := <-first:
		if rec.Err != nil {
			return fmt.Errorf("the one test (-1) with %s: %w", rec.Client, rec.Err)
		}
		return nil
	default:
	}
	if idled {
		return &fault.Error{Code: fault.Timeout, Msg: fmt.Sprintf("no test came within --idle-timeout %v", f.idleTimeout),
			Hint: "start the client sooner, or give a longer --idle-timeout"}
	}
	return nil // stopped (a signal) before its test came
}
