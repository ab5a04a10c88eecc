// Package interop is the differential harness against stock iperf3: it
// runs the real programs as a user would (tcpscope's binary and iperf3's,
// as processes on loopback) in every iperf3 mode, both ways round — a
// stock iperf3 client against `tcpscope server`, and `tcpscope test
// --iperf3` against a stock `iperf3 -s` — with stock against stock as the
// reference, and checks what a user relies on: byte counts exact between
// the two ends, rates within 2% of what the other side reports, budgets
// (-n, -k) as stock fills them, and exit codes and error texts as stock
// gives them.
//
// The CI test tier (interop_test.go) runs the matrix a few times; the
// benchmark (bench/interop.sh) runs it 20 times per mode and writes the
// table in docs/INTEROP.md. Nothing here imports the engine: the programs
// are black boxes, and their JSON documents are the only evidence.
package interop
