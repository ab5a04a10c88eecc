package engine

import (
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// scripted is a Flow whose counters and kernel samples a test sets.
type scripted struct {
	id      int
	role    model.Role
	moved   int64
	sample  model.Sample
	readOK  bool
	written int64
	wrote   bool
	udp     *model.Datagrams
}

func (f *scripted) ID() int                    { return f.id }
func (f *scripted) Role() model.Role           { return f.role }
func (f *scripted) Moved() int64               { return f.moved }
func (f *scripted) Read() (model.Sample, bool) { return f.sample, f.readOK }
func (f *scripted) Written() (int64, bool)     { return f.written, f.wrote }
func (f *scripted) Datagrams() (model.Datagrams, bool) {
	if f.udp == nil {
		return model.Datagrams{}, false
	}
	return *f.udp, true
}

// The sampler's intervals are each flow's moves since the last one: the
// bytes and rate over the interval's time, the kernel's retransmissions
// and acknowledgments between its samples (the first acknowledgment
// less the handshake's), a receiver's out-of-order count; a flow whose
// kernel could not be read has its kernel figures absent, never zero; a
// sender's acknowledged bytes stop at what it wrote; a UDP flow's
// datagrams are counted since the last interval.
func TestSamplerIntervals(t *testing.T) {
	const base = 1 // the SYN's sequence number, acknowledged before data
	snd := &scripted{id: 0, role: model.Sender, readOK: true}
	rcv := &scripted{id: 1, role: model.Receiver, readOK: true}
	udp := &scripted{id: 2, role: model.Receiver, udp: &model.Datagrams{}}
	first := []model.Sample{
		{BytesAcked: model.Some(model.Bytes(base)), SendQ: model.Some(model.Bytes(0))},
		{RcvOOOPack: model.Some(uint32(3))},
		{},
	}
	sm := NewSampler([]Flow{snd, rcv, udp}, first)
	var observed int
	sm.Observe = func(int, *model.Sample) { observed++ }

	snd.moved = 1_000_000
	snd.sample = model.Sample{At: 500 * time.Millisecond, TotalRetrans: 4, BytesAcked: model.Some(model.Bytes(base + 800_000)), SendQ: model.Some(model.Bytes(200_000)), State: model.TCPEstablished}
	rcv.moved = 900_000
	rcv.sample = model.Sample{At: 500 * time.Millisecond, RcvOOOPack: model.Some(uint32(10))}
	udp.udp = &model.Datagrams{Packets: 100, Lost: 2}
	iv := sm.Interval(0, 500*time.Millisecond)
	if iv.Start != 0 || iv.End != 500*time.Millisecond || len(iv.Streams) != 3 {
		t.Fatalf("interval %v-%v with %d streams", iv.Start, iv.End, len(iv.Streams))
	}
	s := iv.Streams[0]
	if s.Bytes != 1_000_000 || s.Rate != 16*model.MbitPerSecond || s.RetransSegs != 4 {
		t.Errorf("sender: %v B at %v, %d retransmitted; want 1000000 B at 16 Mbit/s, 4", s.Bytes, s.Rate, s.RetransSegs)
	}
	if s.AckedBytes != model.Some(model.Bytes(800_000)) || s.AckedRate != model.Some(12.8*model.MbitPerSecond) {
		t.Errorf("sender acknowledged %v at %v, want 800000 B at 12.8 Mbit/s", s.AckedBytes, s.AckedRate)
	}
	if r := iv.Streams[1]; r.Bytes != 900_000 || r.OutOfOrder != model.Some(uint32(7)) || r.Role != model.Receiver || r.Stream != 1 {
		t.Errorf("receiver: %+v; want 900000 B, 7 out of order, stream 1", r)
	}
	if u := iv.Streams[2]; u.UDP == nil || u.UDP.Packets != 100 || u.UDP.Lost != 2 || u.OutOfOrder.OK {
		t.Errorf("UDP flow: datagrams %+v, out of order %v; want 100 with 2 lost, and no kernel figure", u.UDP, u.OutOfOrder)
	}
	if observed != 3 {
		t.Errorf("Observe saw %d samples, want one a flow", observed)
	}

	// The sender's writes end at 1.2 MB, and its kernel claims 10 bytes
	// more besides its FIN's (as after a reset): the count stops at what
	// it wrote. The receiver's socket can no longer be read.
	snd.moved, snd.written, snd.wrote = 1_200_000, 1_200_000, true
	snd.sample = model.Sample{At: time.Second, TotalRetrans: 4, BytesAcked: model.Some(model.Bytes(base + 1_200_010)), SendQ: model.Some(model.Bytes(0)), State: model.TCPFinWait2}
	rcv.moved, rcv.readOK = 1_200_000, false
	udp.udp = &model.Datagrams{Packets: 150, Lost: 2, OutOfOrder: 1}
	iv = sm.Interval(1, time.Second)
	if s := iv.Streams[0]; s.AckedBytes != model.Some(model.Bytes(400_000)) || s.RetransSegs != 0 {
		t.Errorf("sender's last interval acknowledged %v with %d retransmitted, want 400000 B and none", s.AckedBytes, s.RetransSegs)
	}
	if r := iv.Streams[1]; r.Bytes != 300_000 || r.OutOfOrder.OK {
		t.Errorf("unread receiver: %v B, out of order %v; want 300000 B and the kernel's count absent", r.Bytes, r.OutOfOrder)
	}
	if u := iv.Streams[2]; u.UDP.Packets != 50 || u.UDP.Lost != 0 || u.UDP.OutOfOrder != 1 {
		t.Errorf("UDP flow's second interval: %+v, want 50 datagrams, none lost, 1 out of order", u.UDP)
	}
	if iv.Start != 500*time.Millisecond {
		t.Errorf("second interval starts at %v, want where the first ended", iv.Start)
	}
}
