// Package watch is the TCP oscilloscope's core. A Session is its sampling
// loop: over a Source (the kernel's sockets, which the cli wires in from
// sockdiag; a script in tests) it lists a filter's connections, or
// follows one (the busiest match, then the busiest other still busy when
// that one closes), every interval, until a count, the end of its
// context, or the end of the followed connection; a Clock gives it time.
// Tracker and Lister turn successive dumps into rows with rates (counters
// as deltas between samples); Tracker keeps a sliding window of a
// connection's samples for the running diagnosis (Running). Recorder and
// Replay write and read the sample stream as JSON lines (--json-stream,
// --record), so replaying a recording goes through exactly the code that
// watched it live. It reads no sockets itself and renders no text: the
// views are report's (the list, the followed lines) and scope's (the
// terminal view).
package watch
