//go:build !race

package iperf3_test

import "time"

// rateTol is how far two ends' rates of one flow may differ in these
// tests (see race_on_test.go for the race detector's).
const rateTol = 0.02

// clockSlack is how far apart two ends' clocks of one flow may start and
// stop: the trips of TEST_RUNNING and TEST_END, and a busy machine's
// scheduling (0.1–0.6 ms seen).
const clockSlack = 5 * time.Millisecond

// loadSlack is how far apart two ends' clocks of one flow may stop for
// clocksAgree: a loaded host handles TEST_END at its two ends up to 27 ms apart
// (a CPU hog beside the tests, load average 7).
const loadSlack = 30 * time.Millisecond

// bidirRateTol is rateTol for --bidir at full speed against a stock
// server, whose one thread, busy sending, hears TEST_END late: its
// clock runs on past the client's (docs/INTEROP.md allows 3% there).
const bidirRateTol = 0.03
