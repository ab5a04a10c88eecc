package gate

import (
	"log/slog"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
)

// refusalLog logs what the server refuses (connections over a limit,
// tests it will not run) without letting a flood of refusals flood the
// log: per kind, one line a second at most, the next one saying how many
// were left out. Every refusal is counted.
type refusalLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	kinds  map[string]*refusals
}

type refusals struct {
	total  int64
	quiet  int64 // refused since the last line
	logged time.Time
}

// refusalEvery is the most often one kind of refusal is logged.
const refusalEvery = time.Second

// note counts a refusal of this kind of a client at from, for why, and
// logs it unless one of its kind was logged under refusalEvery ago.
func (r *refusalLog) note(kind string, from net.Addr, why string) {
	now := time.Now()
	r.mu.Lock()
	if r.kinds == nil {
		r.kinds = make(map[string]*refusals)
	}
	k := r.kinds[kind]
	if k == nil {
		k = &refusals{}
		r.kinds[kind] = k
	}
	k.total++
	if now.Sub(k.logged) < refusalEvery {
		k.quiet++
		r.mu.Unlock()
		return
	}
	left := k.quiet
	k.quiet, k.logged = 0, now
	r.mu.Unlock()
	if r.logger == nil {
		return
	}
	attrs := []any{"kind", kind, "client", from.String(), "reason", why}
	if left > 0 {
		attrs = append(attrs, "not_logged_since_last", left)
	}
	r.logger.Info("refused", attrs...)
}

// refusalKind is the kind a refused test counts as: its error code, or
// bad-config for what is not served at all.
func refusalKind(err error) string {
	if c := fault.CodeOf(err); c != "" {
		return string(c)
	}
	return string(fault.BadConfig)
}

// counts is how many refusals of each kind there were.
func (r *refusalLog) counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.kinds))
	for kind, k := range r.kinds {
		out[kind] = k.total
	}
	return out
}

// Refusals counts what the gate refused since it started, by kind: a
// limit's name ("pending-per-address", "pending", "denied") or an error
// code ("busy", "limit", "bad-config", ...).
func (g *Gate) Refusals() map[string]int64 {
	return maps.Clone(g.refusals.counts())
}

// Refused notes a refusal of a client at addr, for err, in the refusal
// log: kind names it ("" takes it from err's code).
func (g *Gate) Refused(kind string, addr net.Addr, err error) {
	if kind == "" {
		kind = refusalKind(err)
	}
	g.refusals.note(kind, addr, err.Error())
}
