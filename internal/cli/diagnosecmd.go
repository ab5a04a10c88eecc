package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/measure"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/report"
)

type diagnoseFlags struct {
	target     model.Bitrate
	duration   time.Duration
	parallel   int
	port       int
	direction  string
	congestion string
	json       bool
	verbose    bool
}

func newDiagnoseCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &diagnoseFlags{}
	cmd := &cobra.Command{
		Use:   "diagnose HOST[:PORT]",
		Short: "The layered method end to end: host audit, path facts, instrumented tests, findings",
		Long: `Walk the seeds' method against a tcpscope server, from the bottom up:
  1. audit this host (buffers, TCP options, congestion control, interfaces);
  2. learn the path: RTT from timed TCP handshakes (no ICMP needed), the MSS
     and the path MTU;
  3. run an instrumented test each way (client sends, then server sends);
  4. print what limits each direction and every finding, layer by layer,
     with its evidence, fix and predicted effect.
With the defaults it takes about 12 s (14 s across a 40 ms path).`,
		Example: `  tcpscope diagnose 192.0.2.7
  tcpscope diagnose 192.0.2.7 --target-rate 1G --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope diagnose HOST[:PORT]", "diagnose needs exactly one server address, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiagnose(cmd, f, args[0], stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.Var(rate{&f.target}, "target-rate", "the rate you expect of the path; fixes are sized for it")
	fl.VarP(seconds{&f.duration}, "time", "t", "length of each test (default 5s)")
	fl.IntVarP(&f.parallel, "parallel", "P", 1, "streams per test")
	fl.IntVarP(&f.port, "port", "p", 5201, "server port when HOST has none")
	fl.StringVar(&f.direction, "direction", "both", "which way to test: up (client sends), down (server sends) or both")
	fl.StringVarP(&f.congestion, "congestion", "C", "", "congestion control algorithm of the tests (cubic, bbr, reno, ...), as tcpscope test -C")
	fl.BoolVarP(&f.json, "json", "J", false, "print everything as one JSON document")
	fl.BoolVarP(&f.verbose, "verbose", "V", false, "add each finding's explanation")
	return cmd
}

func runDiagnose(cmd *cobra.Command, f *diagnoseFlags, target string, stdout, stderr io.Writer) error {
	dirs, err := diagnoseDirections(f)
	if err != nil {
		return err
	}
	addr, err := hostPort(target, f.port)
	if err != nil {
		return err
	}
	say := func(format string, args ...any) {
		if !f.json {
			fmt.Fprintf(stdout, format+"\n", args...)
		}
	}
	l := &measure.Layered{Client: &perf.Client{Version: Version, Dialer: dial.Dialer{Network: "tcp"}}, Duration: f.duration, Parallel: f.parallel,
		Congestion: f.congestion, Reverse: dirs, Target: f.target,
		Progress: func(p measure.Progress) { sayProgress(say, addr, f.duration, p) }}
	res, testErr, err := l.Run(cmd.Context(), addr)
	var pathErr *measure.PathError
	if errors.As(err, &pathErr) {
		return dial.Classify(unwrapProbe(pathErr.Err), addr)
	}
	if err != nil {
		return err
	}
	if err := writeDiagnosis(stdout, f, res, say); err != nil {
		return err
	}
	// A test that broke off ends the command with its error (and exit
	// code), after everything it showed.
	return testErr
}

// diagnoseDirections checks the flags and says which ways to test
// (reverse or not).
func diagnoseDirections(f *diagnoseFlags) ([]bool, error) {
	var dirs []bool
	switch f.direction {
	case "up":
		dirs = []bool{false}
	case "down":
		dirs = []bool{true}
	case "both":
		dirs = []bool{false, true}
	default:
		return nil, usagef("--direction up, down or both", "unknown direction %q", f.direction)
	}
	if f.parallel < 1 || f.parallel > engine.MaxParallel {
		return nil, usagef(fmt.Sprintf("-P between 1 and %d", engine.MaxParallel), "parallel streams %d out of range", f.parallel)
	}
	if f.duration == 0 {
		f.duration = 5 * time.Second
	}
	return dirs, nil
}

// sayProgress prints a step of the method as it completes.
func sayProgress(say func(string, ...any), addr string, d time.Duration, p measure.Progress) {
	res := p.Report
	switch p.Step {
	case 1:
		say("1. host: Linux %s, tcp_rmem %q, tcp_wmem %q, %s", res.Host.Kernel, res.Host.Sysctls["net.ipv4.tcp_rmem"],
			res.Host.Sysctls["net.ipv4.tcp_wmem"], res.Host.Sysctls["net.ipv4.tcp_congestion_control"])
	case 2:
		say("2. path to %s: RTT %v (min of %d handshakes; median %v), MSS %d B, path MTU %d B", addr,
			res.Path.RTTMin.Round(time.Microsecond), res.Path.Connects, res.Path.RTTMedian.Round(time.Microsecond), res.Path.MSS, res.Path.PMTU)
	case 3:
		for i, lim := range p.Limits {
			s := p.Run.Summary[i]
			got, retr := "goodput not measured", "retransmissions not measured"
			if g, ok := s.Goodput.Get(); ok {
				got = g.String()
			}
			if n, ok := s.RetransSegs.Get(); ok {
				retr = fmt.Sprintf("retransmitted %d segments", n)
			}
			say("3. test, %s for %v: %s, %s; limited by %s", directionWords(s.Direction), d, got, retr, limitWords(lim))
		}
		if p.Err != nil {
			say("   the test broke off: %v", p.Err)
		}
	}
}

// writeDiagnosis prints the report: one JSON document, or the limits and
// the findings layer by layer.
func writeDiagnosis(w io.Writer, f *diagnoseFlags, res *diagnose.Report, say func(string, ...any)) error {
	if f.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	say("")
	var limits []string
	for _, l := range res.Limits {
		limits = append(limits, fmt.Sprintf("%s %s (%s)", directionWords(l.Direction), l.Goodput, limitWords(l)))
	}
	say("what limits this path: %s", strings.Join(limits, "; "))
	if err := report.WriteLayers(w, res.Findings, f.verbose); err != nil {
		return err
	}
	say("(took %v)", res.Took.Round(100*time.Millisecond))
	return nil
}

// limitWords names a direction's verdict: its limit, and those binding with it.
func limitWords(l diagnose.DirectionLimit) string {
	return strings.Join(append([]string{l.Finding}, l.Also...), " + ")
}

func directionWords(d model.Direction) string {
	if d == model.ServerToClient {
		return "download (server sends)"
	}
	return "upload (client sends)"
}

// unwrapProbe drops the probe's "probe ADDR:" prefix so the dial error can
// be classified by its cause.
func unwrapProbe(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}
