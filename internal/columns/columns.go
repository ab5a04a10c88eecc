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
	// widths is each column's widest cell so far, in runes; runes is the
	// sum of every cell's width.
	widths []int
	runes  int
	// special is set by a cell tabwriter would not take as plain text.
	special bool
}

// New makes a table of rows of cols cells, its columns separated by at
// least padding spaces.
func New(cols, padding int) *Table {
	return &Table{cols: cols, padding: padding, widths: make([]int, cols)}
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
	t.runes += w
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
func AppendAll(b []byte, tables ...*Table) []byte {
	if len(tables) == 0 {
		return b
	}
	cols, padding := tables[0].cols, tables[0].padding
	widths := make([]int, cols)
	special := false
	for _, t := range tables {
		if t.cols != cols || t.padding != padding {
			panic("columns: tables of different shapes laid out as one")
		}
		if len(t.cells)%t.cols != 0 {
			panic(fmt.Sprintf("columns: a row of %d cells left incomplete (rows have %d)", len(t.cells)%t.cols, t.cols))
		}
		for c, w := range t.widths {
			widths[c] = max(widths[c], w)
		}
		special = special || t.special
	}
	if special {
		return viaTabwriter(b, tables)
	}
	line := 0
	for _, w := range widths {
		line += w + padding
	}
	// Every row takes line bytes of padding and text, less the bytes its
	// text's runes do not take, and a newline: each table's stretch is
	// known before any is written.
	start := make([]int, len(tables)+1)
	start[0] = len(b)
	for i, t := range tables {
		start[i+1] = start[i] + len(t.text) + t.Rows()*line - t.runes + t.Rows()
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

// layout appends the table's lines to b, which has room for them.
func (t *Table) layout(b []byte, widths []int) {
	start := int32(0)
	for r := range t.Rows() {
		for c, w := range widths {
			cell := t.cells[r*t.cols+c]
			b = appendSpaces(b, w+t.padding-int(cell.width))
			b = append(b, t.text[start:cell.end]...)
			start = cell.end
		}
		b = append(b, '\n')
	}
}

// viaTabwriter lays tables out, as one, with tabwriter itself.
func viaTabwriter(b []byte, tables []*Table) []byte {
	buf := bytes.NewBuffer(b)
	tw := tabwriter.NewWriter(buf, 0, 0, tables[0].padding, ' ', tabwriter.AlignRight)
	for _, t := range tables {
		start := int32(0)
		for i, c := range t.cells {
			tw.Write(t.text[start:c.end])
			tw.Write([]byte{'\t'})
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
