package dial

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
)

// Each way connecting fails has its code, and a hint where the user can
// do something about it.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want fault.Code
	}{
		{"refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, fault.Refused},
		{"reset", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNRESET)}, fault.Refused},
		{"no such host", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, fault.Unreachable},
		{"no route", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, fault.Unreachable},
		{"timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, fault.Timeout},
		{"interrupted", context.Canceled, fault.Aborted},
		{"option refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("setsockopt", syscall.ENOENT)}, fault.Socket},
	} {
		err := Classify(c.err, "example.test:5201")
		if fault.CodeOf(err) != c.want {
			t.Errorf("%s: %v, code %q, want %q", c.name, err, fault.CodeOf(err), c.want)
		}
		if c.want != fault.Aborted && fault.HintOf(err) == "" {
			t.Errorf("%s: no hint", c.name)
		}
	}
}

// A name under .invalid fails as not found at once, without asking a
// resolver (RFC 6761), on the same path as any unresolvable name.
func TestInvalidNeverResolves(t *testing.T) {
	_, err := Dialer{}.TCP(context.Background(), "nosuch.invalid:5201", nil, "")
	if fault.CodeOf(err) != fault.Unreachable || !strings.Contains(err.Error(), "RFC 6761") {
		t.Fatalf("got %v (code %q), want unreachable without a lookup", err, fault.CodeOf(err))
	}
}

// The handshake's answers are waited for what is left of the connect
// timeout, never nothing; without one, the handshake's own bound.
func TestAnswerWait(t *testing.T) {
	if got := (Dialer{}).AnswerWait(time.Now()); got != 10*time.Second {
		t.Errorf("without a connect timeout: %v", got)
	}
	d := Dialer{ConnectTimeout: 2 * time.Second}
	if got := d.AnswerWait(time.Now().Add(-time.Second)); got <= 0 || got > time.Second {
		t.Errorf("a second into a 2 s timeout: %v", got)
	}
	if got := d.AnswerWait(time.Now().Add(-time.Minute)); got != time.Millisecond {
		t.Errorf("past the timeout: %v, want a moment", got)
	}
}
