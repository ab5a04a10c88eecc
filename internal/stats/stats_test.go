package stats

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSummarize(t *testing.T) {
	// 10 values, df 9: t(0.975, 9) = 2.262157.
	xs := []float64{11, 12, 9, 14, 10, 13, 12, 11, 15, 13}
	s, err := Summarize(xs)
	if err != nil {
		t.Fatal(err)
	}
	// Mean 12.0; SD sqrt(30/9) = 1.825742; half width 2.262157 × 1.825742 / √10.
	half := 2.262157 * math.Sqrt(30.0/9) / math.Sqrt(10)
	if s.N != 10 || s.Mean != 12 || !near(s.SD, math.Sqrt(30.0/9), 1e-12) ||
		!near(s.CILow, 12-half, 1e-5) || !near(s.CIHigh, 12+half, 1e-5) ||
		s.Median != 12 || s.Min != 9 || s.Max != 15 {
		t.Fatalf("Summarize = %+v", s)
	}
	one, _ := Summarize([]float64{3})
	if one.Mean != 3 || one.Median != 3 || !math.IsNaN(one.SD) || !math.IsNaN(one.CILow) {
		t.Fatalf("one value: %+v", one)
	}
	if _, err := Summarize(nil); !errors.Is(err, ErrTooFew) {
		t.Fatalf("empty: %v", err)
	}
}

func TestMedian(t *testing.T) {
	// gonum's stat.Quantile gives 2 here; the median of {1,2,3,4} is 2.5.
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("median %v", m)
	}
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Fatalf("median %v", m)
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 {
		t.Fatal("Median sorted its input")
	}
}

func TestWelch(t *testing.T) {
	// The seed's before/after: means 11.8 and 41.3 Mbit/s differ beyond doubt.
	before := []float64{11, 12.5, 11.2, 12.1, 12.2, 11.8}
	after := []float64{40.1, 42.3, 41.0, 41.9, 41.2, 41.3}
	c, err := Welch(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ratio < 3.4 || c.Ratio > 3.6 || c.P > 1e-9 || c.T <= 0 {
		t.Fatalf("before/after: %+v", c)
	}
	same, _ := Welch([]float64{1, 2, 3, 4}, []float64{1.1, 2.1, 2.9, 4})
	if same.P < 0.5 {
		t.Fatalf("equal means judged different: %+v", same)
	}
	// t and df worked by hand from the formulas: t = 2.52490, df = 6.24817;
	// the two-sided p for that is about 0.043.
	k, _ := Welch([]float64{19.1, 20.3, 18.8, 21.0, 20.5}, []float64{22.0, 19.9, 23.5, 24.1, 21.2})
	if !near(k.T, 2.52490, 1e-4) || !near(k.DF, 6.24817, 1e-4) || k.P < 0.035 || k.P > 0.05 {
		t.Fatalf("Welch = %+v", k)
	}
	flat, _ := Welch([]float64{5, 5}, []float64{6, 6})
	if flat.P != 0 || !math.IsInf(flat.T, 1) {
		t.Fatalf("no spread, different means: %+v", flat)
	}
	if _, err := Welch([]float64{1}, []float64{1, 2}); !errors.Is(err, ErrTooFew) {
		t.Fatal("one value accepted")
	}
}

// One run has no spread: its SD and interval are absent from the JSON,
// not NaN (which encoding/json refuses, failing `lab run --quick --json`)
// and not 0.
func TestSummaryJSONOfOne(t *testing.T) {
	s, err := Summarize([]float64{42})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"n":1,"mean":42,"median":42,"min":42,"max":42}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	two, _ := Summarize([]float64{1, 3})
	b, _ = json.Marshal(two)
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back != two {
		t.Fatalf("two values: %s read back as %+v, want %+v (%v)", b, back, two, err)
	}
}
