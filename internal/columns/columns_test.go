package columns

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
)

// tabwriterOf is what the table must equal: the rows written to
// tabwriter as tab-terminated cells.
func tabwriterOf(rows [][]string, padding int) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, padding, ' ', tabwriter.AlignRight)
	for _, r := range rows {
		tw.Write([]byte(strings.Join(r, "\t") + "\t\n"))
	}
	tw.Flush()
	return b.String()
}

// layout lays rows out in one table, and split in parts tables laid out
// as one; both must agree.
func layout(t *testing.T, rows [][]string, cols, padding, parts int) string {
	t.Helper()
	fill := func(rows [][]string) *Table {
		tb := New(cols, padding)
		tb.Grow(len(rows), 8)
		for i, r := range rows {
			for j, c := range r {
				if (i+j)%2 == 0 {
					tb.Cell(c)
				} else {
					tb.CellBytes([]byte(c))
				}
			}
		}
		return tb
	}
	one := string(fill(rows).AppendTo([]byte("before\n")))
	var tables []*Table
	for p := range parts {
		tables = append(tables, fill(rows[p*len(rows)/parts:(p+1)*len(rows)/parts]))
	}
	if split := string(AppendAll([]byte("before\n"), tables...)); split != one {
		t.Errorf("in %d parts:\n%q\nin one:\n%q", parts, split, one)
	}
	return one
}

func TestLikeTabwriter(t *testing.T) {
	tables := map[string][][]string{
		"a header and rows": {
			{"local", "remote", "state", "", "goodput"},
			{"127.0.0.1:5201", "127.0.0.1:40000", "established", "→", "9.41 Gbit/s"},
			{"[2001:db8::1]:22", "[2001:db8::2]:51234", "time-wait", "←", "0 bit/s"},
		},
		"empty cells and columns": {{"", "", "x"}, {"", "", ""}},
		"one row":                 {{"only"}},
		"no rows":                 {},
		"wide runes and bad UTF-8": {
			{"naïve", "日本語", "\xc3", "é"},
			{"a", "b", "c\xff\xfe", "→←"},
		},
		"tabwriter's own characters": {
			{"a\tb", "c"},
			{"new\nline", "vtab\vx"},
			{"form\ffeed", "esc\xffaped\xff"},
		},
	}
	for name, rows := range tables {
		cols := 1
		if len(rows) > 0 {
			cols = len(rows[0])
		}
		for _, padding := range []int{0, 1, 2, 5} {
			want := "before\n" + tabwriterOf(rows, padding)
			if got := layout(t, rows, cols, padding, 1+padding%3); got != want {
				t.Errorf("%s, padding %d:\ngot\n%q\nwant\n%q", name, padding, got, want)
			}
		}
	}
	// Random tables, some with a character of tabwriter's.
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "bc", "1.25 MiB", "→", "é", " ", "", "\xc3", "process/4711"}
	for range 300 {
		cols := 1 + r.IntN(6)
		rows := make([][]string, r.IntN(12))
		for i := range rows {
			for range cols {
				var c strings.Builder
				for range r.IntN(4) {
					c.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				if r.IntN(200) == 0 {
					c.WriteString("\t")
				}
				rows[i] = append(rows[i], c.String())
			}
		}
		want := "before\n" + tabwriterOf(rows, 2)
		if got := layout(t, rows, cols, 2, 1+r.IntN(3)); got != want {
			t.Fatalf("%q:\ngot\n%q\nwant\n%q", rows, got, want)
		}
	}
}

func TestIncompleteRowPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a table with half a row laid out")
		}
	}()
	tb := New(2, 2)
	tb.Cell("a")
	tb.AppendTo(nil)
}

// Columns left out are laid out as tabwriter lays out the rows without
// them, in one table or several, on the fast path and through tabwriter.
func TestAppendColumnsLikeTabwriterWithout(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []string{"a", "bc", "[2001:db8::1]:443", "→", "é", "", "\xc3", "iperf3/4711"}
	for range 300 {
		cols := 1 + r.IntN(6)
		rows := make([][]string, r.IntN(12))
		for i := range rows {
			for range cols {
				var c strings.Builder
				for range r.IntN(4) {
					c.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				if r.IntN(100) == 0 {
					c.WriteString("\t")
				}
				rows[i] = append(rows[i], c.String())
			}
		}
		keep := make([]bool, cols)
		var kept [][]string
		for c := range keep {
			keep[c] = r.IntN(3) > 0
		}
		keep[r.IntN(cols)] = true // a line of no cells is no line tabwriterOf can write
		for _, row := range rows {
			var k []string
			for c, cell := range row {
				if keep[c] {
					k = append(k, cell)
				}
			}
			kept = append(kept, k)
		}
		parts := 1 + r.IntN(3)
		var tables []*Table
		for p := range parts {
			tb := New(cols, 2)
			for _, row := range rows[p*len(rows)/parts : (p+1)*len(rows)/parts] {
				for _, c := range row {
					tb.Cell(c)
				}
			}
			tables = append(tables, tb)
		}
		want := "before\n" + tabwriterOf(kept, 2)
		if got := string(AppendColumns([]byte("before\n"), keep, tables...)); got != want {
			t.Fatalf("%q without %v:\ngot\n%q\nwant\n%q", rows, keep, got, want)
		}
	}
}

func TestFit(t *testing.T) {
	widths := []int{10, 10, 5, 3, 8}
	for _, c := range []struct {
		width    int
		wantKeep []bool
		wantLine int
	}{
		{100, []bool{true, true, true, true, true}, 46},
		{46, []bool{true, true, true, true, true}, 46},
		{45, []bool{true, true, true, false, true}, 41},   // the first to go
		{36, []bool{true, true, false, false, true}, 34},  // the next
		{20, []bool{true, true, false, false, false}, 24}, // still over: nothing more to leave out
	} {
		keep, line := Fit(widths, 2, c.width, []int{3, 2, 4})
		if !slices.Equal(keep, c.wantKeep) || line != c.wantLine {
			t.Errorf("width %d: kept %v, line %d; want %v, %d", c.width, keep, line, c.wantKeep, c.wantLine)
		}
	}
}
