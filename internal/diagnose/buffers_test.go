package diagnose

import (
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

func TestBufferWarnings(t *testing.T) {
	cfg := model.TestConfig{Window: 4 * model.MiB}
	streams := []model.StreamInfo{{
		Client: &model.SocketSetup{SndBuf: 8 * model.MiB, RcvBuf: 416 * model.KiB},
		Server: &model.SocketSetup{SndBuf: 8 * model.MiB, RcvBuf: 8 * model.MiB},
	}}
	w := BufferWarnings(&cfg, streams)
	if len(w) != 1 || !strings.Contains(w[0], "net.core.rmem_max") || !strings.Contains(w[0], "client") || !strings.Contains(w[0], "=4194304") {
		t.Fatalf("warnings %q", w)
	}
	// The end that was not read (a stock iperf3 server) is no warning.
	streams[0].Server = nil
	streams[0].Client.RcvBuf = 8 * model.MiB
	if w := BufferWarnings(&cfg, streams); len(w) != 0 {
		t.Fatalf("warnings %q for buffers as asked", w)
	}
}
