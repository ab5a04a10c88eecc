package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Query selects archived runs; zero fields match everything.
type Query struct {
	Since, Until time.Time // started in [Since, Until)
	Peer         string
	Label        string
	Origin       model.Side
	Finding      string // runs with this finding among their diagnosis
	Limit        int    // the newest Limit runs; 0: all
}

// where renders q as a WHERE clause with numbered arguments.
func (q Query) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if !q.Since.IsZero() {
		add("r.started_at >= ?", q.Since.UTC())
	}
	if !q.Until.IsZero() {
		add("r.started_at < ?", q.Until.UTC())
	}
	if q.Peer != "" {
		add("r.peer = ?", q.Peer)
	}
	if q.Label != "" {
		add("r.label = ?", q.Label)
	}
	if q.Origin != "" {
		add("r.origin = ?", string(q.Origin))
	}
	if q.Finding != "" {
		add("EXISTS (SELECT 1 FROM findings f WHERE f.run_id = r.id AND f.finding = ?)", q.Finding)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

const recordColumns = `r.id, r.started_at, r.saved_at, r.origin, r.host, r.peer, r.tool, r.label, r.protocol,
	r.streams, r.mode, r.duration_ns, r.ended, r.primary_finding`

// List returns the runs q selects, oldest first (the newest q.Limit of
// them when it is set), each with its direction summaries.
func (a *Archive) List(ctx context.Context, q Query) ([]Record, error) {
	where, args := q.where()
	stmt := `SELECT ` + recordColumns + ` FROM runs r` + where + ` ORDER BY r.started_at DESC, r.id DESC`
	if q.Limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := a.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Record
	byID := map[int64]int{}
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		byID[rec.ID] = len(out)
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if err := a.fillDirections(ctx, out, byID, where, args); err != nil {
		return nil, err
	}
	slices.Reverse(out) // oldest first reads like a log; the query took the newest
	return out, nil
}

func (a *Archive) fillDirections(ctx context.Context, recs []Record, byID map[int64]int, where string, args []any) error {
	if len(recs) == 0 {
		return nil
	}
	rows, err := a.db.QueryContext(ctx, `SELECT d.run_id, d.direction, d.goodput_bps, d.sender_bytes, d.receiver_bytes,
		d.retrans_segs, d.loss_rate, d.min_rtt_ns, d.mean_rtt_ns
		FROM directions d JOIN runs r ON r.id = d.run_id`+where+` ORDER BY d.run_id, d.direction`, args...)
	if err != nil {
		return fmt.Errorf("list runs: directions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var s model.DirectionSummary
		var dir string
		var goodput, loss sql.NullFloat64
		var sent, recv, retrans, minRTT, meanRTT sql.NullInt64
		if err := rows.Scan(&id, &dir, &goodput, &sent, &recv, &retrans, &loss, &minRTT, &meanRTT); err != nil {
			return fmt.Errorf("list runs: directions: %w", err)
		}
		i, ok := byID[id]
		if !ok {
			continue // beyond the limit
		}
		s.Direction = model.Direction(dir)
		s.Goodput = optOf(goodput.Valid, model.Bitrate(goodput.Float64))
		s.SenderBytes = optOf(sent.Valid, model.Bytes(sent.Int64))
		s.ReceiverBytes = optOf(recv.Valid, model.Bytes(recv.Int64))
		s.RetransSegs = optOf(retrans.Valid, uint32(retrans.Int64))
		s.LossRate = optOf(loss.Valid, loss.Float64)
		s.MinRTT = optOf(minRTT.Valid, time.Duration(minRTT.Int64))
		s.MeanRTT = optOf(meanRTT.Valid, time.Duration(meanRTT.Int64))
		recs[i].Directions = append(recs[i].Directions, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list runs: directions: %w", err)
	}
	return nil
}

type scanner interface{ Scan(...any) error }

// scanRecord reads recordColumns, then any further columns into extra.
func scanRecord(row scanner, extra ...any) (Record, error) {
	var r Record
	var origin string
	var dur int64
	err := row.Scan(append([]any{&r.ID, &r.Start, &r.Saved, &origin, &r.Host, &r.Peer, &r.Tool, &r.Label, &r.Protocol,
		&r.Streams, &r.Mode, &dur, &r.Ended, &r.Primary}, extra...)...)
	r.Origin, r.Duration = model.Side(origin), time.Duration(dur)
	r.Start, r.Saved = r.Start.UTC(), r.Saved.UTC()
	return r, err
}

// Get returns one archived run: its row and the run itself, whole.
func (a *Archive) Get(ctx context.Context, id int64) (Record, *model.Run, error) {
	var doc string
	row := a.db.QueryRowContext(ctx, `SELECT `+recordColumns+`, r.document FROM runs r WHERE r.id = $1`, id)
	rec, err := scanRecord(row, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, nil, fmt.Errorf("get run %d: %w", id, err)
	}
	var run model.Run
	if err := json.Unmarshal([]byte(doc), &run); err != nil {
		return Record{}, nil, fmt.Errorf("get run %d: its document: %w", id, err)
	}
	rec.Directions = run.Summary
	return rec, &run, nil
}

// Delete removes the runs q selects and returns how many; an empty
// query is refused, so a slip cannot empty the archive.
func (a *Archive) Delete(ctx context.Context, q Query) (int64, error) {
	where, args := q.where()
	if where == "" {
		return 0, errors.New("delete runs: no condition (give a time range, peer, label or finding)")
	}
	res, err := a.db.ExecContext(ctx, `DELETE FROM runs WHERE id IN (SELECT r.id FROM runs r`+where+`)`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete runs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete runs: %w", err)
	}
	return n, nil
}

// optOf is a column read back: absent where it was NULL.
func optOf[T any](valid bool, v T) model.Opt[T] {
	if !valid {
		return model.Opt[T]{}
	}
	return model.Some(v)
}
