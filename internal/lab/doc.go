// Package lab builds test hosts out of Linux network namespaces, so tcpscope
// can reproduce a network path (its rate, loss, MTU and the TCP settings of
// both ends) on one machine and check that a diagnosis names the impairment
// it was given.
//
// A Pair is two hosts, A and B, each its own network namespace, joined by
// one veth pair and by nothing else: no link, route or address ties them to
// the machine's own interfaces, so lab traffic never leaves the two
// namespaces. NewPair builds it and Close tears it down; Clean removes what
// killed runs left behind. Tests get pairs from the labtest package, which
// skips without root and tears down even when a test fails.
//
// Why our own lab and not netem: the kernels tcpscope is developed and tested
// on are built without sch_netem (and without fq and codel), so there is no
// kernel delay or loss emulation to call. What they do have is tbf, nftables
// (random drop with numgen), veth and network namespaces; this package uses
// exactly those. Rate is a tbf on the sending end's veth; loss is an nftables
// rule that drops at random on arrival at the receiving end. Delay and
// jitter need the userspace path emulator over TUN devices that later
// builds on these namespaces, and that emulator is also what lets the lab
// use kernel netem where a user's kernel has it.
//
// Where each impairment sits, and why:
//
//   - Rate (tbf) sits on the egress of the sender's veth. Its queue is the
//     path's bottleneck buffer; Path.Queue bounds how long a packet may wait.
//   - Loss sits on the ingress of the receiver's veth, not on the sender's
//     egress. A packet dropped inside the sending host (by a netfilter rule
//     or a qdisc) is reported to TCP as a local transmit failure and sent
//     again at once; TCP never sees a loss. Measured here: 1% drop in the
//     sender's output or egress hook cost no retransmissions at all, the
//     same drop at the receiver's ingress cost one retransmission per drop.
//   - Segmentation offload is off by default (gso_max_segs 1 on both veth
//     ends), so every skb on the lab link is one packet of at most MTU
//     bytes, as on a wire. With offload on, TCP hands the veth 64 KiB
//     aggregates and one "random packet loss" drops up to 44 segments at
//     once. Per-packet fidelity costs speed: about 2 Gbit/s through an
//     unshaped pair instead of about 18 Gbit/s; set PairConfig.Offload for
//     fast paths that need no loss.
//
// TCP sysctls (tcp_sack, tcp_timestamps, tcp_window_scaling, tcp_rmem,
// tcp_wmem, tcp_congestion_control, any net.* key) are per network namespace
// and are set inside each host only. net.core.rmem_max and wmem_max are not:
// the kernel keeps one host-wide value. Recent kernels (6.11 on; checked on
// 6.18) show it inside a namespace read-only, older ones (6.6) hide it there.
// The lab never changes a host-wide setting; see ErrHostWide.
package lab
