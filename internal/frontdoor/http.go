package frontdoor

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// webServer is net/http serving the connections the door routes to
// HTTP: they arrive through a listener of its own (connQueue).
type webServer struct {
	door  *Door
	srv   *http.Server
	queue *connQueue
	done  chan struct{}
}

type connKey struct{}

// ConnFrom is the door's connection behind an HTTP request's context
// (http.Request.Context), for the socket beneath TLS and HTTP (Conn.TCP).
func ConnFrom(ctx context.Context) (*Conn, bool) {
	c, ok := ctx.Value(connKey{}).(*Conn)
	return c, ok
}

// startHTTP starts net/http on the door's HTTP connections: HTTP/1.1,
// HTTP/2 inside TLS (ALPN h2) and by prior knowledge on plain ones.
func (d *Door) startHTTP(addr net.Addr) *webServer {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	w := &webServer{door: d, queue: newConnQueue(addr), done: make(chan struct{})}
	w.srv = &http.Server{
		Handler:           withTLSState(d.HTTP),
		Protocols:         &protos,
		ReadHeaderTimeout: d.HeadTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(d.Logger.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if fc, ok := d.byConn.Load(c); ok {
				return context.WithValue(ctx, connKey{}, fc)
			}
			return ctx
		},
		// A connection stays pending (Door.Enter) while HTTP holds it:
		// idle keep-alive connections count against the address's
		// bound as any other connection doing nothing. One taken over
		// by a handler (a WebSocket) is the handler's to bound.
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				if fc, ok := d.byConn.LoadAndDelete(c); ok {
					fc.(*Conn).leave()
				}
			}
		},
	}
	go func() {
		defer close(w.done)
		_ = w.srv.Serve(w.queue)
	}()
	return w
}

// withTLSState gives requests on a TLS connection the door read from
// (a client that offered no ALPN, sniffed inside) their TLS state, which
// net/http sets only on a *tls.Conn it was handed as is.
func withTLSState(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if fc, ok := ConnFrom(r.Context()); ok && fc.TLS != nil {
				r.TLS = fc.TLS
			}
		}
		h.ServeHTTP(w, r)
	})
}

// serve hands net/http the connection c as conn: c itself, or c with its
// first bytes to read again.
func (w *webServer) serve(c *Conn, conn net.Conn) {
	// net/http sets its own deadlines from here.
	_ = c.TCP.SetReadDeadline(time.Time{})
	w.door.byConn.Store(conn, c)
	if !w.queue.push(conn) {
		w.door.byConn.Delete(conn)
		c.leave()
		conn.Close()
	}
}

// shutdown stops net/http: it closes idle connections and waits for
// requests in flight, at most grace, then closes the rest.
func (w *webServer) shutdown(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		_ = w.srv.Close()
	}
	<-w.done
}

// connQueue is a net.Listener whose connections are pushed to it.
type connQueue struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// push hands c to Accept; false once the queue is closed.
func (q *connQueue) push(c net.Conn) bool {
	select {
	case q.conns <- c:
		return true
	case <-q.closed:
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
