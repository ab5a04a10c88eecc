// Package diagnose turns a measured transfer into findings: what limits
// it (the primary finding), what else is wrong, the evidence for each, the
// exact fix and its predicted effect. It follows the seeds' layered method
// with Linux's per-connection counters in place of Web100's: the sender's
// chrono counters (busy, receive-window-limited and send-buffer-limited
// time) say which of the receiver, the sender's buffer, the network or the
// application held the sender back, and loss, RTT and the negotiated
// options say why.
//
// It is pure: no sockets, no clock, no files. The same run gives the same
// findings, so `tcpscope explain` can diagnose a saved result offline and
// tests diagnose recorded runs. Every rule, its thresholds and why they
// are what they are is documented in docs/DIAGNOSES.md.
package diagnose
