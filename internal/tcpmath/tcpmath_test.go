package tcpmath

import (
	"math"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The source documents' worked examples.
func TestSeedExamples(t *testing.T) {
	// Tierney: a 17,520-byte window over 40 ms carries 3.5 Mbit/s.
	if got := WindowRate(17520, 40*time.Millisecond); model.FormatRate(got, model.RateAuto) != "3.50 Mbit/s" {
		t.Errorf("17,520 B / 40 ms = %v", got)
	}
	// Tierney: 80 ms × 100 Mbit/s = 1 MB of buffer.
	if got := BDP(100*model.MbitPerSecond, 80*time.Millisecond); got != model.MB {
		t.Errorf("BDP(100 Mbit/s, 80 ms) = %v", got.Decimal())
	}
	// Tierney: 100 Mbit/s at 150 ms needs 1.9 MB.
	if got := BDP(100*model.MbitPerSecond, 150*time.Millisecond); got.Decimal() != "1.88 MB" {
		t.Errorf("BDP(100 Mbit/s, 150 ms) = %v", got.Decimal())
	}
	// Web100 paper, eq. 2: OC-12, 20 ms, 66% of 622 Mbit/s (411 Mbit/s)
	// needs a loss rate of about 0.0002% (the paper: 0.00018%, "two
	// packets in 100,000"), with C = 1 and a 1460-byte MSS.
	p := MathisLoss(411*model.MbitPerSecond, 1460, 20*time.Millisecond, 1)
	if p < 1.7e-6 || p > 2.1e-6 {
		t.Errorf("loss for 411 Mbit/s at 20 ms = %.3g%%", 100*p)
	}
	// GigaSunet: 1 Gbit/s of 1500-byte packets is about 83,000 packets/s.
	if pps := PacketsPerSecond(model.GbitPerSecond, 1500); math.Round(pps) != 83333 {
		t.Errorf("pps = %v", pps)
	}
}

func TestMathisRoundTrip(t *testing.T) {
	mss, rtt := model.Bytes(1448), 67*time.Millisecond
	for _, p := range []float64{1e-6, 1e-4, 0.01} {
		r := Mathis(mss, rtt, p, MathisC)
		if back := MathisLoss(r, mss, rtt, MathisC); math.Abs(back-p)/p > 1e-9 {
			t.Errorf("MathisLoss(Mathis(p=%g)) = %g", p, back)
		}
	}
	// Rate falls as 1/√p: a hundred times the loss, a tenth of the rate.
	if a, b := Mathis(mss, rtt, 1e-4, 1), Mathis(mss, rtt, 1e-2, 1); math.Abs(float64(a/b)-10) > 1e-9 {
		t.Errorf("ratio %v", a/b)
	}
	if !math.IsInf(float64(Mathis(mss, rtt, 0, 1)), 1) {
		t.Error("no loss must not bound the rate")
	}
	if MathisLoss(model.GbitPerSecond, 1448, 0, 1) != 1 {
		t.Error("zero RTT")
	}
}

func TestBERModel(t *testing.T) {
	// Four times the MTU, twice the rate (the Networkers slides' point).
	rtt := 20 * time.Millisecond
	a, b := BERRate(1500, rtt, 1e-12, 1), BERRate(6000, rtt, 1e-12, 1)
	if math.Abs(float64(b/a)-2) > 1e-9 {
		t.Fatalf("BER model: ×4 MTU gives ×%v", b/a)
	}
}

func TestFiberAndTime(t *testing.T) {
	// 1,800 km of fiber one way: 20 ms there and back at 180,000 km/s.
	if got := FiberRTT(1800); got != 20*time.Millisecond {
		t.Errorf("FiberRTT(1800 km) = %v", got)
	}
	if got := TransferTime(model.GB, model.GbitPerSecond); got != 8*time.Second {
		t.Errorf("1 GB at 1 Gbit/s = %v", got)
	}
}
