// Package experiment runs the lab's experiments: the source documents'
// measurements repeated on emulated paths, each printed as a table beside
// the model that predicts it, with a plot.
//
//   - window-sweep: goodput against socket buffer size at a fixed RTT,
//     beside window/RTT (GigaSunet's "throughput vs TCP window size at
//     21 ms", Tierney's buffer = bandwidth × delay);
//   - loss-sweep: goodput against random loss, beside the Mathis bound;
//   - mtu-sweep: 1500, 4470 and 9000-byte MTUs on a lossy path, beside the
//     linear-MTU (per-packet loss) and √MTU (bit-error) models;
//   - tuning: 2001-era hosts against tuned ones, n runs each, with mean,
//     SD, 95% CI and median (the Web100 paper's "factor of four");
//   - cc-compare: cubic, bbr and reno on a long lossy path;
//   - parallel: 1, 2, 4 and 8 streams under random loss.
//
// An experiment sees the lab through Testbed, so its sweeps and statistics
// are the same whether the path is emulated here or elsewhere.
//
// This package is the lab's composition root: package lab builds paths and
// hosts and does not import the engine it tests (perf) or its rendering
// (report); here the two meet. Serve runs a tcpscope server in a pair's
// host B (for the testbeds, the precision suites, `tcpscope lab shell` and
// the diagnosis scenario tests), and SelfTest checks the emulator's
// accuracy on this machine with tcpscope tests across it (`tcpscope lab
// selftest`).
package experiment
