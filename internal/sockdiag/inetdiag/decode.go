package inetdiag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// nlaTypeMask strips the nested and byte-order flags from an attribute's
// type (NLA_TYPE_MASK).
const nlaTypeMask = 0x3fff

// Msg is one reply's struct inet_diag_msg, read where it lies, and the
// attributes tcpscope uses.
type Msg struct {
	Family        uint8
	State         model.TCPState
	Local, Remote netip.AddrPort
	Cookie        uint64
	// RQ and WQ are the queues: for a listener its accept backlog, for
	// the rest ss's Recv-Q and Send-Q.
	RQ, WQ     uint32
	UID, Inode uint32
	// Info, Cong, BBR and Mem are the attributes' payloads, in place in
	// the reply: nil when the kernel sent none.
	Info, Cong, BBR, Mem []byte
}

// ParseMsg reads one reply's fixed part and finds its attributes.
func ParseMsg(b []byte) (Msg, error) {
	if len(b) < msgLen {
		return Msg{}, fmt.Errorf("inet_diag message of %d bytes, want at least %d: %w", len(b), msgLen, ErrMalformed)
	}
	m := Msg{Family: b[0], State: model.TCPState(b[1])}
	if m.Family != FamilyIPv4 && m.Family != FamilyIPv6 {
		return Msg{}, fmt.Errorf("inet_diag message of address family %d: %w", m.Family, ErrMalformed)
	}
	// struct inet_diag_sockid at 4: be16 sport, be16 dport, be32 src[4],
	// be32 dst[4], u32 if, u32 cookie[2].
	sport := binary.BigEndian.Uint16(b[4:])
	dport := binary.BigEndian.Uint16(b[6:])
	m.Local = netip.AddrPortFrom(addr(m.Family, b[8:24]), sport)
	m.Remote = netip.AddrPortFrom(addr(m.Family, b[24:40]), dport)
	m.Cookie = uint64(binary.NativeEndian.Uint32(b[44:])) | uint64(binary.NativeEndian.Uint32(b[48:]))<<32
	// idiag_expires at 52, then the queues, uid and inode.
	m.RQ, m.WQ = binary.NativeEndian.Uint32(b[56:]), binary.NativeEndian.Uint32(b[60:])
	m.UID = binary.NativeEndian.Uint32(b[64:])
	m.Inode = binary.NativeEndian.Uint32(b[68:])
	for a := b[msgLen:]; len(a) >= 4; {
		n := int(binary.NativeEndian.Uint16(a))
		typ := binary.NativeEndian.Uint16(a[2:]) & nlaTypeMask
		if n < 4 || n > len(a) {
			return Msg{}, fmt.Errorf("inet_diag attribute of %d bytes in %d: %w", n, len(a), ErrMalformed)
		}
		switch typ {
		case attrInfo:
			m.Info = a[4:n]
		case attrCong:
			m.Cong = a[4:n]
		case attrBBRInfo:
			m.BBR = a[4:n]
		case attrMemInfo:
			m.Mem = a[4:n]
		}
		a = a[min(align(n), len(a)):]
	}
	return m, nil
}

func addr(family uint8, b []byte) netip.Addr {
	if family == FamilyIPv4 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16([16]byte(b[:16])).Unmap()
}

// Decoder decodes replies into model types. It keeps the last
// congestion-control name: sockets share a handful of names, so a dump
// does not allocate one string per socket. It is not safe for concurrent
// use; its zero value is ready.
type Decoder struct {
	cc string
}

// ccName is the congestion-control attribute as a string, the one made
// for the previous socket when it is the same name.
func (d *Decoder) ccName(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if string(b) != d.cc {
		d.cc = string(b)
	}
	return d.cc
}

// Socket reads one reply's payload into s: its identity, state, queues,
// tcp_info, congestion control, BBR model and send buffer. What the
// kernel did not send stays absent. s.TCP.At, PID and Process are left
// for the caller.
func (d *Decoder) Socket(b []byte, s *model.Socket) error {
	m, err := ParseMsg(b)
	if err != nil {
		return err
	}
	s.Local, s.Remote = m.Local, m.Remote
	s.IPv6 = m.Family == FamilyIPv6
	s.Cookie, s.UID, s.Inode = m.Cookie, m.UID, m.Inode
	if len(m.Info) > 0 {
		if s.TCP, err = tcpinfo.Decode(m.Info); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	s.TCP.State = m.State
	if m.Cong != nil {
		s.TCP.Congestion = d.ccName(m.Cong)
	}
	if len(m.BBR) > 0 && s.TCP.Congestion == "bbr" {
		if s.TCP.BBR, err = tcpinfo.DecodeBBR(m.BBR); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	// For a listener the queues mean the accept backlog; for the rest
	// they are ss's Recv-Q and Send-Q.
	s.TCP.RecvQ, s.TCP.SendQ = model.Some(model.Bytes(m.RQ)), model.Some(model.Bytes(m.WQ))
	if len(m.Mem) >= 4*(memSndbuf+1) {
		s.TCP.SndBuf = model.Some(model.Bytes(binary.NativeEndian.Uint32(m.Mem[4*memSndbuf:])))
	}
	return nil
}

// Brief reads one reply's payload into s, as a connection list shows
// it: what Socket reads, for the fields a model.SocketBrief has.
func (d *Decoder) Brief(b []byte, s *model.SocketBrief) error {
	m, err := ParseMsg(b)
	if err != nil {
		return err
	}
	s.Local, s.Remote = m.Local, m.Remote
	s.IPv6 = m.Family == FamilyIPv6
	s.Cookie, s.Inode = m.Cookie, m.Inode
	if len(m.Info) > 0 {
		if s.TCP, err = tcpinfo.DecodeBrief(m.Info); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	s.TCP.State = m.State
	if m.Cong != nil {
		s.TCP.Congestion = d.ccName(m.Cong)
	}
	s.TCP.RecvQ, s.TCP.SendQ = model.Some(model.Bytes(m.RQ)), model.Some(model.Bytes(m.WQ))
	return nil
}

// ErrIncomplete: the bytes end before the reply does.
var ErrIncomplete = errors.New("inetdiag: reply ends before NLMSG_DONE")

// Decode decodes a whole reply, as recorded from the netlink socket
// (every batch read, one after the other), to the request numbered as
// its first message is: the sockets it lists, or the error it ends
// with. Bytes that end before the reply does are ErrIncomplete.
func Decode(b []byte) ([]model.Socket, error) {
	h, _, _, err := Next(b)
	if err != nil {
		return nil, err
	}
	var d Decoder
	var out []model.Socket
	done, err := Batch(b, h.Seq, func(p []byte) error {
		out = append(out, model.Socket{})
		return d.Socket(p, &out[len(out)-1])
	})
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, ErrIncomplete
	}
	return out, nil
}
