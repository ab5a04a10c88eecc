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
	g.subs[id] = fn
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.subs, id)
		g.mu.Unlock()
	}
}

// publish hands e to every subscriber, in the order they subscribed.
func (g *Gate) publish(e Event) {
	g.mu.Lock()
	if len(g.subs) == 0 {
		g.mu.Unlock()
		return
	}
	ids := make([]int, 0, len(g.subs))
	for id := range g.subs {
		ids = append(ids, id)
	}
	fns := make([]func(Event), 0, len(ids))
	slices.Sort(ids)
	for _, id := range ids {
		fns = append(fns, g.subs[id])
	}
	g.mu.Unlock()
	for _, fn := range fns {
		fn(e)
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
