// Package inetdiag is the wire format of Linux's sock_diag for TCP
// (NETLINK_SOCK_DIAG, linux/inet_diag.h): it encodes inet_diag requests
// and decodes the kernel's replies, from bytes alone. It opens no socket
// and makes no system call, so it builds and is tested on any system;
// package sockdiag does the netlink I/O and hands it the bytes.
//
// A request (Request, AppendRequest) is one netlink message holding a
// struct inet_diag_req_v2: a dump of one address family's sockets in the
// states asked for, filtered by inet_diag bytecode when there is some, or
// a lookup of one socket by its addresses and cookie. The replies come in
// batches, one a read: Batch walks one batch's netlink messages, skips
// those of other requests (by sequence number) and NLMSG_NOOP, hands on
// each socket's payload, and says when the reply is complete: at
// NLMSG_DONE, an error or acknowledgement, or a lookup's single message.
// An error the kernel answers with (in NLMSG_ERROR, or in the NLMSG_DONE
// of a dump that failed part way) is an Errno.
//
// Decoder reads one payload, a struct inet_diag_msg and its attributes,
// into a model.Socket or a model.SocketBrief: the socket's identity
// (addresses, cookie, inode, uid), its state and queues, its tcp_info and
// BBR model (decoded by package tcpinfo, by the length the kernel sent),
// its congestion control and its send buffer (INET_DIAG_SKMEMINFO).
// Decode does all of that for a whole recorded reply.
//
// Netlink is in the host's byte order (but for the socket identity's
// ports and addresses, in network order), so the bytes are read as the
// machine running this code writes them: recorded replies decode the
// same on any machine of the byte order they were recorded on. Bytes the
// kernel would not send are an error wrapping ErrMalformed (a reply that
// ends early, ErrIncomplete), never a panic.
package inetdiag
