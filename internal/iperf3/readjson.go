package iperf3

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ErrNotJSONDocument says the input is not an iperf3 -J document.
var ErrNotJSONDocument = errors.New("not an iperf3 -J document")

// ErrTestFailed says the document is a failed test's: iperf3 -J wrote
// its "error" and no results.
var ErrTestFailed = errors.New("the iperf3 test failed")

// Document is an iperf3 -J document read back: the run as tcpscope's
// model holds it, what wrote it, and what the document does not carry.
type Document struct {
	Run *model.Run
	// Writer is the document's start.version ("iperf 3.12", or
	// tcpscope's -f iperf3-json).
	Writer string
	// Side is the end that wrote it: iperf3 -c (the client) or -s.
	Side model.Side
	// Lacks says, one plain sentence each, what the -J format does not
	// carry and which diagnosis rules therefore could not run.
	Lacks []string
}

// ReadJSON reads an iperf3 -J document (stock iperf3's, or tcpscope's
// -f iperf3-json) into a model.Run. It maps only what the format holds:
// the test's start, each stream's bytes and times at both ends, a
// sender's retransmissions, the largest congestion window, send window
// and RTT the writing end's own senders saw, their last interval's
// smoothed RTT, both ends' CPU use, congestion controls and UDP's
// datagram accounts. The format carries no kernel state of the kind
// tcpscope reads (no receiver's window or queues, no limited-by times,
// no MSS or minimum RTT): both ends are NoKernelState, with no intervals
// and no final samples, so every rule that needs them sees them absent,
// never zero. A document with an "error" (a failed test) is an error.
func ReadJSON(r io.Reader) (*Document, error) {
	var d jDoc
	dec := json.NewDecoder(r)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotJSONDocument, model.JSONProblem(err, "an iperf3 document"))
	}
	return d.read()
}

// read checks that d is a finished test's document and converts it.
func (d *jDoc) read() (*Document, error) {
	finished := d.Start != nil && d.Start.TestStart != nil && d.End != nil && len(d.End.Streams) > 0
	if d.Error != "" && !finished && (d.Start != nil || d.End != nil) {
		return nil, fmt.Errorf("%w: %s", ErrTestFailed, d.Error)
	}
	if d.Start == nil || d.End == nil {
		return nil, fmt.Errorf("%w: it has no start and end", ErrNotJSONDocument)
	}
	if d.Start.TestStart == nil || len(d.End.Streams) == 0 {
		return nil, errors.New("the iperf3 document has no finished test (no test_start or no end.streams)")
	}
	return d.convert()
}

// ReadJSONStream reads iperf3's --json-stream output (iperf3 3.17 and
// later: one {"event": ..., "data": ...} per line, "start", "interval"
// and "end" holding what -J's document holds) as ReadJSON reads the
// document.
func ReadJSONStream(r io.Reader) (*Document, error) {
	var d jDoc
	dec := json.NewDecoder(r)
	for n := 1; ; n++ {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		err := dec.Decode(&ev)
		if errors.Is(err, io.EOF) && n > 1 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: event %d: %s", ErrNotJSONDocument, n, model.JSONProblem(err, "an iperf3 document"))
		}
		var dst any
		switch ev.Event {
		case "start":
			dst = &d.Start
		case "end":
			dst = &d.End
		case "error":
			// A string; kept as written if a later iperf3 sends more.
			if json.Unmarshal(ev.Data, &d.Error) != nil {
				d.Error = string(ev.Data)
			}
			continue
		case "interval":
			d.Intervals = append(d.Intervals, jInterval{})
			dst = &d.Intervals[len(d.Intervals)-1]
		default:
			continue // server_output_text and events to come
		}
		if err := json.Unmarshal(ev.Data, dst); err != nil {
			return nil, fmt.Errorf("%w: the %s event: %s", ErrNotJSONDocument, ev.Event, model.JSONProblem(err, "an iperf3 document"))
		}
	}
	return d.read()
}

// The parts of iperf3's -J document that ReadJSON reads. Numbers a
// document may leave out are pointers: absent stays absent.
type jDoc struct {
	Start     *jStart     `json:"start"`
	Intervals []jInterval `json:"intervals"`
	End       *jEnd       `json:"end"`
	Error     string      `json:"error"`
}

type jStart struct {
	Connected []struct {
		Socket     int    `json:"socket"`
		LocalHost  string `json:"local_host"`
		LocalPort  int    `json:"local_port"`
		RemoteHost string `json:"remote_host"`
		RemotePort int    `json:"remote_port"`
	} `json:"connected"`
	Version      string `json:"version"`
	SystemInfo   string `json:"system_info"`
	ConnectingTo *struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"connecting_to"`
	AcceptedConnection *struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"accepted_connection"`
	Timestamp struct {
		TimeSecs int64 `json:"timesecs"`
	} `json:"timestamp"`
	Cookie      string     `json:"cookie"`
	SockBufsize int64      `json:"sock_bufsize"`
	TCPMSS      int        `json:"tcp_mss"`
	TestStart   *jTestStrt `json:"test_start"`
}

type jTestStrt struct {
	Protocol      string   `json:"protocol"`
	NumStreams    int      `json:"num_streams"`
	Blksize       int64    `json:"blksize"`
	Omit          float64  `json:"omit"`
	Duration      float64  `json:"duration"`
	Bytes         int64    `json:"bytes"`
	Blocks        int64    `json:"blocks"`
	Reverse       int      `json:"reverse"`
	Bidir         int      `json:"bidir"`
	TargetBitrate int64    `json:"target_bitrate"`
	FQRate        int64    `json:"fqrate"`
	Interval      *float64 `json:"interval"`
}

type jInterval struct {
	Streams []jSpan `json:"streams"`
}

// jSpan is any of iperf3's per-stream or summed accounts: an interval's
// stream, a half of end.streams, a UDP entry or a sum.
type jSpan struct {
	Socket        int      `json:"socket"`
	Start         float64  `json:"start"`
	End           *float64 `json:"end"`
	Bytes         *int64   `json:"bytes"`
	BitsPerSecond *float64 `json:"bits_per_second"`
	Retransmits   *int64   `json:"retransmits"`
	SndCwnd       *int64   `json:"snd_cwnd"`
	RTT           *int64   `json:"rtt"`
	MaxSndCwnd    *int64   `json:"max_snd_cwnd"`
	MaxSndWnd     *int64   `json:"max_snd_wnd"`
	MaxRTT        *int64   `json:"max_rtt"`
	Omitted       bool     `json:"omitted"`
	Sender        *bool    `json:"sender"`
	// UDP.
	Packets     *int64   `json:"packets"`
	LostPackets *int64   `json:"lost_packets"`
	OutOfOrder  *int64   `json:"out_of_order"`
	JitterMS    *float64 `json:"jitter_ms"`
	// FromAcks: tcpscope's mark on a sum_received taken from the
	// sender's acknowledged bytes (the receiver's report was missing).
	FromAcks bool `json:"tcpscope_from_acks"`
}

type jEnd struct {
	Streams []struct {
		Sender   *jSpan `json:"sender"`
		Receiver *jSpan `json:"receiver"`
		UDP      *jSpan `json:"udp"`
	} `json:"streams"`
	SumSent               *jSpan             `json:"sum_sent"`
	SumReceived           *jSpan             `json:"sum_received"`
	SumSentReverse        *jSpan             `json:"sum_sent_bidir_reverse"`
	SumReceivedReverse    *jSpan             `json:"sum_received_bidir_reverse"`
	CPU                   map[string]float64 `json:"cpu_utilization_percent"`
	SenderTCPCongestion   string             `json:"sender_tcp_congestion"`
	ReceiverTCPCongestion string             `json:"receiver_tcp_congestion"`
}

// secs converts iperf3's seconds.
func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// span is the time an account covers.
func (s *jSpan) span() time.Duration {
	if s.End == nil {
		return 0
	}
	return secs(*s.End - s.Start)
}

// converter carries the reading of one document.
type converter struct {
	d    *jDoc
	run  *model.Run
	host model.Side // the end that wrote the document
	ids  map[int]int
	// hostSends says which streams the writing end sent.
	hostSends map[int]bool
	// byTcpscope: tcpscope's -f iperf3-json wrote the document.
	byTcpscope bool
	// peerMissing: the document has no account of the peer's, only
	// zeros where it would be: iperf3 -s writes none of the client's,
	// and a client interrupted before the results exchange has none
	// of the server's.
	peerMissing bool
}

func (d *jDoc) convert() (*Document, error) {
	c := &converter{d: d, run: &model.Run{Schema: model.SchemaVersion}, host: model.ClientSide, ids: map[int]int{}, hostSends: map[int]bool{}}
	s := d.Start
	c.byTcpscope = strings.HasPrefix(s.Version, "tcpscope ")
	if s.ConnectingTo == nil && s.AcceptedConnection != nil {
		c.host = model.ServerSide
	}
	c.peerMissing = c.host == model.ServerSide || d.Error != ""
	c.config()
	if err := c.streams(); err != nil {
		return nil, err
	}
	c.ends()
	if err := c.totals(); err != nil {
		return nil, err
	}
	c.run.Summary = model.Summarize(c.run)
	c.sums()
	c.run.Ended = "complete"
	if d.Error != "" {
		// Results with an error: iperf3 was stopped mid-test (its
		// "interrupt - the client has terminated").
		c.run.Ended = "interrupted"
	}
	return &Document{Run: c.run, Writer: s.Version, Side: c.host, Lacks: c.lacks()}, nil
}

// config reads the test's parameters from start.
func (c *converter) config() {
	s, ts := c.d.Start, c.d.Start.TestStart
	run := c.run
	if s.Timestamp.TimeSecs > 0 {
		run.Start = time.Unix(s.Timestamp.TimeSecs, 0).UTC()
	}
	if s.ConnectingTo != nil {
		run.Server = net.JoinHostPort(s.ConnectingTo.Host, strconv.Itoa(s.ConnectingTo.Port))
	}
	run.Cookie = s.Cookie
	cfg := &run.Config
	cfg.Protocol = strings.ToLower(ts.Protocol)
	cfg.Parallel = ts.NumStreams
	cfg.Duration = secs(ts.Duration)
	if ts.Bytes > 0 || ts.Blocks > 0 {
		cfg.Duration = 0
	}
	cfg.Bytes = model.Bytes(ts.Bytes)
	cfg.Length = model.Bytes(ts.Blksize)
	cfg.Omit = secs(ts.Omit)
	cfg.Reverse = ts.Reverse != 0
	cfg.Bidir = ts.Bidir != 0 || c.d.End.SumSentReverse != nil
	cfg.Bitrate = model.Bitrate(ts.TargetBitrate)
	cfg.FQRate = model.Bitrate(ts.FQRate)
	cfg.Window = model.Bytes(s.SockBufsize)
	cfg.MSS = s.TCPMSS
	switch {
	case ts.Interval != nil:
		cfg.Interval = secs(*ts.Interval)
	case len(c.d.Intervals) > 0 && len(c.d.Intervals[0].Streams) > 0:
		// iperf3 3.12 does not write -i: its first interval shows it
		// (iperf3 closes intervals a few ms late; -i takes tenths).
		cfg.Interval = c.d.Intervals[0].Streams[0].span().Round(100 * time.Millisecond)
	}
}

// streams reads the data connections: start.connected names them (its
// order is iperf3's stream order), end.streams says which way each flowed.
func (c *converter) streams() error {
	for i, conn := range c.d.Start.Connected {
		c.ids[conn.Socket] = i
		local := net.JoinHostPort(conn.LocalHost, strconv.Itoa(conn.LocalPort))
		remote := net.JoinHostPort(conn.RemoteHost, strconv.Itoa(conn.RemotePort))
		si := model.StreamInfo{ID: i, ClientAddr: local, ServerAddr: remote}
		if c.host == model.ServerSide {
			si.ClientAddr, si.ServerAddr = remote, local
		}
		c.run.Streams = append(c.run.Streams, si)
	}
	for _, st := range c.d.End.Streams {
		h := st.Sender
		if h == nil {
			h = st.UDP
		}
		if h == nil {
			h = st.Receiver
		}
		if h == nil || h.Sender == nil {
			return errors.New("the iperf3 document's end.streams do not say which end sent")
		}
		id, ok := c.ids[h.Socket]
		if !ok {
			return fmt.Errorf("the iperf3 document's end.streams name socket %d, which start.connected does not", h.Socket)
		}
		c.hostSends[id] = *h.Sender
		d := model.ClientToServer
		if (c.host == model.ClientSide) != *h.Sender {
			d = model.ServerToClient
		}
		c.run.Streams[id].Direction = d
	}
	for _, st := range c.run.Streams {
		if st.Direction == "" {
			return fmt.Errorf("the iperf3 document's end.streams lack stream %d", st.ID)
		}
	}
	return nil
}

// ends names the two ends: what the writing end says of itself (its
// version, kernel, congestion control) and of its peer, and both CPUs.
// Neither end's kernel TCP state is in the document.
func (c *converter) ends() {
	host, peer := &c.run.Client, &c.run.Remote
	c.run.Client.Side, c.run.Remote.Side = model.ClientSide, model.ServerSide
	if c.host == model.ServerSide {
		host, peer = peer, host
	}
	host.Version = c.d.Start.Version
	host.Kernel = kernelOf(c.d.Start.SystemInfo)
	host.NoKernelState, peer.NoKernelState = true, true
	host.CPU = cpuUse(c.d.End.CPU, "host_")
	if c.peerMissing {
		// iperf3 writes zeros for the missing peer's account: its
		// CPU, its bytes, its retransmissions. Absent, not zero.
		if cc := c.d.End.SenderTCPCongestion; cc != "" {
			host.Congestion = cc
		} else {
			host.Congestion = c.d.End.ReceiverTCPCongestion
		}
		return
	}
	peer.CPU = cpuUse(c.d.End.CPU, "remote_")
	if !c.run.Config.IsUDP() {
		// iperf3 names the algorithm of the end that sends and of the
		// one that receives; in -R and --bidir the server sends (the
		// reverse direction, in --bidir).
		snd, rcv := &c.run.Client, &c.run.Remote
		if c.run.Config.Reverse || c.run.Config.Bidir {
			snd, rcv = rcv, snd
		}
		snd.Congestion, rcv.Congestion = c.d.End.SenderTCPCongestion, c.d.End.ReceiverTCPCongestion
	}
}

// kernelOf is the release in iperf3's system_info (uname's "Linux node
// release version machine", or tcpscope's "Linux release").
func kernelOf(info string) string {
	f := strings.Fields(info)
	switch {
	case len(f) < 2 || f[0] != "Linux":
		return ""
	case len(f) == 2:
		return f[1]
	}
	return f[2]
}

// cpuUse is one end's cpu_utilization_percent, nil when not reported.
func cpuUse(m map[string]float64, prefix string) *model.CPUUse {
	total, ok := m[prefix+"total"]
	if !ok {
		return nil
	}
	return &model.CPUUse{Total: total, User: m[prefix+"user"], System: m[prefix+"system"]}
}

// endOf is the report of side.
func (c *converter) endOf(side model.Side) *model.EndReport {
	if side == model.ServerSide {
		return &c.run.Remote
	}
	return &c.run.Client
}

// roleEnds is the sending and the receiving end of stream id.
func (c *converter) roleEnds(id int) (snd, rcv *model.EndReport) {
	if c.run.Streams[id].Direction == model.ServerToClient {
		return &c.run.Remote, &c.run.Client
	}
	return &c.run.Client, &c.run.Remote
}

// totals reads end.streams into each end's totals.
func (c *converter) totals() error {
	udpPerDir := map[model.Direction]int{}
	for _, st := range c.run.Streams {
		udpPerDir[st.Direction]++
	}
	for _, st := range c.d.End.Streams {
		if st.UDP != nil {
			c.udpTotals(st.UDP, udpPerDir)
			continue
		}
		if st.Sender == nil || st.Receiver == nil {
			return errors.New("the iperf3 document's end.streams lack a sender or receiver half")
		}
		id := c.ids[st.Sender.Socket]
		snd, rcv := c.roleEnds(id)
		if c.known(id, model.Receiver) {
			rcv.Totals = append(rcv.Totals, total(id, model.Receiver, st.Receiver))
		}
		if !c.known(id, model.Sender) {
			continue
		}
		t := total(id, model.Sender, st.Sender)
		if n := st.Sender.Retransmits; n != nil && *n >= 0 {
			t.RetransSegs = model.Some(uint32(*n))
		}
		if c.hostSends[id] || c.byTcpscope {
			// The sender's tcp_info, as iperf3 keeps it: 0 is a
			// figure its kernel did not give. Stock iperf3's max_*
			// in a peer's half are the writing end's receiving
			// socket's, or 0: not the sender's (tcpscope's -f
			// iperf3-json writes them only from the sender's kernel).
			t.MaxCwnd = positive[model.Bytes](st.Sender.MaxSndCwnd, 1)
			t.MaxSndWnd = positive[model.Bytes](st.Sender.MaxSndWnd, 1)
			t.MaxRTT = positive(st.Sender.MaxRTT, time.Microsecond)
		}
		snd.Totals = append(snd.Totals, t)
	}
	return nil
}

// known reports whether the document holds role's account of stream
// id: the writing end's own always; the peer's only in a finished
// client's document (iperf3 -c gets the server's results; iperf3 -s,
// and a client stopped before the exchange, write zeros for them).
func (c *converter) known(id int, role model.Role) bool {
	return !c.peerMissing || c.hostSends[id] == (role == model.Sender)
}

// positive is *p in unit when it is above 0, else absent.
func positive[T ~int64](p *int64, unit T) model.Opt[T] {
	if p == nil || *p <= 0 {
		return model.Opt[T]{}
	}
	return model.Some(T(*p) * unit)
}

// total is one half of a TCP stream's end entry.
func total(id int, role model.Role, h *jSpan) model.StreamTotal {
	t := model.StreamTotal{Stream: id, Role: role, Duration: h.span()}
	if h.Bytes != nil {
		t.Bytes = model.Bytes(*h.Bytes)
		t.AllBytes = t.Bytes
	}
	if h.BitsPerSecond != nil {
		t.Rate = model.Bitrate(*h.BitsPerSecond)
	}
	return t
}

// udpTotals reads iperf3's one UDP entry per stream, which mixes the
// sender's bytes and time with the receiver's datagram account. The
// receiver's own bytes are only in the direction's sum: a receiver's
// total is kept only where the direction has one stream.
func (c *converter) udpTotals(u *jSpan, perDir map[model.Direction]int) {
	id := c.ids[u.Socket]
	snd, rcv := c.roleEnds(id)
	if c.known(id, model.Sender) {
		snd.Totals = append(snd.Totals, total(id, model.Sender, u))
	}
	dir := c.run.Streams[id].Direction
	if !c.known(id, model.Receiver) {
		return
	}
	sum := c.sumReceived(dir)
	if perDir[dir] != 1 || sum == nil || sum.Bytes == nil {
		return
	}
	r := total(id, model.Receiver, sum)
	r.UDP = datagrams(u)
	rcv.Totals = append(rcv.Totals, r)
}

// datagrams is a receiver's datagram account in a UDP entry or sum.
func datagrams(u *jSpan) *model.Datagrams {
	d := &model.Datagrams{}
	if u.Packets != nil {
		d.Packets = *u.Packets
	}
	if u.LostPackets != nil {
		d.Lost = *u.LostPackets
	}
	if u.OutOfOrder != nil {
		d.OutOfOrder = *u.OutOfOrder
	}
	if u.JitterMS != nil {
		d.Jitter = time.Duration(math.Round(*u.JitterMS * 1e6))
	}
	return d
}

// sumSent and sumReceived are the sums of direction d: iperf3's
// sum_sent/sum_received of the writing end's first direction, the
// _bidir_reverse ones of the other.
func (c *converter) sumSent(d model.Direction) *jSpan {
	return c.pick(d, c.d.End.SumSent, c.d.End.SumSentReverse)
}

func (c *converter) sumReceived(d model.Direction) *jSpan {
	return c.pick(d, c.d.End.SumReceived, c.d.End.SumReceivedReverse)
}

func (c *converter) pick(d model.Direction, first, reverse *jSpan) *jSpan {
	// A TCP sum's "sender" says whether the writing end sent; a UDP
	// sum's names the side of the account (sum_sent true, sum_received
	// false), so there the test's first direction is the plain sums'.
	fd := firstDirection(c.run)
	if first != nil && first.Sender != nil && !c.run.Config.IsUDP() {
		fd = model.ClientToServer
		if (c.host == model.ClientSide) != *first.Sender {
			fd = model.ServerToClient
		}
	}
	if d == fd {
		return first
	}
	return reverse
}

// sums puts the document's own sums in each direction's headline: they
// are what iperf3 printed (for UDP, the only per-direction account of
// what arrived), and the smoothed RTT of the writing end's senders in
// their last interval, the mean over streams Summarize takes from a
// final sample.
func (c *converter) sums() {
	for i := range c.run.Summary {
		sum := &c.run.Summary[i]
		ids := c.run.StreamIDs(sum.Direction)
		var id int
		for id = range ids {
			break
		}
		if s := c.sumSent(sum.Direction); s != nil && s.Bytes != nil && c.known(id, model.Sender) {
			sum.SenderBytes = model.Some(model.Bytes(*s.Bytes))
			sum.SenderRate = model.Some(model.RateOf(model.Bytes(*s.Bytes), s.span().Seconds()))
			if n := s.Retransmits; n != nil && *n >= 0 && !c.run.Config.IsUDP() {
				sum.RetransSegs = model.Some(uint32(*n))
			}
		}
		if r := c.sumReceived(sum.Direction); r != nil && r.Bytes != nil && r.span() > 0 && c.known(id, model.Receiver) {
			sum.ReceiverBytes, sum.Duration, sum.FromAcks = model.Some(model.Bytes(*r.Bytes)), model.Some(r.span()), r.FromAcks
			sum.Goodput = model.Some(model.RateOf(model.Bytes(*r.Bytes), r.span().Seconds()))
			if c.run.Config.IsUDP() {
				sum.UDP = datagrams(r)
				sum.UDP.OutOfOrder = c.outOfOrder(sum.Direction)
				sum.LossRate = model.Some(sum.UDP.LossRate())
			}
		}
		if m, ok := c.lastRTT(sum.Direction); ok {
			sum.MeanRTT = model.Some(m)
		}
	}
}

// outOfOrder adds up the UDP entries' late datagrams of direction d.
func (c *converter) outOfOrder(d model.Direction) int64 {
	var n int64
	for _, st := range c.d.End.Streams {
		if st.UDP != nil && st.UDP.OutOfOrder != nil && c.run.Streams[c.ids[st.UDP.Socket]].Direction == d {
			n += *st.UDP.OutOfOrder
		}
	}
	return n
}

// lastRTT is the mean over direction d's streams of the smoothed RTT in
// their last interval, when the writing end sent them all and its
// kernel gave one for each.
func (c *converter) lastRTT(d model.Direction) (time.Duration, bool) {
	last := map[int]time.Duration{}
	want := 0
	for _, st := range c.run.Streams {
		if st.Direction != d {
			continue
		}
		if !c.hostSends[st.ID] {
			return 0, false
		}
		want++
	}
	for _, iv := range c.d.Intervals {
		for _, s := range iv.Streams {
			id, ok := c.ids[s.Socket]
			if ok && c.run.Streams[id].Direction == d && s.RTT != nil {
				if *s.RTT > 0 {
					last[id] = time.Duration(*s.RTT) * time.Microsecond
				} else {
					delete(last, id)
				}
			}
		}
	}
	if want == 0 || len(last) != want {
		return 0, false
	}
	var sum time.Duration
	for _, r := range last {
		sum += r
	}
	return sum / time.Duration(want), true
}

// other names the end that did not write the document.
func (c *converter) other() model.Side {
	if c.host == model.ServerSide {
		return model.ClientSide
	}
	return model.ServerSide
}

// lacks says what the document does not carry, and which rules could
// not run for it.
func (c *converter) lacks() []string {
	var out []string
	if c.byTcpscope {
		out = append(out, "This is tcpscope's -f iperf3-json, iperf3's shape: the same test's --json holds both ends' kernels and is diagnosed in full.")
	}
	if c.run.Config.IsUDP() {
		out = append(out, "iperf3's -J carries no receive-buffer drops (SO_RXQ_OVFL): loss in the receiving host's socket cannot be told from loss on the path.")
		return out
	}
	out = append(out, "iperf3's -J carries no receiver kernel state and no limited-by times: the receive-window, send-buffer and slow-reader rules could not run, nor the sending-application rule beyond -b.")
	own, peer := false, false
	for _, st := range c.run.Streams {
		if c.hostSends[st.ID] {
			own = true
		} else {
			peer = true
		}
	}
	if own {
		out = append(out, "Of the sender's kernel it has only snd_cwnd, rtt and retransmits per interval (no MSS, minimum RTT, bytes retransmitted, delivery or pacing rate): the loss, queue, path-MTU and bottleneck rules could not run.")
	}
	switch {
	case c.d.Error != "":
		out = append(out, fmt.Sprintf("iperf3 stopped mid-test (%q) before the ends exchanged results: the %s's account is missing (its zeros are left out, not read as zero).", c.d.Error, c.other()))
	case c.host == model.ServerSide:
		out = append(out, "iperf3 -s writes zeros for the client's own account (what it sent or received, its retransmissions and CPU): left out here, not read as zero.")
	case peer:
		out = append(out, "Where the server sent, the document has only its byte counts and retransmissions: nothing of its kernel.")
	}
	return out
}
