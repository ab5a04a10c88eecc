// Package gate admits a server's tests, whatever their protocol: one
// set of limits (a limits.Table's classes of client networks, tests and
// streams per address, per class and per server, connections not yet
// part of a test) counts tcpscope's native tests, stock iperf3 clients'
// and the HTTP protocols' alike. A test admitted holds a Ticket until
// its Release; the gate refuses with fault codes (busy, shutdown) and
// counts refusals by kind, logging them at most once a second per kind.
// It drains (LameDuck), ends a one-test server after its test, and
// keeps GOMAXPROCS at the admitted streams' number so that concurrent
// tests share the CPUs fairly (fair.go).
//
// Subscribers (Subscribe) hear every admission and end, with the
// server's record of the test: the seam where the log's diagnosis, the
// archive, metrics and a mesh attach, none knowing another.
package gate
