package iperf3_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// scriptedIperf3 is the client of one iperf3 test, written out step by
// step, for what a stock client cannot be made to do on loopback: send a
// datagram after TEST_END, or claim more than it sent. Its control
// connection speaks iperf3's protocol (reference §3).
type scriptedIperf3 struct {
	t      *testing.T
	ctl    net.Conn
	cookie []byte
}

// dialScripted opens a test on the server at 127.0.0.1:port with the
// given parameters JSON, up to CREATE_STREAMS.
func dialScripted(t *testing.T, port, params string) *scriptedIperf3 {
	t.Helper()
	ctl, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	// Every step of the script is bounded: a server that stops answering
	// fails the test instead of hanging it.
	_ = ctl.SetDeadline(time.Now().Add(30 * time.Second))
	c := &scriptedIperf3{t: t, ctl: ctl, cookie: append([]byte("scriptedscriptedscriptedscriptedabcd"), 0)}
	c.send(c.cookie...)
	c.expect(9) // PARAM_EXCHANGE
	c.sendJSON(params)
	c.expect(10) // CREATE_STREAMS
	return c
}

func (c *scriptedIperf3) send(b ...byte) {
	c.t.Helper()
	if _, err := c.ctl.Write(b); err != nil {
		c.t.Fatalf("control connection: %v", err)
	}
}

func (c *scriptedIperf3) sendJSON(s string) {
	c.t.Helper()
	c.send(append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)...)
}

func (c *scriptedIperf3) expect(state byte) {
	c.t.Helper()
	var b [1]byte
	if _, err := io.ReadFull(c.ctl, b[:]); err != nil || b[0] != state {
		c.t.Fatalf("control connection: state %d (%v), want %d", b[0], err, state)
	}
}

func (c *scriptedIperf3) readJSON() map[string]any {
	c.t.Helper()
	var n [4]byte
	if _, err := io.ReadFull(c.ctl, n[:]); err != nil {
		c.t.Fatalf("control connection: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(c.ctl, b); err != nil {
		c.t.Fatalf("control connection: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		c.t.Fatalf("results %q: %v", b, err)
	}
	return doc
}

// finish reads the server's results and ends the test as a client does.
func (c *scriptedIperf3) finish() map[string]any {
	c.t.Helper()
	res := c.readJSON()
	c.expect(14) // DISPLAY_RESULTS
	c.send(16)   // IPERF_DONE
	return res
}

// firstStream is the first stream of a results message.
func firstStream(res map[string]any) map[string]any {
	streams, _ := res["streams"].([]any)
	if len(streams) == 0 {
		return nil
	}
	s, _ := streams[0].(map[string]any)
	return s
}

// clientResults is a client's results message for one sending stream.
func clientResults(bytes, packets int64) string {
	return fmt.Sprintf(`{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[`+
		`{"id":1,"bytes":%d,"retransmits":0,"jitter":0,"errors":0,"packets":%d,"start_time":0,"end_time":1}]}`, bytes, packets)
}

// A datagram that a client sent before TEST_END but that arrives after it
// (the client's host or the path held it back) still counts: the server
// reads on until the highest datagram the client's results name has come.
// Before, it stopped reading at TEST_END and expected one datagram fewer
// than were sent, as the interop test's "udp --bidir" saw now and then.
func TestServeIperf3UDPDatagramAfterTestEnd(t *testing.T) {
	port, records := tcpscopeServer(t, false)
	c := dialScripted(t, port, `{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":1000000,"pacing_timer":1000,"client_version":"3.12"}`)
	u, err := net.Dial("udp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_ = u.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := u.Write([]byte("9876")); err != nil {
		t.Fatal(err)
	}
	var reply [4]byte
	if _, err := u.Read(reply[:]); err != nil {
		t.Fatalf("UDP stream's answer: %v", err)
	}
	c.expect(1) // TEST_START
	c.expect(2) // TEST_RUNNING
	const n, size = 50, 1400
	send := func(seq uint32) {
		b := make([]byte, size)
		now := time.Now()
		binary.BigEndian.PutUint32(b[0:], uint32(now.Unix()))
		binary.BigEndian.PutUint32(b[4:], uint32(now.Nanosecond()/1000))
		binary.BigEndian.PutUint32(b[8:], seq)
		if _, err := u.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint32(1); seq < n; seq++ {
		send(seq)
	}
	c.send(4)    // TEST_END
	c.expect(13) // EXCHANGE_RESULTS
	c.sendJSON(clientResults(n*size, n))
	send(n) // the straggler, after TEST_END and the results
	res := firstStream(c.finish())
	rec := <-records
	if rec.Err != nil || len(rec.Report.Totals) != 1 || rec.Report.Totals[0].UDP == nil {
		t.Fatalf("server record: %v, %+v", rec.Err, rec.Report.Totals)
	}
	tot := rec.Report.Totals[0]
	t.Logf("the client sent %d datagrams, the server expected %d (%d lost), received %v; its results: %v packets, %v B",
		n, tot.UDP.Packets, tot.UDP.Lost, tot.Bytes, res["packets"], res["bytes"])
	if tot.UDP.Packets != n || tot.UDP.Lost != 0 || tot.Bytes != n*size || res["packets"] != float64(n) || res["bytes"] != float64(n*size) {
		t.Errorf("the client sent %d datagrams of %d B; the server expected %d, received %v (results: %v packets, %v B)",
			n, size, tot.UDP.Packets, tot.Bytes, res["packets"], res["bytes"])
	}
}

// A client cannot make the server count more, or wait long, by claiming
// it sent more than it did: the server waits for bytes that never come
// only until nothing has arrived for a while, well within the 10 s an
// iperf3 client (3.16+) waits for the server's results, and reports what
// it read.
func TestServeIperf3ClaimedCountNotTrusted(t *testing.T) {
	t.Parallel() // 4 MiB, then the server's wait for bytes that never come
	port, records := tcpscopeServer(t, false)
	c := dialScripted(t, port, `{"tcp":true,"time":1,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}`)
	d, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_ = d.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := d.Write(c.cookie); err != nil {
		t.Fatal(err)
	}
	c.expect(1) // TEST_START
	c.expect(2) // TEST_RUNNING
	const sent = 4 * model.MiB
	if _, err := d.Write(make([]byte, sent)); err != nil {
		t.Fatal(err)
	}
	c.send(4)    // TEST_END
	c.expect(13) // EXCHANGE_RESULTS
	start := time.Now()
	c.sendJSON(clientResults(1<<50, 0))
	res := firstStream(c.finish())
	waited := time.Since(start)
	rec := <-records
	t.Logf("sent %d B, claimed 2^50: the server received %v (results: %v B) after waiting %v", sent, serverBytes(rec, model.Receiver), res["bytes"], waited)
	if got := serverBytes(rec, model.Receiver); got != sent || res["bytes"] != float64(sent) {
		t.Errorf("sent %d B, claimed 2^50: the server received %v (results: %v B)", sent, got, res["bytes"])
	}
	if waited >= 10*time.Second {
		t.Errorf("the server sent its results %v after the client's: an iperf3 client gives up after 10 s", waited)
	}
}
