package diagnose

import (
	"fmt"

	"github.com/tcpscope/tcpscope/internal/model"
)

// BufferWarnings says, as soon as both ends' sockets are set up, where a
// kernel granted less buffer than -w asked for: less than
// model.SockBufFor the request, because it clamped the request at
// net.core.wmem_max or rmem_max (to model.SockBufData of what it
// granted). Each warning names the sysctl and the value that fixes it.
// A test client shows them before the test's first line (perf.Client's
// SetupWarnings).
func BufferWarnings(cfg *model.TestConfig, streams []model.StreamInfo) []string {
	if cfg.Window == 0 || len(streams) == 0 {
		return nil
	}
	want := model.SockBufFor(cfg.Window)
	var out []string
	check := func(side string, got model.Bytes, kind, sysctl string) {
		if got < want {
			out = append(out, fmt.Sprintf("%s kernel granted %s %s for a %s request (Linux doubles the request after clamping it at %s, here apparently %s); raise it: sysctl -w %s=%d",
				side, kind, got.Binary(), cfg.Window.Binary(), sysctl, model.SockBufData(got).Binary(), sysctl, int64(cfg.Window)))
		}
	}
	s := streams[0]
	if c := s.Client; c != nil {
		check("client", c.SndBuf, "SO_SNDBUF", "net.core.wmem_max")
		check("client", c.RcvBuf, "SO_RCVBUF", "net.core.rmem_max")
	}
	if v := s.Server; v != nil {
		check("server", v.SndBuf, "SO_SNDBUF", "net.core.wmem_max")
		check("server", v.RcvBuf, "SO_RCVBUF", "net.core.rmem_max")
	}
	return out
}
