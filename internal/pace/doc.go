// Package pace runs a sampling loop at a fixed period, as cheaply in
// wake-ups as the Go runtime allows: following one connection at 100 Hz
// must cost a small part of a core, and on a virtual machine each thread
// wake-up and each system call the scheduler sees costs microseconds.
//
// A Ticker waits on a timerfd through the runtime's network poller and
// reads it with a raw system call. A time.Ticker's timer instead sleeps
// the poller in millisecond steps (two or three wake-ups a tick) and
// wakes the runtime's monitor thread at every expiry, and every system
// call made through the scheduler after the monitor fell asleep wakes it
// again. An Output writes with raw system calls too: straight to files
// that never make a writer wait, and to a pipe through a non-blocking
// descriptor of its own, waited on in the network poller when full.
package pace
