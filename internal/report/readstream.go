package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ErrNotStream says the input is not a --json-stream of tcpscope's.
var ErrNotStream = errors.New("not a tcpscope --json-stream")

// ErrNoEnd says a stream has no end event: the test failed before it
// began, or the stream was cut short.
var ErrNoEnd = errors.New("no end event")

// ReadStream rebuilds a run from the events Stream wrote: the end
// event's run, with each end's intervals from the interval events (the
// end event leaves them out, they were streamed). A stream without its
// end event (cut short, or a test that failed before it began) is an
// error saying so, with the error event's message when there is one.
func ReadStream(r io.Reader) (*model.Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<28)
	var end *model.Run
	var fail *EventError
	var client, server []model.Interval
	line, events := 0, 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %s", ErrNotStream, line, model.JSONProblem(err, "a tcpscope event"))
		}
		if e.Schema != model.SchemaVersion {
			return nil, fmt.Errorf("%w: line %d has schema %q, want %q", ErrNotStream, line, e.Schema, model.SchemaVersion)
		}
		events++
		switch e.Event {
		case "interval":
			if e.Interval == nil {
				return nil, fmt.Errorf("%w: line %d: an interval event without its interval", ErrNotStream, line)
			}
			if e.Side == model.ServerSide {
				server = append(server, *e.Interval)
			} else {
				client = append(client, *e.Interval)
			}
		case "end":
			end = e.Run
		case "error":
			fail = e.Error
		case "begin":
		default:
			return nil, fmt.Errorf("%w: line %d: unknown event %q", ErrNotStream, line, e.Event)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the event stream: %w", err)
	}
	switch {
	case events == 0:
		return nil, fmt.Errorf("%w: it holds no event", ErrNotStream)
	case end == nil && fail != nil:
		return nil, fmt.Errorf("%w: the test failed (%s): %s", ErrNoEnd, fail.Code, fail.Message)
	case end == nil:
		return nil, fmt.Errorf("%w: the stream stops before the test ended", ErrNoEnd)
	}
	end.Client.Intervals, end.Remote.Intervals = client, server
	return end, nil
}
