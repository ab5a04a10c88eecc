package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// tailNoise is the shortest hold the text mentions: a fast path's sender
// holds back its last few milliseconds, which tell the reader nothing.
const tailNoise = 50 * time.Millisecond

// tail prints how the direction's end was kept near the planned end, on
// one line: the sender held back its last writes so that its queue
// drained by then, or an end cut the wait for the rest (docs/JSON.md,
// tail).
func (t *Text) tail(d *model.DirectionSummary) {
	ts := d.Tail
	if ts == nil {
		return
	}
	var parts []string
	if h, ok := ts.HeldFor.Get(); ok && (h >= tailNoise || ts.CutAt.OK) {
		p := fmt.Sprintf("sender stopped writing %.1f s before the planned end", h.Seconds())
		if q, ok := ts.Queued.Get(); ok {
			p += fmt.Sprintf(" to drain its %s queue", q.Decimal())
		}
		parts = append(parts, p)
	}
	if at, ok := ts.CutAt.Get(); ok {
		p := fmt.Sprintf("cut at %.1f s", at.Seconds())
		if u, ok := ts.Uncounted.Get(); ok {
			p += fmt.Sprintf(": %s written was not received by then and is not counted", u.Decimal())
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		t.item("end", strings.Join(parts, "; "))
	}
}
