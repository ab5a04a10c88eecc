package archive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/archive/pgtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// backends runs fn against a fresh SQLite file and a fresh, real
// PostgreSQL (skipped where PostgreSQL is not installed).
func backends(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, filepath.Join(t.TempDir(), "a.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.Start(t)) })
}

func open(t *testing.T, dsn string) *Archive {
	t.Helper()
	a, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// run builds a run as a client records it: goodput in Mbit/s, one
// direction, a primary finding.
func run(start time.Time, mbit float64, finding string) *model.Run {
	return &model.Run{
		Schema: model.SchemaVersion, Start: start, Server: "192.0.2.7:5201",
		Config: model.TestConfig{Protocol: model.TCP, Duration: 10 * time.Second, Parallel: 2},
		Summary: []model.DirectionSummary{{
			Direction: model.ClientToServer, Streams: 2, SenderBytes: model.Some[model.Bytes](125_000_000), ReceiverBytes: model.Some[model.Bytes](124_000_000),
			Duration: model.Some(10 * time.Second), Goodput: model.Some(model.Bitrate(mbit) * model.MbitPerSecond), RetransSegs: model.Some[uint32](17),
			LossRate: model.Some(0.0012), MinRTT: model.Some(20 * time.Millisecond), MeanRTT: model.Some(23 * time.Millisecond),
		}},
		Diagnosis: []model.Finding{
			{ID: finding, Primary: true, Layer: model.LayerNetwork, Severity: model.Info, Direction: model.ClientToServer, Summary: "s"},
			{ID: "sack-off", Layer: model.LayerTransport, Severity: model.Warning, Summary: "t"},
		},
		Ended: "complete",
	}
}

func TestSaveListGet(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := open(t, dsn)
		t0 := time.Date(2026, 11, 23, 10, 0, 0, 500_000_000, time.UTC)
		var ids []int64
		for i, mbit := range []float64{90, 95, 40} {
			e := Entry{Run: run(t0.Add(time.Duration(i)*time.Hour), mbit, "bottleneck"), Origin: model.ClientSide,
				Host: "a", Peer: "b", Tool: "tcpscope", Label: "lab"}
			if i == 2 {
				e.Run.Diagnosis[0].ID, e.Label = "loss-limited", "other"
			}
			id, err := a.Save(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		all, err := a.List(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || all[0].ID != ids[0] || all[2].ID != ids[2] {
			t.Fatalf("list: %+v", all)
		}
		r := all[1]
		if !r.Start.Equal(t0.Add(time.Hour)) || r.Origin != model.ClientSide || r.Peer != "b" || r.Streams != 2 ||
			r.Mode != "forward" || r.Duration != 10*time.Second || r.Primary != "bottleneck" || r.Protocol != "tcp" {
			t.Errorf("record %+v", r)
		}
		if len(r.Directions) != 1 || r.Directions[0].Goodput.V != 95*model.MbitPerSecond ||
			r.Directions[0].MinRTT != model.Some(20*time.Millisecond) || r.Directions[0].LossRate != model.Some(0.0012) {
			t.Errorf("directions %+v", r.Directions)
		}
		for _, c := range []struct {
			q    Query
			want []int64
		}{
			{Query{Label: "lab"}, ids[:2]},
			{Query{Finding: "loss-limited"}, ids[2:]},
			{Query{Finding: "sack-off"}, ids},
			{Query{Since: t0.Add(30 * time.Minute)}, ids[1:]},
			{Query{Until: t0.Add(30 * time.Minute)}, ids[:1]},
			{Query{Limit: 2}, ids[1:]},
			{Query{Peer: "nobody"}, nil},
			{Query{Origin: model.ServerSide}, nil},
		} {
			got, err := a.List(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []int64
			for _, r := range got {
				gotIDs = append(gotIDs, r.ID)
			}
			if !reflect.DeepEqual(gotIDs, c.want) {
				t.Errorf("%+v: ids %v, want %v", c.q, gotIDs, c.want)
			}
		}
		rec, got, err := a.Get(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		want := run(t0, 90, "bottleneck")
		if rec.ID != ids[0] || !reflect.DeepEqual(got, want) {
			t.Errorf("the document did not come back whole:\n got %+v\nwant %+v", got, want)
		}
		if _, _, err := a.Get(ctx, 9999); !errors.Is(err, ErrNotFound) {
			t.Errorf("get of a missing run: %v", err)
		}
		if _, err := a.Delete(ctx, Query{}); err == nil {
			t.Error("an empty delete was allowed")
		}
		if n, err := a.Delete(ctx, Query{Label: "other"}); n != 1 || err != nil {
			t.Errorf("delete: %d, %v", n, err)
		}
		if left, _ := a.List(ctx, Query{Finding: "loss-limited"}); len(left) != 0 {
			t.Errorf("the deleted run's findings stayed: %+v", left)
		}
	})
}

// Reopening migrates nothing twice and keeps the data; a schema newer
// than the binary is refused, not written to.
func TestReopenAndNewerSchema(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := open(t, dsn)
		if _, err := a.Save(ctx, Entry{Run: run(time.Now(), 10, "bottleneck"), Origin: model.ClientSide}); err != nil {
			t.Fatal(err)
		}
		a.Close()
		b := open(t, dsn)
		if got, err := b.List(ctx, Query{}); err != nil || len(got) != 1 {
			t.Fatalf("after reopening: %d runs, %v", len(got), err)
		}
		if _, err := b.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', $1)`, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if _, err := Open(ctx, dsn); !errors.Is(err, ErrNewerSchema) {
			t.Errorf("a newer schema opened: %v", err)
		}
	})
}

// Several writers at once (a server's tests ending together, hosts of a
// mesh sharing PostgreSQL): every run is stored, none half.
func TestConcurrentWriters(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		const writers, each = 4, 10
		for _, err := range writeAtOnce(ctx, dsn, writers, each, 0) {
			t.Error(err)
		}
		a := open(t, dsn)
		got, err := a.List(ctx, Query{Origin: model.ServerSide})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != writers*each {
			t.Fatalf("%d runs stored, want %d", len(got), writers*each)
		}
		for _, r := range got {
			if len(r.Directions) != 1 {
				t.Errorf("run %d has %d directions", r.ID, len(r.Directions))
			}
		}
	})
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/x/data")
	if p, err := DefaultPath(); err != nil || p != "/x/data/tcpscope/archive.db" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	a := open(t, "")
	if _, err := os.Stat(filepath.Join(dir, "tcpscope", "archive.db")); err != nil || a.Where() != filepath.Join(dir, "tcpscope", "archive.db") {
		t.Errorf("the default archive is not where DefaultPath says: %v, %s", err, a.Where())
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db": "postgres://u:***@h:5432/db",
		"postgres://u@h/db":             "postgres://u@h/db",
		"postgresql://h/db":             "postgresql://h/db",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// writeAtOnce has writers, each with its own archive (its own connection
// pool, as separate processes would have), save each runs at once, the
// w-th opening w×stagger after the first; it returns what failed.
func writeAtOnce(ctx context.Context, dsn string, writers, each int, stagger time.Duration) []error {
	var wg sync.WaitGroup
	errs := make(chan error, writers*(each+1))
	for w := range writers {
		wg.Go(func() {
			time.Sleep(time.Duration(w) * stagger)
			a, err := Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer a.Close()
			for i := range each {
				if _, err := a.Save(ctx, Entry{Run: run(time.Now(), float64(w*100+i), "bottleneck"), Origin: model.ServerSide}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// Opening a SQLite archive beside writers (a server saving runs while
// `archive list` or a second server opens it): SQLite answers some lock
// conflicts at a connection's start with SQLITE_BUSY at once, without
// its busy handler. Before Open retried them, 1 open in about 120 failed
// here on a loaded machine ("database is locked"), and once in a CI-like
// -short run; every open must succeed and every run be stored.
func TestOpenBesideWriters(t *testing.T) {
	ctx := context.Background()
	const rounds, writers, each = 20, 6, 3
	for round := range rounds {
		dsn := filepath.Join(t.TempDir(), "a.db")
		// Each opens a millisecond after the last, while the first ones write.
		if errs := writeAtOnce(ctx, dsn, writers, each, time.Millisecond); len(errs) > 0 {
			t.Fatalf("round %d: %v", round, errs[0])
		}
		got, err := open(t, dsn).List(ctx, Query{Origin: model.ServerSide})
		if err != nil || len(got) != writers*each {
			t.Fatalf("round %d: %d runs stored, want %d (%v)", round, len(got), writers*each, err)
		}
	}
}
