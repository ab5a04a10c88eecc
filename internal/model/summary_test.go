package model

import (
	"testing"
	"time"
)

// A black hole: the sender wrote 33 kB, the receiver never reported, and
// the sender's kernel saw 26 bytes acknowledged (27 with the SYN). The
// headline must be what arrived, not what was written.
func TestSummarizeMissingReceiver(t *testing.T) {
	run := &Run{Streams: []StreamInfo{{ID: 0, Direction: ClientToServer}}}
	final := Sample{BytesAcked: Some[Bytes](27), RTT: 20 * time.Millisecond}
	run.Client.Totals = []StreamTotal{{Stream: 0, Role: Sender, Bytes: 33_000, Duration: 10 * time.Second, Final: &final,
		RetransSegs: Some[uint32](6)}}
	s := Summarize(run)[0]
	if b, ok := s.ReceiverBytes.Get(); !ok || b != 26 || !s.FromAcks {
		t.Errorf("received %v (from acks %v), want 26 B from the sender's acks", s.ReceiverBytes, s.FromAcks)
	}
	if g, ok := s.Goodput.Get(); !ok || g != RateOf(26, 10) {
		t.Errorf("goodput %v, want %v", s.Goodput, RateOf(26, 10))
	}
	if b, ok := s.SenderBytes.Get(); !ok || b != 33_000 {
		t.Errorf("sender bytes %v, want 33000", s.SenderBytes)
	}

	// Without the sender's kernel either, nothing is known of what arrived.
	run.Client.Totals[0].Final = nil
	s = Summarize(run)[0]
	if s.ReceiverBytes.OK || s.Goodput.OK || s.MeanRTT.OK {
		t.Errorf("received %v, goodput %v, RTT %v: want all absent", s.ReceiverBytes, s.Goodput, s.MeanRTT)
	}
}

// A stock iperf3 server's account has bytes and nothing of its kernel:
// the figures only its kernel knows stay absent.
func TestSummarizePeerWithoutKernel(t *testing.T) {
	run := &Run{Streams: []StreamInfo{{ID: 0, Direction: ServerToClient}}}
	run.Remote = EndReport{Side: ServerSide, NoKernelState: true,
		Totals: []StreamTotal{{Stream: 0, Role: Sender, Bytes: 1000, Duration: time.Second}}}
	run.Client.Totals = []StreamTotal{{Stream: 0, Role: Receiver, Bytes: 1000, Duration: time.Second}}
	s := Summarize(run)[0]
	if s.RetransSegs.OK || s.MeanRTT.OK || s.MinRTT.OK || s.LossRate.OK {
		t.Errorf("retransmissions %v, RTT %v/%v, loss %v: want absent", s.RetransSegs, s.MinRTT, s.MeanRTT, s.LossRate)
	}
	if g, ok := s.Goodput.Get(); !ok || g != 8000 {
		t.Errorf("goodput %v, want 8000 bit/s", s.Goodput)
	}
}
