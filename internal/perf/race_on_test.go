//go:build race

package perf_test

// rateTol is how far two ends' rates of one flow may differ in these
// tests. Under the race detector every goroutine runs several times
// slower and the two ends' clocks start and stop tens of milliseconds
// apart on a 1 s test at loopback speed; the byte counts, checked
// exactly, are what the detector's run is for.
const rateTol = 0.05
