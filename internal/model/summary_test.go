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

// TestSummarizeAckedAfterOmit: without the receiver's report, what
// arrived is what the sender's kernel saw acknowledged over the measured
// period: its final bytes_acked less the count at the omit mark. The
// life's count against the measured duration overstated a server's own
// view of a test with -O (11.5 Mbit/s where 5.76 had arrived); without the
// mark, what arrived is not known rather than that.
func TestSummarizeAckedAfterOmit(t *testing.T) {
	run := &Run{
		Config:  TestConfig{Protocol: "tcp", Duration: 4 * time.Second, Omit: time.Second, Parallel: 1},
		Streams: []StreamInfo{{ID: 1, Direction: ClientToServer}},
		Client: EndReport{Side: ClientSide,
			Intervals: []Interval{{Index: 0, Omitted: true, Streams: []StreamInterval{{Stream: 1, Role: Sender, TCP: Sample{BytesAcked: Some[Bytes](1_000_001)}}}}},
			Totals:    []StreamTotal{{Stream: 1, Role: Sender, Bytes: 5_000_000, Duration: 4 * time.Second, Final: &Sample{BytesAcked: Some[Bytes](5_000_001)}}}},
		Remote: EndReport{Side: ServerSide},
	}
	s := Summarize(run)[0]
	if b, ok := s.ReceiverBytes.Get(); !ok || !s.FromAcks || b != 4_000_000 {
		t.Errorf("received %v (from acks %v), want 4000000 B acknowledged after the mark", s.ReceiverBytes, s.FromAcks)
	}
	if g, ok := s.Goodput.Get(); !ok || g != 8*MbitPerSecond {
		t.Errorf("goodput %v, want 8 Mbit/s", s.Goodput)
	}
	run.Client.Intervals = nil // the mark not read
	if s := Summarize(run)[0]; s.ReceiverBytes.OK || s.Goodput.OK {
		t.Errorf("without the omit mark: received %v, goodput %v; want both absent", s.ReceiverBytes, s.Goodput)
	}
}
