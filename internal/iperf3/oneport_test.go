package iperf3_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/frontdoor"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// One server port serves, at once, a plain HTTP request, an HTTPS one
// (HTTP/2), a native test over TLS and a stock iperf3 client; each
// protocol's connections are counted apart, and an HTTP handler reads
// the kernel's view of the socket beneath TLS and HTTP.
func TestOnePortServesEveryProtocol(t *testing.T) {
	requireIperf3(t)
	cert, leaf := perftest.SelfSigned(t)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	mux := http.NewServeMux()
	mux.HandleFunc("/tcpinfo", func(w http.ResponseWriter, r *http.Request) {
		c, ok := frontdoor.ConnFrom(r.Context())
		if !ok {
			http.Error(w, "no connection", http.StatusInternalServerError)
			return
		}
		s, err := tcpinfo.Read(c.TCP)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %v %v", r.Proto, r.TLS != nil, s.State)
	})
	srv := perf.Add(&serve.Server{Version: "test", HTTP: mux,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}})
	srv.Handle(&iperf3.Handler{})
	// The gate's events, by protocol: each test's intervals as its
	// server end samples them, and its end.
	var evMu sync.Mutex
	events := map[string]map[gate.Kind]int{}
	srv.Subscribe(func(e gate.Event) {
		evMu.Lock()
		defer evMu.Unlock()
		if events[e.Test.Protocol] == nil {
			events[e.Test.Protocol] = map[gate.Kind]int{}
		}
		events[e.Test.Protocol][e.Kind]++
	})
	addr := perftest.Serve(t, srv)
	_, port, _ := net.SplitHostPort(addr)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		// A stock iperf3 client: two streams, a second (-t takes whole
		// seconds).
		out, err := exec.Command(iperf3Bin(), "-c", "127.0.0.1", "-p", port, "-t", "1", "-P", "2", "-J").Output()
		if err != nil {
			errs <- fmt.Errorf("iperf3 -c: %v\n%s", err, out)
			return
		}
		var doc struct {
			End struct {
				SumReceived struct{ Bytes float64 } `json:"sum_received"`
			} `json:"end"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || doc.End.SumReceived.Bytes <= 0 {
			errs <- fmt.Errorf("iperf3 -c -J: %v, %v bytes received", err, doc.End.SumReceived.Bytes)
		}
	})
	wg.Go(func() {
		// A native test whose control connection is in TLS (ALPN).
		conf, err := perf.RootsTLS(nil)
		if err != nil {
			errs <- err
			return
		}
		conf.RootCAs = roots
		run, err := (&perf.Client{Version: "test", TLS: conf}).Run(context.Background(), addr,
			model.TestConfig{Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond, Parallel: 2})
		if err != nil {
			errs <- fmt.Errorf("native over TLS: %w", err)
			return
		}
		if b := run.Summary[0].ReceiverBytes; !b.OK || b.V <= 0 {
			errs <- fmt.Errorf("native over TLS received %v", b)
		}
	})
	for _, tc := range []struct{ scheme, want string }{{"http", "HTTP/1.1 false"}, {"https", "HTTP/2.0 true"}} {
		wg.Go(func() {
			var p http.Protocols
			p.SetHTTP1(tc.scheme == "http")
			p.SetHTTP2(tc.scheme == "https")
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: &p, TLSClientConfig: &tls.Config{RootCAs: roots}}}
			defer c.CloseIdleConnections()
			resp, err := c.Get(tc.scheme + "://" + addr + "/tcpinfo")
			if err != nil {
				errs <- fmt.Errorf("%s: %w", tc.scheme, err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if want := tc.want + " " + fmt.Sprint(model.TCPEstablished); string(b) != want {
				errs <- fmt.Errorf("%s: %s %q, want %q", tc.scheme, resp.Status, b, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A test's end is published once its server side is done, which
	// may be after its client has its results.
	ended := func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		return events["iperf3"][gate.Ended] == 1 && events["tcpscope"][gate.Ended] == 1
	}
	for deadline := time.Now().Add(10 * time.Second); !ended() && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	evMu.Lock()
	for _, proto := range []string{"iperf3", "tcpscope"} {
		if ev := events[proto]; ev[gate.Admitted] != 1 || ev[gate.Interval] < 1 || ev[gate.Ended] != 1 {
			t.Errorf("%s: events %v, want one admission, intervals, one end", proto, ev)
		}
	}
	evMu.Unlock()
	served := srv.Served()
	t.Logf("served %v", served)
	// iperf3: a control connection and two streams; native: a control
	// connection and two streams; one connection per HTTP client.
	for proto, want := range map[string]uint64{"iperf3": 3, "tcpscope": 3, frontdoor.RouteHTTP: 2} {
		if served[proto] != want {
			t.Errorf("%s: %d connections served, want %d", proto, served[proto], want)
		}
	}
}
