package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// A stream Stream wrote reads back as the run it was written from: the
// end event's run with both ends' intervals from the interval events,
// in whatever order the two sides interleaved.
func TestReadStreamRoundTrip(t *testing.T) {
	for _, name := range []string{"bidir.json", "iperf3-p2.json"} {
		run := load(t, name)
		var buf bytes.Buffer
		s := NewStream(&buf)
		s.Begin(run)
		for i := range max(len(run.Client.Intervals), len(run.Remote.Intervals)) {
			if i < len(run.Remote.Intervals) {
				s.Interval(model.ServerSide, &run.Remote.Intervals[i])
			}
			if i < len(run.Client.Intervals) {
				s.Interval(model.ClientSide, &run.Client.Intervals[i])
			}
		}
		if err := s.End(run); err != nil {
			t.Fatal(err)
		}
		got, err := ReadStream(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(run)
		have, _ := json.Marshal(got)
		if !bytes.Equal(want, have) {
			t.Errorf("%s: the stream reads back as another run", name)
		}
	}
}

// A stream without its end event, or that is not one, is refused in
// plain words.
func TestReadStreamRefuses(t *testing.T) {
	for in, want := range map[string]error{
		"":                                     ErrNotStream,
		"hello\n":                              ErrNotStream,
		`{"schema":"other/1","event":"begin"}`: ErrNotStream,
		`{"schema":"tcpscope.test/1","event":"wobble"}`:                                                          ErrNotStream,
		`{"schema":"tcpscope.test/1","event":"begin","run":{}}`:                                                  ErrNoEnd,
		`{"schema":"tcpscope.test/1","event":"error","error":{"code":"refused","message":"connection refused"}}`: ErrNoEnd,
	} {
		_, err := ReadStream(strings.NewReader(in))
		if !errors.Is(err, want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%q: %v, want %v", in, err, want)
		}
	}
}
