package cli

import (
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/report"
)

type testFlags struct {
	cfg        model.TestConfig
	port       int
	ipv4, ipv6 bool
	bind       string
	json       bool
	jsonStream bool
	format     string
	verbose    bool
	noDiagnose bool
	target     model.Bitrate
	iperf3     bool
	udp        bool
	srvOutput  bool
}

func newTestCmd(stdout, stderr io.Writer) *cobra.Command {
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
  tcpscope test 192.0.2.7 -u -b 50M     UDP at 50 Mbit/s: loss and jitter`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope test HOST[:PORT]", "test needs exactly one server address, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTest(cmd, f, args[0], stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.VarP(seconds{&f.cfg.Duration}, "time", "t", "test duration (default 10s)")
	fl.VarP(size{&f.cfg.Bytes}, "bytes", "n", "send this many bytes per direction instead of a duration")
	fl.IntVarP(&f.cfg.Parallel, "parallel", "P", 1, "parallel streams (1-128)")
	fl.BoolVarP(&f.cfg.Reverse, "reverse", "R", false, "the server sends")
	fl.BoolVarP(&f.udp, "udp", "u", false, "a UDP test: datagrams at -b's rate (default 1 Mbit/s), loss and jitter at the receiver")
	fl.BoolVar(&f.cfg.Counters64, "udp-counters-64bit", false, "64-bit sequence numbers in UDP datagrams (iperf3 servers; tcpscope's always are)")
	fl.BoolVar(&f.cfg.Bidir, "bidir", false, "both ends send at once")
	fl.VarP(size{&f.cfg.Window}, "window", "w", "SO_SNDBUF and SO_RCVBUF on both ends (disables autotuning)")
	fl.VarP(size{&f.cfg.Length}, "length", "l", "write size (default 1M; UDP: datagram size, default 1460)")
	fl.StringVarP(&f.cfg.Congestion, "congestion", "C", "", "congestion control algorithm (cubic, bbr, reno, ...)")
	fl.IntVarP(&f.cfg.MSS, "mss", "M", 0, "TCP maximum segment size (TCP_MAXSEG)")
	fl.BoolVarP(&f.cfg.NoDelay, "no-delay", "N", false, "disable Nagle's algorithm (TCP_NODELAY)")
	fl.VarP(seconds{&f.cfg.Interval}, "interval", "i", "report and sampling interval, 10ms or more (default 1s)")
	fl.VarP(seconds{&f.cfg.Omit}, "omit", "O", "leave the first seconds (slow start) out of the totals")
	fl.Var(rate{&f.cfg.FQRate}, "fq-rate", "pace each sending stream at this rate (SO_MAX_PACING_RATE)")
	fl.VarP(rate{&f.cfg.Bitrate}, "bitrate", "b", "each sending stream's application writes at most this fast (an application-limited sender); UDP: the sending rate, 0 for as fast as possible")
	fl.Var(rate{&f.cfg.ReadRate}, "read-rate", "the receiving application reads each stream at most this fast (a slow consumer)")
	fl.IntVarP(&f.port, "port", "p", 5201, "server port when HOST has none")
	fl.BoolVarP(&f.ipv4, "ipv4", "4", false, "IPv4 only")
	fl.BoolVarP(&f.ipv6, "ipv6", "6", false, "IPv6 only")
	fl.StringVarP(&f.bind, "bind", "B", "", "local address to send from")
	fl.BoolVarP(&f.json, "json", "J", false, "print one JSON document at the end")
	fl.BoolVar(&f.jsonStream, "json-stream", false, "print one JSON event per line as the test runs")
	fl.BoolVarP(&f.verbose, "verbose", "V", false, "show more kernel variables per interval (text output; JSON has them all)")
	fl.StringVarP(&f.format, "format", "f", "a", "rate units: a k m g t (bit/s) or A K M G T (byte/s), SI prefixes; or iperf3-json for iperf3's -J document")
	fl.BoolVar(&f.noDiagnose, "no-diagnose", false, "skip the diagnosis at the end")
	fl.BoolVar(&f.iperf3, "iperf3", false, "the server is a stock iperf3 (-s): speak its protocol")
	fl.BoolVar(&f.srvOutput, "get-server-output", false, "ask a stock iperf3 server for its own output (a tcpscope server's view is always shown)")
	fl.Var(rate{&f.target}, "target-rate", "the rate you expect of the path; the diagnosis sizes its fixes for it")
	return cmd
}

func runTest(cmd *cobra.Command, f *testFlags, target string, stdout, stderr io.Writer) error {
	iperf3JSON := f.format == "iperf3-json"
	rateFormat := f.format
	if iperf3JSON {
		rateFormat = "a"
	}
	format, err := model.ParseRateFormat(rateFormat)
	if err != nil {
		return usagef("-f a, m or g (or iperf3-json)", "%v", err)
	}
	if iperf3JSON && (f.json || f.jsonStream) {
		return usagef("choose one", "--format iperf3-json with --json or --json-stream")
	}
	if f.json && f.jsonStream {
		return usagef("choose one", "--json and --json-stream together")
	}
	if f.ipv4 && f.ipv6 {
		return usagef("choose one", "-4 and -6 together")
	}
	if f.cfg.Parallel < 1 || f.cfg.Parallel > perf.MaxParallel {
		return usagef(fmt.Sprintf("-P between 1 and %d", perf.MaxParallel), "parallel streams %d out of range", f.cfg.Parallel)
	}
	addr, err := hostPort(target, f.port)
	if err != nil {
		return err
	}
	if f.udp {
		f.cfg.Protocol = model.UDP
		if !cmd.Flags().Changed("bitrate") {
			f.cfg.Bitrate = perf.DefaultUDPBitrate
		}
	}
	if err := perf.Normalize(&f.cfg); err != nil {
		return err
	}
	client := &perf.Client{Version: Version, Network: "tcp", ServerOutput: f.srvOutput}
	if f.ipv4 {
		client.Network = "tcp4"
	}
	if f.ipv6 {
		client.Network = "tcp6"
	}
	if f.bind != "" {
		ip := net.ParseIP(f.bind)
		if ip == nil {
			return usagef("--bind takes a local IP address", "bad --bind address %q", f.bind)
		}
		client.LocalAddr = &net.TCPAddr{IP: ip}
	}
	type ender interface {
		End(*model.Run) error
	}
	var out ender
	var stream *report.Stream
	switch {
	case f.jsonStream:
		stream = report.NewStream(stdout)
		client.Observer, out = stream, stream
	case f.json, iperf3JSON:
	default:
		text := report.NewText(stdout, format, f.verbose)
		client.Observer, out = text, text
	}
	ctx := cmd.Context()
	runTest := client.Run
	if f.iperf3 {
		runTest = client.RunIperf3
	}
	run, runErr := runTest(ctx, addr, f.cfg)
	if run == nil && ctx.Err() != nil {
		if stream != nil {
			_ = stream.Fail("interrupted", "interrupted before the test started", "")
		}
		fmt.Fprintln(stderr, "tcpscope: interrupted before the test started")
		return &exitError{code: ExitInterrupted}
	}
	if run == nil {
		if stream != nil {
			_ = stream.Fail(string(perf.CodeOf(runErr)), runErr.Error(), perf.HintOf(runErr))
		}
		return runErr
	}
	if !f.noDiagnose {
		run.Diagnosis = diagnose.Test(run, diagnose.Options{Target: f.target})
	}
	var werr error
	switch {
	case out != nil:
		werr = out.End(run)
	case iperf3JSON:
		werr = report.WriteIperf3JSON(stdout, run)
	default:
		werr = report.WriteJSON(stdout, run)
	}
	if runErr != nil {
		if stream != nil {
			_ = stream.Fail(string(perf.CodeOf(runErr)), runErr.Error(), perf.HintOf(runErr))
		}
		return runErr
	}
	if werr != nil {
		return werr
	}
	if run.Ended == "interrupted" || ctx.Err() != nil {
		return &exitError{code: ExitInterrupted}
	}
	return nil
}
