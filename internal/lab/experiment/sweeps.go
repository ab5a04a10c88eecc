package experiment

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/stats"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// headers is what IPv4 and TCP with timestamps take of each packet: the
// MSS is the MTU less 52 bytes.
const headers = 52

func mtuOf(p *profile.Path) int {
	if p.MTU > 0 {
		return p.MTU
	}
	return 1500
}

// capacity is the payload rate a path's bottleneck can carry: its rate
// counts whole IP packets, of which MSS/MTU is payload.
func capacity(p *profile.Path) float64 {
	if p.Rate == 0 {
		return math.Inf(1) // no bottleneck
	}
	mtu := float64(mtuOf(p))
	return float64(p.Rate) * (mtu - headers) / mtu
}

func mss(p *profile.Path) model.Bytes { return model.Bytes(mtuOf(p) - headers) }

// windowSweep: goodput against the receiver's buffer at the path's RTT.
// The buffer is host B's tcp_rmem maximum, so the receive window alone
// varies while the sender keeps its autotuned send buffer (with -w on
// both ends the send buffer would cap the flight too). The model is the
// window the receiver actually advertised (Linux turns a buffer into a
// window by its own ratio; the mean of the sender's samples after slow
// start) over the flows' minimum RTT, capped by the path.
func windowSweep(ctx context.Context, x *exp) (*Result, error) {
	sizes := pick(x, []model.Bytes{16 * model.KiB, 32 * model.KiB, 64 * model.KiB, 128 * model.KiB, 256 * model.KiB,
		512 * model.KiB, model.MiB, 2 * model.MiB, 4 * model.MiB, 8 * model.MiB},
		[]model.Bytes{32 * model.KiB, 128 * model.KiB, 512 * model.KiB})
	res := &Result{}
	var notes []string
	for _, w := range sizes {
		recv := x.host
		recv.BuffersBDP = 0
		recv.Rmem = [3]model.Bytes{4096, min(128*model.KiB, w), w}
		err := x.withTestbed(ctx, x.path, x.host, recv, func(tb Testbed) error {
			rec := &windowRecorder{Testbed: tb}
			p, err := x.measure(ctx, rec, w.Binary(), x.config(x.host), x.repeat(1))
			if err != nil {
				return err
			}
			notes = append(notes, rec.warnings...)
			rtt := x.path.RTT
			if rec.minRTT > 0 {
				rtt = rec.minRTT
			}
			p.X = float64(w) / float64(model.KiB)
			p.Model = math.Min(float64(tcpmath.WindowRate(rec.mean(), rtt)), capacity(&x.path))
			res.Points = append(res.Points, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	title := fmt.Sprintf("goodput against receive buffer, %s (%v, %v RTT, BDP %s)", x.Path, x.path.Rate, x.path.RTT, x.path.BDP().Decimal())
	res.Table = pointsTable(title, "rcv buffer", res.Points, true)
	res.Table.Notes = append([]string{"buffer: the receiver's tcp_rmem maximum; model: the window it advertised / the flows' minimum RTT, at most the path's payload rate"}, dedupe(notes)...)
	res.Chart = chartOf(title, "receive buffer (KiB, log)", true, res.Points, "window / RTT")
	return res, nil
}

// windowRecorder collects the windows the receiver advertised after slow
// start (the sender's snd_wnd at each measured interval) and the runs'
// warnings (a clamped buffer).
type windowRecorder struct {
	Testbed
	sum      float64
	n        int
	minRTT   time.Duration // the least the flows saw: propagation plus the lab's own latency
	warnings []string
}

func (w *windowRecorder) Test(ctx context.Context, cfg model.TestConfig) (*model.Run, error) {
	run, err := w.Testbed.Test(ctx, cfg)
	if err != nil {
		return run, err
	}
	for _, iv := range run.Client.Intervals {
		if iv.Omitted {
			continue
		}
		for _, s := range iv.Streams {
			if v, ok := s.TCP.SndWnd.Get(); ok && s.Role == model.Sender {
				w.sum += float64(v)
				w.n++
			}
		}
	}
	for _, d := range run.Summary {
		if m, ok := d.MinRTT.Get(); ok && (w.minRTT == 0 || m < w.minRTT) {
			w.minRTT = m
		}
	}
	w.warnings = append(w.warnings, run.Warnings...)
	return run, nil
}

func (w *windowRecorder) mean() model.Bytes {
	if w.n == 0 {
		return 0
	}
	return model.Bytes(w.sum / float64(w.n))
}

// lossSweep: goodput against random loss, beside the Mathis bound.
func lossSweep(ctx context.Context, x *exp) (*Result, error) {
	losses := pick(x, []float64{1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2}, []float64{1e-4, 1e-3, 1e-2})
	res := &Result{}
	for _, l := range losses {
		path := x.path
		path.Loss = l
		err := x.withTestbed(ctx, path, x.host, x.host, func(tb Testbed) error {
			p, err := x.measure(ctx, tb, fmt.Sprintf("%g%%", 100*l), x.config(x.host), x.repeat(1))
			if err != nil {
				return err
			}
			p.X = 100 * l
			p.Model = math.Min(float64(tcpmath.Mathis(mss(&path), path.RTT, l, x.MathisC)), capacity(&path))
			res.Points = append(res.Points, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	title := fmt.Sprintf("goodput against random loss, %s (%v, %v RTT)", x.Path, x.path.Rate, x.path.RTT)
	res.Table = pointsTable(title, "loss", res.Points, true)
	res.Table.Notes = []string{fmt.Sprintf("model: Mathis, C·MSS/(RTT·√p) with C = %.3g, MSS %d B, RTT %v; at most the path's payload rate", x.MathisC, mss(&x.path), x.path.RTT)}
	res.Chart = chartOf(title, "random loss (%, log)", true, res.Points, "Mathis bound")
	return res, nil
}

// mtuSweep: the same lossy path with larger MTUs. With loss per packet
// the Mathis bound grows linearly with the MSS; when loss comes from bit
// errors (a packet's chance of loss grows with its size) it grows only
// with √MTU. Both lines start from the measured smallest MTU.
func mtuSweep(ctx context.Context, x *exp) (*Result, error) {
	mtus := pick(x, []int{1500, 4470, 9000}, []int{1500, 9000})
	res := &Result{}
	for _, m := range mtus {
		path := x.path
		path.MTU = m
		err := x.withTestbed(ctx, path, x.host, x.host, func(tb Testbed) error {
			p, err := x.measure(ctx, tb, fmt.Sprintf("%d", m), x.config(x.host), x.repeat(1))
			if err != nil {
				return err
			}
			p.X = float64(m)
			res.Points = append(res.Points, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	base := res.Points[0]
	lin := report.Series{Name: "linear in MSS (per-packet loss)", Model: true}
	sq := report.Series{Name: "√MTU (bit-error loss)", Model: true}
	t := &report.Table{
		Title:   fmt.Sprintf("goodput against MTU, %s (%v, %v RTT, loss %g%%)", x.Path, x.path.Rate, x.path.RTT, 100*x.path.MeanLoss()),
		Columns: []string{"MTU", "n", "mean Mbit/s", "95% CI", "linear model", "√MTU model"},
	}
	for i := range res.Points {
		p := &res.Points[i]
		m0, m := float64(base.X), p.X
		linear := base.Summary.Mean * (m - headers) / (m0 - headers)
		root := base.Summary.Mean * math.Sqrt(m/m0)
		p.Model = linear
		lin.Points = append(lin.Points, report.Point{X: m, Y: mbit(linear)})
		sq.Points = append(sq.Points, report.Point{X: m, Y: mbit(root)})
		t.Rows = append(t.Rows, []string{p.Label, fmt.Sprint(p.Summary.N), fmtMbit(p.Summary.Mean), fmtCI(p.Summary), fmtMbit(linear), fmtMbit(root)})
	}
	t.Notes = []string{"models scaled from the measured 1500-byte point; the lab's loss is per packet, so the linear model is the one that should hold (capped by the path)"}
	res.Table = t
	res.Chart = chartOf(t.Title, "MTU (bytes)", false, res.Points, "")
	res.Chart.Series = append(res.Chart.Series[:1], lin, sq)
	return res, nil
}

// tuning: the seed's before/after: hosts as mistuned in 2001 against hosts
// tuned for the path, n runs each.
func tuning(ctx context.Context, x *exp) (*Result, error) {
	before, err := x.Profiles.Host("mistuned-2001")
	if err != nil {
		return nil, err
	}
	after, err := x.Profiles.Host("tuned")
	if err != nil {
		return nil, err
	}
	if x.Hosts != "" {
		// --hosts names the "before" side; "tuned" stays the reference.
		before = x.host
	}
	res := &Result{}
	for i, h := range []profile.Host{before, after} {
		err := x.withTestbed(ctx, x.path, h, h, func(tb Testbed) error {
			p, err := x.measure(ctx, tb, h.Name, x.config(h), x.repeat(5))
			if err != nil {
				return err
			}
			p.X = float64(i)
			res.Points = append(res.Points, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	a, b := res.Points[0], res.Points[1]
	t := &report.Table{
		Title:   fmt.Sprintf("%s against %s hosts across %s (%v, %v RTT)", b.Label, a.Label, x.Path, x.path.Rate, x.path.RTT),
		Columns: []string{"hosts", "n", "mean Mbit/s", "SD", "95% CI of mean", "median"},
	}
	for _, p := range res.Points {
		s := p.Summary
		t.Rows = append(t.Rows, []string{p.Label, fmt.Sprint(s.N), fmtMbit(s.Mean), fmtMbit(s.SD), fmtCI(s), fmtMbit(s.Median)})
	}
	factor := b.Summary.Mean / a.Summary.Mean
	t.Notes = append(t.Notes, fmt.Sprintf("improvement: %.2f× (the Web100 paper: 11.8 → 41.3 Mbit/s, a factor of four)", factor))
	if c, err := stats.Welch(a.Runs, b.Runs); err == nil {
		res.Comparison = &c
		t.Notes = append(t.Notes, fmt.Sprintf("Welch's t-test: t = %.2f, df = %.1f, p = %.2g", c.T, c.DF, c.P))
	}
	res.Table = t
	res.Chart = barChart(t.Title, res.Points)
	return res, nil
}

// ccCompare: congestion control algorithms on a long path with loss
// (0.1% is added when the path has none).
func ccCompare(ctx context.Context, x *exp) (*Result, error) {
	path := x.path
	if path.MeanLoss() == 0 {
		path.Loss = 0.001
	}
	res := &Result{}
	err := x.withTestbed(ctx, path, x.host, x.host, func(tb Testbed) error {
		for i, cc := range []string{"cubic", "bbr", "reno"} {
			cfg := x.config(x.host)
			cfg.Congestion = cc
			p, err := x.measure(ctx, tb, cc, cfg, x.repeat(3))
			if err != nil {
				return err
			}
			p.X = float64(i)
			p.Model = math.Min(float64(tcpmath.Mathis(mss(&path), path.RTT, path.MeanLoss(), x.MathisC)), capacity(&path))
			res.Points = append(res.Points, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("congestion control on %s (%v, %v RTT, loss %g%%)", x.Path, path.Rate, path.RTT, 100*path.MeanLoss())
	res.Table = pointsTable(title, "algorithm", res.Points, true)
	res.Table.Notes = []string{"model: the Mathis bound, which loss-based algorithms (reno, cubic) obey and bbr, which does not treat loss as congestion, need not"}
	res.Chart = barChart(title, res.Points)
	return res, nil
}

// parallel: more streams share the loss, each obeying its own Mathis
// bound, so N streams get about N times one's rate until the path fills.
func parallel(ctx context.Context, x *exp) (*Result, error) {
	counts := pick(x, []int{1, 2, 4, 8}, []int{1, 4})
	res := &Result{}
	err := x.withTestbed(ctx, x.path, x.host, x.host, func(tb Testbed) error {
		for _, n := range counts {
			cfg := x.config(x.host)
			cfg.Parallel = n
			p, err := x.measure(ctx, tb, fmt.Sprintf("%d", n), cfg, x.repeat(1))
			if err != nil {
				return err
			}
			p.X = float64(n)
			one := float64(tcpmath.Mathis(mss(&x.path), x.path.RTT, x.path.MeanLoss(), x.MathisC))
			p.Model = math.Min(float64(n)*one, capacity(&x.path))
			res.Points = append(res.Points, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("parallel streams on %s (%v, %v RTT, loss %g%%)", x.Path, x.path.Rate, x.path.RTT, 100*x.path.MeanLoss())
	res.Table = pointsTable(title, "streams", res.Points, true)
	res.Table.Notes = []string{"model: N × the Mathis bound of one stream, at most the path's payload rate"}
	res.Chart = chartOf(title, "parallel streams", false, res.Points, "N × Mathis")
	return res, nil
}

// barChart draws categories as bars with their intervals.
func barChart(title string, pts []Point) *report.Chart {
	c := chartOf(title, "", false, pts, "model")
	for _, p := range pts {
		c.Categories = append(c.Categories, p.Label)
	}
	return c
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range xs {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
