// Package emulator is tcpscope's userspace path emulator: a router between
// two TUN devices that delays, rate-limits, queues, loses, reorders,
// duplicates and MTU-limits the packets it forwards, separately in each
// direction, so the lab can reproduce a WAN path on one machine.
//
// Why our own: the kernels tcpscope is developed and tested on are built
// without sch_netem (and without fq, codel and cake). tbf and nftables give
// rate and random loss (package lab uses them), but nothing in those kernels
// delays a packet. A TUN device hands every packet to a process, and a
// process can hold it as long as it likes.
//
// # Shape
//
// Start joins two Devices, a and b: packets read from a are written to b
// with Config.AtoB's impairments, packets read from b are written to a with
// Config.BtoA's. Per direction one goroutine reads, decides each packet's
// fate (the pure path model, below) and puts the survivors into a
// time-ordered queue; a second goroutine sleeps until the earliest packet is
// due and writes everything due in one batched Write. CreateTUN makes a
// Device from a Linux TUN device (golang.zx2c4.com/wireguard/tun) with
// offloads: the kernel hands over TCP super-packets of up to 64 KiB, which a
// read splits into MTU-sized packets, and a batched write coalesces
// consecutive segments again (GRO); where the kernel refuses offloads it
// falls back to CreateRawTUN, one packet per system call. A direction that
// decides per packet (an MTU, a rate, loss, a policer, jitter, reordering,
// duplication) works on the split packets: each of those applies per
// packet, as on a wire.
//
// A direction that only delays (or does nothing) gives every packet the
// same fate, so it moves the kernel's super-packets whole: one read of a
// virtio-net header and up to 64 KiB, the fate decided once, one write of
// the same bytes to the other device, where the kernel segments them
// itself or hands them to the receiving stack whole. Nothing is split,
// checksummed or coalesced in userspace, nothing is copied but by the
// kernel, and a packet due at once is written by the reader itself, with
// no hand-off to the writer and no alarm. Its counters count the packets
// the super-packet stands for, headers repeated per segment, as the split
// path would.
//
// Timing: Go's timers sleep in the network poller with millisecond
// granularity (a timer due in 0.3 ms fires after about 1 ms), which would
// make every delay late by up to a millisecond. On Linux the writer sleeps
// on a timerfd instead, armed to the nanosecond with an absolute
// CLOCK_MONOTONIC deadline and woken through the same poller. A thread woken
// on an idle (virtual) CPU still runs 50 to 150 µs after its timer, so
// after a long wait the alarm fires 200 µs early and the writer spins until
// the packet is due; the packet then leaves within a few microseconds of
// its time. Timer syscalls, which exit to the hypervisor on a virtual
// machine, are kept off the path between "due" and the write. Elsewhere
// (fake devices in tests on other systems) a Go timer is used. What the
// emulator cannot remove is its own wake-up when a packet arrives: each
// hop costs 50 to 150 µs more than a veth would, so a round trip over an
// emulated path measures about 0.2 to 0.4 ms more than the delays set
// (0.3 ms over 20 ms on the test machines).
//
// # The path model
//
// The impairment logic is pure and deterministic: given the arrival time, the
// packet's length and a seeded random source, it returns when each copy of
// the packet leaves, or why it was dropped. A packet of direction d passes,
// in this order:
//
//  1. The MTU check (Impairment.MTU). An oversize IPv4 packet with DF set is
//     answered with ICMP "fragmentation needed" (type 3 code 4, next-hop MTU
//     set, quoting the original IP header and 8 bytes), an oversize IPv6
//     packet with ICMPv6 Packet Too Big (type 2); the answer goes back to the
//     source at once through the device the packet came from, without the
//     reverse direction's impairments, with the packet's destination address
//     as its source (the emulator has no address of its own; Linux checks
//     the quoted header against its sockets, not who sent the error). With
//     BlackHole the packet is dropped without an answer: a PMTU black hole.
//     An oversize IPv4 packet without DF is dropped too: a real router would
//     fragment it, but TCP always sets DF on Linux and fragmentation teaches
//     nothing about TCP. ICMP errors, non-first fragments and packets from
//     unspecified or multicast sources are never answered (RFC 1812, RFC
//     4443).
//  2. Loss: random (Bernoulli, Impairment.Loss) and bursty (Gilbert–Elliott,
//     Impairment.GE: a good and a bad state, P the probability per packet of
//     going bad, R of recovering, LossGood and LossBad the loss probability
//     in each; the long-run loss is P/(P+R)·LossBad + R/(P+R)·LossGood). The
//     chain steps once for every packet that reaches it. Loss sits before the
//     bottleneck, so a lost packet costs no bottleneck time.
//     A policer (Impairment.Police) follows: a token bucket of Burst bytes
//     filling at Rate (whole IP packets counted), full at the start. A
//     packet that finds fewer tokens than its size is dropped at once and
//     takes none; one that finds enough takes them and goes on undelayed.
//     It is a rate limit by loss, with no queue: the round trip stays at
//     its minimum while a TCP sender above the rate loses a share of its
//     packets (a provider's policer; Flach et al., "An Internet-Wide
//     Analysis of Traffic Policing", SIGCOMM 2016).
//  3. Duplication (Impairment.Duplicate): the copy follows the original as a
//     packet of its own through the bottleneck and the delay line.
//  4. The bottleneck (Impairment.Rate): a FIFO serializer. A packet starts
//     when the one ahead has finished and takes size×8/Rate, where size is
//     the whole IP packet (a link's rate counts frames; we count IP
//     packets): departure = max(now, previous departure) + size×8/Rate. TCP
//     goodput over a 1500-byte MTU with timestamps is therefore Rate ×
//     1448/1500. Waiting packets sit in a drop-tail queue limited by
//     Impairment.Queue (Packets, Bytes or Time, the first non-zero one; by
//     default 100 ms of the rate, and at least 10 packets of 1500 bytes).
//     The packet being serialized does not count against the limit.
//  5. The delay line: propagation delay (Impairment.Delay) plus jitter, drawn
//     per packet with mean 0 and standard deviation Impairment.Jitter from
//     the shape Impairment.JitterDist (normal truncated at ±3 SD, uniform,
//     Pareto or a Pareto-normal mix; see Distribution), and the total delay
//     clamped at 0. Jitter never reorders: a packet that would overtake the
//     one ahead of it leaves together with it instead (behind it), so with
//     jitter the per-packet delays of a dense stream bunch up at the top of
//     the distribution (netem's behaviour with rate limiting).
//  6. Reordering (Impairment.Reorder): a packet chosen for it skips its place
//     in the delay line and leaves together with, but ahead of, the packet
//     in front of it; it overtakes that packet (and any leaving at the same
//     instant) and keeps its own delay otherwise, so RTT samples stay true.
//     It happens only when the packet ahead is still in the delay line; an
//     idle line or a packet still behind it in the bottleneck has nothing to
//     overtake. Counters.Reordered counts the packets that overtook.
//
// Counters are per direction and read atomically while the emulator runs.
package emulator
