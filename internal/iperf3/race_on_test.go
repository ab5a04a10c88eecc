//go:build race

package iperf3_test

import "time"

// rateTol is how far two ends' rates of one flow may differ in these
// tests. Under the race detector every goroutine runs several times
// slower and the two ends' clocks start and stop tens of milliseconds
// apart on a 1 s test at loopback speed; the byte counts, checked
// exactly, are what the detector's run is for.
const rateTol = 0.05

// clockSlack: under the race detector the ends' clocks start and stop
// 10–20 ms apart (14 ms seen in CI); the timing is checked without it.
const clockSlack = 50 * time.Millisecond

// loadSlack is how far apart two ends' clocks of one flow may stop for
// clocksAgree: under the race detector a server with 32 streams to
// serve handled TEST_END 64 ms after the client stopped (CI, --bidir -P
// 16, bytes equal to the byte). A gross error (a swapped end, a double
// count) still fails; the timing itself is checked without the detector.
const loadSlack = 150 * time.Millisecond

// bidirRateTol is rateTol for --bidir at full speed against a stock
// server (race_off_test.go): the detector's slowness dwarfs it.
const bidirRateTol = rateTol
