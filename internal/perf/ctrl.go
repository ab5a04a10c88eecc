package perf

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// Timeouts of the control protocol.
const (
	handshakeTimeout = 10 * time.Second
	writeTimeout     = 10 * time.Second
	// batchEvery is the most often a server sends interval messages.
	batchEvery = 100 * time.Millisecond
)

// ctrl is a control connection shared by several goroutines: writes are
// serialised and bounded in time, so a peer that stops reading cannot
// wedge the sender of intervals.
type ctrl struct {
	conn  net.Conn
	r     *bufio.Reader
	limit uint32 // largest message accepted from the peer
	mu    sync.Mutex
}

func newCtrl(c net.Conn, limit uint32) *ctrl {
	return &ctrl{conn: c, r: bufio.NewReader(c), limit: limit}
}

// send writes messages with one system call.
func (c *ctrl) send(ms ...*message) error {
	var buf []byte
	for _, m := range ms {
		var err error
		if buf, err = appendMessage(buf, m); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.conn.Write(buf); err != nil {
		return fmt.Errorf("send %s message: %w", ms[0].Type, err)
	}
	return nil
}

// recv reads one message, waiting at most d (0: no limit).
func (c *ctrl) recv(d time.Duration) (*message, error) {
	if d > 0 {
		_ = c.conn.SetReadDeadline(time.Now().Add(d))
	} else {
		_ = c.conn.SetReadDeadline(time.Time{})
	}
	return readMessage(c.r, c.limit)
}

func (c *ctrl) sendError(code fault.Code, msg, hint string) {
	_ = c.send(&message{Type: msgError, Error: &wireError{Code: code, Message: msg, Hint: hint}})
}

// newKeys makes n stream keys, each as random as a cookie.
func newKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = newCookie()
	}
	return keys
}

func newCookie() []byte {
	b := make([]byte, cookieLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// socketOptions are the options one end applies to a stream's socket.
func socketOptions(cfg *model.TestConfig, role model.Role) tcpinfo.SocketOptions {
	if cfg.IsUDP() {
		o := tcpinfo.SocketOptions{SndBuf: cfg.Window, RcvBuf: cfg.Window, TOS: cfg.TOS}
		if role == model.Sender {
			o.MaxPacingRate = cfg.FQRate
		}
		if role == model.Receiver && cfg.Window == 0 {
			o.RcvBuf = udpReceiveBuffer
		}
		return o
	}
	o := tcpinfo.SocketOptions{SndBuf: cfg.Window, RcvBuf: cfg.Window, Congestion: cfg.Congestion, MSS: cfg.MSS, TOS: cfg.TOS}
	if role == model.Sender {
		o.MaxPacingRate = cfg.FQRate
	}
	return o
}

// setupOf reads back what the kernel granted a stream's socket; the
// type-of-service byte too when the test set one (tos).
func setupOf(st *Stream, tos bool) (model.SocketSetup, error) {
	var s model.SocketSetup
	var err error
	if tos {
		var c syscall.Conn
		if st.udp != nil {
			c = st.udp.conn
		} else {
			c = st.conn
		}
		v, err := tcpinfo.TOS(c)
		if err != nil {
			return s, err
		}
		s.TOS = &v
	}
	if st.udp != nil {
		s.SndBuf, s.RcvBuf, err = tcpinfo.Buffers(st.udp.conn)
		return s, err
	}
	c := st.conn
	if s.SndBuf, s.RcvBuf, err = tcpinfo.Buffers(c); err != nil {
		return s, err
	}
	if s.Congestion, err = tcpinfo.Congestion(c); err != nil {
		return s, err
	}
	if s.MSS, err = tcpinfo.MSS(c); err != nil {
		return s, err
	}
	return s, nil
}

func wrapSocket(err error, what string) error {
	if err == nil {
		return nil
	}
	return &fault.Error{Code: fault.Socket, Msg: what, Err: err}
}

func fmtStreams(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}
