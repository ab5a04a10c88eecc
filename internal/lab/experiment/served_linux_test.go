package experiment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// serveIperf3 runs a tcpscope server on loopback and a stock iperf3
// client against it with args, and returns the server's record of the
// test: what `tcpscope server` diagnoses and archives.
func serveIperf3(t *testing.T, args ...string) gate.Record {
	t.Helper()
	bin := "iperf3"
	if b := os.Getenv("TCPSCOPE_IPERF3"); b != "" {
		bin = b
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s is not installed (make setup installs iperf3)", bin)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	records := make(chan gate.Record, 1)
	srv := perf.Add(&serve.Server{Version: "test"})
	srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
	srv.Handle(&iperf3.Handler{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
			t.Errorf("server: %v", err)
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := exec.Command(bin, append([]string{"-c", "127.0.0.1", "-p", fmt.Sprint(port)}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iperf3 %v: %v\n%s", args, err, out)
	}
	select {
	case r := <-records:
		if r.Err != nil {
			t.Fatalf("server: %v", r.Err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the server recorded no test")
	}
	return gate.Record{}
}

// TestServedIperf3 diagnoses tests a tcpscope server served to stock
// iperf3 clients, from the server's end alone, as `tcpscope server` logs
// them. The server received: the sender's kernel is the client's and was
// not read, so no rule may read its absent windows as zeros (a
// slow-reader "window near 0 B although its buffer allowed 0 B"), nor
// claim the hosts did not hold the sender back; a -b client is limited
// by its own rate, never by a "bottleneck".
func TestServedIperf3(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		args       []string
		want       []string // acceptable primary findings
	}{
		{"full speed", "sender-unknown.served-iperf3", []string{"-t", "3"}, []string{"sender-unknown", "slow-reader"}},
		{"rate limited", "sender-app-limited.served-iperf3-b", []string{"-t", "3", "-b", "200M"}, []string{"sender-app-limited"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			// The two at once: the verdicts read what each end's kernel
			// saw, not a rate, and the -b client leaves the CPU to the other.
			t.Parallel()
			rec := serveIperf3(t, tc.args...)
			run := diagnose.ServedRun(rec.Config, rec.Report, rec.Client, rec.Server)
			if *record {
				b, err := json.MarshalIndent(run, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(recordingsDir, tc.file+".json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fs := diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server)
			if len(fs) == 0 {
				t.Fatal("no findings")
			}
			for _, f := range fs {
				t.Logf("%s [%s]: %s", f.ID, f.Severity, f.Summary)
			}
			if !contains(tc.want, fs[0].ID) {
				t.Errorf("primary %s, want one of %v", fs[0].ID, tc.want)
			}
			checkNoAbsentZeros(t, fs)
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// checkNoAbsentZeros fails on the marks of an unread kernel read as
// zeros: a window of 0 B, a rate of "-" (a division by an absent RTT),
// and findings that need the unread end (SACK and timestamps are on at
// both ends of this host).
func checkNoAbsentZeros(t *testing.T, fs []model.Finding) {
	t.Helper()
	for _, f := range fs {
		text := f.Summary + " " + f.Effect
		for _, e := range f.Evidence {
			text += " " + e.Value
		}
		if strings.Contains(text, "near 0 B") || strings.Contains(text, "allowed 0 B") || strings.Contains(text, "carries - ") || strings.Contains(text, " 0 bit/s") {
			t.Errorf("%s cites a number nobody measured: %s", f.ID, text)
		}
		if f.ID == "bottleneck" || f.ID == "sack-off" || f.ID == "timestamps-off" {
			t.Errorf("%s from an end whose kernel was not read: %s", f.ID, f.Summary)
		}
	}
}
