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
// only; with refRounds 0, once and only where a check needs it (-k is
// held to stock's count). progress, if not nil,
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
			if ok, _ := c.Served(Reference); ok && (ref == nil && (refRounds > 0 || c.needsReference()) || round < refRounds) {
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
