package engine

import (
	"syscall"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// SocketOptions are the options one end applies to a stream's socket.
func SocketOptions(cfg *model.TestConfig, role model.Role) tcpinfo.SocketOptions {
	if cfg.IsUDP() {
		o := tcpinfo.SocketOptions{SndBuf: cfg.Window, RcvBuf: cfg.Window, TOS: cfg.TOS}
		if role == model.Sender {
			o.MaxPacingRate = cfg.FQRate
		}
		if role == model.Receiver && cfg.Window == 0 {
			o.RcvBuf = udpReceiveBuffer
		}
		return o
	}
	o := tcpinfo.SocketOptions{SndBuf: cfg.Window, RcvBuf: cfg.Window, Congestion: cfg.Congestion, MSS: cfg.MSS, TOS: cfg.TOS}
	if role == model.Sender {
		o.MaxPacingRate = cfg.FQRate
	}
	return o
}

// setupOf reads back what the kernel granted a stream's socket; the
// type-of-service byte too when the test set one (tos).
func setupOf(st *Stream, tos bool) (model.SocketSetup, error) {
	var s model.SocketSetup
	var err error
	if tos {
		var c syscall.Conn
		if st.udp != nil {
			c = st.udp.conn
		} else {
			c = st.conn
		}
		v, err := tcpinfo.TOS(c)
		if err != nil {
			return s, err
		}
		s.TOS = &v
	}
	if st.udp != nil {
		s.SndBuf, s.RcvBuf, err = tcpinfo.Buffers(st.udp.conn)
		return s, err
	}
	c := st.conn
	if s.SndBuf, s.RcvBuf, err = tcpinfo.Buffers(c); err != nil {
		return s, err
	}
	if s.Congestion, err = tcpinfo.Congestion(c); err != nil {
		return s, err
	}
	if s.MSS, err = tcpinfo.MSS(c); err != nil {
		return s, err
	}
	return s, nil
}

func wrapSocket(err error, what string) error {
	if err == nil {
		return nil
	}
	return &fault.Error{Code: fault.Socket, Msg: what, Err: err}
}
