package iperf3

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// readDoc reads testdata/name as an iperf3 -J document.
func readDoc(t *testing.T, name string) *Document {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := ReadJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// Stock iperf3 3.12's -J documents (recorded on loopback by
// TestRecordStockJSON) read into a model.Run: golden runs, the
// document's own sums in the headline, and every figure the format does
// not carry absent, not zero.
func TestReadStockJSON(t *testing.T) {
	for _, m := range stockModes {
		t.Run(m.name, func(t *testing.T) {
			doc := readDoc(t, filepath.Join("stock", m.name+".json"))
			var raw map[string]any
			b, _ := os.ReadFile(filepath.Join("testdata", "stock", m.name+".json"))
			json.Unmarshal(b, &raw)
			end := raw["end"].(map[string]any)
			run := doc.Run
			side := model.ClientSide
			if m.server {
				side = model.ServerSide
			}
			if doc.Writer != "iperf 3.12" || doc.Side != side || len(doc.Lacks) == 0 {
				t.Errorf("writer %q, side %s, lacks %q", doc.Writer, doc.Side, doc.Lacks)
			}
			if !run.Client.NoKernelState || !run.Remote.NoKernelState || len(run.Client.Intervals)+len(run.Remote.Intervals) != 0 {
				t.Error("an end has kernel state or intervals the document does not carry")
			}
			for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
				// iperf3 -s writes zeros for the client's CPU, and an
				// interrupted client for the server's.
				if known := !m.server && !m.interrupt || e.Side == side; known != (e.CPU != nil) || known && e.CPU.Total <= 0 {
					t.Errorf("%s: CPU %+v", e.Side, e.CPU)
				}
				for _, tot := range e.Totals {
					if tot.Final != nil || tot.Limited.OK || tot.SentBytes.OK || tot.RetransBytes.OK {
						t.Errorf("%s stream %d: kernel figures iperf3 does not carry: %+v", e.Side, tot.Stream, tot)
					}
					if tot.Role == model.Receiver && (tot.MaxCwnd.OK || tot.MaxRTT.OK || tot.RetransSegs.OK) {
						t.Errorf("%s stream %d: a receiver with sender figures", e.Side, tot.Stream)
					}
				}
			}
			// The headline is the document's sums, byte for byte, where
			// the writing end's account is in them.
			recv := end["sum_received"].(map[string]any)["bytes"].(float64)
			sent := end["sum_sent"].(map[string]any)["bytes"].(float64)
			first := run.Summary[0]
			if m.name == "reverse" {
				first = run.Summary[len(run.Summary)-1]
			}
			switch m.name {
			case "server-tcp":
				// The server received; iperf3 -s writes 0 for what the
				// client sent.
				if float64(first.ReceiverBytes.V) != recv || first.SenderBytes.OK || first.RetransSegs.OK || sent != 0 {
					t.Errorf("server's document: %+v; sums %v %v", first, sent, recv)
				}
			case "interrupted":
				// Stopped before the results exchange: iperf3 writes 0
				// for what the server received.
				if float64(first.SenderBytes.V) != sent || first.ReceiverBytes.OK || first.Goodput.OK || recv != 0 || run.Ended != "interrupted" || len(run.Remote.Totals) != 0 {
					t.Errorf("interrupted: %+v, ended %q; sums %v %v", first, run.Ended, sent, recv)
				}
			case "server-reverse":
				if float64(first.SenderBytes.V) != sent || first.ReceiverBytes.OK || first.Goodput.OK || recv != 0 || !run.Remote.Totals[0].MaxCwnd.OK {
					t.Errorf("server's document: %+v; sums %v %v", first, sent, recv)
				}
			default:
				if float64(first.ReceiverBytes.V) != recv || float64(first.SenderBytes.V) != sent || !first.Goodput.OK || first.FromAcks {
					t.Errorf("received %v and sent %v, the document %v and %v", first.ReceiverBytes, first.SenderBytes, recv, sent)
				}
			}
			if first.MinRTT.OK || first.LossRate.OK && m.name != "udp" {
				t.Errorf("figures iperf3 does not measure: min RTT %v, loss %v", first.MinRTT, first.LossRate)
			}
			switch m.name {
			case "tcp", "bidir":
				// The client sent: its kernel's smoothed RTT and windows.
				if !first.MeanRTT.OK || !first.RetransSegs.OK || !run.Client.Totals[0].MaxCwnd.OK {
					t.Errorf("the client's sender figures are missing: %+v / %+v", first, run.Client.Totals[0])
				}
			case "reverse":
				// The server sent: only its bytes and retransmissions.
				if first.MeanRTT.OK || !first.RetransSegs.OK || run.Remote.Totals[0].MaxCwnd.OK {
					t.Errorf("the server's kernel read from a client's document: %+v / %+v", first, run.Remote.Totals[0])
				}
			case "udp":
				if first.UDP == nil || first.UDP.Packets <= 0 || first.UDP.SocketDrops.OK || first.RetransSegs.OK {
					t.Errorf("UDP account %+v", first.UDP)
				}
			}
			if m.name == "bidir" && (len(run.Summary) != 2 || run.Summary[1].MeanRTT.OK || run.Remote.Totals[0].MaxCwnd.OK) {
				t.Errorf("bidir: the reverse direction has the client's receiving socket's figures: %+v", run.Summary)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetIndent("", "  ")
			enc.Encode(struct {
				Lacks []string   `json:"lacks"`
				Run   *model.Run `json:"run"`
			}{doc.Lacks, run})
			golden(t, filepath.Join("stock", m.name+".run.json"), out.Bytes())
		})
	}
}

// tcpscope's own -f iperf3-json documents read back agree with the runs
// they were written from on every figure the format carries.
func TestReadTcpscopeIperf3JSON(t *testing.T) {
	for _, name := range []string{"bidir.json", "iperf3-p2.json", "iperf3-reverse-p2.json", "iperf3-bidir.json", "iperf3-udp.json"} {
		orig := load(t, name)
		doc := readDoc(t, strings.TrimSuffix(name, ".json")+".iperf3.json")
		if !strings.HasPrefix(doc.Writer, "tcpscope ") {
			t.Errorf("%s: writer %q", name, doc.Writer)
		}
		got := doc.Run
		if got.Config.Parallel != orig.Config.Parallel || got.Config.Reverse != orig.Config.Reverse || got.Config.Bidir != orig.Config.Bidir ||
			got.Config.Protocol != orig.Config.Protocol || len(got.Streams) != len(orig.Streams) || len(got.Summary) != len(orig.Summary) {
			t.Fatalf("%s: config %+v streams %d summary %d; was %+v %d %d", name, got.Config, len(got.Streams), len(got.Summary), orig.Config, len(orig.Streams), len(orig.Summary))
		}
		for i, s := range got.Streams {
			if s.Direction != orig.Streams[i].Direction {
				t.Errorf("%s: stream %d flows %s, was %s", name, i, s.Direction, orig.Streams[i].Direction)
			}
		}
		for i, g := range got.Summary {
			o := orig.Summary[i]
			if g.Direction != o.Direction || g.ReceiverBytes != o.ReceiverBytes || g.SenderBytes != o.SenderBytes || g.RetransSegs != o.RetransSegs || g.FromAcks != o.FromAcks {
				t.Errorf("%s %s: read back %+v\nwritten from %+v", name, g.Direction, g, o)
			}
			if o.UDP != nil && (g.UDP == nil || g.UDP.Packets != o.UDP.Packets || g.UDP.Lost != o.UDP.Lost) {
				t.Errorf("%s: UDP %+v, was %+v", name, g.UDP, o.UDP)
			}
		}
	}
}

// Input that is not an iperf3 -J document, or a failed test's, is an
// error in plain words: no Go type names.
func TestReadJSONRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "empty",
		"hello":                                "not valid JSON",
		`{"schema":"tcpscope.test/1"}`:         "no start and end",
		`{"start":"x","end":{}}`:               `field "start"`,
		`{"start":{},"end":{},"error":"boom"}`: "the iperf3 test failed: boom",
		`{"start":{"test_start":{}},"end":{"streams":[]}}`: "no finished test",
	} {
		_, err := ReadJSON(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "jStart") {
			t.Errorf("%q: %v; want %q", in, err, want)
		}
		if strings.Contains(want, "failed") == errors.Is(err, ErrNotJSONDocument) && !strings.Contains(want, "finished") {
			t.Errorf("%q: ErrNotJSONDocument is %v", in, errors.Is(err, ErrNotJSONDocument))
		}
	}
}

// iperf3's --json-stream (3.17 and later; one event per line) reads as
// the document: here a stream assembled from a recorded 3.12 document's
// start, intervals and end, as 3.17 writes them.
func TestReadJSONStream(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "stock", "bidir.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Start     json.RawMessage   `json:"start"`
		Intervals []json.RawMessage `json:"intervals"`
		End       json.RawMessage   `json:"end"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	enc := json.NewEncoder(&stream)
	event := func(name string, data json.RawMessage) {
		enc.Encode(map[string]any{"event": name, "data": data})
	}
	event("start", doc.Start)
	for _, iv := range doc.Intervals {
		event("interval", iv)
	}
	event("end", doc.End)
	got, err := ReadJSONStream(&stream)
	if err != nil {
		t.Fatal(err)
	}
	want := readDoc(t, filepath.Join("stock", "bidir.json"))
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("the stream reads as another run:\n%s\n%s", g, w)
	}
	_, err = ReadJSONStream(strings.NewReader(`{"event":"start","data":{}}` + "\n" + `{"event":"error","data":"unable to connect to server"}` + "\n"))
	if !errors.Is(err, ErrTestFailed) {
		t.Errorf("a failed test's stream: %v", err)
	}
}
