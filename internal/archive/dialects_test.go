package archive

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/golden"
)

// The two dialects' migrations describe one schema: the same steps, the
// same tables, columns, constraints and indexes in the same order. They
// may differ only where the databases do, each such difference listed
// here as PostgreSQL's spelling and SQLite's (white space collapsed);
// any other difference is a step written for one dialect and forgotten
// in the other.
var dialectSpellings = []struct{ postgres, sqlite string }{
	// The row id: SQLite's is an alias of its 64-bit rowid.
	{"BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"},
	// A reference to it: INTEGER is SQLite's 64-bit integer.
	{"BIGINT NOT NULL REFERENCES", "INTEGER NOT NULL REFERENCES"},
	// SQLite has no time zones; the archive writes UTC.
	{"TIMESTAMPTZ", "TIMESTAMP"},
	// SQLite keeps JSON as text.
	{"JSONB", "TEXT"},
}

func TestDialectsAgree(t *testing.T) {
	names := func(d dialect) []string {
		entries, err := fs.ReadDir(migrations, path.Join("migrations", d.name))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	lite, pg := names(sqliteDialect), names(postgresDialect)
	if !slices.Equal(lite, pg) {
		t.Fatalf("the dialects' migrations differ: SQLite %v, PostgreSQL %v", lite, pg)
	}
	for _, name := range lite {
		read := func(d dialect) string {
			b, err := migrations.ReadFile(path.Join("migrations", d.name, name))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		want, got := statements(read(sqliteDialect)), statements(read(postgresDialect))
		for _, s := range dialectSpellings {
			got = strings.ReplaceAll(got, s.postgres, s.sqlite)
		}
		if d := golden.Diff(want, got); d != "" {
			t.Errorf("%s: the PostgreSQL step differs from SQLite's beyond dialectSpellings (-sqlite +postgres):\n%s", name, d)
		}
	}
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlSpace   = regexp.MustCompile(`\s+`)
)

// statements is SQL text without comments, its white space collapsed,
// one statement a line.
func statements(sql string) string {
	sql = sqlSpace.ReplaceAllString(sqlComment.ReplaceAllString(sql, ""), " ")
	var out []string
	for _, s := range strings.Split(sql, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ";\n")
}
