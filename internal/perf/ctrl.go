package perf

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
)

// Timeouts of the control protocol.
const (
	handshakeTimeout = engine.HandshakeTimeout
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

func fmtStreams(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}
