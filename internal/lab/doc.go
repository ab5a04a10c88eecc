// Package lab builds test hosts out of Linux network namespaces, so tcpscope
// can reproduce a network path (its rate, loss, MTU and the TCP settings of
// both ends) on one machine and check that a diagnosis names the impairment
// it was given.
//
// A Pair is three network namespaces: hosts A and B and a router R between
// them, A —veth— R —veth— B. A sits on 10.199.N.0/24 and B on 10.200.N.0/24
// (host .1, router .254); each host has one route, to the other's subnet
// through R, and R forwards IPv4 between its two links. No link, route or
// address ties the namespaces to the machine's own interfaces, so lab
// traffic never leaves the pair. NewPair builds it and Close tears it down;
// Clean removes what killed runs left behind. Tests get pairs from the
// labtest package, which skips without root and tears down even when a
// test fails.
//
// # Words
//
// The lab and its packages (lab/emulator, lab/profile, lab/experiment,
// lab/precision) use one vocabulary:
//
//   - path: the whole way between hosts A and B, both directions of it.
//     emulator.Config is an emulated path, profile.Path a named one (rate,
//     RTT, loss, MTU), PairConfig a path with its hosts.
//   - direction: one way along the path, A→B or B→A: the type Dir
//     (lab.Dir is emulator.Dir, one type for both), with AtoB carrying what
//     A sends. A pair's counters, loss rules and impairments are per
//     direction.
//   - impairment: what one direction does to packets (rate, queue, loss,
//     delay, MTU...): emulator.Impairment in the userspace emulator,
//     lab.Impairment in the router (Pair.SetImpairment, Pair.Impairment,
//     RouterImpairments maps the one onto the other). The emulator's
//     impairer applies one.
//   - model.Direction is something else: which way a test stream's data
//     flows, client to server or server to client, whichever host is the
//     client; model.PathFacts is what probes learn of a path, not how the
//     lab builds one.
//
// Why our own emulator and not only netem: the kernels tcpscope is developed
// and tested on are built without sch_netem (and without fq and codel), so
// there is no kernel delay emulation to call. What they do have is tbf,
// nftables (random drop with numgen), veth, TUN and network namespaces.
// Rate, random loss and a per-direction MTU (a route MTU in R, answered
// with ICMP by R's own forwarding, or black-holed by an nftables rule on
// R's output) come from the router; delay, jitter, bursty loss, reordering
// and duplication from the userspace path emulator (package lab/emulator)
// in an emulated pair, below.
//
// Where the kernel has netem, PairConfig.Backend lets it carry an emulated
// path instead: RouterImpairments maps the emulator's configuration onto the
// router (netem for delay, duplication and Gilbert–Elliott loss, with the
// tbf bottleneck under it), and Auto, the default, does so when netem can
// reproduce the path as the emulator defines it: not with jitter (netem's
// reorders), reordering (netem's skips the delay) or a fixed seed. HasNetem
// probes in a namespace of its own. The kernels here lack netem, so its
// namespace test skips on them; RouterImpairments and the tc arguments are
// tested everywhere.
//
// The kernel backend (UseKernel) is a second implementation of an emulated
// path, so that no diagnosis leans on an artefact of the emulator's: the
// kernel's own tools carry everything but the delay. A has its TUN device
// to the emulator, which only delays; the emulator's other device is R's
// (tun-r, raw: one packet per write, so R's rules act on packets, not the
// super-packets an offloading device takes); R forwards to B by a veth
// pair. KernelImpairments maps the configuration: the bottleneck is tbf
// (or htb over a bfifo queue, Impairment.HTB) on R's link toward the
// receiver, random loss nftables' numgen, a policer nftables' byte limit
// (whose bucket holds a second of the rate beyond the burst: the kernel's
// smallest unit), the MTU R's route MTU; jitter, reordering, duplication
// and bursty loss are refused. A Middlebox in R's forward chain clamps the
// handshake's MSS or strips its SACK, timestamps or window-scale options.
//
// An emulated pair (PairConfig.Emulated) has no router: A and B each get a
// TUN device (tun-a, tun-b), created inside the host's namespace on a
// thread switched into it, so that the link never exists in the machine's
// own namespace. Each host has its address on its device and a route to
// the other's subnet through it, and the emulator runs in the calling
// process between the two devices' file descriptors, with every impairment
// of both directions (Pair.Emulator gives its counters). The devices carry
// offloads: a host hands its TUN device 64 KiB TCP aggregates; a direction
// with an MTU, a rate or a loss splits them into packets (so those act per
// packet, as on a wire) and writes them coalesced again, and a direction
// that only delays passes them on whole. gso_max_segs is 64 on the devices
// so an aggregate always fits the emulator's read batch. Host settings
// (HostConfig) apply as with a router. Close stops the emulator, which
// closes the devices and so removes them, then deletes the namespaces. On
// the 2-CPU test machine, shared and loaded, one unimpaired TCP stream
// carried 10 to 12.7 Gbit/s through the emulator at about 0.5 CPU-s per GB
// (2026-11-27, docs/BENCHMARKS.md); a connect over 10 ms each way took a
// median 20.3 ms; and a 100 Mbit/s bottleneck delivered 99.8 to 100% of its
// payload share.
//
// Why a router: every impairment sits in R, none in the hosts, as on a real
// path, where the bottleneck queue is in a router and not in the sender.
//
//   - Rate (tbf) sits on R's egress toward the receiver: A→B on R's link to
//     B, B→A on R's link to A. Its queue is the path's bottleneck buffer;
//     Impairment.Queue bounds how long a packet may wait. A tbf on the sender's
//     own veth (the lab's first design) is the wrong place: TCP Small
//     Queues stop a socket once about 1 ms of its data waits in the local
//     qdisc, so the queue never builds and the sender reports itself merely
//     busy. Measured at 100 Mbit/s with a 64 KiB receive window (B without
//     window scaling) and CUBIC: with the tbf in A, srtt 1.7 ms and 2% of
//     busy time receive-window-limited; with the tbf in R, srtt 3.4 ms (the
//     advertised window, 39 kB of the 64 KiB buffer, draining at the
//     bottleneck) and 100%.
//   - Loss is an nftables rule on the ingress of R's link from the sender
//     (table tcpscope_atob or tcpscope_btoa in R), before the rate limiter.
//     A packet dropped inside the sending host (by a netfilter rule or a
//     qdisc) is reported to TCP as a local transmit failure and sent again
//     at once; TCP never sees a loss. Measured: 1% drop in the sender's
//     output or egress hook cost no retransmissions at all; the same drop
//     in R costs at least one retransmission per drop, in both directions.
//   - Segmentation offload is off by default (gso_max_segs 1 on all four
//     veth ends), so every skb on a lab link is one packet of at most MTU
//     bytes, as on a wire. With offload on, TCP hands the veth 64 KiB
//     aggregates, R forwards them whole, and one "random packet loss" drops
//     up to 44 segments at once. Per-packet fidelity costs speed: on a
//     2-CPU test machine an unshaped pair carried about 0.4 Gbit/s instead
//     of about 17 Gbit/s; set PairConfig.Offload for fast paths that need
//     no loss. MTU applies to all four ends.
//
// There is no two-namespace mode. It would save the forwarding hop, which
// costs little (unshaped, 0.4 against 0.5 Gbit/s without offload, 17
// against 19.5 Gbit/s with it), and would bring back the sender-side
// bottleneck that TCP Small Queues defeat; one topology also means one
// place for each impairment and one set of tests.
//
// TCP sysctls (tcp_sack, tcp_timestamps, tcp_window_scaling, tcp_rmem,
// tcp_wmem, tcp_congestion_control, any net.* key) are per network namespace
// and are set inside hosts A and B only; R keeps the kernel's defaults plus
// ip_forward. net.core.rmem_max and wmem_max are not per namespace: the
// kernel keeps one host-wide value. Recent kernels (6.11 on; checked on
// 6.18) show it inside a namespace read-only, older ones (6.6) hide it
// there. The lab never changes a host-wide setting; see ErrHostWide.
package lab
