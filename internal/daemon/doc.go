// Package daemon puts a command in the background, as iperf3 -D does: Start
// re-executes the program in a session of its own (no controlling terminal),
// its standard streams on /dev/null or a log file, and waits until the
// child says it is ready, or why it failed, over an inherited pipe; the
// child says so through the Reporter that Child returns. WritePidfile
// writes the pid file an init script or an operator stops it by.
//
// Go cannot fork a running program, so the daemon is a fresh process
// running the same command line; the variable EnvReady tells it that it is
// the child and where its pipe is.
package daemon
