// Package health is a test server's health endpoint over HTTP, for load
// balancers, monitoring and operators:
//
//	GET  /healthz   200 "serving" or 503 "draining", with the running
//	                tests and streams as JSON
//	POST /lameduck  stop admitting tests (from loopback only), then 202
//
// It knows the server only through two functions, so that it serves any
// server that can say how it is and be told to drain.
package health

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Status is what the endpoint reports.
type Status struct {
	Draining bool `json:"-"`
	Running  int  `json:"running_tests"`
	Streams  int  `json:"running_streams"`
}

// Handler serves the endpoint: status says how the server is, lameDuck
// tells it to drain.
func Handler(status func() Status, lameDuck func()) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", healthz(status))
	mux.HandleFunc("POST /lameduck", func(w http.ResponseWriter, r *http.Request) {
		// Anyone who reaches the health port may read it; only the host
		// itself may take the server out of service.
		if !fromLoopback(r) {
			http.Error(w, "lame duck only from the server's own host", http.StatusForbidden)
			return
		}
		lameDuck()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("draining\n"))
	})
	return mux
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Public serves GET /healthz alone, the part of the endpoint anyone may
// reach: on a server's public port, where lame duck must not be (a page
// in a browser on the server's host could post to it).
func Public(status func() Status) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", healthz(status))
	return mux
}

// healthz reports the server's status.
func healthz(status func() Status) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := status()
		doc := struct {
			State string `json:"status"`
			Status
		}{"serving", st}
		code := http.StatusOK
		if st.Draining {
			// A load balancer takes a draining server out of its pool.
			doc.State, code = "draining", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// Endpoint is the health endpoint serving on its own listener.
type Endpoint struct {
	srv *http.Server
}

// Start listens on addr and serves the endpoint until Close. Listening
// fails here, at once, so that a server with a wrong --health address
// does not start.
func Start(ctx context.Context, addr string, status func() Status, lameDuck func()) (*Endpoint, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	e := &Endpoint{srv: &http.Server{Handler: Handler(status, lameDuck), ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// Close stops the endpoint gracefully, within 2 s: the POST /lameduck
// that ended an idle server still gets its answer (closing at once cut
// it off, an EOF under the race detector's timing).
func (e *Endpoint) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
}
