package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tcpscope/tcpscope/internal/columns"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/pace"
	"github.com/tcpscope/tcpscope/internal/scope"
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
}

func newWatchCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &watchFlags{}
	cmd := &cobra.Command{
		Use:   "watch [FILTER]",
		Short: "The TCP oscilloscope: the host's connections live, and one connection's kernel variables and diagnosis",
		Long: `List the host's TCP connections with their kernel state, as Web100's main
window did: endpoints, state, congestion control, goodput now, RTT, cwnd,
retransmissions, owning process, fastest first, refreshing. FILTER is ss's
kind, applied in the kernel: dport 22, sport 443, dst 10.0.0.0/8,
src 192.0.2.7, state established, pid 4711 (terms combine with and).

--conn FILTER follows one connection: every sample's goodput, cwnd
against the peer's window, RTT, what limited the sender, and the running
diagnosis by the same rules as 'tcpscope test'. When the filter matches
several (iperf3's control and data connections), a quarter-second look
picks the busiest, by goodput, and a line on stderr names the others. When
the followed connection closes, another match moving at least a tenth of
its last second's goodput is followed next; otherwise the watch ends with
the closed connection's final numbers. Reading any user's sockets needs no
privilege; their owners, and --netns, need root.`,
		Example: `  tcpscope watch dport 22
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
	fl.BoolVar(&f.noProcess, "no-process", false, "do not look up the processes owning the connections (faster on busy hosts)")
	return cmd
}

func newReplayCmd(stdout io.Writer) *cobra.Command {
	var (
		asJSON bool
		target model.Bitrate
	)
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Re-render and re-diagnose a recording made with 'tcpscope watch --record'",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope replay FILE", "replay needs one recording, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := os.Open(args[0])
			if err != nil {
				return usagef("give the file 'tcpscope watch --record' wrote", "%v", err)
			}
			defer in.Close()
			v := &watchView{out: stdout, json: asJSON, follow: true}
			t := &watch.Tracker{Window: diagWindow}
			// The diagnosis is made again, as it was live: the same
			// window, recomputed as often, on the recorded clock.
			running := &watch.Running{Options: diagnose.Options{Target: target}, Every: diagEvery}
			err = watch.Replay(in, t, func(fr watch.Frame) error {
				running.Attach(t, &fr)
				return v.follow1(fr)
			})
			if err != nil {
				return usagef("give the file 'tcpscope watch --record' wrote", "%s: %v", args[0], err)
			}
			return v.end()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json-stream", false, "print each sample as a JSON line")
	cmd.Flags().Var(rate{&target}, "target-rate", "the rate you expect; the diagnosis sizes its fixes for it")
	return cmd
}

// diagEvery is how often the running diagnosis is recomputed: it reads
// seconds of history, and twice a second follows any change.
const diagEvery = 500 * time.Millisecond

// diagWindow is how much of a followed connection's recent history the
// running diagnosis reads: long enough for the chrono counters and loss to
// mean something, short enough to follow a change.
const diagWindow = 10 * time.Second

func runWatch(ctx context.Context, f *watchFlags, filter string, stdout, stderr io.Writer) error {
	if os.Getenv("GOGC") == "" {
		// A list holds a row per connection, and each refresh makes the
		// next list's rows anew: on a busy host, megabytes. The default
		// (GOGC=100, from a 4 MB heap goal) collects five times while the
		// first list of 20,000 connections is read, and half the time
		// of listing them went to that. At 400 the heap may reach five
		// times the two lists alive (60 MB for 20,000 connections) before
		// a collection. A GOGC in the environment is left to rule.
		debug.SetGCPercent(400)
	}
	if f.interval == 0 {
		f.interval = 100 * time.Millisecond
	}
	if f.interval < 10*time.Millisecond || f.interval > time.Second {
		return usagef("-i between 10ms and 1s", "sampling interval %v out of range", f.interval)
	}
	if f.refresh == 0 {
		f.refresh = time.Second
	}
	if f.conn != "" && filter != "" {
		return usagef(`tcpscope watch --conn "dport 22"`, "give the filter either as arguments or with --conn, not both")
	}
	follow := f.conn != ""
	if follow {
		filter = f.conn
	}
	flt, err := sockdiag.Parse(filter)
	if err != nil {
		return usagef("filters: dport N, sport N, dst ADDR[/BITS], src ADDR, state NAME, pid N", "%v", err)
	}
	nsfd := -1
	if f.netns != "" {
		fd, err := openNetns(f.netns)
		if err != nil {
			return err
		}
		defer fd.Close()
		nsfd = int(fd.Fd())
	}
	conn, err := sockdiag.Open(nsfd)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return &permissionError{msg: "entering another network namespace needs root", hint: "sudo tcpscope watch --netns ..."}
		}
		return err
	}
	defer conn.Close()
	procs := &sockdiag.Procs{}
	if f.noProcess {
		if len(flt.PIDs) > 0 {
			return usagef("drop --no-process", "a pid filter needs the process lookup")
		}
		procs = nil
	}
	var rec *watch.Recorder
	if f.record != "" {
		file, err := os.Create(f.record)
		if err != nil {
			return usagef("a path you can write", "--record: %v", err)
		}
		defer file.Close()
		rec = watch.NewRecorder(pace.Output(file))
	}
	v := &watchView{out: pace.Output(stdout), json: f.jsonStream, follow: follow, o: diagnose.Options{Target: f.target},
		tty: isTerminal(stdout), refresh: f.refresh, filter: flt.String(), interval: f.interval, prime: f.count != 1}
	t := &watch.Tracker{}
	if follow {
		t.Window = diagWindow
	}
	start := time.Now()
	tui := follow && !f.jsonStream && f.count == 0 && isTerminal(stdout) && isTerminal(os.Stdin)
	fl := &follower{conn: conn, flt: flt, procs: procs, start: start, tracker: t,
		wait: func(d time.Duration) error { return waitFor(ctx, d) }}
	if !tui {
		// The terminal view says it in the view instead: a line on its
		// terminal would tear the picture.
		fl.notify = func(s string) { fmt.Fprintln(stderr, "tcpscope watch: "+s) }
	}
	// sample takes one frame; for a followed connection, with its running
	// diagnosis.
	running := &watch.Running{Options: v.o, Every: diagEvery}
	sample := func() (watch.Frame, error) {
		var at time.Duration
		var socks []model.Socket
		var err error
		if follow {
			at, socks, err = fl.next()
		} else {
			at = time.Since(start)
			socks, err = conn.Dump(flt, at, procs)
		}
		if err != nil {
			return watch.Frame{}, err
		}
		fr := t.Add(at, socks)
		if follow {
			running.Attach(t, &fr)
		}
		if rec != nil {
			if err := rec.Write(fr); err != nil {
				return fr, err
			}
		}
		return fr, nil
	}
	if tui {
		first, err := sample()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pending := &first
		_, err = scope.Run(os.Stdin, stdout, func() (watch.Frame, error) {
			if pending != nil {
				fr := *pending
				pending = nil
				return fr, nil
			}
			return sample()
		}, f.interval, fl.picked)
		return err
	}
	// A text list without a recording needs no full samples: the compact
	// rows of sockdiag.ListInto are a quarter of the size and decode faster.
	brief := !follow && !f.jsonStream && rec == nil
	lister := &watch.Lister{}
	tick, err := pace.NewTicker(ctx, f.interval)
	if err != nil {
		return err
	}
	defer tick.Stop()
	for n := 0; f.count == 0 || n < f.count; n++ {
		if n > 0 {
			if err := tick.Wait(); err != nil {
				if ctx.Err() != nil {
					return v.end()
				}
				return err
			}
		}
		if brief {
			at := time.Since(start)
			socks, err := sockdiag.ListInto(conn, flt, at, procs, func(r *watch.ListRow) *model.SocketBrief { return &r.SocketBrief })
			if err != nil {
				return err
			}
			if err := v.list(lister.Add(at, socks)); err != nil {
				return err
			}
			continue
		}
		fr, err := sample()
		if err != nil {
			if ctx.Err() != nil {
				return v.end()
			}
			return err
		}
		if follow {
			if err := v.follow1(fr); err != nil {
				return err
			}
			if v.closed {
				return nil
			}
		} else if v.json {
			if err := v.recorder().Write(fr); err != nil {
				return err
			}
		} else if err := v.list(fr.List()); err != nil {
			return err
		}
	}
	return v.end()
}

// lookFor is how long watch --conn looks at the connections its filter
// matches, when there are several, before it follows the busiest: long
// enough for rates to tell a transfer from its idle control connection.
const lookFor = 250 * time.Millisecond

// busyShare: when the followed connection closes, another match is still
// busy, and followed next, when it moves at least this share of what the
// closed one moved over its last second. iperf3's control connection
// exchanging the results at the end of a test is not busy; the other
// streams of a -P test are.
const busyShare = 0.1

// follower keeps watch --conn on one connection: the busiest its filter
// matches, then, if that one closes, the busiest other match still busy.
type follower struct {
	conn    *sockdiag.Conn
	flt     sockdiag.Filter
	procs   *sockdiag.Procs
	start   time.Time
	tracker *watch.Tracker
	wait    func(time.Duration) error
	notify  func(string) // nil: say nothing

	cur    *model.Socket // the followed connection, as first seen
	picked string        // which connections matched, and which was picked
}

// next samples the followed connection; none when it closed and no other
// match is busy. The first call picks the connection to follow.
func (fl *follower) next() (time.Duration, []model.Socket, error) {
	if fl.cur == nil {
		rows, err := fl.look(0)
		if err != nil {
			return 0, nil, err
		}
		if len(rows) == 0 {
			return 0, nil, usagef("tcpscope watch lists them", "no connection matches %q", fl.flt.String())
		}
		fl.cur = &rows[0].Socket
		if len(rows) > 1 {
			fl.picked = pickedNote(fl.flt.String(), rows)
			fl.say(fl.picked)
		}
		return fl.cur.TCP.At, []model.Socket{*fl.cur}, nil
	}
	at := time.Since(fl.start)
	// One connection: look it up directly rather than dump them all (the
	// cost then does not grow with the host's).
	s, ok, err := fl.conn.Get(*fl.cur, at)
	if err != nil {
		return at, nil, err
	}
	if ok && open(&s) {
		return at, []model.Socket{s}, nil
	}
	// Closed. Another match still busy is followed next; the frame then
	// lists this one closed and that one new.
	was, known := fl.tracker.Goodput(fl.cur.Cookie, time.Second)
	rows, err := fl.look(fl.cur.Cookie)
	if err != nil {
		return at, nil, err
	}
	if len(rows) == 0 || rows[0].New || rows[0].Rate == 0 || known && float64(rows[0].Rate) < busyShare*float64(was) {
		return at, nil, nil
	}
	old := fl.cur
	fl.cur = &rows[0].Socket
	fl.say(fmt.Sprintf("%s → %s closed; following %s → %s, the busiest other connection %q matches (%s)",
		old.Local, old.Remote, fl.cur.Local, fl.cur.Remote, fl.flt.String(), rateNote(&rows[0])))
	return fl.cur.TCP.At, []model.Socket{*fl.cur}, nil
}

func (fl *follower) say(s string) {
	if fl.notify != nil {
		fl.notify(s)
	}
}

// look finds the open connections the filter matches, but skip, busiest
// first (watch.Busiest). Several, or any when looking for another to
// follow, are dumped twice, lookFor apart, for their rates.
func (fl *follower) look(skip uint64) ([]watch.Row, error) {
	dump := func() (time.Duration, []model.Socket, error) {
		at := time.Since(fl.start)
		socks, err := fl.conn.Dump(fl.flt, at, fl.procs)
		return at, slices.DeleteFunc(socks, func(s model.Socket) bool { return s.Cookie == skip || !open(&s) }), err
	}
	var t watch.Tracker
	at, socks, err := dump()
	if err != nil {
		return nil, err
	}
	fr := t.Add(at, socks)
	if len(socks) == 0 || len(socks) == 1 && skip == 0 {
		return fr.Rows, nil
	}
	if err := fl.wait(lookFor); err != nil {
		return nil, err
	}
	if at, socks, err = dump(); err != nil {
		return nil, err
	}
	return watch.Busiest(t.Add(at, socks).Rows), nil
}

// open reports a socket that is not what a closed connection leaves
// (TIME-WAIT, CLOSE).
func open(s *model.Socket) bool { return s.TCP.State != 6 && s.TCP.State != 7 }

// pickedNote names the connection followed among several matches, the
// others, and how to follow one of them instead.
func pickedNote(filter string, rows []watch.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d connections match %q; following the busiest, %s → %s (%s); also ", len(rows), filter,
		rows[0].Local, rows[0].Remote, rateNote(&rows[0]))
	for i := range rows[1:] {
		r := &rows[1+i]
		if i == 4 {
			fmt.Fprintf(&b, ", and %d more", len(rows)-1-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s → %s (%s)", r.Local, r.Remote, rateNote(r))
	}
	o := &rows[1]
	fmt.Fprintf(&b, ". To follow another, narrow the filter, e.g. --conn \"sport %d dport %d\"", o.Local.Port(), o.Remote.Port())
	return b.String()
}

// rateNote is a look's rate of a connection: measured, or not yet (it
// opened during the look).
func rateNote(r *watch.Row) string {
	switch {
	case r.New:
		return "opened just now"
	case r.Rate == 0:
		return "idle"
	case r.Sending:
		return r.Rate.String() + " sent"
	}
	return r.Rate.String() + " received"
}

// waitFor waits d, or until ctx is done.
func waitFor(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// watchView renders frames as text or JSON lines.
type watchView struct {
	out      io.Writer
	json     bool
	follow   bool
	tty      bool
	o        diagnose.Options
	refresh  time.Duration
	interval time.Duration
	filter   string

	lastDraw time.Duration
	frames   int
	prime    bool // skip the first list, whose rates are all zero
	last     *watch.Row
	primary  string
	closed   bool
	rec      *watch.Recorder
	buf      []byte // the last list's text, its memory reused
}

func (v *watchView) recorder() *watch.Recorder {
	if v.rec == nil {
		v.rec = watch.NewRecorder(v.out)
	}
	return v.rec
}

// list draws the connection list, at most every refresh.
func (v *watchView) list(l watch.List) error {
	v.frames++
	if v.frames == 1 && v.refresh > v.interval && v.prime {
		// Rates need two samples: the first frame only primes them, and
		// the first list comes one interval later.
		v.lastDraw = l.At - v.refresh
		return nil
	}
	if v.frames > 2 && l.At-v.lastDraw < v.refresh {
		return nil
	}
	v.lastDraw = l.At
	b := v.buf[:0]
	if v.tty {
		b = append(b, "\x1b[H\x1b[2J"...)
	}
	what := "all connections but listeners"
	if v.filter != "" {
		what = v.filter
	}
	b = fmt.Appendf(b, "tcpscope watch: %d connections (%s) at %s\n", len(l.Rows), what, time.Now().Format("15:04:05"))
	// A busy host's list has tens of thousands of rows: two goroutines
	// format half each, on two CPUs when there are.
	half := len(l.Rows) / 2
	if half < 1000 {
		half = len(l.Rows)
	}
	var second *columns.Table
	var wg sync.WaitGroup
	if half < len(l.Rows) {
		wg.Go(func() { second = listTable(l.Rows[half:], false) })
	}
	first := listTable(l.Rows[:half], true)
	wg.Wait()
	if second != nil {
		b = columns.AppendAll(b, first, second)
	} else {
		b = first.AppendTo(b)
	}
	for _, r := range l.Closed {
		b = appendAddrPort(append(b, "closed: "...), r.Local)
		b = append(appendAddrPort(append(b, " → "...), r.Remote), '\n')
	}
	v.buf = b
	_, err := v.out.Write(b)
	return err
}

// listTable lays rows out in the list's columns, after its header when
// header is set.
func listTable(rows []watch.ListRow, header bool) *columns.Table {
	t := columns.New(10, 2)
	t.Grow(len(rows)+1, 12)
	if header {
		for _, h := range []string{"local", "remote", "state", "cc", "goodput", "", "RTT", "cwnd", "retr", "process"} {
			t.Cell(h)
		}
	}
	var cell []byte
	for i := range rows {
		r := &rows[i]
		cell = appendAddrPort(cell[:0], r.Local)
		t.CellBytes(cell)
		cell = appendAddrPort(cell[:0], r.Remote)
		t.CellBytes(cell)
		t.Cell(r.TCP.State.String())
		t.Cell(r.TCP.Congestion)
		t.CellBytes(model.AppendRate(cell[:0], r.Rate, model.RateAuto))
		if r.Sending {
			t.Cell("→")
		} else {
			t.Cell("←")
		}
		t.Cell(fmtRTT(r.TCP.RTT))
		t.CellBytes(r.TCP.CwndBytes().AppendBinary(cell[:0]))
		t.CellBytes(strconv.AppendUint(cell[:0], uint64(r.Retrans), 10))
		cell = cell[:0]
		if r.PID != 0 {
			cell = strconv.AppendInt(append(append(cell, r.Process...), '/'), int64(r.PID), 10)
		}
		t.CellBytes(cell)
	}
	return t
}

// appendAddrPort appends a's text, as its String method gives it.
func appendAddrPort(b []byte, a netip.AddrPort) []byte {
	if !a.Addr().IsValid() {
		return append(b, "invalid AddrPort"...)
	}
	return a.AppendTo(b)
}

// follow1 renders one frame of a followed connection, and the running
// diagnosis whenever its primary finding changes.
func (v *watchView) follow1(fr watch.Frame) error {
	if len(fr.Rows) == 0 {
		v.closed = true
		if v.json {
			return v.recorder().Write(fr)
		}
		if v.last != nil {
			fmt.Fprintf(v.out, "connection closed; last sample: %s\n", followLine(v.last))
		}
		return nil
	}
	r := fr.Rows[0]
	if v.json {
		v.last = &r
		return v.recorder().Write(fr)
	}
	if len(fr.Closed) > 0 && v.last != nil {
		// The followed connection closed and another match took its
		// place.
		fmt.Fprintf(v.out, "%s → %s closed; last sample: %s\n", v.last.Local, v.last.Remote, followLine(v.last))
		v.primary = ""
	}
	v.last = &r
	if r.New {
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf(", process %s/%d", r.Process, r.PID)
		}
		fmt.Fprintf(v.out, "following %s → %s (%s%s), options %s, mss %d B\n", r.Local, r.Remote, r.TCP.Congestion, proc, r.TCP.Options, r.TCP.SndMSS)
		return nil
	}
	fmt.Fprintf(v.out, "%7.2fs %s\n", fr.At.Seconds(), followLine(&r))
	if len(fr.Diagnosis) > 0 && fr.Diagnosis[0].ID != v.primary {
		v.primary = fr.Diagnosis[0].ID
		fmt.Fprintf(v.out, "         diagnosis: %s: %s\n", fr.Diagnosis[0].ID, fr.Diagnosis[0].Summary)
	}
	return nil
}

func (v *watchView) end() error {
	if v.json || !v.follow || v.last == nil {
		return nil
	}
	return nil
}

// followLine is one sample of a followed connection.
func followLine(r *watch.Row) string {
	dir := "received"
	if r.Sending {
		dir = "sent"
	}
	s := fmt.Sprintf("%s %s, cwnd %s, peer window %s, RTT %s (min %s), retr %d", r.Rate, dir,
		r.TCP.CwndBytes().Binary(), r.TCP.SndWnd.V.Binary(), fmtRTT(r.TCP.RTT), fmtRTT(r.TCP.MinRTT.V), r.Retrans)
	if l, ok := r.Limited.Get(); ok && r.Sending {
		s += fmt.Sprintf(", limited rwnd %.0f%% sndbuf %.0f%% cwnd %.0f%% app %.0f%%", 100*l.Rwnd, 100*l.Sndbuf, 100*l.Cwnd, 100*l.App)
	}
	if q, ok := r.TCP.RecvQ.Get(); ok && !r.Sending {
		s += ", unread " + q.Binary()
	}
	return s
}

func fmtRTT(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openNetns opens a network namespace by ip-netns name or by PID.
func openNetns(spec string) (*os.File, error) {
	path := filepath.Join("/run/netns", spec)
	if pid, err := strconv.Atoi(spec); err == nil && pid > 0 {
		path = fmt.Sprintf("/proc/%d/ns/net", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("a name from 'ip netns list', or a PID", "network namespace %q: %v", spec, err)
		}
		return nil, &permissionError{msg: fmt.Sprintf("network namespace %q: %v", spec, err), hint: "sudo tcpscope watch --netns ..."}
	}
	return f, nil
}
