package pgtest

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a pgx connection closed at the end of the test.
//
// pgx directly rather than database/sql via pgx/v5/stdlib: stdlib imports
// pgxpool and so github.com/jackc/puddle/v2, which go.sum does not list.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestStartJSONBRoundTrip(t *testing.T) {
	begin := time.Now()
	dsn := Start(t)
	t.Logf("Start took %v", time.Since(begin))

	if !strings.HasPrefix(dsn, "postgres://postgres@127.0.0.1:") || !strings.HasSuffix(dsn, "/tcpscope?sslmode=disable") {
		t.Errorf("DSN %q, want postgres://postgres@127.0.0.1:PORT/tcpscope?sslmode=disable", dsn)
	}
	conn := connect(t, dsn)
	ctx := t.Context()

	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatalf("current_database: %v", err)
	}
	if db != "tcpscope" {
		t.Errorf("connected to database %q, want tcpscope", db)
	}

	if _, err := conn.Exec(ctx, `CREATE TABLE runs (id bigserial PRIMARY KEY, meta jsonb NOT NULL)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	var id int64
	if err := conn.QueryRow(ctx, `INSERT INTO runs (meta) VALUES ($1::jsonb) RETURNING id`,
		`{"target": "10.0.0.1:5201", "streams": 4, "tags": ["lab", "loss"]}`).Scan(&id); err != nil {
		t.Fatalf("insert: %v", err)
	}

	// The server, not the client, interprets the jsonb: operators and
	// normalisation prove it is a real PostgreSQL.
	var target string
	var streams int
	var meta map[string]any
	err := conn.QueryRow(ctx, `SELECT meta->>'target', (meta->'streams')::int, meta FROM runs WHERE id = $1`, id).
		Scan(&target, &streams, &meta)
	if err != nil {
		t.Fatalf("select: %v", err)
	}
	if target != "10.0.0.1:5201" || streams != 4 {
		t.Errorf("target %q streams %d, want 10.0.0.1:5201 and 4", target, streams)
	}
	if tags, ok := meta["tags"].([]any); !ok || len(tags) != 2 || tags[1] != "loss" {
		t.Errorf("meta tags %#v, want [lab loss]", meta["tags"])
	}
}

func TestCleanupRemovesEverything(t *testing.T) {
	var dsn, dataDir string
	var pid int
	t.Run("server", func(t *testing.T) {
		dsn = Start(t)
		conn := connect(t, dsn)
		if err := conn.QueryRow(t.Context(), "SHOW data_directory").Scan(&dataDir); err != nil {
			t.Fatalf("show data_directory: %v", err)
		}
		// The first line of postmaster.pid is the postmaster's pid.
		b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
		if err != nil {
			t.Fatalf("read postmaster.pid: %v", err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if pid, err = strconv.Atoi(strings.TrimSpace(first)); err != nil {
			t.Fatalf("parse postmaster.pid: %v", err)
		}
	})
	if t.Failed() || dataDir == "" {
		// Skipped (not installed) or failed: nothing to check.
		if !t.Failed() {
			t.Skip("server subtest did not run a server")
		}
		return
	}

	// The whole private dir (data dir, socket, log) is gone, not just the
	// data dir.
	if _, err := os.Stat(filepath.Dir(dataDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after cleanup, stat %s: %v, want not exist", filepath.Dir(dataDir), err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after cleanup, postmaster pid %d: kill 0 = %v, want ESRCH", pid, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse DSN %q: %v", dsn, err)
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("after cleanup, %s still accepts connections", u.Host)
	}
}

func TestTwoServersAreIndependent(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("two Starts returned the same DSN %q", a)
	}
	ca, cb := connect(t, a), connect(t, b)
	if _, err := ca.Exec(t.Context(), "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatalf("create table in a: %v", err)
	}
	var exists bool
	if err := cb.QueryRow(t.Context(), "SELECT to_regclass('only_in_a') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatalf("look up table in b: %v", err)
	}
	if exists {
		t.Error("table created on server a is visible on server b")
	}
}
