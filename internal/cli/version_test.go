package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// tcpscope version names the commit, "+dirty" when the tree had changes,
// its date, the Go version and the platform: from Go's VCS stamp when
// the binary has one, else from the Makefile's linker stamp.
func TestVersion(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "204a31b617de34b2c1448d2e4ba3687624d60d45"},
		{Key: "vcs.time", Value: "2026-11-25T06:06:48Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name  string
		bi    *debug.BuildInfo
		stamp Build
		want  string
	}{
		{"go's stamp", vcs, Build{Commit: "ignored", Date: "1"},
			"tcpscope " + Version + ", commit 204a31b617de+dirty of 2026-11-25 06:06:48 UTC, built with go1.26.8 " + platform},
		{"linker's stamp", &debug.BuildInfo{GoVersion: "go1.26.8"}, Build{Commit: "753006b59c6a", Date: "1795763579"},
			"tcpscope " + Version + ", commit 753006b59c6a of 2026-11-27 07:12:59 UTC, built with go1.26.8 " + platform},
		{"none", &debug.BuildInfo{GoVersion: "go1.26.8"}, Build{},
			"tcpscope " + Version + ", commit unknown (built without VCS information; make build stamps it), built with go1.26.8 " + platform},
	} {
		if got := readBuild(tc.bi, tc.stamp).String(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// The command and the flag print the same line, about this binary.
	code, out, stderr := run("version")
	if code != 0 || !strings.Contains(out, runtime.Version()+" "+platform) || !strings.HasPrefix(out, "tcpscope "+Version+", commit ") {
		t.Fatalf("tcpscope version: exit %d, %q %s", code, out, stderr)
	}
	if code, out2, _ := run("--version"); code != 0 || out2 != out {
		t.Errorf("--version printed %q, version %q", out2, out)
	}
}
