package perf

import (
	"fmt"

	"github.com/tcpscope/tcpscope/internal/model"
)

// bufferWarnings says when a kernel granted less buffer than -w asked for.
// Linux doubles a SO_SNDBUF/SO_RCVBUF request (the extra half is for its
// bookkeeping) after clamping the request to net.core.wmem_max/rmem_max.
func bufferWarnings(cfg *model.TestConfig, streams []model.StreamInfo) []string {
	if cfg.Window == 0 || len(streams) == 0 {
		return nil
	}
	want := 2 * cfg.Window
	var out []string
	check := func(side string, got model.Bytes, kind, sysctl string) {
		if got < want {
			out = append(out, fmt.Sprintf("%s kernel granted %s %s for a %s request (Linux doubles the request after clamping it at %s, here apparently %s); raise it: sysctl -w %s=%d",
				side, kind, got.Binary(), cfg.Window.Binary(), sysctl, (got/2).Binary(), sysctl, int64(cfg.Window)))
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
