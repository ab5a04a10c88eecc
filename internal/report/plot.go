package report

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart is measurements plotted beside the models that predict them:
// people would rather see the curve.
type Chart struct {
	Title, XLabel, YLabel string
	LogX                  bool
	// Categories, when set, makes a bar chart: point i of each
	// measurement series is a bar over Categories[i]; model series are
	// drawn as marks over the bars.
	Categories []string
	Series     []Series
}

// Series is one named line.
type Series struct {
	Name   string
	Points []Point
	// Model series (a bound, a formula) are drawn as dashed lines without
	// markers; measurements as markers joined by lines.
	Model bool
}

// Point is one x, y, with an optional interval [Low, High] around y (a
// confidence interval) drawn as an error bar when Low < High.
type Point struct {
	X, Y, Low, High float64
}

// WritePlot renders c as "png" or "svg" to w.
func WritePlot(w io.Writer, c *Chart, format string) error {
	if format != "png" && format != "svg" {
		return fmt.Errorf("plot: format %q: want png or svg", format)
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Add(plotter.NewGrid())
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if len(c.Categories) > 0 {
		if err := addBars(p, c); err != nil {
			return err
		}
		return render(w, p, format)
	}
	for i, s := range c.Series {
		xys := make(plotter.XYs, 0, len(s.Points))
		var bars errPoints
		for _, pt := range s.Points {
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || (c.LogX && pt.X <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			if pt.Low < pt.High {
				bars = append(bars, pt)
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		if s.Model {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(line)
			p.Legend.Add(s.Name, line)
			continue
		}
		pts, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		pts.Color = plotutil.Color(i)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2.5)
		p.Add(line, pts)
		p.Legend.Add(s.Name, line, pts)
		if len(bars) > 0 {
			eb, err := plotter.NewYErrorBars(bars)
			if err != nil {
				return fmt.Errorf("plot %s: %w", s.Name, err)
			}
			eb.Color = color.Gray{Y: 80}
			p.Add(eb)
		}
	}
	return render(w, p, format)
}

func render(w io.Writer, p *plot.Plot, format string) error {
	wt, err := p.WriterTo(16*vg.Centimeter, 10*vg.Centimeter, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write: %w", err)
	}
	return nil
}

// addBars draws measurement series as bars over the categories, with
// their intervals, and model series as marks.
func addBars(p *plot.Plot, c *Chart) error {
	p.NominalX(c.Categories...)
	var bars []Series
	for _, s := range c.Series {
		if !s.Model {
			bars = append(bars, s)
		}
	}
	width := vg.Points(60) / vg.Length(max(len(bars), 1))
	for i, s := range bars {
		vals := make(plotter.Values, len(c.Categories))
		var errs errPoints
		for j := range vals {
			if j < len(s.Points) {
				vals[j] = s.Points[j].Y
				if pt := s.Points[j]; pt.Low < pt.High {
					errs = append(errs, Point{X: float64(j), Y: pt.Y, Low: pt.Low, High: pt.High})
				}
			}
		}
		b, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		b.Color = plotutil.Color(i + 2)
		b.LineStyle.Width = 0
		b.Offset = width * vg.Length(i-len(bars)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return fmt.Errorf("plot %s: %w", s.Name, err)
			}
			p.Add(eb)
		}
	}
	for i, s := range c.Series {
		if !s.Model {
			continue
		}
		xys := make(plotter.XYs, 0, len(s.Points))
		for j, pt := range s.Points {
			if !math.IsNaN(pt.Y) && !math.IsInf(pt.Y, 0) {
				xys = append(xys, plotter.XY{X: float64(j), Y: pt.Y})
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.Name, err)
		}
		sc.Shape = draw.CrossGlyph{}
		sc.Radius = vg.Points(6)
		sc.Color = plotutil.Color(i)
		p.Add(sc)
		p.Legend.Add(s.Name, sc)
	}
	return nil
}

// errPoints adapts points with intervals to gonum's error-bar plotter.
type errPoints []Point

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].X, e[i].Y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].Y - e[i].Low, e[i].High - e[i].Y }
