package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/measure"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
	"golang.org/x/term"
)

type testFlags struct {
	cfg        model.TestConfig
	port       int
	ipv4, ipv6 bool
	bind       string
	client     string // -c HOST: iperf3's spelling of the address
	json       bool
	jsonStream bool
	format     string
	verbose    bool
	noDiagnose bool
	target     model.Bitrate
	iperf3     bool
	udp        bool
	srvOutput  bool
	blocks     model.Bytes // -k: a count of -l blocks
	token      string
	tls        bool
	tlsCA      string
	tlsPin     string
	// noIntervals: -i 0, iperf3's "no interval reports". The ends still
	// sample at the default interval, for the summary and diagnosis.
	noIntervals bool
	// connectTimeout is --connect-timeout: connecting and the server's
	// first answer (0: the defaults, 10 s each).
	connectTimeout time.Duration
	title          string // -T: each text line's prefix
	logfile        string // --logfile: the output's file, appended to
	timestamps     string // --timestamps: each text line's time, strftime or Go layout
	dscpTOS        int    // --dscp, as the TOS byte it makes
}

func newTestCmd(args []string, stdout, stderr io.Writer) *cobra.Command {
	f := &testFlags{}
	cmd := &cobra.Command{
		Use:   "test HOST[:PORT]",
		Short: "Run a memory-to-memory TCP or UDP test against a tcpscope or iperf3 server",
		Long: `Run a TCP test against 'tcpscope server' and show, per interval and per
stream, both ends' view: goodput, cwnd, RTT, retransmissions, windows and
what limited the sender. With -u, a UDP test at a set rate (-b, default
1 Mbit/s; -b 0 as fast as possible) reports datagram loss, reordering and
jitter at the receiver. Rates are SI (1 Mbit/s = 10^6 bit/s); -w, -l and -n
take K/M/G as powers of 1024 and kB/MB/GB as powers of 1000.`,
		Example: `  tcpscope test 192.0.2.7              10 s, one stream, client sends
  tcpscope test 192.0.2.7 -R -P 4       server sends on 4 streams
  tcpscope test [2001:db8::7]:5202 -t 30 -w 4M -C cubic --json
  tcpscope test 192.0.2.7 -u -b 50M     UDP at 50 Mbit/s: loss and jitter
  tcpscope test 192.0.2.7 --dscp EF -i 0 --connect-timeout 3000 -T lab --logfile lab.log
                                        iperf3's habits: DSCP, no intervals, a title, a log file`,
		Args: func(cmd *cobra.Command, args []string) error {
			n := len(args)
			if f.client != "" {
				n++
			}
			if n != 1 {
				err := usagef("tcpscope test HOST[:PORT] (or -c HOST, as iperf3, but not both)", "test needs exactly one server address, got %d", n)
				if f.format == iperf3JSONFormat {
					writeIperf3Failure(stdout, request(f, ""), err)
				}
				return err
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			host := f.client
			if len(args) == 1 {
				host = args[0]
			}
			return runTest(cmd, f, host, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.VarP(seconds{&f.cfg.Duration}, "time", "t", "test duration (default 10s)")
	fl.VarP(size{&f.cfg.Bytes}, "bytes", "n", "send this many bytes per direction instead of a duration")
	fl.VarP(size{&f.blocks}, "blockcount", "k", "send this many blocks of -l bytes per direction instead of a duration, as iperf3 does: without -l a block is iperf3's 128 KiB (UDP: a datagram) (K, M, G count in 1024s)")
	fl.IntVarP(&f.cfg.Parallel, "parallel", "P", 1, "parallel streams (1-128)")
	fl.BoolVarP(&f.cfg.Reverse, "reverse", "R", false, "the server sends")
	fl.BoolVarP(&f.udp, "udp", "u", false, "a UDP test: datagrams at -b's rate (default 1 Mbit/s), loss and jitter at the receiver")
	fl.BoolVar(&f.cfg.Counters64, "udp-counters-64bit", false, "64-bit sequence numbers in UDP datagrams (iperf3 servers; tcpscope's always are)")
	fl.BoolVar(&f.cfg.NoGSO, "no-gso", false, "UDP: senders hand the kernel single datagrams (sendmmsg) instead of GSO super-buffers (UDP_SEGMENT); the datagrams sent are the same")
	fl.BoolVar(&f.cfg.GRO, "gro", false, "UDP: receivers take coalesced buffers (UDP_GRO) where the kernel has it: less CPU, but socket drops are then not measured (the kernel counts buffers, not datagrams)")
	fl.BoolVar(&f.cfg.Bidir, "bidir", false, "both ends send at once")
	fl.VarP(size{&f.cfg.Window}, "window", "w", "SO_SNDBUF and SO_RCVBUF on both ends (disables autotuning)")
	fl.VarP(size{&f.cfg.Length}, "length", "l", "write size (default 128K, as iperf3; UDP: datagram size, default 1460)")
	fl.StringVarP(&f.cfg.Congestion, "congestion", "C", "", "congestion control algorithm (cubic, bbr, reno, ...)")
	fl.IntVarP(&f.cfg.MSS, "mss", "M", 0, "TCP maximum segment size (TCP_MAXSEG)")
	fl.BoolVarP(&f.cfg.NoDelay, "no-delay", "N", false, "disable Nagle's algorithm (TCP_NODELAY)")
	fl.BoolVarP(&f.cfg.ZeroCopy, "zerocopy", "Z", false, "send with sendfile(2) from a file holding the block instead of write(2), as iperf3 -Z does (on loopback it costs more CPU per byte than write(2))")
	fl.BoolVar(&f.cfg.SkipRxCopy, "skip-rx-copy", false, "receive with MSG_TRUNC, as iperf3 3.19's --skip-rx-copy: the kernel counts the bytes and discards them uncopied (whichever end receives; Linux): less receiver CPU per byte")
	fl.VarP(seconds{&f.cfg.Interval}, "interval", "i", "report and sampling interval, 10ms or more (default 1s); 0: no interval reports, as iperf3 -i 0 (the kernels are still sampled each second for the summary and diagnosis)")
	fl.VarP(tos{&f.cfg.TOS}, "tos", "S", "IP type of service of both ends' data packets (IP_TOS, IPV6_TCLASS), as iperf3 -S: 0-255, decimal, 0x hex or 0 octal")
	fl.Var(dscp{&f.dscpTOS}, "dscp", "DiffServ code point of both ends' data packets, as iperf3: 0-63 or a name (EF, AF11-AF43, CS0-CS7, LE)")
	fl.VarP(affinity{&f.cfg.ClientCPU, &f.cfg.ServerCPU}, "affinity", "A", "pin this process to CPU n (sched_setaffinity), and ask the server to pin itself to CPU m, as iperf3 -A (a tcpscope server lets clients pin it only with --allow-affinity)")
	fl.VarP(seconds{&f.cfg.Omit}, "omit", "O", "leave the first seconds (slow start) out of the totals")
	fl.Var(rate{&f.cfg.FQRate}, "fq-rate", "pace each sending stream at this rate (SO_MAX_PACING_RATE)")
	fl.VarP(rate{&f.cfg.Bitrate}, "bitrate", "b", "each sending stream's application writes at most this fast (an application-limited sender); UDP: the sending rate, 0 for as fast as possible")
	fl.Var(rate{&f.cfg.ReadRate}, "read-rate", "the receiving application reads each stream at most this fast (a slow consumer)")
	fl.IntVarP(&f.port, "port", "p", 5201, "server port when HOST has none")
	fl.BoolVarP(&f.ipv4, "ipv4", "4", false, "IPv4 only")
	fl.BoolVarP(&f.ipv6, "ipv6", "6", false, "IPv6 only")
	fl.StringVarP(&f.bind, "bind", "B", "", "local address to send from")
	fl.StringVarP(&f.client, "client", "c", "", "the server's address, as iperf3's -c (the same as the HOST argument)")
	fl.BoolVar(&f.tls, "tls", false, "run the control connection over TLS, verifying the server's certificate by the system's roots (or --tls-ca)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "trust this CA certificate (PEM) for --tls")
	fl.StringVar(&f.tlsPin, "tls-pin", "", "run the control connection over TLS and trust exactly the server with this certificate pin (sha256/..., as the server prints it)")
	fl.Var(millis{&f.connectTimeout}, "connect-timeout", "give up on a server that does not connect and answer within this: milliseconds as iperf3 (3000), or a unit (3s) (default 10s to connect, 10s to answer)")
	fl.StringVar(&f.token, "token", "", "access token for a server that requires one (default $TCPSCOPE_TOKEN)")
	fl.BoolVarP(&f.json, "json", "J", false, "print one JSON document at the end")
	fl.BoolVar(&f.jsonStream, "json-stream", false, "print one JSON event per line as the test runs")
	fl.BoolVarP(&f.verbose, "verbose", "V", false, "show more kernel variables per interval (text output; JSON has them all)")
	fl.StringVarP(&f.format, "format", "f", "a", "rate units: a k m g t (bit/s) or A K M G T (byte/s), SI prefixes; or iperf3-json for iperf3's -J document")
	fl.StringVarP(&f.title, "title", "T", "", `prefix every output line with "TITLE:  ", as iperf3 (text output)`)
	fl.StringVar(&f.logfile, "logfile", "", "write the output to this file, appended to, as iperf3 (error lines go to stderr and the file)")
	fl.StringVar(&f.timestamps, "timestamps", "", `prefix every output line with the time, as iperf3: a strftime FORMAT (default "%c ", Go's time.ANSIC and a space) or a Go layout (text output)`)
	fl.Lookup("timestamps").NoOptDefVal = iperf3Timestamps
	fl.BoolVar(&f.noDiagnose, "no-diagnose", false, "skip the diagnosis at the end")
	fl.BoolVar(&f.iperf3, "iperf3", false, "the server is a stock iperf3 (-s): speak its protocol")
	fl.BoolVar(&f.srvOutput, "get-server-output", false, "ask a stock iperf3 server for its own output (a tcpscope server's view is always shown)")
	fl.Var(rate{&f.target}, "target-rate", "the rate you expect of the path; the diagnosis sizes its fixes for it")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		uerr := usagef("tcpscope test --help", "%v", err)
		// The line did not parse, so -f may not have been read yet:
		// look for it in the raw arguments.
		if formatArg(c, args) == iperf3JSONFormat {
			writeIperf3Failure(stdout, request(f, ""), uerr)
		}
		return uerr
	})
	return cmd
}

// iperf3BlockLength is iperf3's TCP block, the -l that -k counts in when
// no -l is given.
const iperf3BlockLength = 128 * model.KiB

// iperf3JSONFormat is the -f value that asks for iperf3's -J document.
const iperf3JSONFormat = "iperf3-json"

// request is what is known of a test before it runs: the start of
// iperf3's -J document when it fails.
func request(f *testFlags, addr string) *model.Run {
	return &model.Run{Start: time.Now().UTC(), Server: addr, Config: f.cfg,
		Client: model.EndReport{Side: model.ClientSide, Version: Version, Kernel: tcpinfo.KernelRelease()}}
}

// writeIperf3Failure prints iperf3's -J document of a failed test, whose
// "error" scripts read (`jq .error`): the same line stderr shows. The
// exit status stays the error's.
func writeIperf3Failure(stdout io.Writer, run *model.Run, err error) {
	msg := "interrupted before the test started"
	var ee *exitError
	if !errors.As(err, &ee) {
		_, msg = errorLine(err)
	}
	// stdout failing too leaves only the exit status and stderr to tell.
	_ = iperf3.WriteJSONError(stdout, run, msg)
}

// formatArg is the value of the last -f/--format in a command line c
// could not parse, read as its flags would be: "-f X", "-fX", "--format X",
// "--format=X", and -f at the end of combined short flags ("-Vf X").
func formatArg(c *cobra.Command, args []string) string {
	fs := c.Flags()
	var out string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return out
		case a == "--format" && i+1 < len(args):
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "--format="):
			out = strings.TrimPrefix(a, "--format=")
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			for j := 1; j < len(a); j++ {
				fl := fs.ShorthandLookup(a[j : j+1])
				if fl == nil || fl.NoOptDefVal != "" {
					continue // a boolean, or not a flag: read on
				}
				value := a[j+1:]
				if value == "" && i+1 < len(args) {
					i++
					value = args[i]
				}
				if fl.Name == "format" {
					out = value
				}
				break
			}
		}
	}
	return out
}

func runTest(cmd *cobra.Command, f *testFlags, target string, stdout, stderr io.Writer) (err error) {
	stdout, done, err := testOutput(f, stdout)
	if err != nil {
		return err
	}
	defer done()
	if f.logfile != "" && !f.json && !f.jsonStream && f.format != iperf3JSONFormat {
		// As iperf3's log file, the file says why a test failed; the
		// terminal does too (Main prints the error to stderr). A JSON
		// file stays one document (-f iperf3-json's has the error).
		defer func() {
			var ee *exitError
			if err != nil && !errors.As(err, &ee) {
				_, line := errorLine(err)
				fmt.Fprintf(stdout, "tcpscope: %s\n", line)
			}
		}()
	}
	run, printed, err := testRun(cmd, f, target, stdout, stderr)
	if err != nil && !printed && f.format == iperf3JSONFormat {
		if run == nil {
			addr, aerr := hostPort(target, f.port)
			if aerr != nil {
				addr = target
			}
			run = request(f, addr)
		}
		writeIperf3Failure(stdout, run, err)
	}
	return err
}

// testRun runs a test and prints it, except iperf3's -J document of a
// failed test; that it leaves to runTest, with the run when there is one.
// printed says the output, whatever its form, is out.
func testRun(cmd *cobra.Command, f *testFlags, target string, stdout, stderr io.Writer) (run *model.Run, printed bool, err error) {
	format, err := checkTestFlags(f)
	if err != nil {
		return nil, false, err
	}
	addr, err := hostPort(target, f.port)
	if err != nil {
		return nil, false, err
	}
	if err := testConfig(cmd, f); err != nil {
		return nil, false, err
	}
	client, err := newTestClient(f)
	if err != nil {
		return nil, false, err
	}
	if cpu := f.cfg.ClientCPU; cpu != nil {
		unpin, err := engine.PinProcess(*cpu)
		if err != nil {
			return nil, false, usagef("give a CPU this process may run on (see nproc, taskset -p $$)", "-A %d: %v", *cpu, err)
		}
		defer unpin()
	}
	pr := newPresenter(f, format, stdout)
	client.Observer = pr.observer
	ctx := cmd.Context()
	t := &measure.Test{Client: client, Iperf3: f.iperf3, ServerOutput: f.srvOutput, Blocks: int64(f.blocks),
		NoDiagnosis: f.noDiagnose, Target: f.target}
	run, runErr := t.Run(ctx, addr, f.cfg)
	if run == nil {
		return nil, false, pr.noRun(ctx, runErr, stderr)
	}
	return pr.end(ctx, run, runErr)
}

// checkTestFlags refuses flags that contradict each other and returns
// the rate format of the text output.
func checkTestFlags(f *testFlags) (model.RateFormat, error) {
	iperf3JSON := f.format == iperf3JSONFormat
	rateFormat := f.format
	if iperf3JSON {
		rateFormat = "a"
	}
	format, err := model.ParseRateFormat(rateFormat)
	switch {
	case err != nil:
		return format, usagef("-f a, m or g (or iperf3-json)", "%v", err)
	case iperf3JSON && (f.json || f.jsonStream):
		return format, usagef("choose one", "--format iperf3-json with --json or --json-stream")
	case f.json && f.jsonStream:
		return format, usagef("choose one", "--json and --json-stream together")
	case f.ipv4 && f.ipv6:
		return format, usagef("choose one", "-4 and -6 together")
	case f.cfg.Parallel < 1 || f.cfg.Parallel > engine.MaxParallel:
		return format, usagef(fmt.Sprintf("-P between 1 and %d", engine.MaxParallel), "parallel streams %d out of range", f.cfg.Parallel)
	}
	return format, nil
}

// testConfig completes the test's configuration from the flags that
// shape it (-u, -k) and normalizes it.
func testConfig(cmd *cobra.Command, f *testFlags) error {
	// A zero given on purpose is not "the default": say what it would
	// mean instead of running something else.
	changed := cmd.Flags().Changed
	switch {
	case changed("time") && f.cfg.Duration == 0 && f.cfg.Bytes == 0 && f.blocks == 0:
		return usagef("give the test a length, e.g. -t 3600 for an hour (iperf3's -t 0 runs until interrupted; a tcpscope server bounds every test by its --max-duration)", "-t 0: a test needs a length")
	case changed("length") && f.cfg.Length == 0:
		return usagef("give a write size, e.g. -l 128K, or leave -l out for the default", "-l 0: no write size")
	case changed("window") && f.cfg.Window == 0:
		return usagef("leave -w out to let the kernel size the buffers", "-w 0: no buffer size")
	}
	if changed("dscp") {
		if changed("tos") {
			return usagef("--dscp sets the top six bits of -S's byte: give one", "-S and --dscp together")
		}
		f.cfg.TOS = f.dscpTOS
	}
	// -i 0 is iperf3's "no interval reports": the test still samples at
	// the default interval (Normalize), which the summary's maxima and
	// the diagnosis read; only the per-interval output goes.
	f.noIntervals = changed("interval") && f.cfg.Interval == 0
	if f.udp {
		f.cfg.Protocol = model.UDP
		if !cmd.Flags().Changed("bitrate") {
			f.cfg.Bitrate = engine.DefaultUDPBitrate
		}
	}
	if f.blocks > 0 {
		if f.cfg.Bytes > 0 {
			return usagef("use -n or -k", "both a byte count and a block count given")
		}
		if f.cfg.Length == 0 {
			// iperf3's blocks: an iperf3 user's -k 400 is 400 blocks
			// of its 128 KiB, tcpscope's write size too.
			f.cfg.Length = iperf3BlockLength
			if f.cfg.IsUDP() {
				f.cfg.Length = engine.DefaultUDPLength
			}
		}
		f.cfg.Bytes = f.blocks * f.cfg.Length
	}
	return engine.Normalize(&f.cfg)
}

// newTestClient is the client the flags describe: network, local
// address, access token and TLS.
func newTestClient(f *testFlags) (*perf.Client, error) {
	client := &perf.Client{Version: Version, Dialer: dial.Dialer{Network: "tcp", ConnectTimeout: f.connectTimeout},
		Token: f.token, SetupWarnings: diagnose.BufferWarnings}
	if client.Token == "" {
		client.Token = os.Getenv("TCPSCOPE_TOKEN")
	}
	if err := clientTLS(client, f); err != nil {
		return nil, err
	}
	if f.ipv4 {
		client.Dialer.Network = "tcp4"
	}
	if f.ipv6 {
		client.Dialer.Network = "tcp6"
	}
	if f.bind != "" {
		ip, err := netip.ParseAddr(f.bind)
		if err != nil {
			return nil, usagef("--bind takes a local IP address", "bad --bind address %q", f.bind)
		}
		client.Dialer.Bind = ip
	}
	return client, nil
}

// presenter writes a test's output in the form the flags chose: text or
// JSON lines as it runs (observer), or one document at the end.
type presenter struct {
	observer   model.Observer
	out        interface{ End(*model.Run) error } // text or JSON lines; nil: a document
	stream     *report.Stream
	iperf3JSON bool
	// whole: -i 0, whose iperf3 document has one interval for the test.
	whole bool
	w     io.Writer
}

func newPresenter(f *testFlags, format model.RateFormat, w io.Writer) *presenter {
	p := &presenter{iperf3JSON: f.format == iperf3JSONFormat, whole: f.noIntervals, w: w}
	switch {
	case f.jsonStream:
		p.stream = report.NewStream(w)
		p.observer, p.out = p.stream, p.stream
	case f.json, p.iperf3JSON:
	default:
		text := report.NewText(w, report.TextOptions{Format: format, Verbose: f.verbose, Width: terminalWidth(w), NoIntervals: f.noIntervals})
		p.observer, p.out = text, text
	}
	if f.noIntervals && p.stream != nil {
		p.observer = noIntervals{p.observer}
	}
	return p
}

// noIntervals passes a test's start on and drops its intervals: -i 0's
// output, whose summary is the only report.
type noIntervals struct{ model.Observer }

func (noIntervals) Interval(model.Side, *model.Interval) {}

// terminalWidth is the width of the terminal w writes to, else the
// width $COLUMNS says, else 0 (the text output's own, 80 columns).
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			return cols
		}
	}
	n, _ := strconv.Atoi(os.Getenv("COLUMNS"))
	return n
}

// fail ends a JSON-lines output with the error.
func (p *presenter) fail(err error) {
	if p.stream != nil {
		_ = p.stream.Fail(string(fault.CodeOf(err)), err.Error(), fault.Phrase(fault.HintOf(err), flagOf))
	}
}

// noRun is the outcome of a test that produced no run.
func (p *presenter) noRun(ctx context.Context, err error, stderr io.Writer) error {
	if ctx.Err() != nil {
		if p.stream != nil {
			_ = p.stream.Fail("interrupted", "interrupted before the test started", "")
		}
		fmt.Fprintln(stderr, "tcpscope: interrupted before the test started")
		return &exitError{code: ExitInterrupted}
	}
	p.fail(err)
	return err
}

// end writes the run and says how the command ends.
func (p *presenter) end(ctx context.Context, run *model.Run, runErr error) (*model.Run, bool, error) {
	interrupted := run.Ended == "interrupted" || ctx.Err() != nil
	doc := run // the iperf3 document's view
	if p.whole {
		doc = iperf3.WholeTest(run)
	}
	var werr error
	switch {
	case p.out != nil:
		werr = p.out.End(run)
	case p.iperf3JSON && runErr != nil:
		// runTest prints it, with the error.
	case p.iperf3JSON && interrupted:
		// As iperf3 -J when interrupted: the results so far, and an
		// error saying why they end early.
		werr = iperf3.WriteJSONError(p.w, doc, "interrupted: the test stopped early; the results so far are complete")
	case p.iperf3JSON:
		werr = iperf3.WriteJSON(p.w, doc)
	default:
		werr = report.WriteJSON(p.w, run)
	}
	switch {
	case runErr != nil:
		p.fail(runErr)
		return run, !p.iperf3JSON, runErr
	case werr != nil:
		return run, true, werr
	case interrupted:
		return run, true, &exitError{code: ExitInterrupted}
	}
	return run, true, endedEarly(run)
}

// endedEarly is the error of a test the server stopped before its end,
// whose results so far are printed: scripts tell it by the exit status.
// A timed test that reached the server's duration limit ran its length
// (a test asking for exactly the limit meets it at its end): no error.
func endedEarly(run *model.Run) error {
	switch run.Ended {
	case "", "complete", "interrupted", "aborted":
		return nil
	case "server-limit":
		if run.Config.Bytes == 0 {
			return nil
		}
		return &fault.Error{Code: fault.Limit, Msg: "the server stopped the test at its duration limit before the byte count was sent; the results so far are printed",
			Hint: "ask for fewer bytes (-n, -k), or use a server with a longer --max-duration"}
	}
	// server-shutdown, or a reason a newer server gives.
	return &fault.Error{Code: fault.Aborted, Msg: fmt.Sprintf("the server ended the test early (%s); the results so far are printed", run.Ended),
		Hint: "run again when the server is back"}
}

// clientTLS sets the control connection's TLS configuration from the
// flags; without them the client speaks plain TCP.
func clientTLS(client *perf.Client, f *testFlags) error {
	var err error
	switch {
	case f.tlsPin != "":
		if f.tlsCA != "" {
			return usagef("a pin trusts one certificate, whoever signed it: drop --tls-ca", "--tls-pin and --tls-ca together")
		}
		if client.TLS, err = perf.PinnedTLS(f.tlsPin); err != nil {
			return usagef("copy the pin the server prints at start", "%v", err)
		}
	case f.tlsCA != "":
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return usagef("give a readable CA certificate (PEM)", "read --tls-ca: %v", err)
		}
		if client.TLS, err = perf.RootsTLS(pem); err != nil {
			return usagef("a PEM file of CA certificates", "--tls-ca %s has no certificate", f.tlsCA)
		}
	case f.tls:
		client.TLS, _ = perf.RootsTLS(nil)
	}
	return nil
}
