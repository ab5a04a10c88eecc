package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/token"
)

// A server's limits file over real sockets: loopback's 127.0.0.0/8 gives
// a test clients at several addresses, each in its class.

func servePolicy(t *testing.T, src string) string {
	t.Helper()
	tb, err := limits.Parse([]byte(src), limits.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, Add(&serve.Server{Version: "test", Policy: &tb}))
}

// from is a client whose sockets leave from ip (on loopback).
func from(ip string) *Client {
	return &Client{Dialer: dial.Dialer{Bind: netip.MustParseAddr(ip)}}
}

func TestPolicyDenyClosesAtOnce(t *testing.T) {
	addr := servePolicy(t, `
[default]
action = "deny"
[[class]]
name = "ours"
networks = ["127.0.0.2"]
`)
	// A denied address's connection is closed before it may say anything.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("a denied client's connection: read %v, want it closed at once", err)
	}
	if _, err := from("127.0.0.1").Run(context.Background(), addr, quick(model.TestConfig{})); err == nil {
		t.Fatal("a denied client ran a test")
	}
	if _, err := from("127.0.0.2").Run(context.Background(), addr, quick(model.TestConfig{})); err != nil {
		t.Fatalf("the allowed class: %v", err)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func TestPolicyProtocolsAndBounds(t *testing.T) {
	addr := servePolicy(t, `
[[class]]
name = "tcp-only"
networks = ["127.0.0.2"]
protocols = ["tcp"]
max_streams = 2
max_duration = "2s"
`)
	ctx := context.Background()
	_, err := from("127.0.0.2").Run(ctx, addr, quick(model.TestConfig{Protocol: model.UDP, Bitrate: model.MbitPerSecond}))
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(fault.HintOf(err), "allows tcp from your address") {
		t.Fatalf("UDP from a TCP-only class: %v (hint %q)", err, fault.HintOf(err))
	}
	_, err = from("127.0.0.2").Run(ctx, addr, quick(model.TestConfig{Parallel: 3}))
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "limit of 2") {
		t.Fatalf("3 streams over the class's 2: %v", err)
	}
	_, err = from("127.0.0.2").Run(ctx, addr, quick(model.TestConfig{Duration: 3 * time.Second}))
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "limit of 2s") {
		t.Fatalf("3 s over the class's 2 s: %v", err)
	}
	// Another address, in the default class, has the default's bounds.
	if _, err := from("127.0.0.3").Run(ctx, addr, quick(model.TestConfig{Protocol: model.UDP, Bitrate: model.MbitPerSecond, Parallel: 3})); err != nil {
		t.Fatalf("the default class: %v", err)
	}
}

// A class's bound on its tests at once holds across its addresses, and
// leaves other classes alone.
func TestPolicyClassShare(t *testing.T) {
	addr := servePolicy(t, `
[[class]]
name = "small"
networks = ["127.0.0.0/30"]
max_tests = 1
`)
	// 127.0.0.2 holds the class's one slot with a hello, its streams
	// not yet opened (a test counts from admission).
	s := openSessionFrom(t, addr, "127.0.0.2", model.TestConfig{Duration: 5 * time.Second})
	_ = s
	_, err := from("127.0.0.1").Run(context.Background(), addr, quick(model.TestConfig{}))
	if fault.CodeOf(err) != fault.Busy || !strings.Contains(err.Error(), "for your network (1 of its tests running, limit 1)") {
		t.Fatalf("a second test in the class: %v", err)
	}
	if _, err := from("127.0.0.5").Run(context.Background(), addr, quick(model.TestConfig{})); err != nil {
		t.Fatalf("another class beside a full one: %v", err)
	}
}

// openSessionFrom is openSession from a given loopback address.
func openSessionFrom(t *testing.T, addr, ip string, cfg model.TestConfig) *session {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return helloOn(t, addr, c.(*net.TCPConn), cfg)
}

// A rate cap holds a TCP test to it, all streams together, whichever end
// sends: the server paces its sending (SO_MAX_PACING_RATE) and reads no
// faster than its share. A -b over it is refused, and the client is told
// the cap, which the diagnosis names.
func TestPolicyRateCap(t *testing.T) {
	t.Parallel() // paced by its cap, a few percent of a CPU on loopback
	const capRate = 200 * model.MbitPerSecond
	addr := servePolicy(t, `
[default]
max_rate = "200M"
max_udp_rate = "50M"
`)
	ctx := context.Background()
	c := &Client{}
	_, err := c.Run(ctx, addr, quick(model.TestConfig{Bitrate: 150 * model.MbitPerSecond, Parallel: 2}))
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(fault.HintOf(err), "{bitrate} 100 Mbit/s or less per stream with 2 streams") {
		t.Fatalf("-b 150M -P 2 under a 200M cap: %v (hint %q)", err, fault.HintOf(err))
	}
	_, err = c.Run(ctx, addr, quick(model.TestConfig{Protocol: model.UDP}))
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "-b 0") {
		t.Fatalf("UDP -b 0 under a cap: %v", err)
	}
	if _, err := c.Run(ctx, addr, quick(model.TestConfig{Protocol: model.UDP, Bitrate: 20 * model.MbitPerSecond, Parallel: 2})); err != nil {
		t.Fatalf("UDP within the cap: %v", err)
	}
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			t.Parallel() // each test has its own cap
			rateCapped(t, c, addr, reverse, capRate)
		})
	}
}

// rateCapped runs a TCP test of two streams under a server's rate cap
// and checks it holds the test to it.
func rateCapped(t *testing.T, c *Client, addr string, reverse bool, capRate model.Bitrate) {
	ctx := context.Background()
	run, err := c.Run(ctx, addr, model.TestConfig{Duration: 2 * time.Second, Interval: 500 * time.Millisecond, Parallel: 2, Reverse: reverse})
	if err != nil {
		t.Fatalf("-R %v: %v", reverse, err)
	}
	if run.ServerRateCap != capRate {
		t.Errorf("-R %v: the run says the cap is %v, want %v", reverse, run.ServerRateCap, capRate)
	}
	var got model.Bitrate
	for _, s := range run.Summary {
		got += s.Goodput.V
	}
	t.Logf("-R %v: goodput %v under a cap of %v", reverse, got, capRate)
	// Loopback carries tens of Gbit/s: only the cap holds it here.
	if got < capRate*7/10 || got > capRate*21/20 {
		t.Errorf("-R %v: goodput %v, want the cap of %v (70%% to 105%%)", reverse, got, capRate)
	}
}

// In lame-duck mode a server admits no new test, lets the running ones
// finish with their results, and says when none is left.
func TestLameDuck(t *testing.T) {
	t.Parallel() // its running test is paced; the other is refused
	srv := Add(&serve.Server{Version: "test"})
	addr := serveWith(t, srv)
	first := make(chan error, 1)
	go func() {
		_, err := (&Client{}).Run(context.Background(), addr, paced(model.TestConfig{Duration: 1500 * time.Millisecond}))
		first <- err
	}()
	awaitRunning(t, srv, 1)
	idle := srv.LameDuck()
	if st := srv.Status(); !st.Draining || st.Running != 1 {
		t.Fatalf("status %+v, want draining with one test running", st)
	}
	_, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{}))
	if fault.CodeOf(err) != fault.Shutdown || !strings.Contains(err.Error(), "lame duck") {
		t.Fatalf("a new test in lame-duck mode: %v", err)
	}
	select {
	case <-idle:
		t.Fatal("idle before the running test ended")
	default:
	}
	if err := <-first; err != nil {
		t.Fatalf("the running test: %v", err)
	}
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		t.Fatal("not idle 5 s after the last test ended")
	}
}

// A server that requires access tokens admits a native test only with a
// token it verifies, and logs who it named.
func TestRequireToken(t *testing.T) {
	key, err := token.NewHMAC("k1", []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	records := make(chan gate.Record, 1)
	srv := Add(&serve.Server{Version: "test", Tokens: &token.Verifier{Keys: []*token.Key{key}, Audience: "ts1"}})
	srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
	addr := serveWith(t, srv)
	issue := func(aud string, exp time.Duration) string {
		tok, err := token.Issue(key, token.Claims{Subject: "alice", Audience: []string{aud}, Expiry: time.Now().Add(exp)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, tok, want string }{
		{"none", "", "access token missing"},
		{"expired", issue("ts1", -time.Minute), "access token expired"},
		{"another server's", issue("ts2", time.Minute), "not for this server"},
		{"garbage", "a.b.c", "malformed"},
	} {
		_, err := (&Client{Token: tc.tok}).Run(ctx, addr, quick(model.TestConfig{}))
		if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), tc.want) || fault.HintOf(err) == "" {
			t.Errorf("%s: %v (code %q, hint %q), want denied with %q", tc.name, err, fault.CodeOf(err), fault.HintOf(err), tc.want)
		}
	}
	if _, err := (&Client{Token: issue("ts1", time.Minute)}).Run(ctx, addr, quick(model.TestConfig{})); err != nil {
		t.Fatalf("a good token: %v", err)
	}
	if r := <-records; r.TokenSubject != "alice" {
		t.Errorf("record's token subject %q, want alice", r.TokenSubject)
	}
}
