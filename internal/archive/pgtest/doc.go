// Package pgtest starts a real, throwaway PostgreSQL server for tests.
//
// The archive stores its data in PostgreSQL and leans on behaviour a mock
// or an in-memory fake would not reproduce faithfully: jsonb semantics,
// constraint and transaction errors, type conversions done by the server.
// Tests therefore run against the real thing. Start runs initdb into a
// private temporary directory, starts postgres listening only on 127.0.0.1
// and on a socket inside that directory, creates an empty database and hands
// back its DSN; t.Cleanup stops the server and removes everything.
//
// The server is tuned for speed, not durability (fsync, synchronous_commit
// and full_page_writes are off): the data is thrown away after the test.
//
// When the PostgreSQL server binaries are not installed the test is skipped
// (apt-get install postgresql, or make setup as root, installs them).
package pgtest
