package watch

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
)

// Row is one connection at one sample, with what changed since the last.
type Row struct {
	model.Socket
	// Sending is true when the socket moved more data out than in since
	// the previous sample (its goodput is then Δ bytes acknowledged).
	Sending bool `json:"sending"`
	// Rate is goodput since the previous sample: Δ bytes acknowledged for
	// a sender, Δ bytes received for a receiver. Zero on first sight.
	Rate model.Bitrate `json:"rate"`
	// Retrans is retransmitted segments since the previous sample.
	Retrans uint32 `json:"retrans"`
	// Limited is the sender's time shares since the previous sample.
	Limited model.Opt[model.Limited] `json:"limited,omitzero"`
	// New is true on a connection's first sample.
	New bool `json:"new,omitempty"`
}

// Frame is one sampling of the watched connections.
type Frame struct {
	At   time.Duration `json:"at_ns"`
	Rows []Row         `json:"connections"`
	// Closed lists connections present in the previous frame and gone
	// now, with their last numbers.
	Closed []Row `json:"closed,omitempty"`
	// Diagnosis is the running diagnosis of a single watched connection.
	Diagnosis []model.Finding `json:"diagnosis,omitempty"`
}

// Tracker turns dumps into frames. The zero value is ready; set Window to
// keep each connection's recent samples for Diagnose.
type Tracker struct {
	// Window is how much history Diagnose uses (0: none kept).
	Window time.Duration
	// prev holds the last frame's rows, and at their index by cookie.
	prev []Row
	at   map[uint64]int
	hist map[uint64][]model.Sample
}

// Add takes one dump, taken at its sockets' TCP.At, and returns the frame:
// rows sorted by rate, fastest first. Rows are large (a full kernel
// sample each) and a busy host has tens of thousands: they are copied
// once, into place, and sorted through an index.
func (t *Tracker) Add(at time.Duration, socks []model.Socket) Frame {
	f := Frame{At: at}
	rows := make([]Row, len(socks))
	next := make(map[uint64]int, len(socks))
	if t.hist == nil && t.Window > 0 {
		t.hist = map[uint64][]model.Sample{}
	}
	for i := range socks {
		s := &socks[i]
		r := &rows[i]
		r.Socket = *s
		j, seen := t.at[s.Cookie]
		if !seen {
			r.New = true
		} else if p := &t.prev[j]; s.TCP.At > p.TCP.At {
			r.Sending, r.Rate, r.Retrans = progress(counted(&p.TCP), counted(&s.TCP), p.Sending)
			r.Limited = model.LimitedBetween(&p.TCP, &s.TCP)
		}
		next[s.Cookie] = i
		if t.Window > 0 {
			h := append(t.hist[s.Cookie], s.TCP)
			for len(h) > 2 && h[len(h)-1].At-h[0].At > t.Window {
				h = h[1:]
			}
			t.hist[s.Cookie] = h
		}
	}
	for c, j := range t.at {
		if _, ok := next[c]; !ok {
			f.Closed = append(f.Closed, t.prev[j])
			delete(t.hist, c)
		}
	}
	order := byRate(len(rows), func(i int) model.Bitrate { return rows[i].Rate })
	f.Rows = rows
	if !isIdentity(order) {
		f.Rows = make([]Row, len(rows))
		for i, j := range order {
			f.Rows[i] = rows[j]
			next[rows[j].Cookie] = i
		}
	}
	t.prev, t.at = f.Rows, next
	return f
}

// counters are the kernel's cumulative counters a connection's progress
// between two samples comes from.
type counters struct {
	at              time.Duration
	acked, received model.Bytes
	retrans         uint32
}

func counted(s *model.Sample) counters {
	return counters{s.At, s.BytesAcked.V, s.BytesReceived.V, s.TotalRetrans}
}

func countedBrief(s *model.SampleBrief) counters {
	return counters{s.At, s.BytesAcked.V, s.BytesReceived.V, s.TotalRetrans}
}

// progress is what a connection did between two samples (cur later than
// prev): whether it was sending (it moved more data out than in, or as
// much as before when it moved none), its goodput in that direction, and
// the segments it retransmitted.
func progress(prev, cur counters, wasSending bool) (sending bool, rate model.Bitrate, retrans uint32) {
	dt := (cur.at - prev.at).Seconds()
	sent := int64(cur.acked) - int64(prev.acked)
	recv := int64(cur.received) - int64(prev.received)
	sending = sent >= recv && sent > 0 || (sent == recv && wasSending)
	moved := recv
	if sending {
		moved = sent
	}
	return sending, model.RateOf(model.Bytes(max(moved, 0)), dt), cur.retrans - prev.retrans
}

// byRate is the order of n rows by rate, fastest first, ties in their
// order. A first sample has every rate zero: already in order, found so
// in one pass.
func byRate(n int, rate func(int) model.Bitrate) []int32 {
	order := make([]int32, n)
	sorted := true
	for i := range order {
		order[i] = int32(i)
		if i > 0 && rate(i) > rate(i-1) {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(order, func(a, b int32) int {
			switch ra, rb := rate(int(a)), rate(int(b)); {
			case ra > rb:
				return -1
			case ra < rb:
				return 1
			}
			return 0
		})
	}
	return order
}

// ListRow is one connection of a connection list at one sample, with
// what changed since the last (see Row).
type ListRow struct {
	model.SocketBrief
	Sending bool
	Rate    model.Bitrate
	Retrans uint32
	New     bool
}

// Identity is the connection as a model.Socket without its kernel
// sample: what Source.Get reads it again by (Session.Start).
func (r *ListRow) Identity() model.Socket {
	return model.Socket{Local: r.Local, Remote: r.Remote, IPv6: r.IPv6, Cookie: r.Cookie, Inode: r.Inode, PID: r.PID, Process: r.Process}
}

// Idle reports a connection with nothing to show over the last span: it
// neither sent nor received data within it (the kernel's last_data_sent
// and last_data_recv, so a first sample knows it too), moved nothing
// since the previous sample, and has nothing queued either way (Send-Q
// and Recv-Q 0). A socket whose kernel gave no tcp_info (time-wait) is
// never idle: nothing says so.
func (r *ListRow) Idle(span time.Duration) bool {
	t := &r.TCP
	sent, ok1 := t.LastDataSent.Get()
	recv, ok2 := t.LastDataRecv.Get()
	rq, ok3 := t.RecvQ.Get()
	sq, ok4 := t.SendQ.Get()
	return ok1 && ok2 && ok3 && ok4 && sent >= span && recv >= span && rq == 0 && sq == 0 && r.Rate == 0
}

// List is one sampling of a connection list.
type List struct {
	At time.Duration
	// Rows are the connections, fastest first.
	Rows []ListRow
	// Closed lists connections present in the previous list and gone
	// now, with their last numbers.
	Closed []ListRow
}

// List is the frame as a connection list.
func (f Frame) List() List {
	l := List{At: f.At, Rows: make([]ListRow, len(f.Rows))}
	brief := func(r *Row) ListRow {
		return ListRow{SocketBrief: r.Socket.Brief(), Sending: r.Sending, Rate: r.Rate, Retrans: r.Retrans, New: r.New}
	}
	for i := range f.Rows {
		l.Rows[i] = brief(&f.Rows[i])
	}
	for i := range f.Closed {
		l.Closed = append(l.Closed, brief(&f.Closed[i]))
	}
	return l
}

// Lister turns connection-list dumps (sockdiag's ListInto) into lists, as
// Tracker does full dumps into frames, by the same rules. The zero value
// is ready.
type Lister struct {
	// prev is the last list. Its index by cookie is built when the next
	// list needs it: a single list (watch -c 1) never does.
	prev []ListRow
}

// Add takes one dump's rows, their SocketBrief read at its TCP.At (the
// rest is filled in here: sockdiag.ListInto reads them into place), and
// returns the list, fastest first. The list keeps rows.
func (l *Lister) Add(at time.Duration, rows []ListRow) List {
	out := List{At: at}
	var prev map[uint64]int
	var seen []bool
	if len(l.prev) > 0 {
		prev = make(map[uint64]int, len(l.prev))
		for i := range l.prev {
			prev[l.prev[i].Cookie] = i
		}
		seen = make([]bool, len(l.prev))
	}
	for i := range rows {
		r := &rows[i]
		r.Sending, r.Rate, r.Retrans, r.New = false, 0, 0, false
		j, ok := prev[r.Cookie]
		if !ok {
			r.New = true
			continue
		}
		seen[j] = true
		if p := &l.prev[j]; r.TCP.At > p.TCP.At {
			r.Sending, r.Rate, r.Retrans = progress(countedBrief(&p.TCP), countedBrief(&r.TCP), p.Sending)
		}
	}
	for j, ok := range seen {
		if !ok {
			out.Closed = append(out.Closed, l.prev[j])
		}
	}
	order := byRate(len(rows), func(i int) model.Bitrate { return rows[i].Rate })
	out.Rows = rows
	if !isIdentity(order) {
		out.Rows = make([]ListRow, len(rows))
		for i, j := range order {
			out.Rows[i] = rows[j]
		}
	}
	l.prev = out.Rows
	return out
}

// isIdentity reports an order that leaves everything in place.
func isIdentity(order []int32) bool {
	for i, j := range order {
		if int(j) != i {
			return false
		}
	}
	return true
}

// Diagnose runs the diagnosis on the connection's kept samples (see
// diagnose.Connection); nil until two are kept.
func (t *Tracker) Diagnose(cookie uint64, o diagnose.Options) []model.Finding {
	return diagnose.Connection(t.hist[cookie], o)
}

// Goodput is the connection's goodput over the last span of its kept
// samples (its window, when shorter): bytes acknowledged or received,
// whichever moved more. False until two samples are kept.
func (t *Tracker) Goodput(cookie uint64, span time.Duration) (model.Bitrate, bool) {
	h := t.hist[cookie]
	if len(h) < 2 {
		return 0, false
	}
	last := &h[len(h)-1]
	i := len(h) - 2
	for i > 0 && last.At-h[i-1].At <= span {
		i--
	}
	_, rate, _ := progress(counted(&h[i]), counted(last), false)
	return rate, true
}

// Busiest orders rows busiest first: by rate, and where rates tie (on a
// connection's first sight none is known) by the bytes the connection
// moved in its life, acknowledged or received, whichever is more. rows
// is left as it is.
func Busiest(rows []Row) []Row {
	out := slices.Clone(rows)
	moved := func(r *Row) model.Bytes { return max(r.TCP.BytesAcked.V, r.TCP.BytesReceived.V) }
	slices.SortStableFunc(out, func(a, b Row) int {
		if a.Rate != b.Rate {
			return cmp.Compare(b.Rate, a.Rate)
		}
		return cmp.Compare(moved(&b), moved(&a))
	})
	return out
}

// Running is a followed connection's running diagnosis. It is recomputed
// from the Tracker's window every Every, which at 100 Hz sampling costs a
// fiftieth of doing it every sample, and every frame in between carries
// the latest: once there is a diagnosis, no frame goes without one while
// the connection lasts. The zero value recomputes every frame.
type Running struct {
	Options diagnose.Options
	// Every is how often the diagnosis is recomputed.
	Every time.Duration

	cookie   uint64
	findings []model.Finding
	at       time.Duration // when findings were computed
}

// Attach sets f's diagnosis: its first row's connection's, from t, where
// f is the frame t.Add returned last.
func (r *Running) Attach(t *Tracker, f *Frame) {
	if len(f.Rows) == 0 {
		return
	}
	if c := f.Rows[0].Cookie; c != r.cookie {
		// Another connection (the followed one closed and another match
		// took its place): its own evidence, from its first sample.
		r.cookie, r.findings = c, nil
	}
	// A tenth of slack: samples come on ticks, each a little late by
	// its own amount, and one less late than the last must not put the
	// recomputation off by a whole sampling period (at -i 500ms, to
	// every other sample).
	if r.findings == nil || f.At-r.at >= r.Every-r.Every/10 {
		r.findings, r.at = t.Diagnose(r.cookie, r.Options), f.At
	}
	f.Diagnosis = r.findings
}

// Recorder writes frames as JSON lines, as encoding/json's Encoder would:
// the --record file and --json-stream share it. Each line goes to its
// writer in one Write, from a buffer kept from one frame to the next.
type Recorder struct {
	w   io.Writer
	buf []byte
	// diag is the last diagnosis written and diagJSON its encoding:
	// frames between two recomputations carry the same findings (see
	// Running), the same slice, encoded once.
	diag     []model.Finding
	diagJSON []byte
}

// NewRecorder writes to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w} }

// Write writes one frame as a line.
func (r *Recorder) Write(f Frame) error {
	var diag []byte
	if d := f.Diagnosis; len(d) > 0 {
		if len(d) != len(r.diag) || &d[0] != &r.diag[0] {
			j, err := json.Marshal(d)
			if err != nil {
				return fmt.Errorf("write frame: %w", err)
			}
			r.diag, r.diagJSON = d, j
		}
		diag = r.diagJSON
	}
	b, err := appendFrame(r.buf[:0], &f, diag)
	if err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	r.buf = append(b, '\n')
	if _, err := r.w.Write(r.buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// Replay reads recorded frames and gives each connection's samples back to
// a Tracker, as if watched live, calling fn with every frame it makes.
func Replay(r io.Reader, t *Tracker, fn func(Frame) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("recording line %d: not a tcpscope watch frame: %w", line, err)
		}
		socks := make([]model.Socket, len(f.Rows))
		for i, r := range f.Rows {
			socks[i] = r.Socket
		}
		if err := fn(t.Add(f.At, socks)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read recording: %w", err)
	}
	if line == 0 {
		return fmt.Errorf("the recording is empty")
	}
	return nil
}
