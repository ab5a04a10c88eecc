package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// server --limits FILE --check prints what a file means, and a bad file,
// a missing one or a limit flag beside a file is one line and exit 2.
func TestServerLimitsCheck(t *testing.T) {
	code, out, errs := run("server", "--limits", "../../deploy/limits.toml", "--check")
	if code != 0 || !strings.Contains(out, "class members: 10.0.0.0/8, 2001:db8::/32") || !strings.Contains(out, "class default: every address no class above holds") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[default]\nmax_duraton = \"1h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limits", bad, "--check"}, `line 2: unknown setting "default.max_duraton"`},
		{[]string{"--limits", filepath.Join(t.TempDir(), "none.toml")}, "read limits:"},
		{[]string{"--limits", "../../deploy/limits.toml", "--max-tests", "3"}, "--max-tests and --limits together"},
		{[]string{"--max-streams", "0", "--check"}, "bad server limits"},
	} {
		code, _, errs := run(append([]string{"server"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || !strings.Contains(errs, "try:") {
			t.Errorf("server %v: exit %d, stderr %q; want exit %d and one line with %q and a hint", tc.args, code, errs, ExitUsage, tc.want)
		}
	}
	code, out, _ = run("server", "--max-tests", "3", "--check")
	if code != 0 || !strings.Contains(out, "server: 3 tests") || !strings.Contains(out, "class default: every address\n") {
		t.Errorf("flags' limits: exit %d:\n%s", code, out)
	}
}
