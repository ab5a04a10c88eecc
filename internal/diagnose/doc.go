// Package diagnose turns measurements into findings: what limits a
// transfer (the primary finding), what else is wrong, the evidence for
// each, the exact fix and its predicted effect. It follows the seeds'
// layered method with Linux's per-connection counters in place of
// Web100's: the sender's chrono counters (busy, receive-window-limited and
// send-buffer-limited time) say which of the receiver, the sender's
// buffer, the network or the application held the sender back, and loss,
// RTT and the negotiated options say why.
//
// What it diagnoses:
//   - Test: a test's run, TCP (view.go builds each direction's numbers,
//     limits.go and beside.go hold the rules) or UDP (udp.go: the
//     datagram accounts);
//   - ServerEnd: a server's own end of a test it served (ServedRun
//     arranges it as a run);
//   - Connection: a socket watched from outside its process, from its
//     own samples alone (ConnectionRun);
//   - Host: a host's configuration (sysctls, interfaces), with
//     SysctlConf gathering the fixes into a sysctl.conf snippet; Path: what
//     timed handshakes learned of a path.
//
// Merge and ByLayer combine findings from several of these, and Limits
// names each direction's verdict. Report and HostAudit are the JSON
// documents of `tcpscope diagnose` and `tcpscope host` (docs/JSON.md).
//
// It is pure: no sockets, no clock, no files. The same input gives the
// same findings, so `tcpscope explain` can diagnose a saved result
// offline and tests diagnose recorded runs. Every rule, its thresholds and
// why they are what they are is documented in docs/DIAGNOSES.md.
package diagnose
