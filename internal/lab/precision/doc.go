// Package precision measures the diagnosis instead of assuming it: it
// builds lab paths in network namespaces, runs real tcpscope tests across
// them, diagnoses each, and counts how often the verdict is right.
//
// Two suites: Healthy, tuned hosts across paths from a LAN to 150 ms and
// from 10 Mbit/s to 1 Gbit/s under bbr, cubic and reno (and loopback),
// where the verdict must be the bottleneck (or healthy) with no warning or
// critical finding; and Impairments, variations of every cause the
// diagnosis knows (rates, RTTs, congestion controls, which direction,
// which end), where the cause must be in the verdict. Run repeats each
// scenario; Table writes the hit and false-alarm rates that
// docs/DIAGNOSES.md shows. The namespace test runs both suites once; `tcpscope lab
// precision` runs them as many times as asked.
package precision
