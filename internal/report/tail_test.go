package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The summary's one line on the end of a timed test: the sender's hold
// with its queue, the receiver's cut with what went uncounted, both, or
// nothing for a hold too short to tell the reader anything.
func TestTextTail(t *testing.T) {
	mb := model.Bytes(1_000_000)
	cases := []struct {
		name string
		tail *model.TailSummary
		want string // "" for no line
	}{
		{"none", nil, ""},
		{"held", &model.TailSummary{HeldFor: model.Some(1800 * time.Millisecond), Queued: model.Some(23 * mb / 10)},
			"  end         sender stopped writing 1.8 s before the planned end to drain its 2.30 MB queue\n"},
		{"a fast path's last milliseconds", &model.TailSummary{HeldFor: model.Some(3 * time.Millisecond), Queued: model.Some(12 * mb)}, ""},
		{"cut", &model.TailSummary{CutAt: model.Some(10500 * time.Millisecond), Uncounted: model.Some(12 * mb / 10)},
			"  end         cut at 10.5 s: 1.20 MB written was not received by then and is not counted\n"},
		{"held and cut", &model.TailSummary{HeldFor: model.Some(3 * time.Millisecond), Queued: model.Some(mb), CutAt: model.Some(11 * time.Second), Uncounted: model.Some(mb)},
			"  end         sender stopped writing 0.0 s before the planned end to drain its 1.00 MB queue; cut at 11.0 s: 1.00 MB written was not received by then and is not counted\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			txt := NewText(&out, TextOptions{Format: model.RateAuto})
			txt.tail(&model.DirectionSummary{Tail: c.tail})
			// One item, wrapped to 80 columns under its value's column.
			if got := strings.ReplaceAll(out.String(), "\n"+strings.Repeat(" ", 14), " "); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(l); n > MinWidth {
					t.Errorf("%d columns: %q", n, l)
				}
			}
		})
	}
}
