package iperf3_test

import (
	"context"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
)

// -S against a stock iperf3 server: the client's data socket carries the
// byte (read back with getsockopt), and the server is told it as
// iperf3's "TOS" parameter (its -J start echoes it).
func TestIperf3ClientTOS(t *testing.T) {
	addr, wait := iperf3Server(t)
	run, err := (&iperf3.Client{Version: "test"}).Run(context.Background(), addr,
		model.TestConfig{Duration: time.Second, TOS: 0x28})
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Streams[0].Client; s == nil || s.TOS == nil || *s.TOS != 0x28 {
		t.Fatalf("client setup %+v: want TOS 0x28 read back", s)
	}
	doc := wait()
	start, _ := doc["start"].(map[string]any)
	ts, _ := start["test_start"].(map[string]any)
	if tos, _ := ts["tos"].(float64); tos != 0x28 {
		t.Fatalf("iperf3 -s test_start.tos %v, want 40", ts["tos"])
	}
}
