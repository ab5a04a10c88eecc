package perf

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// --skip-rx-copy at both ends (each receives in --bidir, the client in
// -R): the counts stay exact, and the receivers read with recvfrom, which
// the process's rchar does not count, not with read(2), which it does
// (the test is not parallel: no other test reads meanwhile).
func TestSkipRxCopyBytes(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	const n = 10_000_000
	for _, c := range []model.TestConfig{{Bidir: true}, {Reverse: true, Parallel: 2}, {Bidir: true, SkipRxCopy: true}, {Reverse: true, Parallel: 2, SkipRxCopy: true}} {
		c.Bytes = n
		before := readChars(t)
		run, err := (&Client{}).Run(context.Background(), addr, quick(c))
		if err != nil {
			t.Fatal(err)
		}
		read := readChars(t) - before
		checkRun(t, run)
		if copied := read >= n; copied == c.SkipRxCopy {
			t.Errorf("skip-rx-copy %v: the process read(2) %d B of the %d B it received", c.SkipRxCopy, read, n*len(run.Summary))
		}
		for _, d := range run.Summary {
			if d.SenderBytes.V != n || d.ReceiverBytes.V != n {
				t.Errorf("%s: sent %d, received %d, want exactly %d", d.Direction, d.SenderBytes.V, d.ReceiverBytes.V, n)
			}
		}
	}
}

// readChars is the bytes this process has read with read(2) and the
// like (rchar of /proc/self/io); recvfrom(2) does not count.
func readChars(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/self/io:\n%s", b)
	return 0
}
