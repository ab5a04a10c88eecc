package perf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
)

// ProtocolVersion is the native control protocol's version. A server
// refuses clients speaking another version with fault.Version.
const ProtocolVersion = 3

// Magic bytes open every connection to a server, so one port can tell a
// control connection, a data connection and (later) other protocols apart.
// They are upper case, unlike iperf3's cookie alphabet (a-z, 2-7).
const (
	controlMagic = "TCPSCOPE"
	dataMagic    = "TCPSCOPD"
	magicLen     = 8
	cookieLen    = 16
	// dataPreambleLen is magic + cookie + stream id (uint16, big endian).
	dataPreambleLen = magicLen + cookieLen + 2
	// maxMessage bounds one control message so a hostile peer cannot make
	// us allocate without limit. The biggest honest message, an interval of
	// 256 streams, is under 1 MiB.
	maxMessage = 4 << 20
	// maxClientMessage bounds what a server accepts: a client only sends
	// hello, start, stop and bye, all small.
	maxClientMessage = 64 << 10
)

// Message types on the control connection.
const (
	msgHello    = "hello"    // client → server: versions and the test config
	msgWelcome  = "welcome"  // server → client: accepted, with the data cookie
	msgError    = "error"    // either way: the test cannot go on
	msgStart    = "start"    // client → server: all data connections are open
	msgStarted  = "started"  // server → client: the server's socket setups; clocks start
	msgInterval = "interval" // server → client: the server's view of one interval
	msgStop     = "stop"     // either way: stop sending early
	msgDone     = "done"     // server → client: the server's totals
	msgBye      = "bye"      // client → server: results received
)

// message is the control protocol's envelope. Only the field matching Type
// is set.
type message struct {
	Type     string           `json:"type"`
	Hello    *hello           `json:"hello,omitempty"`
	Welcome  *welcome         `json:"welcome,omitempty"`
	Error    *wireError       `json:"error,omitempty"`
	Start    *start           `json:"start,omitempty"`
	Started  *started         `json:"started,omitempty"`
	Interval *model.Interval  `json:"interval,omitempty"`
	Stop     *stop            `json:"stop,omitempty"`
	Done     *model.EndReport `json:"done,omitempty"`
}

type hello struct {
	Protocol int              `json:"protocol"`
	Version  string           `json:"version"`
	Config   model.TestConfig `json:"config"`
	// Token is an access token, for a server that requires one.
	Token string `json:"token,omitempty"`
}

type welcome struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Kernel   string `json:"kernel,omitempty"`
	Cookie   []byte `json:"cookie"`
	// StreamKeys are one random 16-byte key per stream, in stream-id
	// order: a data connection's preamble, or a UDP stream's hello,
	// carries its stream's key. The cookie names the test and travels
	// only on the control connection (encrypted under TLS); a key is
	// seen on the wire only as its stream claims it, once.
	StreamKeys [][]byte `json:"stream_keys"`
	// RateCap is the rate the server holds a TCP test to, all streams
	// together (its limits for the client's address); 0: none.
	RateCap model.Bitrate `json:"rate_cap,omitempty"`
	// ServerCPU is the CPU the server pinned itself to for the test, as
	// the hello's server_cpu asked; nil when it did not (it lets clients
	// pin it only with AllowAffinity; an older server knows nothing of it).
	ServerCPU *int `json:"server_cpu,omitempty"`
}

type start struct {
	// UDPTokens echoes, by stream id, the token the server's answer to
	// each UDP stream's hello carried: proof that whoever holds the
	// control connection receives at the address the hello came from,
	// before the server sends a test's datagrams there (QUIC's address
	// validation, with the echo on the control connection).
	UDPTokens [][]byte `json:"udp_tokens,omitempty"`
}

type started struct {
	// Setups holds the server's socket setup per stream, by stream id.
	Setups []model.SocketSetup `json:"setups"`
	Addrs  []string            `json:"addrs"`
}

type stop struct {
	Reason string `json:"reason"`
}

type wireError struct {
	Code    fault.Code `json:"code"`
	Message string     `json:"message"`
	Hint    string     `json:"hint,omitempty"`
}

// writeMessage frames m as a 4-byte big-endian length and JSON.
func writeMessage(w io.Writer, m *message) error {
	buf, err := appendMessage(nil, m)
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("send %s message: %w", m.Type, err)
	}
	return nil
}

// appendMessage appends m's frame to buf.
func appendMessage(buf []byte, m *message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return buf, fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	if len(body) > maxMessage {
		return buf, fmt.Errorf("encode %s message: %d bytes over the %d limit", m.Type, len(body), maxMessage)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	return append(buf, body...), nil
}

// errProtocol marks bytes that are not a valid message.
var errProtocol = errors.New("protocol error")

// readMessage reads one framed message of at most limit bytes and rejects
// unknown types and missing bodies. Memory grows with the bytes that
// actually arrive, not with the length a peer announces, so a peer that
// announces a large message and sends it slowly costs only what it sent.
func readMessage(r *bufio.Reader, limit uint32) (*message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > limit {
		return nil, fmt.Errorf("%w: message length %d outside 1..%d", errProtocol, n, limit)
	}
	var body bytes.Buffer
	if _, err := io.CopyN(&body, r, int64(n)); err != nil {
		return nil, fmt.Errorf("%w: truncated message: %v", errProtocol, err)
	}
	return decodeMessage(body.Bytes())
}

// decodeMessage parses and checks one message body.
func decodeMessage(body []byte) (*message, error) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errProtocol, err)
	}
	var ok bool
	switch m.Type {
	case msgHello:
		ok = m.Hello != nil
	case msgWelcome:
		ok = m.Welcome != nil
	case msgError:
		ok = m.Error != nil
	case msgStarted:
		ok = m.Started != nil
	case msgInterval:
		ok = m.Interval != nil
	case msgDone:
		ok = m.Done != nil
	case msgStop:
		ok = m.Stop != nil
	case msgStart, msgBye:
		ok = true
	default:
		return nil, fmt.Errorf("%w: unknown message type %q", errProtocol, m.Type)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s message without its body", errProtocol, m.Type)
	}
	return &m, nil
}

// dataPreamble is what a client writes first on a data connection.
func dataPreamble(cookie []byte, stream int) []byte {
	b := make([]byte, 0, dataPreambleLen)
	b = append(b, dataMagic...)
	b = append(b, cookie...)
	return binary.BigEndian.AppendUint16(b, uint16(stream))
}

// parseDataPreamble reads the rest of a data preamble after its magic.
func parseDataPreamble(rest []byte) (cookie []byte, stream int, err error) {
	if len(rest) != cookieLen+2 {
		return nil, 0, fmt.Errorf("%w: data preamble of %d bytes", errProtocol, len(rest)+magicLen)
	}
	return rest[:cookieLen], int(binary.BigEndian.Uint16(rest[cookieLen:])), nil
}
