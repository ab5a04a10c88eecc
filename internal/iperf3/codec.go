package iperf3

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// iperf3's control states (iperf_api.h), one signed byte each.
const (
	stateTestStart       = 1
	stateTestRunning     = 2
	stateTestEnd         = 4
	stateParamExchange   = 9
	stateCreateStreams   = 10
	stateServerTerminate = 11
	stateExchangeResults = 13
	stateDisplayResults  = 14
	stateDone            = 16
	stateClientTerminate = 12
	stateAccessDenied    = 0xff // -1
	stateServerError     = 0xfe // -2
)

// cookieLen is iperf3's cookie: 36 characters from a–z2–7, then NUL.
const cookieLen = 37

// newCookie makes a cookie as iperf3's make_cookie does.
func newCookie() []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, cookieLen)
	_, _ = rand.Read(b[:36])
	for i := range 36 {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	b[36] = 0
	return b
}

// params is the parameters JSON a client sends. iperf3 turns booleans on
// by their presence, so they are pointers sent only when true.
type params struct {
	TCP        *bool  `json:"tcp,omitempty"`
	UDP        *bool  `json:"udp,omitempty"`
	Omit       int    `json:"omit"`
	Time       int    `json:"time"`
	Num        int64  `json:"num"`
	BlockCount int64  `json:"blockcount"`
	Parallel   int    `json:"parallel"`
	Len        int    `json:"len"`
	Window     int64  `json:"window,omitempty"`
	MSS        int    `json:"MSS,omitempty"`
	Bandwidth  int64  `json:"bandwidth,omitempty"`
	FQRate     int64  `json:"fqrate,omitempty"`
	Congestion string `json:"congestion,omitempty"`
	TOS        int    `json:"TOS,omitempty"`
	// ServerAffinity asks the server to pin itself to a CPU (-A n,m).
	ServerAffinity *int   `json:"server_affinity,omitempty"`
	Reverse        *bool  `json:"reverse,omitempty"`
	Bidirectional  *bool  `json:"bidirectional,omitempty"`
	NoDelay        *bool  `json:"nodelay,omitempty"`
	Counters64     *int   `json:"udp_counters_64bit,omitempty"`
	ServerOutput   *int   `json:"get_server_output,omitempty"`
	ZeroCopy       *int   `json:"zerocopy,omitempty"`
	SkipRxCopy     *int   `json:"skip_rx_copy,omitempty"`
	PacingTimer    int    `json:"pacing_timer"`
	ClientVersion  string `json:"client_version"`
}

// results is the results JSON each side sends. Counters may come as -1
// or, from 3.12–3.13, as 18446744073709551615: float64 holds both.
type results struct {
	CPUTotal             float64         `json:"cpu_util_total"`
	CPUUser              float64         `json:"cpu_util_user"`
	CPUSystem            float64         `json:"cpu_util_system"`
	SenderHasRetransmits float64         `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	Streams              []streamResults `json:"streams"`
	// The server's own output, for a client that asked for it
	// (--get-server-output): text, or the server's -J document.
	ServerOutputText string          `json:"server_output_text,omitempty"`
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
}

type streamResults struct {
	ID          int     `json:"id"`
	Bytes       float64 `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      float64 `json:"errors"`
	Packets     float64 `json:"packets"`
	// The omitted start's share of errors and packets (3.14+), both or
	// neither: 3.21 takes a missing pair to mean every datagram was in
	// the omitted start.
	OmittedErrors  *float64 `json:"omitted_errors,omitempty"`
	OmittedPackets *float64 `json:"omitted_packets,omitempty"`
	StartTime      float64  `json:"start_time"`
	EndTime        float64  `json:"end_time"`
}

// streamID numbers streams as iperf3 does: 1, 3, 4, 5, … (the gap is a
// historical quirk both ends keep).
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// maxResults bounds a results message: iperf3 has no cap, but a
// hundred streams' results are a few kB.
const maxResults = 4 << 20

// serverError turns an iperf3 SERVER_ERROR's codes into an Error.
func serverError(ierrno, errno int32) error {
	msg := fmt.Sprintf("iperf3 server error %d (errno %d)", ierrno, errno)
	switch ierrno {
	case 6:
		msg = "iperf3 server refused the number of streams"
	case 37, 160:
		msg = "iperf3 server refused the test's duration (--server-max-duration)"
	}
	return &fault.Error{Code: fault.Aborted, Msg: msg, Hint: "see the iperf3 server's output"}
}

// ctlConn is the client's side of an iperf3 control connection.
type ctlConn struct {
	c net.Conn
}

func (k *ctlConn) state(timeout time.Duration) (byte, error) {
	if timeout > 0 {
		_ = k.c.SetReadDeadline(time.Now().Add(timeout))
		defer k.c.SetReadDeadline(time.Time{})
	}
	var b [1]byte
	if _, err := io.ReadFull(k.c, b[:]); err != nil {
		return 0, err
	}
	if b[0] == stateServerError {
		var codes [8]byte
		if _, err := io.ReadFull(k.c, codes[:]); err != nil {
			return 0, serverError(-1, 0)
		}
		return 0, serverError(int32(binary.BigEndian.Uint32(codes[:4])), int32(binary.BigEndian.Uint32(codes[4:])))
	}
	return b[0], nil
}

// expect reads states until want, failing on the ones that end a test.
func (k *ctlConn) expect(want byte, timeout time.Duration) error {
	s, err := k.state(timeout)
	switch {
	case err != nil:
		return err
	case s == want:
		return nil
	case s == stateAccessDenied:
		return fault.Errorf(fault.Busy, "iperf3 servers run one test at a time; try again, or use tcpscope server", "the iperf3 server is busy")
	case s == stateServerTerminate:
		return fault.Errorf(fault.Shutdown, "", "the iperf3 server was stopped")
	}
	return fault.Errorf(fault.Protocol, "is it an iperf3 server?", "iperf3 server sent state %d, expected %d", int8(s), want)
}

func (k *ctlConn) sendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	_, err = k.c.Write(msg)
	return err
}

// recvJSON reads one length-prefixed JSON message of at most max bytes.
func (k *ctlConn) recvJSON(v any, max uint32, timeout time.Duration) error {
	_ = k.c.SetReadDeadline(time.Now().Add(timeout))
	defer k.c.SetReadDeadline(time.Time{})
	var n [4]byte
	if _, err := io.ReadFull(k.c, n[:]); err != nil {
		return err
	}
	l := binary.BigEndian.Uint32(n[:])
	if l > max {
		return fault.Errorf(fault.Protocol, "", "iperf3 message of %d bytes, at most %d", l, max)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(k.c, b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &fault.Error{Code: fault.Protocol, Msg: "iperf3 message is not JSON", Err: err}
	}
	return nil
}

// wrapHandshake names the server in a handshake error.
func wrapHandshake(err error, addr string) error {
	var ne net.Error
	switch {
	case fault.CodeOf(err) != "":
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return fault.Errorf(fault.Timeout, "is "+addr+" an iperf3 server?", "no answer from %s", addr)
	case errors.Is(err, io.EOF):
		return fault.Errorf(fault.Protocol, "is "+addr+" an iperf3 server?", "%s closed the connection", addr)
	}
	return &fault.Error{Code: fault.Aborted, Msg: "iperf3 control connection", Err: err}
}

// resultsOf is the results message of one end, client or server: per
// stream the bytes its application moved in the measured period and, for
// its senders, the retransmissions; and the end's CPU, when measured.
func resultsOf(totals []model.StreamTotal, cpu *model.CPUUse) results {
	r := results{SenderHasRetransmits: -1}
	if cpu != nil {
		// The peer shows these as the remote end's CPU; left out, its
		// fields (which the protocol always carries) read 0%.
		r.CPUTotal, r.CPUUser, r.CPUSystem = cpu.Total, cpu.User, cpu.System
	}
	for _, t := range totals {
		s := streamResults{ID: streamID(t.Stream), Bytes: float64(t.Bytes), Retransmits: -1, EndTime: t.Duration.Seconds()}
		if u := t.UDP; u != nil {
			// A sender counts datagrams sent; a receiver those expected,
			// lost ("errors") and its jitter in seconds. iperf3 counts
			// the omitted start in, and says how much of it it was.
			var o model.Datagrams
			if t.UDPOmitted != nil {
				o = *t.UDPOmitted
			}
			oe, op := float64(o.Lost), float64(o.Packets)
			s.Packets = float64(u.Packets) + op
			s.Errors = float64(u.Lost) + oe
			s.Jitter = u.Jitter.Seconds()
			s.OmittedErrors, s.OmittedPackets = &oe, &op
			r.Streams = append(r.Streams, s)
			continue
		}
		if n, ok := t.RetransSegs.Get(); ok && t.Role == model.Sender {
			s.Retransmits = float64(n)
			r.SenderHasRetransmits = 1
		}
		// Stock iperf3 names its congestion control whichever way its
		// streams run; a client shows it as receiver_tcp_congestion when
		// the server receives. A sender's socket names it first.
		if f := t.Final; f != nil && f.Congestion != "" && (r.CongestionUsed == "" || t.Role == model.Sender) {
			r.CongestionUsed = f.Congestion
		}
		r.Streams = append(r.Streams, s)
	}
	return r
}

// serverTotals turns the server's results into its end's totals, matched
// by stream id.
func serverTotals(r *results, run *model.Run) []model.StreamTotal {
	var out []model.StreamTotal
	for _, s := range r.Streams {
		idx := -1
		for i := range run.Streams {
			if streamID(i) == s.ID {
				idx = i
			}
		}
		if idx < 0 {
			continue
		}
		role := model.RoleOf(model.ServerSide, run.Streams[idx].Direction)
		d := time.Duration((s.EndTime - s.StartTime) * float64(time.Second))
		t := model.StreamTotal{Stream: idx, Role: role, Bytes: model.Bytes(s.Bytes), AllBytes: model.Bytes(s.Bytes), Duration: d}
		if d > 0 {
			t.Rate = model.RateOf(t.Bytes, d.Seconds())
		}
		if role == model.Sender && r.SenderHasRetransmits == 1 && s.Retransmits >= 0 && s.Retransmits < math.MaxUint32 {
			t.RetransSegs = model.Some(uint32(s.Retransmits))
		}
		if run.Config.IsUDP() {
			// iperf3 counts the omitted start in (3.14+ says how much).
			packets, errs := s.Packets, s.Errors
			if s.OmittedPackets != nil && s.OmittedErrors != nil {
				packets, errs = packets-*s.OmittedPackets, errs-*s.OmittedErrors
			} else if own := ownTotal(run, idx); own != nil && own.UDPOmitted != nil {
				// Older servers do not say: this end's own omitted count
				// stands in for theirs, as iperf3's client does.
				packets -= float64(own.UDPOmitted.Packets)
			}
			t.UDP = &model.Datagrams{Packets: int64(packets)}
			if role == model.Receiver {
				t.UDP.Lost, t.UDP.Jitter = int64(max(errs, 0)), time.Duration(s.Jitter*float64(time.Second))
			}
		}
		out = append(out, t)
	}
	return out
}

// ownTotal is this end's total for stream idx.
func ownTotal(run *model.Run, idx int) *model.StreamTotal {
	for i := range run.Client.Totals {
		if run.Client.Totals[i].Stream == idx {
			return &run.Client.Totals[i]
		}
	}
	return nil
}

// clientResults is what the server reads of a client's results: what
// each of its streams sent. A count may be absent, or not a count (-1,
// or 3.12's 2^64-1 for "none"): pointers tell.
type clientResults struct {
	Streams []struct {
		ID      *float64 `json:"id"`
		Bytes   *float64 `json:"bytes"`
		Packets *float64 `json:"packets"`
	} `json:"streams"`
}

// sent is, for each of the server's streams (indexed as streams), what
// the client says it sent on it: for TCP the bytes of the measured
// period (iperf3 counts from its omit mark), for UDP the datagrams of the
// whole test (its highest sequence number). Absent for the server's
// sending streams, and where the client gives no usable count: those are
// not waited for.
func (r *clientResults) sent(streams []*engine.Stream) []model.Opt[int64] {
	out := make([]model.Opt[int64], len(streams))
	for _, c := range r.Streams {
		id, ok := countOf(c.ID)
		if !ok {
			continue
		}
		for i, st := range streams {
			if st.Role() != model.Receiver || int64(streamID(st.ID())) != id {
				continue
			}
			count := c.Bytes
			if st.IsUDP() {
				count = c.Packets
			}
			if n, ok := countOf(count); ok {
				out[i] = model.Some(n)
			}
		}
	}
	return out
}

// countOf reads a count of an iperf3 results message: a whole number
// from 0 to 2^53 (past that a float64 is not exact, and iperf3 writes
// "none" as 2^64-1).
func countOf(v *float64) (int64, bool) {
	if v == nil || *v < 0 || *v > 1<<53 || *v != math.Trunc(*v) {
		return 0, false
	}
	return int64(*v), true
}

// paramsIn is the parameters JSON as a client sends it: booleans act by
// presence, so they are read as raw values.
type paramsIn struct {
	TCP           json.RawMessage `json:"tcp"`
	UDP           json.RawMessage `json:"udp"`
	SCTP          json.RawMessage `json:"sctp"`
	Omit          float64         `json:"omit"`
	Time          float64         `json:"time"`
	Num           float64         `json:"num"`
	BlockCount    float64         `json:"blockcount"`
	Parallel      int             `json:"parallel"`
	Len           float64         `json:"len"`
	Window        float64         `json:"window"`
	MSS           int             `json:"MSS"`
	Bandwidth     float64         `json:"bandwidth"`
	FQRate        float64         `json:"fqrate"`
	Congestion    string          `json:"congestion"`
	TOS           int             `json:"TOS"`
	Reverse       json.RawMessage `json:"reverse"`
	Bidirectional json.RawMessage `json:"bidirectional"`
	NoDelay       json.RawMessage `json:"nodelay"`
	ZeroCopy      json.RawMessage `json:"zerocopy"`
	SkipRxCopy    json.RawMessage `json:"skip_rx_copy"`
	Counters64    json.RawMessage `json:"udp_counters_64bit"`
	ServerOutput  json.RawMessage `json:"get_server_output"`
	ClientVersion string          `json:"client_version"`
	AuthToken     string          `json:"authtoken"`
	// ServerAffinity is the CPU -A n,m asks the server to pin itself to.
	ServerAffinity *float64 `json:"server_affinity"`
	// iperf3 3.21's --gsro: whether the client's UDP ends use GSO and GRO,
	// and their datagram and buffer sizes. Raw, so that no value of them
	// refuses a test (see gsro).
	GSO       json.RawMessage `json:"gso"`
	GSODgSize json.RawMessage `json:"gso_dg_size"`
	GSOBfSize json.RawMessage `json:"gso_bf_size"`
	GRO       json.RawMessage `json:"gro"`
	GROBfSize json.RawMessage `json:"gro_bf_size"`
}

// gsro reads iperf3 3.21's GSO and GRO parameters into cfg. gro (1)
// turns GRO on for this server's receivers, as the client asked. The
// rest change nothing: this server sends UDP with GSO anyway (gso 0
// included: GSO changes how many datagrams one system call hands the
// kernel, never the datagrams on the wire, so it is each end's own
// affair), each datagram of the test's length (gso_dg_size is that
// length in 3.21), in buffers of the kernel's largest (64 datagrams,
// 65507 bytes: gso_bf_size and gro_bf_size only bound iperf3's own
// buffers). A value that is no number counts as absent: a client's
// offload wish never refuses its test.
func (p *paramsIn) gsro(cfg *model.TestConfig) {
	var gro float64
	if p.GRO != nil && json.Unmarshal(p.GRO, &gro) == nil && gro == 1 {
		cfg.GRO = true
	}
}

// nonZero says whether an iperf3 flag parameter is on: iperf3 sends
// zerocopy and skip_rx_copy as 1 when set and tests them for a value
// other than 0.
func nonZero(v json.RawMessage) bool {
	var f float64
	return v != nil && (json.Unmarshal(v, &f) != nil || f != 0)
}

// errUnsupported marks what this server does not serve to iperf3
// clients yet.
var errUnsupported = errors.New("not served to iperf3 clients yet")

// config turns iperf3's parameters into a test configuration.
func (p *paramsIn) config() (model.TestConfig, error) {
	if p.SCTP != nil {
		return model.TestConfig{}, fmt.Errorf("SCTP tests are %w", errUnsupported)
	}
	// JSON numbers are float64s, and converting one out of int64's range
	// gives whatever the CPU gives (on amd64, the most negative int64):
	// each is checked in range first. Times are iperf3's own maximum
	// (86400 s for -t), counts 2^53 (exact in a float64).
	for _, v := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"time", p.Time, engine.MaxTestDuration.Seconds()}, {"omit", p.Omit, engine.MaxTestDuration.Seconds()},
		{"num", p.Num, 1 << 53}, {"blockcount", p.BlockCount, 1 << 53}, {"len", p.Len, 1 << 53},
		{"window", p.Window, 1 << 53}, {"bandwidth", p.Bandwidth, 1 << 53}, {"fqrate", p.FQRate, 1 << 53},
		{"blockcount × len", p.BlockCount * max(p.Len, 1), 1 << 53},
	} {
		if !(v.v >= 0 && v.v <= v.max) { // NaN fails both
			return model.TestConfig{}, fault.Errorf(fault.BadConfig, "check the client's options", "iperf3 parameter %s = %g out of range 0 to %g", v.name, v.v, v.max)
		}
	}
	cfg := model.TestConfig{
		Duration: time.Duration(p.Time * float64(time.Second)), Omit: time.Duration(p.Omit * float64(time.Second)),
		Bytes: model.Bytes(p.Num), Parallel: max(p.Parallel, 1), Length: model.Bytes(p.Len),
		Window: model.Bytes(p.Window), MSS: p.MSS, Bitrate: model.Bitrate(p.Bandwidth), FQRate: model.Bitrate(p.FQRate),
		Congestion: p.Congestion, Reverse: p.Reverse != nil, Bidir: p.Bidirectional != nil, NoDelay: p.NoDelay != nil,
		Counters64: p.Counters64 != nil, ZeroCopy: nonZero(p.ZeroCopy), SkipRxCopy: nonZero(p.SkipRxCopy), TOS: p.TOS,
	}
	if a := p.ServerAffinity; a != nil {
		// A CPU number as the kernel counts them (perf checks the same
		// range of a native client's -A).
		if !(*a >= 0 && *a <= 1023) || *a != math.Trunc(*a) {
			return model.TestConfig{}, fault.Errorf(fault.BadConfig, "use {server_cpu} with CPU numbers from 0, as the kernel counts them", "iperf3 parameter server_affinity = %g is no CPU number from 0 to 1023", *a)
		}
		cpu := int(*a)
		cfg.ServerCPU = &cpu
	}
	if p.UDP != nil {
		p.gsro(&cfg)
		// iperf3 sends the UDP rate always (-b 0 omits it: unlimited),
		// and its TCP options only when set.
		cfg.Protocol = model.UDP
		cfg.Congestion, cfg.MSS, cfg.NoDelay, cfg.ZeroCopy, cfg.SkipRxCopy = "", 0, false, false, false
	}
	if p.BlockCount > 0 {
		// -k: a count of writes of -l bytes each, per direction.
		cfg.Bytes = model.Bytes(p.BlockCount * max(p.Len, 1))
	}
	if cfg.Bytes > 0 {
		cfg.Duration = 0
	}
	return cfg, nil
}

// iperf3 error numbers (iperf_api.h) this server sends. A SERVER_ERROR
// carries two numbers and no text: iperf3's client prints its own text
// for the first (iperf_strerror), and for some (those marked "+ errno")
// appends the C library's text for the second. A number the client's
// version does not know prints as "int_errno=N" and says nothing, so each
// refusal uses one that every version since 3.9 knows, or the exact one
// when the client is new enough to know it.
const (
	ierrNewTest  = 100 // IENEWTEST "unable to create a new test" + errno
	ierrProtocol = 131 // IEPROTOCOL "protocol does not exist"
	ierrAccept   = 204 // IESTREAMACCEPT "unable to accept stream connection" + errno
	// IEMAXSERVERTESTDURATIONEXCEEDED "client's requested duration
	// exceeds the server's maximum permitted limit", since 3.20.
	ierrDuration = 37
	// IETOTALRATE "total required bandwidth is larger than server
	// limit", since 3.7.
	ierrTotalRate = 27
	// IEAUTHTEST "test authorization failed", since 3.2.
	ierrAuth = 142
)

// The C errno values sent beside ierrNewTest: from the range that
// Linux, the BSDs and macOS number alike, so the client's strerror
// prints the same text on each.
const (
	errnoInvalid = 22 // EINVAL "Invalid argument"
	errnoRange   = 34 // ERANGE "Numerical result out of range" (macOS: "Result too large")
	errnoAccess  = 13 // EACCES "Permission denied"
)

// errnosFor picks the error numbers that tell an iperf3 client of
// version clientVersion (as its parameters say, "3.12") why its test
// was refused.
// overDuration says the test was refused for the server's duration limit.
func errnosFor(err error, clientVersion string, cfg *model.TestConfig, cl *limits.Class) (ierrno, errno int32) {
	switch {
	case errors.Is(err, errUnsupported):
		return ierrProtocol, 0
	case fault.CodeOf(err) == fault.Denied:
		// "unable to create a new test: Permission denied".
		return ierrNewTest, errnoAccess
	case fault.CodeOf(err) == fault.Limit && span(cfg) > cl.MaxDuration && minorVersion(clientVersion) >= 20:
		return ierrDuration, 0
	case fault.CodeOf(err) == fault.Limit && span(cfg) <= cl.MaxDuration && len(cfg.Directions()) <= cl.MaxStreams:
		// Over the class's rate cap: "total required bandwidth is
		// larger than server limit", as from iperf3's own
		// --server-bitrate-limit.
		return ierrTotalRate, 0
	case fault.CodeOf(err) == fault.Limit:
		// Over one of the server's limits: "unable to create a new test:
		// Numerical result out of range". iperf3's own messages for a
		// duration or a stream count name iperf3's maxima (86400 s,
		// 128 streams), which are not this server's.
		return ierrNewTest, errnoRange
	}
	return ierrNewTest, errnoInvalid
}

// minorVersion is the minor version of an iperf3 3.x version string, or -1.
func minorVersion(v string) int {
	var minor int
	if _, err := fmt.Sscanf(v, "3.%d", &minor); err != nil {
		return -1
	}
	return minor
}

// sendError sends SERVER_ERROR with an iperf3 error number and a C
// errno (0: none).
func sendError(c net.Conn, ierrno, errno int32) {
	b := []byte{stateServerError}
	b = binary.BigEndian.AppendUint32(b, uint32(ierrno))
	b = binary.BigEndian.AppendUint32(b, uint32(errno))
	_, _ = c.Write(b)
}

// span is how long the senders run: the omitted start plus the duration
// (zero for a byte-count test).
func span(c *model.TestConfig) time.Duration {
	if c.Duration == 0 {
		return 0
	}
	return c.Omit + c.Duration
}

// maxParams is iperf3's own cap on a parameters message.
const maxParams = 8 << 10
