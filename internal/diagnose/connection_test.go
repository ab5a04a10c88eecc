package diagnose

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// senderSeries is the client's sender samples of a recorded run: what
// watching that socket from outside would have sampled.
func senderSeries(t *testing.T, id string) []model.Sample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var run model.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	var out []model.Sample
	for _, iv := range run.Client.Intervals {
		for _, si := range iv.Streams {
			if si.Role == model.Sender {
				out = append(out, si.TCP)
			}
		}
	}
	return out
}

// One end's samples lead to the same primary finding as both ends' for
// the limits the sender sees.
func TestConnectionFromOneEnd(t *testing.T) {
	for _, id := range []string{"rwnd-limited", "wscale-off", "sndbuf-limited", "loss-limited", "bottleneck", "pacing-limited"} {
		series := senderSeries(t, id)
		fs := Connection(series, Options{})
		if len(fs) == 0 || fs[0].ID != id || !fs[0].Primary {
			t.Errorf("%s: watched from the sender, findings %v", id, ids(fs))
		}
	}
	if Connection(nil, Options{}) != nil || Connection(make([]model.Sample, 1), Options{}) != nil {
		t.Error("fewer than two samples diagnosed")
	}
}

// A watched socket's send buffer full in every sample (nothing unsent, the
// queue at the same ceiling, in flight far below both windows) is a full
// buffer, not an idle application; one fed at a paced rate is the
// application. The series stop before the test's writer did: a watched
// socket's application goes on.
func TestConnectionSendBuffer(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"sndbuf-limited.full-buffer", "sndbuf-limited"},
		{"sender-app-limited", "sender-app-limited"},
	} {
		series := senderSeries(t, tc.id)
		series = series[:len(series)-1] // the sample after the writer stopped
		if fs := Connection(series, Options{}); len(fs) == 0 || fs[0].ID != tc.want {
			t.Errorf("%s watched from the sender: findings %v, want %s first", tc.id, ids(fs), tc.want)
		}
	}
}

// A receiving socket: the direction flips and the run is well formed.
func TestConnectionReceiver(t *testing.T) {
	s := []model.Sample{{At: 0, BytesReceived: model.Some[model.Bytes](0)},
		{At: 1e9, BytesReceived: model.Some[model.Bytes](1_000_000), RecvQ: model.Some[model.Bytes](0)}}
	run := ConnectionRun(s)
	if run.Summary[0].Direction != model.ServerToClient || run.Client.Totals[0].Role != model.Receiver ||
		run.Summary[0].Goodput.V != 8*model.MbitPerSecond {
		t.Errorf("receiver run: %+v", run.Summary)
	}
	if fs := Connection(s, Options{}); len(fs) == 0 || !fs[0].Primary {
		t.Errorf("receiver findings %v", fs)
	}
}

// A server that only sends sees the same limits as the sending client
// did: the recorded client ends, replayed as a server's (-R) end.
func TestServerEnd(t *testing.T) {
	for _, id := range []string{"rwnd-limited", "loss-limited", "sndbuf-limited"} {
		b, err := os.ReadFile(filepath.Join("testdata", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var run model.Run
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		cfg := run.Config
		cfg.Reverse = true
		rep := run.Client
		rep.Side = model.ServerSide
		fs := ServerEnd(cfg, rep, "", "")
		if len(fs) == 0 || fs[0].ID != id || fs[0].Direction != model.ServerToClient {
			t.Errorf("%s: the server's end gives %v", id, ids(fs))
		}
	}
}

// A server that only received reads the negotiated options from its own
// end: no sack-off or timestamps-off for a connection that had both.
func TestServerEndReceiving(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "bottleneck.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run model.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	if o := run.Remote.Totals[0].Final.Options; !o.SACK || !o.Timestamps {
		t.Fatalf("the recording's options: %+v", o)
	}
	fs := ServerEnd(run.Config, run.Remote, "", "")
	if len(fs) == 0 {
		t.Fatal("no findings")
	}
	for _, f := range fs {
		if f.ID == "sack-off" || f.ID == "timestamps-off" {
			t.Errorf("the receiving server's end gives %v", ids(fs))
		}
	}
}

// A watched transfer's first samples, each caught between writes (nothing
// unsent, little in flight) while the kernel counted the sender busy: two
// instants are too few to call the application idle (the watch once said
// "nothing to send 100% of the samples" over a cwnd-limited transfer, and
// "bottleneck" a second later). From enough instants it is the rule's call.
func TestConnectionFewIdleInstants(t *testing.T) {
	series := senderSeries(t, "bottleneck")
	for i := range series {
		s := &series[i]
		s.NotsentBytes = model.Some[model.Bytes](0)
		s.Unacked = s.SndCwnd / 4
	}
	for n := 2; n <= 3; n++ {
		if fs := Connection(series[:n], Options{}); len(fs) > 0 && fs[0].ID == "sender-app-limited" {
			t.Errorf("%d samples (%d instants): %v first", n, n-1, fs[0].ID)
		}
	}
}
