// Package model is tcpscope's vocabulary: pure data shared by every other
// package. A Sample is one read of a socket's kernel TCP state already in Go
// units (time.Duration, Bytes, Bitrate); a Run is one memory-to-memory test as
// seen from both ends. The unit types parse and format rates and sizes in one
// place, so the ttcp mistake (Mbit/s computed with 1024²) cannot recur.
//
// model does no I/O and never reads a clock: timestamps arrive in the data.
package model
