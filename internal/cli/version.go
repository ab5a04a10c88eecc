package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// Build is what the linker stamped into package main (the Makefile's -X
// flags): the commit and its date, for builds Go's own VCS stamping
// misses (GOFLAGS=-buildvcs=false, a git worktree, a source tree without
// .git). Empty fields are unknown.
type Build struct {
	// Commit is the commit's short hash, "+dirty" appended when the tree
	// had changes.
	Commit string
	// Date is the commit's time: RFC 3339, or seconds since the epoch as
	// git log --format=%ct prints them.
	Date string
}

// buildInfo is what tcpscope version prints.
type buildInfo struct {
	Version  string
	Commit   string // short hash, "+dirty" when modified; "" unknown
	Date     time.Time
	Go       string
	Platform string
}

// shortHash is as long as the Makefile's git rev-parse --short=12.
const shortHash = 12

// readBuild is the build's description: the VCS settings Go stamped
// (debug.ReadBuildInfo), else the linker's stamp.
func readBuild(bi *debug.BuildInfo, stamp Build) buildInfo {
	b := buildInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var rev, when string
	modified := false
	if bi != nil {
		b.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev != "" {
		b.Commit = rev[:min(len(rev), shortHash)]
		if modified {
			b.Commit += "+dirty"
		}
	} else {
		b.Commit, when = stamp.Commit, stamp.Date
	}
	if t, err := time.Parse(time.RFC3339, when); err == nil {
		b.Date = t.UTC()
	} else if secs, err := strconv.ParseInt(when, 10, 64); err == nil && secs > 0 {
		b.Date = time.Unix(secs, 0).UTC()
	}
	return b
}

// String is the one line tcpscope version and --version print.
func (b buildInfo) String() string {
	commit := "commit unknown (built without VCS information; make build stamps it)"
	if b.Commit != "" {
		commit = "commit " + b.Commit
		if !b.Date.IsZero() {
			commit += " of " + b.Date.Format("2006-01-02 15:04:05 UTC")
		}
	}
	return fmt.Sprintf("tcpscope %s, %s, built with %s %s", b.Version, commit, b.Go, b.Platform)
}

// thisBuild describes the running binary.
func thisBuild(stamp Build) buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return readBuild(bi, stamp)
}

func newVersionCmd(b buildInfo, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, its date, and the Go version and platform",
		Args:  noArgs("tcpscope version"),
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, b)
		},
	}
}
