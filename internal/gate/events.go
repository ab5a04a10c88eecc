package gate

import (
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Kind is what happened to a test.
type Kind int

// The events a gate publishes.
const (
	// Admitted: the test has its ticket.
	Admitted Kind = iota + 1
	// Ended: the test is over; the event carries its record. (The
	// ticket's release follows.)
	Ended
	// Interval: the server's end of the test sampled an interval; the
	// event carries it (in the end's sampling goroutine: a subscriber
	// must return at once).
	Interval
)

// Event is a test's admission or end, for the gate's subscribers: the
// log's diagnosis, a server's one-test exit code, and next the archive,
// the metrics, the page's live view and the mesh.
type Event struct {
	Kind Kind
	Test *Ticket
	// Record is the ended test's (Ended only).
	Record *Record
	// Interval is the server end's interval (Interval only).
	Interval *model.Interval
}

// Record is what the server saw of one test.
type Record struct {
	Start  time.Time // when it was admitted (wall clock, for the record)
	Client string    // the client's address
	Server string    // the address the client reached
	// Tool is the client's kind: "tcpscope", or "iperf3" for a stock
	// iperf3 client; ClientVersion is its version as it said.
	Tool          string
	ClientVersion string
	Config        model.TestConfig
	Report        model.EndReport
	Ended         string
	Err           error
	// UDPPeers are the addresses the test's UDP streams sent to.
	UDPPeers []string
	// TokenSubject is who the test's access token named (empty without
	// one).
	TokenSubject string
}

// Subscribe calls fn with every event from now on, in the goroutine of
// the test it concerns: fn must not block for long (a subscriber that
// stores or sends queues its work). The returned function unsubscribes.
func (g *Gate) Subscribe(fn func(Event)) (unsubscribe func()) {
	g.init()
	g.mu.Lock()
	g.subID++
	id := g.subID
	g.subs = append(g.subs, subscriber{id, fn})
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.subs = slices.DeleteFunc(slices.Clone(g.subs), func(s subscriber) bool { return s.id == id })
		g.mu.Unlock()
	}
}

// subscriber is a Subscribe call's function, by its place in the order.
type subscriber struct {
	id int
	fn func(Event)
}

// publish hands e to every subscriber, in the order they subscribed.
func (g *Gate) publish(e Event) {
	g.mu.Lock()
	subs := g.subs // Subscribe appends and unsubscribing copies: this one stays as it is
	g.mu.Unlock()
	for _, s := range subs {
		s.fn(e)
	}
}

// OnEnded is a subscriber that calls fn with each ended test's record.
func OnEnded(fn func(Record)) func(Event) {
	return func(e Event) {
		if e.Kind == Ended {
			fn(*e.Record)
		}
	}
}
