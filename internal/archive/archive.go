package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/tcpscope/tcpscope/internal/model"
	"modernc.org/sqlite" // registers "sqlite"
)

// Errors callers tell apart.
var (
	// ErrNewerSchema: the archive was written by a newer tcpscope.
	ErrNewerSchema = errors.New("archive schema is newer than this tcpscope")
	// ErrNotFound: no run has that id.
	ErrNotFound = errors.New("no such run in the archive")
)

// dialect is what differs between the two databases.
type dialect struct {
	name      string // the migrations' folder
	driver    string
	postgres  bool
	timestamp string // the column type of a point in time
}

var (
	sqliteDialect   = dialect{name: "sqlite", driver: "sqlite", timestamp: "TIMESTAMP"}
	postgresDialect = dialect{name: "postgres", driver: "pgx", postgres: true, timestamp: "TIMESTAMPTZ"}
)

// Archive is an open archive. It is safe for concurrent use.
type Archive struct {
	db       *sql.DB
	d        dialect
	location string // what Where reports: a file path, or the PostgreSQL DSN without its password
}

// DefaultPath is where the archive lives when none is named: under
// $XDG_DATA_HOME (or ~/.local/share), tcpscope/archive.db.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("archive location: %w", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "tcpscope", "archive.db"), nil
}

// Open opens (creating it if needed) the archive dsn names and brings
// its schema up to date: "postgres://…" or "postgresql://…" for a shared
// PostgreSQL, anything else a SQLite file path ("sqlite:" or "file:"
// prefixes allowed), "" the DefaultPath.
func Open(ctx context.Context, dsn string) (*Archive, error) {
	a := &Archive{}
	var src string
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		a.d, src, a.location = postgresDialect, dsn, redact(dsn)
	default:
		file := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
		if file == "" {
			var err error
			if file, err = DefaultPath(); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return nil, fmt.Errorf("open archive: %w", err)
		}
		a.d, a.location = sqliteDialect, file
		// WAL lets readers (archive list) run beside a writing server;
		// synchronous=FULL makes a committed run survive a power cut;
		// the busy timeout queues writers instead of failing them.
		src = "file:" + file + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_time_format=sqlite"
	}
	db, err := sql.Open(a.d.driver, src)
	if err != nil {
		return nil, fmt.Errorf("open archive %s: %w", a.location, err)
	}
	if err := prepare(ctx, db, a.d); err != nil {
		db.Close()
		return nil, fmt.Errorf("open archive %s: %w", a.location, err)
	}
	a.db = db
	return a, nil
}

// busyWait bounds how long Open retries a SQLite archive that another
// connection holds, as the busy timeout bounds a statement's wait.
const busyWait = 10 * time.Second

// prepare connects and brings the schema up to date. SQLite answers
// some lock conflicts with SQLITE_BUSY at once instead of calling its
// busy handler (a connection opening the write-ahead log while another
// resets it; a reader whose snapshot a writer overtook), so a first
// connection can fail while other processes write (1 in 120 opens
// beside five writers on a loaded machine): those are retried, with a
// short pause, for up to busyWait.
func prepare(ctx context.Context, db *sql.DB, d dialect) error {
	deadline := time.Now().Add(busyWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		err := db.PingContext(ctx)
		if err == nil {
			err = migrate(ctx, db, d)
		}
		if err == nil || d.postgres || !busy(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// busy reports SQLite's SQLITE_BUSY, in any of its extended forms.
func busy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a lock conflict.
const sqliteBusy = 5

// redact drops the password from a PostgreSQL URL for messages.
func redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	cred, host, ok := strings.Cut(rest, "@")
	if !ok {
		return dsn
	}
	if user, _, hasPass := strings.Cut(cred, ":"); hasPass {
		return scheme + "://" + user + ":***@" + host
	}
	return dsn
}

// Where is the archive's location, safe to print.
func (a *Archive) Where() string { return a.location }

// Close closes the archive.
func (a *Archive) Close() error { return a.db.Close() }

// Entry is one run to archive, with where it came from.
type Entry struct {
	Run    *model.Run
	Origin model.Side // which end archives it: its client, or its server
	Host   string     // the archiving host's name
	Peer   string     // the other end
	Tool   string     // the peer's kind: "tcpscope" or "iperf3"
	Label  string     // the user's tag, for grouping
}

// Record is an archived run's row: what lists show and filters match.
type Record struct {
	ID         int64
	Start      time.Time
	Saved      time.Time
	Origin     model.Side
	Host       string
	Peer       string
	Tool       string
	Label      string
	Protocol   string
	Streams    int
	Mode       string // "forward", "reverse" or "bidir"
	Duration   time.Duration
	Ended      string
	Primary    string // the primary finding's id, "" without a diagnosis
	Directions []model.DirectionSummary
}

// Mode names a test's direction setup as the archive stores it.
func Mode(c model.TestConfig) string {
	switch {
	case c.Bidir:
		return "bidir"
	case c.Reverse:
		return "reverse"
	}
	return "forward"
}

// Save stores e in one transaction and returns its id.
func (a *Archive) Save(ctx context.Context, e Entry) (int64, error) {
	r := e.Run
	if r == nil {
		return 0, errors.New("save run: no run")
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("save run: %w", err)
	}
	primary := ""
	for _, f := range r.Diagnosis {
		if f.Primary {
			primary = f.ID
			break
		}
	}
	proto := r.Config.Protocol
	if proto == "" {
		proto = model.TCP
	}
	streams := r.Config.Parallel
	if r.Config.Bidir {
		streams *= 2
	}
	var dur time.Duration
	for _, s := range r.Summary {
		dur = max(dur, s.Duration.V)
	}
	ended := r.Ended
	if ended == "" {
		ended = "unknown"
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("save run: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO runs (started_at, saved_at, origin, host, peer, tool, label, protocol,
		streams, mode, duration_ns, ended, primary_finding, document)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`,
		r.Start.UTC(), time.Now().UTC(), string(e.Origin), e.Host, e.Peer, e.Tool, e.Label, proto,
		streams, Mode(r.Config), int64(dur), ended, primary, string(doc)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("save run: %w", err)
	}
	for _, s := range r.Summary {
		_, err := tx.ExecContext(ctx, `INSERT INTO directions (run_id, direction, goodput_bps, sender_bytes, receiver_bytes,
			retrans_segs, loss_rate, min_rtt_ns, mean_rtt_ns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			id, string(s.Direction), nullable(s.Goodput), nullable(s.SenderBytes), nullable(s.ReceiverBytes),
			nullable(s.RetransSegs), nullable(s.LossRate), nullable(durationNS(s.MinRTT)), nullable(durationNS(s.MeanRTT)))
		if err != nil {
			return 0, fmt.Errorf("save run: direction: %w", err)
		}
	}
	for i, f := range r.Diagnosis {
		_, err := tx.ExecContext(ctx, `INSERT INTO findings (run_id, seq, finding, direction, severity, layer, is_primary, summary)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, i, f.ID, string(f.Direction), string(f.Severity), string(f.Layer), f.Primary, f.Summary)
		if err != nil {
			return 0, fmt.Errorf("save run: finding: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("save run: %w", err)
	}
	return id, nil
}

func durationNS(o model.Opt[time.Duration]) model.Opt[int64] {
	return model.Opt[int64]{V: int64(o.V), OK: o.OK}
}

// nullable is NULL for an unknown value, and the value in a type both
// drivers take (they know no Go named types such as model.Bytes).
func nullable[T any](o model.Opt[T]) any {
	if !o.OK {
		return nil
	}
	switch v := any(o.V).(type) {
	case model.Bytes:
		return int64(v)
	case model.Bitrate:
		return float64(v)
	case uint32:
		return int64(v)
	}
	return o.V
}
