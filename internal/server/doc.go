// Package server is tcpscope server's composition root: from one Config
// (what the command line's flags, or a --config file, say) it loads the
// policy, the keys and the certificate, builds the engine's server with
// its gate, the front door's protocols (tcpscope's own, stock iperf3
// clients, HTTP's health check) and the gate's subscribers (the log's
// diagnosis of each test), and owns the lifecycle: listen, announce,
// ready, lame duck (SIGUSR1 or the operator's POST /lameduck), drain,
// stop, and a one-test server's outcome.
//
// ParseFile reads a --config file: TOML whose keys are the server's flag
// names, for a long-running server whose command line would be long.
package server
