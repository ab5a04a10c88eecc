package engine

import (
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// An interval's acked bytes are the kernel's count of payload since the
// first read (without the SYN, the preamble or the FIN), never counted
// twice, capped by what was written once the stream is done, and absent
// without the counter.
func TestAckedIn(t *testing.T) {
	// The first read: the SYN acknowledged, a 26-byte preamble not yet.
	base := ackedBase(&model.Sample{BytesAcked: model.Some[model.Bytes](1), SendQ: model.Some[model.Bytes](26)})
	if base != model.Some[model.Bytes](27) {
		t.Fatalf("base %v, want 27", base)
	}
	at := func(acked, sendQ model.Bytes, state model.TCPState) *model.Sample {
		return &model.Sample{BytesAcked: model.Some(acked), SendQ: model.Some(sendQ), State: state}
	}
	var counted model.Bytes
	none := model.Opt[model.Bytes]{}
	for _, c := range []struct {
		cur     *model.Sample
		written model.Opt[model.Bytes]
		want    model.Bytes
	}{
		{at(1, 26, model.TCPEstablished), none, 0},         // nothing yet
		{at(1027, 3000, model.TCPEstablished), none, 1000}, // a write in progress: more acked than whole writes
		{at(1027, 3000, model.TCPEstablished), none, 0},    // a stalled interval: a measured zero
		{at(4027, 1, model.TCPFinWait1), none, 3000},       // all acknowledged, the FIN in flight
		{at(4028, 0, model.TCPFinWait2), none, 0},          // the FIN acknowledged: not payload
		{at(4028, 0, model.TCPClose), model.Some[model.Bytes](4000), 0},
	} {
		got, ok := ackedIn(base, c.cur, c.written, &counted).Get()
		if !ok || got != c.want {
			t.Fatalf("acked %d send-q %d %v: got %d (%v), want %d", c.cur.BytesAcked.V, c.cur.SendQ.V, c.cur.State, got, ok, c.want)
		}
	}
	if counted != 4000 {
		t.Fatalf("counted %d, want 4000", counted)
	}
	// A reset after the last byte, before any FIN: closed with nothing
	// unacknowledged, yet no FIN to take off; what was written caps it.
	counted = 0
	if got, _ := ackedIn(base, at(4027, 0, model.TCPClose), model.Some[model.Bytes](4000), &counted).Get(); got != 4000 {
		t.Fatalf("after a reset: %d, want 4000", got)
	}
	if _, ok := ackedIn(model.Opt[model.Bytes]{}, at(5, 0, model.TCPEstablished), none, &counted).Get(); ok {
		t.Fatal("acked bytes without a first count")
	}
	if _, ok := ackedIn(base, &model.Sample{}, none, &counted).Get(); ok {
		t.Fatal("acked bytes from a kernel without the counter")
	}
}
