// Package iperf3 speaks iperf3's protocol (esnet/iperf 3.x), both ends,
// on tcpscope's engine (internal/perf): TCP and UDP tests, forward,
// reverse and bidirectional.
//
// The client (Client) runs a test against a stock iperf3 server: iperf3's
// control dialogue and cookie, its data connections or UDP hellos, with
// tcpscope's own kernel samples at this end and iperf3's results for the
// server's. A native test that finds a stock iperf3 server
// (perf.ErrIperf3Server) falls back to it (Client.Fallback).
//
// The server side (Handler) serves stock iperf3 clients on a serve.Server's
// port, beside the native protocol: the server hands it connections that
// begin with an iperf3 cookie (serve.Server.Handle), and its tests are
// admitted under the server's limits, many at once, with iperf3's own
// authentication (internal/i3auth) when configured. It returns the
// server's view as text or JSON to clients that ask for it.
//
// WriteJSON writes a run as iperf3's -J document (`-f iperf3-json`).
// The wire protocol's facts are in docs/PROTOCOL.md.
package iperf3
