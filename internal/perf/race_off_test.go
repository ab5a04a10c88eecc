//go:build !race

package perf_test

// rateTol is how far two ends' rates of one flow may differ in these
// tests (see race_on_test.go for the race detector's).
const rateTol = 0.02
