package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// iperf3Bin is the stock iperf3 the tests run: $TCPSCOPE_IPERF3 when set,
// else the one on the PATH.
func iperf3Bin(t *testing.T) string {
	t.Helper()
	b := os.Getenv("TCPSCOPE_IPERF3")
	if b == "" {
		b = "iperf3"
	}
	if _, err := exec.LookPath(b); err != nil {
		t.Skipf("%s is not installed (make setup installs iperf3)", b)
	}
	return b
}

// iperf3Once starts `iperf3 -s -1 -J` on a free loopback port; wait
// returns its own -J document of the one test it serves.
func iperf3Once(t *testing.T) (addr string, wait func() map[string]any) {
	t.Helper()
	bin := iperf3Bin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "-s", "-1", "-J", "-B", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	perftest.WaitListening(t, port)
	return fmt.Sprintf("127.0.0.1:%d", port), func() map[string]any {
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("iperf3 server did not finish")
		}
		var doc map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("iperf3 -s -J output: %v\n%s", err, out.String())
		}
		return doc
	}
}

// paths lists a document's key paths, array indexes as [] (jq's
// paths|join(".") with the indexes folded).
func paths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			paths(c, p, out)
		}
	case []any:
		for _, c := range x {
			paths(c, prefix+".[]", out)
		}
	}
}

func keySet(doc map[string]any) map[string]bool {
	out := map[string]bool{}
	paths(doc, "", out)
	return out
}

func num(doc any, path ...string) (float64, bool) {
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return 0, false
		}
		doc = m[k]
	}
	f, ok := doc.(float64)
	return f, ok
}

// -f iperf3-json against a stock iperf3 server has every key a stock
// iperf3 client's -J document has, in each mode, the figures nobody
// measured as stock writes them, 0, and listed as such (docs/JSON.md);
// and its values mean what
// iperf3's do: the server's own account of bytes, CPU and congestion
// control is what its -J document says.
func TestIperf3JSONKeysMatchStock(t *testing.T) {
	bin := iperf3Bin(t)
	// Keys iperf3 writes as 0 where the far end's kernel was not read.
	remoteSender := []string{"end.streams.[].sender.max_snd_cwnd", "end.streams.[].sender.max_snd_wnd",
		"end.streams.[].sender.max_rtt", "end.streams.[].sender.min_rtt", "end.streams.[].sender.mean_rtt"}
	for _, c := range []struct {
		name    string
		args    []string
		unknown []string
	}{
		{"tcp", []string{"-t", "1"}, nil},
		{"udp", []string{"-u", "-b", "20M", "-t", "1"}, []string{"end.streams.[].udp.out_of_order"}},
		{"reverse", []string{"-R", "-t", "1"}, remoteSender},
		{"bidir", []string{"--bidir", "-t", "1"}, nil},
		{"parallel", []string{"-P", "2", "-t", "1"}, nil},
		{"udp-reverse", []string{"-u", "-b", "20M", "-R", "-t", "1"}, nil},
		// -M: stock writes tcp_mss (the MSS asked for) in place of
		// tcp_mss_default; tcpscope's document once had neither.
		{"mss", []string{"-M", "1200", "-t", "1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// -short runs modes that take both directions, several
			// streams and UDP; the full tier runs them all.
			if testing.Short() && !map[string]bool{"reverse": true, "parallel": true, "udp": true}[c.name] {
				t.Skip("-short runs a few of this table's modes; the full tier runs them all")
			}
			// The stock client's document and ours, each against a
			// stock server of its own, at once: what is compared is
			// keys and each server's own counts, not rates.
			stockAddr, stockWait := iperf3Once(t)
			stockDone := make(chan error, 1)
			var out []byte
			go func() {
				host, port, _ := net.SplitHostPort(stockAddr)
				var err error
				out, err = exec.Command(bin, append([]string{"-c", host, "-p", port, "-J"}, c.args...)...).Output()
				stockDone <- err
			}()
			addr, wait := iperf3Once(t)
			code, stdout, stderr := run(append([]string{"test", "--iperf3", "-f", "iperf3-json", "--no-diagnose", addr}, c.args...)...)
			if err := <-stockDone; err != nil {
				t.Fatalf("stock client: %v", err)
			}
			stockWait()
			var stock map[string]any
			if err := json.Unmarshal(out, &stock); err != nil {
				t.Fatal(err)
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			server := wait()
			var ours map[string]any
			if err := json.Unmarshal([]byte(stdout), &ours); err != nil {
				t.Fatalf("not one JSON document: %v\n%s", err, stdout)
			}
			have := keySet(ours)
			for k := range keySet(stock) {
				if !have[k] {
					t.Errorf("stock iperf3 -J has %s, ours has not", k)
				}
			}
			// What nobody measured is there as iperf3 writes it, 0, and
			// named in its object's tcpscope_unmeasured.
			for _, k := range c.unknown {
				if !have[k] || !unmeasuredIn(ours, k) {
					t.Errorf("%s: absent, or not 0 and listed in tcpscope_unmeasured (stock writes 0, nobody measured it)", k)
				}
			}

			// The server's CPU use is what it measured itself.
			theirs, _ := num(server, "end", "cpu_utilization_percent", "host_total")
			if got, ok := num(ours, "end", "cpu_utilization_percent", "remote_total"); !ok || got != theirs || got <= 0 {
				t.Errorf("remote_total %v, the server says host_total %v", got, theirs)
			}
			if got, ok := num(ours, "end", "cpu_utilization_percent", "host_total"); !ok || got <= 0 {
				t.Errorf("host_total %v", got)
			}
			// Bytes: what the server received (forward) or sent (-R) is
			// its own count.
			key := "sum_received"
			if slices.Contains(c.args, "-R") {
				key = "sum_sent"
			}
			if got, want := mustNum(t, ours, "end", key, "bytes"), mustNum(t, server, "end", key, "bytes"); got != want {
				t.Errorf("%s: %v bytes, the server says %v", key, got, want)
			}
			if slices.Contains(c.args, "-u") {
				return
			}
			// Congestion control: the server's own, under the name iperf3 -c gives it.
			own, _ := ours["end"].(map[string]any)
			srv, _ := server["end"].(map[string]any)
			mineKey, theirsKey := "receiver_tcp_congestion", "receiver_tcp_congestion"
			if slices.Contains(c.args, "-R") || slices.Contains(c.args, "--bidir") {
				mineKey, theirsKey = "sender_tcp_congestion", "sender_tcp_congestion"
			}
			if own[mineKey] == nil || own[mineKey] != srv[theirsKey] {
				t.Errorf("%s %v, the server's -J says %v", mineKey, own[mineKey], srv[theirsKey])
			}
		})
	}
}

func mustNum(t *testing.T, doc any, path ...string) float64 {
	t.Helper()
	v, ok := num(doc, path...)
	if !ok {
		t.Fatalf("no number at %v", path)
	}
	return v
}

// fakeIperf3 answers like an iperf3 server up to TEST_RUNNING for a
// one-stream TCP test, then calls then with the control and data
// connections.
func fakeIperf3(t *testing.T, then func(ctl, data net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		ctl, err := ln.Accept()
		if err != nil {
			return
		}
		defer ctl.Close()
		cookie := make([]byte, 37)
		if _, err := io.ReadFull(ctl, cookie); err != nil {
			return
		}
		ctl.Write([]byte{9}) // PARAM_EXCHANGE
		var n [4]byte
		if _, err := io.ReadFull(ctl, n[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, ctl, int64(binary.BigEndian.Uint32(n[:]))); err != nil {
			return
		}
		ctl.Write([]byte{10}) // CREATE_STREAMS
		data, err := ln.Accept()
		if err != nil {
			return
		}
		defer data.Close()
		if _, err := io.ReadFull(data, cookie); err != nil {
			return
		}
		ctl.Write([]byte{1, 2}) // TEST_START, TEST_RUNNING
		then(ctl, data)
	}()
	return ln.Addr().String()
}

// Every way a -f iperf3-json test fails prints iperf3's document with
// "error" on stdout (scripts run `jq .error`), and exits as before.
func TestIperf3JSONErrors(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	busy := serveNative(t, serve.Limits{MaxDuration: time.Second})
	vanishing := fakeIperf3(t, func(ctl, data net.Conn) {
		// The server dies mid-test: a first interval, then nothing.
		io.CopyN(io.Discard, data, 1<<20)
	})
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"refused", []string{"test", "-f", "iperf3-json", closed}, ExitRefused, "refused"},
		{"iperf3 refused", []string{"test", "--iperf3", "-f", "iperf3-json", closed}, ExitRefused, "refused"},
		{"busy", []string{"test", "-f", "iperf3-json", "-t", "3", busy}, ExitBusy, "limit"},
		{"bad parallel", []string{"test", "-f", "iperf3-json", "-P", "500", closed}, ExitUsage, "parallel"},
		{"bad flag value", []string{"test", "-w", "lots", "-f", "iperf3-json", closed}, ExitUsage, "size"},
		{"combined flags", []string{"test", "-Vfiperf3-json", "--nope", closed}, ExitUsage, "unknown flag"},
		{"no host", []string{"test", "--format=iperf3-json"}, ExitUsage, "exactly one server address"},
		{"broke off", []string{"test", "--iperf3", "-f", "iperf3-json", "-t", "2", vanishing}, ExitAborted, "broke off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "broke off" {
				// It waits out the client's 5 s for the dead server's
				// next word, on the clock, not the CPU.
				t.Parallel()
			}
			code, stdout, stderr := run(c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%q", err, stdout)
			}
			msg, _ := doc["error"].(string)
			if !strings.Contains(msg, c.msg) || !strings.Contains(stderr, msg) {
				t.Errorf("error %q, want %q, as stderr says: %q", msg, c.msg, stderr)
			}
			if _, ok := doc["start"].(map[string]any)["version"]; !ok {
				t.Errorf("start lacks version: %s", stdout)
			}
			if c.name == "broke off" {
				// What was measured before it broke off is there.
				if iv, _ := doc["intervals"].([]any); len(iv) == 0 {
					t.Errorf("no intervals: %s", stdout)
				}
			}
		})
	}
}

// Interrupted mid-test, -f iperf3-json prints the results so far with an
// error, as iperf3 -J does, and exits 130.
func TestIperf3JSONInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := fakeIperf3(t, func(ctl, data net.Conn) {
		// Interrupt once data flows, then end the test as iperf3 does:
		// TEST_END from the client, results both ways.
		io.CopyN(io.Discard, data, 1<<20)
		cancel()
		var b [1]byte
		if _, err := io.ReadFull(ctl, b[:]); err != nil || b[0] != 4 {
			return
		}
		data.Close()
		ctl.Write([]byte{13}) // EXCHANGE_RESULTS
		var n [4]byte
		if _, err := io.ReadFull(ctl, n[:]); err != nil {
			return
		}
		io.CopyN(io.Discard, ctl, int64(binary.BigEndian.Uint32(n[:])))
		res := []byte(`{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1048576,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.5}]}`)
		ctl.Write(binary.BigEndian.AppendUint32(nil, uint32(len(res))))
		ctl.Write(res)
		ctl.Write([]byte{14}) // DISPLAY_RESULTS
		io.ReadFull(ctl, b[:])
	})
	var out, errb bytes.Buffer
	code := Main(ctx, []string{"test", "--iperf3", "-f", "iperf3-json", "-t", "10", "--no-diagnose", addr}, &out, &errb)
	if code != ExitInterrupted {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%q", err, out.String())
	}
	if msg, _ := doc["error"].(string); !strings.Contains(msg, "interrupted") {
		t.Errorf("error %q", msg)
	}
	if got, _ := num(doc, "end", "sum_received", "bytes"); got != 1<<20 {
		t.Errorf("sum_received %v bytes, the server reported %d", got, 1<<20)
	}
}

// -k against a stock server sends what iperf3's client would: without
// -l, blocks of iperf3's 128 KiB (it sent 400 of tcpscope's 1 MiB for
// -k 400), told to the server as a block count.
func TestIperf3BlockCount(t *testing.T) {
	addr, wait := iperf3Once(t)
	code, out, stderr := run("test", "--iperf3", addr, "-k", "40", "-f", "iperf3-json", "--no-diagnose")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	doc := wait()
	got, _ := num(doc, "end", "sum_received", "bytes")
	blocks, _ := num(doc, "start", "test_start", "blocks")
	size, _ := num(doc, "start", "test_start", "blksize")
	if got != 40*131072 || blocks != 40 || size != 131072 {
		t.Errorf("iperf3 -s received %.0f B, was told %.0f blocks of %.0f B; want 40 of 131072", got, blocks, size)
	}
}

// unmeasuredIn reports whether the key at path (keySet's spelling) is 0
// in every object that has it and listed in that object's
// tcpscope_unmeasured.
func unmeasuredIn(doc any, path string) bool {
	parts := strings.Split(path, ".")
	objs := []any{doc}
	for _, p := range parts[:len(parts)-1] {
		var next []any
		for _, o := range objs {
			switch v := o.(type) {
			case map[string]any:
				if p != "[]" {
					next = append(next, v[p])
				}
			case []any:
				if p == "[]" {
					next = append(next, v...)
				}
			}
		}
		objs = next
	}
	key := parts[len(parts)-1]
	for _, o := range objs {
		m, _ := o.(map[string]any)
		list, _ := m["tcpscope_unmeasured"].([]any)
		if m == nil || m[key] != 0.0 || !slices.Contains(list, any(key)) {
			return false
		}
	}
	return len(objs) > 0
}
