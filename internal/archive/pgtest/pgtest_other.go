//go:build !linux

package pgtest

import "testing"

// Start skips: the throwaway server's process handling (credentials,
// parent-death signal, locks) is written for Linux, where CI runs.
func Start(t testing.TB) string {
	t.Helper()
	t.Skip("pgtest: a throwaway PostgreSQL is started on Linux only")
	return ""
}
