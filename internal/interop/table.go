package interop

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Tally is one case's outcome one way over its rounds.
type Tally struct {
	Runs   int `json:"runs"`
	Passed int `json:"passed"`
	// MaxGap is the largest relative difference between a flow's two
	// rates over the runs that moved data.
	MaxGap float64 `json:"max_gap"`
	// Failures counts each distinct failure text.
	Failures map[string]int `json:"failures,omitempty"`
	Why      string         `json:"why,omitempty"` // why the way is not served, if it is not
	// Per run: the kernel's segment counts (Segments) and the client's
	// wall time in seconds.
	Segments []Segments `json:"segments,omitempty"`
	Wall     []float64  `json:"wall_s,omitempty"`
}

// MergeTallies adds part's tallies to m (runs of the same case and way
// add up).
func MergeTallies(m, part map[string]map[Way]*Tally) {
	for c, byWay := range part {
		if m[c] == nil {
			m[c] = map[Way]*Tally{}
		}
		for w, t := range byWay {
			old := m[c][w]
			if old == nil {
				m[c][w] = t
				continue
			}
			old.Runs += t.Runs
			old.Passed += t.Passed
			old.Segments = append(old.Segments, t.Segments...)
			old.Wall = append(old.Wall, t.Wall...)
			old.MaxGap = max(old.MaxGap, t.MaxGap)
			if old.Failures == nil {
				old.Failures = map[string]int{}
			}
			for k, n := range t.Failures {
				old.Failures[k] += n
			}
		}
	}
}

// Matrix runs every case every way, rounds times, interleaved (round by
// round, so a slow moment of the machine falls on all ways alike), and
// tallies the checks. The reference runs in the first refRounds rounds
// only; with refRounds 0, once (keys and -k are held to it). progress, if not nil,
// hears each result.
func (h *Harness) Matrix(ctx context.Context, cases []Case, rounds, refRounds int, progress func(Result, []string)) map[string]map[Way]*Tally {
	return h.MatrixOf(ctx, cases, Ways, rounds, refRounds, progress)
}

// MatrixOf is Matrix over some ways only (the reference still runs where
// a check needs it).
func (h *Harness) MatrixOf(ctx context.Context, cases []Case, ways []Way, rounds, refRounds int, progress func(Result, []string)) map[string]map[Way]*Tally {
	out := map[string]map[Way]*Tally{}
	for _, c := range cases {
		out[c.Name] = map[Way]*Tally{}
		for _, w := range Ways {
			t := &Tally{Failures: map[string]int{}}
			if ok, why := c.Served(w); !ok {
				t.Why = why
			} else if c.IPv6 && h.Across != nil {
				t.Why = "IPv6 does not run across the path"
			} else if !slices.Contains(ways, w) {
				t.Why = "not run this time"
			}
			out[c.Name][w] = t
		}
	}
	refs := map[string]*Result{}
	for round := range rounds {
		for _, c := range cases {
			if ctx.Err() != nil {
				return out
			}
			ref := refs[c.Name]
			fresh := false
			// The reference runs at least once: every check of keys
			// and of -k holds a case to it.
			if ok, _ := c.Served(Reference); ok && !(c.IPv6 && h.Across != nil) && (ref == nil || round < refRounds) {
				rs := h.Run(ctx, c, Reference)
				ref, fresh = &rs[0], true
				refs[c.Name] = ref
			}
			for _, w := range Ways {
				t := out[c.Name][w]
				if t.Why != "" || w == Reference && !fresh {
					continue
				}
				rs := []Result{}
				if w == Reference {
					rs = append(rs, *ref)
				} else {
					rs = h.Run(ctx, c, w)
				}
				for _, r := range rs {
					bad := Check(c, r, ref)
					t.Runs++
					if len(bad) == 0 {
						t.Passed++
					}
					for _, b := range bad {
						t.Failures[b]++
					}
					for _, f := range r.Flows {
						t.MaxGap = max(t.MaxGap, relDiff(f.SentRate, f.RecvRate))
					}
					if r.Segments != nil {
						t.Segments = append(t.Segments, *r.Segments)
					}
					if r.Client == 0 && r.Harness == nil {
						t.Wall = append(t.Wall, r.Wall.Seconds())
					}
					if progress != nil {
						progress(r, bad)
					}
				}
			}
		}
	}
	return out
}

// WriteTable writes the tally as a Markdown table: per case and way,
// the runs that passed every check, the largest rate gap, and the
// failures seen.
func WriteTable(w io.Writer, cases []Case, m map[string]map[Way]*Tally) {
	fmt.Fprintf(w, "| mode | %s | %s | %s (reference) |\n|---|---|---|---|\n", StockToTcpscope, TcpscopeToStock, Reference)
	var notes []string
	for _, c := range cases {
		cells := []string{"`" + c.Name + "`"}
		for _, way := range Ways {
			t := m[c.Name][way]
			switch {
			case t == nil:
				cells = append(cells, "—")
			case t.Why != "":
				cells = append(cells, "not run: "+t.Why)
			case t.Runs == 0:
				cells = append(cells, "—")
			default:
				cell := fmt.Sprintf("%d/%d, rates ≤ %.2f%% apart", t.Passed, t.Runs, 100*t.MaxGap)
				if len(t.Failures) > 0 {
					notes = append(notes, fmt.Sprintf("- `%s`, %s: %s", c.Name, way, failureText(t.Failures)))
					cell += " ¹"
				}
				cells = append(cells, cell)
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n¹ failures, with how many runs each:\n\n%s\n", strings.Join(notes, "\n"))
	}
}

func failureText(f map[string]int) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return f[keys[i]] > f[keys[j]] || f[keys[i]] == f[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for i, k := range keys {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", k, f[k]))
	}
	return strings.Join(parts, "; ")
}

// WriteCostTable writes what each way cost the transfer, per case: the
// median of the kernel's retransmissions, duplicate SACKs and segments
// queued out of order per run, each way's retransmissions as a ratio to
// the reference's (what a server's or a client's own mechanism adds to
// what a user reads as "Retr"), and the median wall time of a client.
func WriteCostTable(w io.Writer, cases []Case, m map[string]map[Way]*Tally) {
	fmt.Fprintf(w, "| mode | retransmitted / DSACKed / out of order, median per run: %s | %s | %s | retransmissions against the reference | wall time, median |\n|---|---|---|---|---|---|\n",
		StockToTcpscope, TcpscopeToStock, Reference)
	for _, c := range cases {
		cells := []string{"`" + c.Name + "`"}
		var ratios, walls []string
		ref := m[c.Name][Reference]
		for _, way := range Ways {
			t := m[c.Name][way]
			if t == nil || len(t.Segments) == 0 {
				cells = append(cells, "—")
				continue
			}
			r, d, o := medianSegments(t.Segments)
			cells = append(cells, fmt.Sprintf("%d / %d / %d", r, d, o))
			if len(t.Wall) > 0 {
				walls = append(walls, fmt.Sprintf("%.2f s", median(t.Wall)))
			}
			if way == Reference || ref == nil || len(ref.Segments) == 0 {
				continue
			}
			rr, _, _ := medianSegments(ref.Segments)
			ratios = append(ratios, ratioText(r, rr))
		}
		cells = append(cells, strings.Join(ratios, ", "), strings.Join(walls, ", "))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// RetransRatio is a way's median retransmissions over the reference's,
// and whether both were measured; where the reference retransmitted
// nothing, the ratio is that of one more segment each, so that a few
// segments against none read as a few times, not infinitely many.
func RetransRatio(t, ref *Tally) (float64, bool) {
	if t == nil || ref == nil || len(t.Segments) == 0 || len(ref.Segments) == 0 {
		return 0, false
	}
	r, _, _ := medianSegments(t.Segments)
	rr, _, _ := medianSegments(ref.Segments)
	if rr == 0 {
		return float64(r+1) / float64(rr+1), true
	}
	return float64(r) / float64(rr), true
}

func ratioText(r, ref int64) string {
	if ref == 0 {
		if r == 0 {
			return "1×"
		}
		return fmt.Sprintf("+%d", r)
	}
	return fmt.Sprintf("%.2f×", float64(r)/float64(ref))
}

// medianSegments is the median of each count over runs.
func medianSegments(s []Segments) (retrans, dsacks, ooo int64) {
	var a, b, c []float64
	for _, x := range s {
		a, b, c = append(a, float64(x.Retrans)), append(b, float64(x.DSACKs)), append(c, float64(x.OutOfOrder))
	}
	return int64(median(a)), int64(median(b)), int64(median(c))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
