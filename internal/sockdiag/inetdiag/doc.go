// Package inetdiag is the wire format of Linux's sock_diag for TCP
// (NETLINK_SOCK_DIAG, linux/inet_diag.h): it encodes inet_diag requests
// and decodes the kernel's replies, from bytes alone. It opens no socket
// and makes no system call, so it builds and is tested on any system;
// package sockdiag does the netlink I/O and hands it the bytes.
//
// A request (Request, AppendRequest) is one netlink message holding a
// struct inet_diag_req_v2: a dump of one address family's sockets in the
// states asked for, filtered by optional inet_diag bytecode, or a lookup
// of one socket by its addresses and cookie. Its replies come in batches,
// one batch a read: Batch walks one batch's netlink messages, skips those
// of other requests (by sequence number), hands on each reply's payload,
// and says when the reply is complete (NLMSG_DONE, an error or
// acknowledgement, or a lookup's single message). A kernel error comes
// back as an Errno. Decoder reads one payload, a struct inet_diag_msg and
// its attributes, into a model.Socket or model.SocketBrief: the socket's
// identity (addresses, cookie, inode, uid), its state and queues, its
// tcp_info and BBR model (decoded by package tcpinfo, by the length the
// kernel sent), congestion control and send buffer. Decode does all of
// that for a whole recorded reply.
//
// Netlink is in the host's byte order (the ports and addresses of the
// socket identity excepted, which are in network order), so the bytes
// are read as the machine running this code writes them: recorded
// replies decode the same on any machine of the byte order they were
// recorded on. Bad bytes are an error wrapping ErrMalformed, never a
// panic.
package inetdiag
