package stats

import (
	"encoding/json"
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// ErrTooFew reports a sample too small for the statistic asked for.
var ErrTooFew = errors.New("stats: too few values")

// Summary describes a sample.
type Summary struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	SD     float64 `json:"sd"` // sample standard deviation (n − 1)
	CILow  float64 `json:"ci95_low"`
	CIHigh float64 `json:"ci95_high"` // 95% confidence interval of the mean (Student t)
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// MarshalJSON writes s with the spread absent where it is undefined (one
// value: SD and the interval are NaN, which JSON cannot carry, and which
// are not a spread of 0 either).
func (s Summary) MarshalJSON() ([]byte, error) {
	defined := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		N      int      `json:"n"`
		Mean   float64  `json:"mean"`
		SD     *float64 `json:"sd,omitempty"`
		CILow  *float64 `json:"ci95_low,omitempty"`
		CIHigh *float64 `json:"ci95_high,omitempty"`
		Median float64  `json:"median"`
		Min    float64  `json:"min"`
		Max    float64  `json:"max"`
	}{s.N, s.Mean, defined(s.SD), defined(s.CILow), defined(s.CIHigh), s.Median, s.Min, s.Max})
}

// Summarize computes a Summary. One value gives its mean and median with no
// spread (SD and the interval are NaN); none is an error.
func Summarize(xs []float64) (Summary, error) {
	n := len(xs)
	if n == 0 {
		return Summary{}, ErrTooFew
	}
	s := Summary{N: n, Mean: mean(xs), Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
	if n < 2 {
		s.SD, s.CILow, s.CIHigh = math.NaN(), math.NaN(), math.NaN()
		return s, nil
	}
	var ss float64
	for _, x := range xs {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(n-1))
	half := tQuantile(0.975, float64(n-1)) * s.SD / math.Sqrt(float64(n))
	s.CILow, s.CIHigh = s.Mean-half, s.Mean+half
	return s, nil
}

// Median is the middle value, or the mean of the two middle values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func tQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// Comparison is Welch's t-test of two samples' means.
type Comparison struct {
	Ratio float64 `json:"ratio"` // mean(b) / mean(a)
	T     float64 `json:"t"`
	DF    float64 `json:"df"` // Welch–Satterthwaite degrees of freedom
	P     float64 `json:"p"`  // two-sided
}

// Welch compares the means of a and b without assuming equal variances.
func Welch(a, b []float64) (Comparison, error) {
	if len(a) < 2 || len(b) < 2 {
		return Comparison{}, ErrTooFew
	}
	sa, _ := Summarize(a)
	sb, _ := Summarize(b)
	va, vb := sa.SD*sa.SD/float64(sa.N), sb.SD*sb.SD/float64(sb.N)
	c := Comparison{Ratio: sb.Mean / sa.Mean}
	if va+vb == 0 {
		// No spread at all: the means either are the same or certainly differ.
		c.DF = float64(sa.N + sb.N - 2)
		if sa.Mean == sb.Mean {
			c.P = 1
		} else {
			c.T, c.P = math.Copysign(math.Inf(1), sb.Mean-sa.Mean), 0
		}
		return c, nil
	}
	c.T = (sb.Mean - sa.Mean) / math.Sqrt(va+vb)
	c.DF = (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	c.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c.DF}.Survival(math.Abs(c.T))
	return c, nil
}
