//go:build !linux

package cli

import "testing"

// fullListener needs Linux's accept-queue behaviour (a SYN dropped once
// the backlog is full); elsewhere the tests that use it skip.
func fullListener(t *testing.T) string {
	t.Helper()
	t.Skip("a listener whose full accept queue drops SYNs needs Linux")
	return ""
}
