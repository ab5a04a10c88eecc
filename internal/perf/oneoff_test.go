package perf

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// serveUntilDone runs srv on a fresh loopback port and returns the
// address and Serve's result, for a server that is to stop by itself
// (OneTest, IdleTimeout); the test's end stops it otherwise.
func serveUntilDone(t *testing.T, srv *serve.Server) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return ln.Addr().String(), done
}

func awaitServe(t *testing.T, done <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("Serve still running after %v", within)
		return nil
	}
}

// A OneTest server (iperf3 -s -1) runs the first test it admits and no
// other: a connection refused before admission (here one that says
// nothing, then a client of another protocol version) does not use the
// test up, a client asking during the test hears "busy", and Serve
// returns once the test has ended.
func TestOneTest(t *testing.T) {
	srv := Add(&serve.Server{Version: "test", OneTest: true})
	addr, done := serveUntilDone(t, srv)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if m := rawHello(t, addr, hello{Protocol: 99}); m.Type != msgError || m.Error.Code != fault.Version {
		t.Fatalf("a client of another version: %+v, want a version error", m)
	}
	if m := rawHello(t, addr, hello{Protocol: ProtocolVersion, Config: model.TestConfig{Parallel: 1000}}); m.Type != msgError {
		t.Fatalf("a test over the limits: %+v, want an error", m)
	}

	first := make(chan error, 1)
	go func() {
		_, err := (&Client{Version: "test"}).Run(context.Background(), addr, model.TestConfig{Duration: 2 * time.Second, Bitrate: 10 * model.MbitPerSecond})
		first <- err
	}()
	awaitRunning(t, srv, 1)
	_, err = (&Client{Version: "test"}).Run(context.Background(), addr, model.TestConfig{Duration: time.Second})
	if fault.CodeOf(err) != fault.Busy {
		t.Errorf("a second client during the one test: %v, want busy", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the one test: %v", err)
	}
	if err := awaitServe(t, done, 10*time.Second); err != nil {
		t.Errorf("Serve after its one test: %v", err)
	}
}

// IdleTimeout ends Serve with serve.ErrIdle when no test comes, and counts from
// the end of the last test, not from the start.
func TestIdleTimeout(t *testing.T) {
	idle := 500 * time.Millisecond
	srv := Add(&serve.Server{Version: "test", IdleTimeout: idle})
	addr, done := serveUntilDone(t, srv)
	start := time.Now()
	if _, err := (&Client{Version: "test"}).Run(context.Background(), addr, model.TestConfig{Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	err := awaitServe(t, done, 10*time.Second)
	if !errors.Is(err, serve.ErrIdle) {
		t.Fatalf("Serve: %v, want serve.ErrIdle", err)
	}
	if since := time.Since(ended); since < idle {
		t.Errorf("Serve ended %v after the test, before the idle timeout of %v (test took %v)", since, idle, ended.Sub(start))
	}
}
