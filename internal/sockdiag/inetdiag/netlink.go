package inetdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Netlink framing (linux/netlink.h, linux/sock_diag.h).
const (
	// HeaderLen is the size of struct nlmsghdr: u32 length, u16 type,
	// u16 flags, u32 sequence number, u32 port id.
	HeaderLen = 16

	// Message types.
	typeNoop    = 1 // NLMSG_NOOP
	typeError   = 2 // NLMSG_ERROR
	typeDone    = 3 // NLMSG_DONE
	typeOverrun = 4 // NLMSG_OVERRUN
	// SockDiagByFamily is SOCK_DIAG_BY_FAMILY, the request's type, and
	// the type of every socket the kernel replies with.
	SockDiagByFamily = 20

	// Flags.
	FlagRequest = 0x1   // NLM_F_REQUEST
	FlagMulti   = 0x2   // NLM_F_MULTI: one of a dump's replies
	FlagDump    = 0x300 // NLM_F_DUMP (NLM_F_ROOT|NLM_F_MATCH)
)

// ErrMalformed is wrapped by every error about bytes that are not what
// the kernel sends.
var ErrMalformed = errors.New("inetdiag: malformed reply")

// Errno is an error the kernel answered a request with (NLMSG_ERROR, or
// a failed dump's NLMSG_DONE): the positive errno, as in errno.h.
// Package sockdiag turns it into the system's error type.
type Errno uint32

func (e Errno) Error() string { return "netlink error: errno " + strconv.FormatUint(uint64(e), 10) }

// Header is a netlink message header.
type Header struct {
	Len   uint32
	Type  uint16
	Flags uint16
	Seq   uint32
	Port  uint32
}

// align rounds n up to netlink's four-byte alignment (NLMSG_ALIGN,
// NLA_ALIGN).
func align(n int) int { return (n + 3) &^ 3 }

// appendHeader appends a message header for a payload of n bytes.
func appendHeader(b []byte, typ, flags uint16, seq uint32, n int) []byte {
	b = binary.NativeEndian.AppendUint32(b, uint32(HeaderLen+n))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, seq)
	return binary.NativeEndian.AppendUint32(b, 0) // port 0: to the kernel
}

// Next splits the first netlink message off b: its header, its payload
// (in place in b) and the messages after it. A message whose length does
// not fit its header or b is an error.
func Next(b []byte) (h Header, payload, rest []byte, err error) {
	if len(b) < HeaderLen {
		return Header{}, nil, nil, fmt.Errorf("netlink message of %d bytes, shorter than its header: %w", len(b), ErrMalformed)
	}
	h = Header{
		Len:   binary.NativeEndian.Uint32(b[0:]),
		Type:  binary.NativeEndian.Uint16(b[4:]),
		Flags: binary.NativeEndian.Uint16(b[6:]),
		Seq:   binary.NativeEndian.Uint32(b[8:]),
		Port:  binary.NativeEndian.Uint32(b[12:]),
	}
	if h.Len < HeaderLen || uint64(h.Len) > uint64(len(b)) {
		return Header{}, nil, nil, fmt.Errorf("netlink message of %d bytes in %d: %w", h.Len, len(b), ErrMalformed)
	}
	n := int(h.Len)
	return h, b[HeaderLen:n], b[min(align(n), len(b)):], nil
}

// Batch walks one batch of replies (what one read of the netlink socket
// returned) to the request numbered seq, handing each socket's payload
// to fn in place (fn must not keep it). done says the reply is complete:
// the dump's NLMSG_DONE, an error or acknowledgement, or a reply not
// marked as one of several (a lookup's). Otherwise the next batch is to
// be read. Messages of other sequence numbers (late replies to an
// earlier request) are skipped, and so are NLMSG_NOOP ones.
//
// A kernel error is an Errno: in NLMSG_ERROR, or in NLMSG_DONE when a
// dump failed part way. An error from fn ends the walk and is returned
// as it is.
func Batch(b []byte, seq uint32, fn func(payload []byte) error) (done bool, err error) {
	for len(b) > 0 {
		h, data, rest, err := Next(b)
		if err != nil {
			return false, err
		}
		b = rest
		if h.Seq != seq {
			continue
		}
		switch h.Type {
		case typeNoop:
			continue
		case typeDone:
			// Linux puts the dump's result in NLMSG_DONE: an int, 0 or a
			// negative errno. netlink(7) lets it be empty.
			if len(data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return true, Errno(uint32(-e))
				}
			}
			return true, nil
		case typeError:
			// struct nlmsgerr: int error (0 acknowledges), then the
			// request's header.
			if len(data) < 4 {
				return true, fmt.Errorf("netlink error message of %d bytes: %w", len(data), ErrMalformed)
			}
			if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
				return true, Errno(uint32(-e))
			}
			return true, nil
		case typeOverrun:
			return true, fmt.Errorf("netlink overrun: replies were lost: %w", ErrMalformed)
		case SockDiagByFamily:
		default:
			return true, fmt.Errorf("netlink message of type %d in a sock_diag reply: %w", h.Type, ErrMalformed)
		}
		if err := fn(data); err != nil {
			return true, err
		}
		if h.Flags&FlagMulti == 0 {
			return true, nil
		}
	}
	return false, nil
}
