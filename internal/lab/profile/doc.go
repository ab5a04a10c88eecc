// Package profile describes lab setups by name: paths (rate, round-trip
// time, loss, queue, MTU) and host tunings (TCP options and buffer sizes),
// in TOML. The built-ins reproduce the source documents' cases: the
// 21 ms GigaSunet path, the Visible Human project's 100 Mbit/s bottleneck
// at about 20 ms, coast-to-coast and transatlantic paths, a lossy WAN, and
// hosts as shipped, as mistuned in 2001, and tuned for the path.
//
// The package is pure: it parses bytes and computes, and the lab turns a
// profile into namespaces and an emulated path.
package profile
