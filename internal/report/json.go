package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/tcpscope/tcpscope/internal/model"
)

// WriteJSON writes run as one indented JSON document.
func WriteJSON(w io.Writer, run *model.Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(run); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// Event is one line of the JSON event stream.
type Event struct {
	Schema string `json:"schema"`
	// Event is "begin", "interval", "end" or "error".
	Event    string          `json:"event"`
	Side     model.Side      `json:"side,omitempty"`
	Interval *model.Interval `json:"interval,omitempty"`
	Run      *model.Run      `json:"run,omitempty"`
	Error    *EventError     `json:"error,omitempty"`
}

// EventError describes a failed test in the event stream.
type EventError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Stream writes a JSON event per line as a test runs. It is safe for
// concurrent use.
type Stream struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewStream returns a Stream writing to w.
func NewStream(w io.Writer) *Stream { return &Stream{enc: json.NewEncoder(w)} }

func (s *Stream) write(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Schema = model.SchemaVersion
	if err := s.enc.Encode(e); err != nil && s.err == nil {
		s.err = fmt.Errorf("write JSON event: %w", err)
	}
}

// Begin emits the test's setup: config and streams, no measurements yet.
func (s *Stream) Begin(run *model.Run) {
	head := *run
	head.Summary, head.Client.Intervals, head.Remote.Intervals = nil, nil, nil
	s.write(Event{Event: "begin", Run: &head})
}

// Interval emits one end's interval.
func (s *Stream) Interval(side model.Side, iv *model.Interval) {
	s.write(Event{Event: "interval", Side: side, Interval: iv})
}

// End emits the complete run, intervals left out (they were streamed).
func (s *Stream) End(run *model.Run) error {
	tail := *run
	tail.Client.Intervals, tail.Remote.Intervals = nil, nil
	s.write(Event{Event: "end", Run: &tail})
	return s.Err()
}

// Fail emits an error event.
func (s *Stream) Fail(code, msg, hint string) error {
	s.write(Event{Event: "error", Error: &EventError{Code: code, Message: msg, Hint: hint}})
	return s.Err()
}

// Err is the first write error, if any.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
