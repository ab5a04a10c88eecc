// Package sockdiag lists the host's TCP connections with their kernel
// state through netlink sock_diag (NETLINK_SOCK_DIAG, inet_diag): the same
// source as `ss -ti`, without root for the caller's own network namespace.
// Each socket comes with its tcp_info (decoded by package tcpinfo, by the
// length the kernel returned), congestion control, BBR model, queues and
// send buffer.
//
// This package does the reading: the netlink sockets (raw system calls
// into one reused receive buffer per socket, a dump split across two
// sockets on a busy host), lookups of one socket by its cookie, and the
// owners of sockets from /proc/PID/fd (Procs). The bytes it sends and
// receives are encoded and decoded by package inetdiag beside it, which
// does no I/O. It works on Linux; elsewhere Open reports ErrUnsupported.
//
// Filters are ss's grammar ("dport 22", "dst 10.0.0.0/8", "state
// established", "pid 4711", joined by and, or, not and parentheses):
// Parse reads them (parse.go) and filter.go compiles the ports and
// addresses of the expression's top-level conjuncts to inet_diag
// bytecode, "or" and "not" as the bytecode's forward jumps, so the kernel
// does the matching and only matching sockets cross into user space; the
// states an expression allows become the request's state mask (ss's
// default without -a: no listening, syn-recv, time-wait or closed
// sockets); what the kernel cannot test (a pid, through the socket
// inodes in /proc/PID/fd, or a state under "or" beside a port) is checked
// here after the dump.
package sockdiag
