package archive

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations
var migrations embed.FS

// migration is one schema step: NNN_name.sql of the dialect's folder.
type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(d dialect) ([]migration, error) {
	dir := path.Join("migrations", d.name)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: want NNN_name.sql", e.Name())
		}
		b, err := migrations.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration: %w", err)
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations: %d follows %d", m.version, i)
		}
	}
	return out, nil
}

// migrate brings the schema up to date. It holds a lock for the whole
// run, so hosts opening a shared archive at once apply each step exactly
// once: SQLite's write lock (the steps then share its one transaction),
// PostgreSQL's advisory lock (a transaction per step). A schema newer
// than this binary knows is refused rather than written to.
func migrate(ctx context.Context, db *sql.DB, d dialect) (err error) {
	steps, err := loadMigrations(d)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if d.postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, advisoryKey); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		// A fresh context: the unlock must happen even when ctx is done.
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, advisoryKey)
	} else {
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer func() {
			end := "COMMIT"
			if err != nil {
				end = "ROLLBACK"
			}
			if _, e := conn.ExecContext(context.WithoutCancel(ctx), end); e != nil && err == nil {
				err = fmt.Errorf("migrate: %w", e)
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at `+d.timestamp+` NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if have > len(steps) {
		return fmt.Errorf("%w: the archive's schema is version %d, this tcpscope knows up to %d", ErrNewerSchema, have, len(steps))
	}
	for _, m := range steps[have:] {
		if err := apply(ctx, conn, m, d.postgres); err != nil {
			return fmt.Errorf("migrate: %03d_%s: %w", m.version, m.name, err)
		}
	}
	return nil
}

// advisoryKey names tcpscope's migration lock among a PostgreSQL
// database's advisory locks ("tcpscope" in ASCII, truncated).
const advisoryKey int64 = 0x74637073636f7065

// apply runs one step and records it; on PostgreSQL in a transaction of
// its own, so a step that fails leaves the schema as it was.
func apply(ctx context.Context, conn *sql.Conn, m migration, ownTx bool) error {
	type execer interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}
	var ex execer = conn
	var tx *sql.Tx
	if ownTx {
		var err error
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		defer tx.Rollback()
		ex = tx
	}
	if _, err := ex.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := ex.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.version, m.name, time.Now().UTC()); err != nil {
		return err
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}
