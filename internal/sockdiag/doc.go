// Package sockdiag lists the host's TCP connections with their kernel
// state through netlink sock_diag (NETLINK_SOCK_DIAG, inet_diag): the same
// source as `ss -ti`, without root for the caller's own network namespace.
// Each socket comes with its tcp_info (decoded by package tcpinfo, by the
// length the kernel returned), congestion control, BBR model and queues.
//
// Filters are the `ss` kind ("dport 22", "dst 10.0.0.0/8", "state
// established", "pid 4711"): Parse compiles ports and addresses to
// inet_diag bytecode so the kernel does the matching and only matching
// sockets cross into user space; states become the request's state mask;
// a pid is matched here, through the socket inodes in /proc/PID/fd.
package sockdiag
