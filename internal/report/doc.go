// Package report presents runs: human text, one JSON document, and a JSON
// event stream (one event per line). It also writes tcpscope watch's text
// (watch.go): the connection list and a followed connection's lines, from
// watch's frames; the watch's JSON lines are watch.Recorder's and its
// terminal view is package scope's. Everything writes to an io.Writer and
// works from model (and watch) data alone, so a saved run, or a replayed
// recording, prints the same as a live one.
//
// Units follow one convention: bit rates are SI (1 Mbit/s = 10^6 bit/s);
// transferred volumes are decimal (kB, MB, GB) so volume × 8 ÷ time reads
// as the rate; buffers and windows, which the kernel sizes in powers of
// two, are binary (KiB, MiB).
package report
