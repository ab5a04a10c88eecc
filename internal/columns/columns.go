// Package columns lays text out in right-aligned columns exactly as
// text/tabwriter does with AlignRight, a minimum width of 0 and spaces for
// padding: every cell padded on its left to its column's widest cell (in
// runes) plus the padding.
//
// It exists for speed. A connection list on a busy host has tens of
// thousands of rows, and tabwriter, which parses its input for tabs and
// escapes and keeps a cell record per cell, took longer to lay them out
// than the kernel took to list them. A Table takes its cells already
// split, keeps their text in one buffer and each column's width as it
// goes, and writes the padded lines in one pass into a buffer sized in
// advance. A cell holding a character tabwriter gives a meaning to (a
// tab, newline, vertical tab, form feed or tabwriter.Escape) sends the
// whole table through tabwriter itself, so the output is tabwriter's in
// every case.
package columns

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"text/tabwriter"
	"unicode/utf8"
)

// Table is text in right-aligned columns, filled a row at a time, left to
// right. The zero value is not ready: use New.
type Table struct {
	cols, padding int
	// text holds every cell's text, one after the other; cells[i] is
	// where cell i ends and its width (row r's cell c is cell r*cols+c).
	text  []byte
	cells []cell
	// widths is each column's widest cell so far, in runes; extra is,
	// per column, the bytes its cells' text takes beyond their widths.
	widths []int
	extra  []int
	// special is set by a cell tabwriter would not take as plain text.
	special bool
}

// New makes a table of rows of cols cells, its columns separated by at
// least padding spaces.
func New(cols, padding int) *Table {
	return &Table{cols: cols, padding: padding, widths: make([]int, cols), extra: make([]int, cols)}
}

// Grow makes room for rows more rows of about cellBytes bytes a cell.
func (t *Table) Grow(rows, cellBytes int) {
	t.text = slices.Grow(t.text, rows*t.cols*cellBytes)
	t.cells = slices.Grow(t.cells, rows*t.cols)
}

// Cell adds the next cell.
func (t *Table) Cell(s string) {
	t.text = append(t.text, s...)
	t.ended(len(s))
}

// CellBytes adds the next cell; b is copied.
func (t *Table) CellBytes(b []byte) {
	t.text = append(t.text, b...)
	t.ended(len(b))
}

// cell is where a cell's text ends in Table.text, and its width.
type cell struct{ end, width int32 }

// ended records the cell of n bytes just appended to text.
func (t *Table) ended(n int) {
	text := t.text[len(t.text)-n:]
	w := n
	for _, c := range text {
		if c >= utf8.RuneSelf || c < ' ' {
			// Runes, as tabwriter counts them (a byte that is not
			// UTF-8 counts as one).
			w = utf8.RuneCount(text)
			t.special = t.special || hasSpecial(text)
			break
		}
	}
	col := len(t.cells) % t.cols
	t.cells = append(t.cells, cell{int32(len(t.text)), int32(w)})
	t.widths[col] = max(t.widths[col], w)
	t.extra[col] += n - w
}

// hasSpecial reports a byte tabwriter gives a meaning to.
func hasSpecial(b []byte) bool {
	for _, c := range b {
		switch c {
		case '\t', '\n', '\v', '\f', tabwriter.Escape:
			return true
		}
	}
	return false
}

// Rows is how many rows the table has.
func (t *Table) Rows() int { return len(t.cells) / t.cols }

// AppendTo appends the table's lines to b: for each row, each cell right
// aligned in its column and followed by nothing (the line's last cell too
// is padded), then a newline. It is what tabwriter writes for lines of
// tab-terminated cells ("a\tb\t\n"). A row left incomplete is a mistake
// of the caller's, and panics.
func (t *Table) AppendTo(b []byte) []byte { return AppendAll(b, t) }

// AppendAll appends tables of as many columns as one: the rows of each in
// turn, every column as wide as its widest cell in any of them. Tables
// filled side by side, a part of the rows each, are laid out side by side
// too, each into its own stretch of b.
func AppendAll(b []byte, tables ...*Table) []byte { return AppendColumns(b, nil, tables...) }

// Widths is each column's widest cell in any of tables, in runes (as
// tabwriter counts them): what AppendAll pads each column to, less the
// padding.
func Widths(tables ...*Table) []int {
	if len(tables) == 0 {
		return nil
	}
	widths := make([]int, tables[0].cols)
	for _, t := range tables {
		for c, w := range t.widths {
			widths[c] = max(widths[c], w)
		}
	}
	return widths
}

// Fit chooses the columns that fit lines of width runes: each column
// takes its width (widths, in runes) and padding, and columns are left
// out in the order drop names, as many as it takes and no more. It
// returns which columns are kept and the kept line's width, which is
// still over width when leaving out every column drop names was not
// enough. A list that shrinks with the screen this way keeps what
// matters most, and shows the rest again when the screen is wider.
func Fit(widths []int, padding, width int, drop []int) (keep []bool, line int) {
	keep = make([]bool, len(widths))
	for c, w := range widths {
		keep[c] = true
		line += w + padding
	}
	for _, c := range drop {
		if line <= width {
			break
		}
		if keep[c] {
			keep[c], line = false, line-widths[c]-padding
		}
	}
	return keep, line
}

// AppendColumns appends tables as AppendAll does, with only the columns
// keep marks (nil keeps all): exactly what tabwriter writes for the
// rows without the other columns' cells.
func AppendColumns(b []byte, keep []bool, tables ...*Table) []byte {
	if len(tables) == 0 {
		return b
	}
	cols, padding := tables[0].cols, tables[0].padding
	special := false
	for _, t := range tables {
		if t.cols != cols || t.padding != padding {
			panic("columns: tables of different shapes laid out as one")
		}
		if len(t.cells)%t.cols != 0 {
			panic(fmt.Sprintf("columns: a row of %d cells left incomplete (rows have %d)", len(t.cells)%t.cols, t.cols))
		}
		special = special || t.special
	}
	if keep == nil {
		keep = make([]bool, cols)
		for c := range keep {
			keep[c] = true
		}
	} else if len(keep) != cols {
		panic(fmt.Sprintf("columns: %d columns kept or not of %d", len(keep), cols))
	}
	if special {
		return viaTabwriter(b, keep, tables)
	}
	// A left-out column is as wide as nothing, and its cells' text is
	// skipped.
	widths := Widths(tables...)
	line := 0
	for c, w := range widths {
		if keep[c] {
			line += w + padding
		} else {
			widths[c] = -1
		}
	}
	// Every row takes line bytes of padding and text, plus the bytes its
	// kept cells' text takes beyond their runes, and a newline: each
	// table's stretch is known before any is written.
	start := make([]int, len(tables)+1)
	start[0] = len(b)
	for i, t := range tables {
		extra := 0
		for c, e := range t.extra {
			if keep[c] {
				extra += e
			}
		}
		start[i+1] = start[i] + t.Rows()*(line+1) + extra
	}
	b = slices.Grow(b, start[len(tables)]-len(b))[:start[len(tables)]]
	var wg sync.WaitGroup
	for i, t := range tables {
		lay := func() { t.layout(b[start[i]:start[i]:start[i+1]], widths) }
		if i == len(tables)-1 {
			lay()
		} else {
			wg.Go(lay)
		}
	}
	wg.Wait()
	return b
}

// layout appends the table's lines to b, which has room for them; a
// column of width -1 is left out.
func (t *Table) layout(b []byte, widths []int) {
	start := int32(0)
	for r := range t.Rows() {
		for c, w := range widths {
			cell := t.cells[r*t.cols+c]
			if w < 0 {
				start = cell.end
				continue
			}
			b = appendSpaces(b, w+t.padding-int(cell.width))
			b = append(b, t.text[start:cell.end]...)
			start = cell.end
		}
		b = append(b, '\n')
	}
}

// viaTabwriter lays tables out, as one, with tabwriter itself: the
// columns keep marks.
func viaTabwriter(b []byte, keep []bool, tables []*Table) []byte {
	buf := bytes.NewBuffer(b)
	tw := tabwriter.NewWriter(buf, 0, 0, tables[0].padding, ' ', tabwriter.AlignRight)
	for _, t := range tables {
		start := int32(0)
		for i, c := range t.cells {
			if keep[i%t.cols] {
				tw.Write(t.text[start:c.end])
				tw.Write([]byte{'\t'})
			}
			if i%t.cols == t.cols-1 {
				tw.Write([]byte{'\n'})
			}
			start = c.end
		}
	}
	tw.Flush()
	return buf.Bytes()
}

const spaces = "                                                                "

func appendSpaces(b []byte, n int) []byte {
	for n > len(spaces) {
		b = append(b, spaces...)
		n -= len(spaces)
	}
	return append(b, spaces[:n]...)
}
