package iperf3

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

var recordStock = flag.Bool("record", false, "record stock iperf3 -J documents into testdata/stock")

// stockModes are the stock iperf3 -J documents kept in testdata/stock,
// each a 2 s loopback test between stock iperf3 3.12 client and server.
// The server-* ones are iperf3 -s -J's document of the test instead;
// interrupted is a 5 s test's client stopped by SIGINT after 1.5 s.
var stockModes = []struct {
	name      string
	args      []string
	server    bool
	interrupt bool
}{
	{"tcp", nil, false, false},
	{"tcp-paced", []string{"-b", "100M"}, false, false},
	{"reverse", []string{"-R"}, false, false},
	{"udp", []string{"-u", "-b", "10M"}, false, false},
	{"bidir", []string{"--bidir"}, false, false},
	{"server-tcp", nil, true, false},
	{"server-reverse", []string{"-R"}, true, false},
	{"interrupted", []string{"-t", "5"}, false, true},
}

// TestRecordStockJSON re-records testdata/stock with the iperf3 on PATH
// (or $TCPSCOPE_IPERF3): go test ./internal/iperf3 -run TestRecordStockJSON
// -args -record, then -update to rewrite the goldens read from them.
func TestRecordStockJSON(t *testing.T) {
	if !*recordStock {
		t.Skip("records only with -args -record")
	}
	bin := os.Getenv("TCPSCOPE_IPERF3")
	if bin == "" {
		bin = "iperf3"
	}
	for _, m := range stockModes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		srv := exec.Command(bin, "-s", "-1", "-J", "-B", "127.0.0.1", "-p", fmt.Sprint(port))
		var srvOut bytes.Buffer
		srv.Stdout = &srvOut
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		perftest.WaitListening(t, port)
		cl := exec.Command(bin, append([]string{"-c", "127.0.0.1", "-p", fmt.Sprint(port), "-J", "-t", "2"}, m.args...)...)
		if m.interrupt {
			// Recording, not testing: a Ctrl-C mid-test is what is
			// recorded, and any moment after the first interval does.
			t := time.AfterFunc(1500*time.Millisecond, func() { cl.Process.Signal(os.Interrupt) })
			defer t.Stop()
		}
		out, err := cl.Output()
		if m.interrupt && bytes.Contains(out, []byte(`"interrupt - the client has terminated"`)) {
			err = nil
		}
		done := make(chan error, 1)
		go func() { done <- srv.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-done
			t.Fatalf("%s: iperf3 -s -1 did not exit", m.name)
		}
		if err != nil || !json.Valid(out) || !m.interrupt && bytes.Contains(out, []byte(`"error"`)) {
			t.Fatalf("%s: iperf3 -c: %v: %.300s", m.name, err, out)
		}
		if m.server {
			out = srvOut.Bytes()
		}
		if !json.Valid(out) {
			t.Fatalf("%s: not JSON: %.300s", m.name, out)
		}
		if err := os.WriteFile(filepath.Join("testdata", "stock", m.name+".json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
