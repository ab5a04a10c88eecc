package perf

import (
	"context"
	"crypto/rand"
	"crypto/subtle"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
)

// A native UDP stream opens as iperf3's do (the server's side is
// package serve's): the client sends a hello datagram to the server's
// port (the TCP port's number, over UDP), and the server answers from a
// new socket bound to the same port and connected to the client, which
// from then on carries the stream. A native hello names the stream's key
// and id, and its answer carries a token the client echoes on the
// control connection in its start message: the server sends a stream
// nothing but answers until the client has shown that it receives at
// the hello's address.

// openUDPStreams opens a native test's UDP streams, one after another,
// and returns them with the tokens the server answered their hellos
// with, for the start message.
func (c *Client) openUDPStreams(ctx context.Context, addr string, cfg *model.TestConfig, keys [][]byte, run *model.Run) ([]*engine.Stream, [][]byte, error) {
	var streams []*engine.Stream
	var tokens [][]byte
	for i, d := range cfg.Directions() {
		role := model.RoleOf(model.ClientSide, d)
		var token []byte
		uc, err := c.Dialer.UDP(ctx, addr, cfg, role, udpHello(keys[i], i), func(b []byte) (ok bool) {
			token, ok = parseUDPAnswer(b, i)
			return ok
		})
		if err != nil {
			return streams, tokens, err
		}
		streams = append(streams, engine.NewStream(i, role, nil, engine.NewUDPFlow(uc, true, true)))
		tokens = append(tokens, token)
		run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: uc.LocalAddr().String()})
	}
	return streams, tokens, nil
}

// newToken is a UDP stream's token: random, so that only a client that
// received the answer knows it.
func newToken() []byte {
	b := make([]byte, udpTokenLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// verifyUDP checks that the client echoed each UDP stream's token (the
// start message's UDPTokens, by stream id; tokens are those the server
// sent) and ends the streams' answering: until it returns nil, no stream
// has been sent anything but answers.
func verifyUDP(streams []*engine.Stream, tokens [][]byte, st *start) error {
	for i, sm := range streams {
		f := sm.UDP()
		if f == nil {
			continue
		}
		f.StopAnswering()
		if st == nil || i >= len(st.UDPTokens) || i >= len(tokens) || subtle.ConstantTimeCompare(st.UDPTokens[i], tokens[i]) != 1 {
			return fault.Errorf(fault.Unverified, "the client must receive at the address it sends from (a NAT that changes the source port between datagrams breaks this)",
				"UDP stream %d: the client did not echo the token sent to %v", i, f.Conn().RemoteAddr())
		}
	}
	return nil
}
