package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/pace"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
	"github.com/tcpscope/tcpscope/internal/watch"
)

type watchFlags struct {
	interval   time.Duration
	refresh    time.Duration
	conn       string
	jsonStream bool
	record     string
	count      int
	netns      string
	target     model.Bitrate
	noProcess  bool
	all        bool
}

func newWatchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &watchFlags{}
	cmd := &cobra.Command{
		Use:   "watch [FILTER]",
		Short: "The TCP oscilloscope: the host's connections live, and one connection's kernel variables and diagnosis",
		Long: `List the host's TCP connections with their kernel state, as Web100's main
window did: endpoints, state, congestion control, goodput now, RTT, cwnd,
retransmissions, owning process, fastest first, refreshing.

FILTER is ss's grammar: conditions dport 22, sport >= 1024, dport != 22,
dst 10.0.0.0/8, src 192.0.2.7, dst 10.0.0.1:5201, state established,
pid 4711, joined by and (&&, or nothing), or (||), not (!) and
parentheses, e.g. '( dport 22 or sport 22 ) and state established'.
Ports and addresses are matched in the kernel (inet_diag bytecode),
states by the dump's state mask; a pid, or a state beside a port under
or/not, is checked after the dump. Unlike ss, state may stand anywhere.

As ss does without -a, the list leaves out listening, syn-recv, time-wait
and closed sockets (the kernel does, so a busy host's dump stays cheap),
unless the filter names a state. It also hides idle connections: those
that neither sent nor received data for the last --refresh period (the
kernel's last_data_sent and last_data_recv) and have nothing queued
(Send-Q and Recv-Q 0), and says how many it hid. -a shows every socket in
every state, idle or not. --json-stream lists idle connections too.

On a terminal it opens the terminal view on the list, a picker like
Web100's main window: arrow keys (or j/k) choose a connection, Enter
follows it, Esc goes back to the list, q quits; in the follow view v
toggles a pane of every tcp_info variable with its value and unit
(absent ones said absent). Piped, or with -c, --json-stream or --record,
it prints the list as text every --refresh, as wide as the terminal
($COLUMNS, else 80 columns): on a narrow one cc, retr, cwnd, RTT and state
give way in that order, then long IPv6 addresses and process names are
cut. A goodput not measured yet (a connection's first sample) is "-".

--conn FILTER follows one connection: a row a sample with its goodput,
cwnd against the peer's window, RTT, retransmissions, data unread and
what limited the sender, and the running diagnosis by the same rules as
'tcpscope test', as wide as the terminal ($COLUMNS, else 80 columns; a
wider one adds minRTT, unacked, ssthresh, the limited shares, notsent,
delivery and pacing rates; --json-stream has every variable). When the filter matches
several (iperf3's control and data connections), a quarter-second look
picks the busiest, by goodput, and a line on stderr names the others. When
the followed connection closes, another match moving at least a tenth of
its last second's goodput is followed next; otherwise the watch ends with
the closed connection's final numbers. Reading any user's sockets needs no
privilege; their owners, and --netns, need root.`,
		Example: `  tcpscope watch dport 22
  tcpscope watch '( dport 22 or sport 22 ) and not src 10.0.0.0/8'
  tcpscope watch -a state time-wait
  tcpscope watch --conn "dport 5201" --json-stream
  tcpscope watch --record backup.jsonl --conn "dst 10.1.2.3 dport 873"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatch(cmd.Context(), f, strings.Join(args, " "), stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.VarP(seconds{&f.interval}, "interval", "i", "sampling interval, 10ms to 1s (default 100ms)")
	fl.Var(seconds{&f.refresh}, "refresh", "how often the connection list is redrawn (default 1s)")
	fl.StringVar(&f.conn, "conn", "", "follow the busiest connection this filter matches")
	fl.BoolVar(&f.jsonStream, "json-stream", false, "print each sample as a JSON line")
	fl.StringVar(&f.record, "record", "", "also write each sample as a JSON line to FILE (tcpscope replay FILE)")
	fl.IntVarP(&f.count, "count", "c", 0, "stop after this many samples (0: until interrupted or the connection closes)")
	fl.StringVar(&f.netns, "netns", "", "watch inside another network namespace: a name from ip netns, or a PID (root)")
	fl.Var(rate{&f.target}, "target-rate", "the rate you expect; the diagnosis sizes its fixes for it")
	fl.BoolVarP(&f.all, "all", "a", false, "every socket: listening, time-wait and idle too (ss -a)")
	fl.BoolVar(&f.noProcess, "no-process", false, "do not look up the processes owning the connections (faster on busy hosts)")
	return cmd
}

// runWatch wires the watch: the kernel's sockets (sockdiag) into a
// watch.Session, and its samples to the list, the followed lines, JSON
// lines or the terminal view.
func runWatch(ctx context.Context, f *watchFlags, filter string, stdout, stderr io.Writer) error {
	tuneGC()
	cfg, flt, err := f.config(filter)
	if err != nil {
		return err
	}
	src, err := openSockSource(f.netns, flt, f.noProcess)
	if err != nil {
		return err
	}
	defer src.Close()
	if f.record != "" {
		file, err := os.Create(f.record)
		if err != nil {
			return usagef("a path you can write", "--record: %v", err)
		}
		defer file.Close()
		cfg.Record = watch.NewRecorder(pace.Output(file))
	}
	// On a terminal, the terminal view: the picker over the list, or the
	// followed connection (--conn). A list recorded (--record) is the
	// text list's.
	tui := !f.jsonStream && f.count == 0 && (cfg.Follow || f.record == "") && isTerminal(stdout) && isTerminal(os.Stdin)
	if tui {
		err = f.runScope(ctx, src, cfg, stdout)
	} else {
		// The terminal view says it in the view instead: a line on its
		// terminal would tear the picture.
		width := terminalWidth(stderr)
		cfg.Notify = func(s string) { _ = report.WatchNote(stderr, width, s) }
		err = watch.NewSession(src, cfg).Run(ctx, f.show(cfg, stdout))
	}
	if nm := (*watch.NoMatchError)(nil); errors.As(err, &nm) {
		return usagef("tcpscope watch lists them", "%v", err)
	}
	return err
}

// config checks the flags and makes the session's configuration.
func (f *watchFlags) config(filter string) (cfg watch.Config, flt sockdiag.Filter, err error) {
	if f.interval == 0 {
		f.interval = 100 * time.Millisecond
	}
	if f.interval < 10*time.Millisecond || f.interval > time.Second {
		return cfg, flt, usagef("-i between 10ms and 1s", "sampling interval %v out of range", f.interval)
	}
	if f.refresh == 0 {
		f.refresh = time.Second
	}
	if f.conn != "" && filter != "" {
		return cfg, flt, usagef(`tcpscope watch --conn "dport 22"`, "give the filter either as arguments or with --conn, not both")
	}
	if f.conn != "" {
		filter = f.conn
	}
	if flt, err = sockdiag.Parse(filter); err != nil {
		hint := "tcpscope watch --help shows the filters"
		if pe := (*sockdiag.ParseError)(nil); errors.As(err, &pe) {
			hint = pe.Hint
		}
		return cfg, flt, usagef(hint, "%v", err)
	}
	if f.all {
		flt = flt.ShowAll()
	}
	return watch.Config{Interval: f.interval, Count: f.count, Follow: f.conn != "", Filter: flt.String(),
		Diagnose: diagnose.Options{Target: f.target}}, flt, nil
}

// tuneGC lets the heap grow further between collections. A list holds a
// row per connection, and each refresh makes the next list's rows anew:
// on a busy host, megabytes. The default (GOGC=100, from a 4 MB heap
// goal) collects five times while the first list of 20,000 connections is
// read, and half the time of listing them went to that. At 400 the heap
// may reach five times the two lists alive (60 MB for 20,000
// connections) before a collection. A GOGC in the environment is left to
// rule.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
