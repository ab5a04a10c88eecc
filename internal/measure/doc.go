// Package measure is the client's use case, apart from any front end:
// run one test against a server (tcpscope's protocol, or iperf3's when
// the server is a stock iperf3 or when asked) and return the model's run
// with its diagnosis (Test); and tcpscope diagnose's layered method —
// the host, the path before any load, instrumented tests each way, the
// findings from the bottom up (Layered). The command line prints what
// they return; a scheduled mesh or an HTTP API runs the same.
package measure
