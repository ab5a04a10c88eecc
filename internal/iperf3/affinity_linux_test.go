package iperf3_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

// -A n,m against a stock iperf3 server: the client sends iperf3's
// server_affinity, and the iperf3 process is pinned to m while the test
// runs (read from its /proc status).
func TestIperf3ServerAffinity(t *testing.T) {
	requireIperf3(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || !set.IsSet(1) || set.Count() < 2 {
		t.Skip("needs CPUs 0 and 1")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(iperf3Bin(), "-s", "-1", "-B", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	perftest.WaitListening(t, port)
	cpus := func() string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	before := cpus()
	cpu := 1
	done := make(chan error, 1)
	go func() {
		_, err := (&iperf3.Client{Native: &perf.Client{Version: "test"}}).Run(context.Background(), fmt.Sprintf("127.0.0.1:%d", port),
			model.TestConfig{Duration: 2 * time.Second, ServerCPU: &cpu})
		done <- err
	}()
	for seen := before; ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the test ended (%v) with the server's CPUs %q, never 1 (before: %q)", err, seen, before)
		default:
		}
		if seen = cpus(); seen == "1" {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
