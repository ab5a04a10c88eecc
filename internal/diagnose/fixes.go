package diagnose

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/tcpscope/tcpscope/internal/model"
)

// bufferFix is what raises one end's buffer to buf, from every setting
// that bears on it: whether the application pinned the buffer (-w sets
// SO_RCVBUF and SO_SNDBUF, which turns autotuning off and is capped by
// net.core.rmem_max and wmem_max), whether the kernel autotunes it
// (tcp_moderate_rcvbuf, receive side only: send buffers always grow),
// and the autotuning bounds as the end has them (tcp_rmem, tcp_wmem),
// whose minimum and default a fix keeps. A setting already large
// enough is left alone, and nothing is ever lowered. Without the end's
// settings (a stock iperf3 peer, a recording from before they were
// reported) the fix states the kernel's defaults it assumes.
type bufferFix struct {
	where string             // the end, for Fix.Where
	recv  bool               // the receive buffer (else the send buffer)
	set   *model.TCPSettings // the end's settings; nil when not read
}

// fixes returns the commands that let the end's buffer reach buf, and
// whether the end's settings already allow it (then the limit is not a
// setting of the kernel's, and the fixes say where else to look).
func (b bufferFix) fixes(buf model.Bytes, pinned bool) (out []model.Fix, allowed bool) {
	key, capKey, sockopt, dflt := "net.ipv4.tcp_wmem", "net.core.wmem_max", "SO_SNDBUF", model.LinuxWmem
	if b.recv {
		key, capKey, sockopt, dflt = "net.ipv4.tcp_rmem", "net.core.rmem_max", "SO_RCVBUF", model.LinuxRmem
	}
	var bounds model.BufferBounds
	var boundsOK bool
	var capV model.Bytes
	var capOK bool
	auto := model.Opt[bool]{}
	if b.set != nil {
		bounds, boundsOK = b.set.Rmem.Get()
		capV, capOK = b.set.RmemMax.Get()
		if !b.recv {
			bounds, boundsOK = b.set.Wmem.Get()
			capV, capOK = b.set.WmemMax.Get()
		} else {
			auto = b.set.Autotuning
		}
	}
	if pinned {
		// The application's SO_*BUF: raise it, and the cap it may ask.
		if !capOK || capV < buf {
			out = append(out, model.Fix{Where: b.where, Kind: "sysctl", Command: fmt.Sprintf("sysctl -w %s=%d", capKey, buf)})
		}
		out = append(out, model.Fix{Where: "application", Kind: "setsockopt", Command: fmt.Sprintf("setsockopt(%s, %d), or leave it unset so autotuning can grow it (tcpscope test -w %s, or no -w)", sockopt, buf, buf.Binary())})
		return out, false
	}
	if off, ok := auto.Get(); ok && !off {
		out = append(out, model.Fix{Where: b.where, Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_moderate_rcvbuf=1 (receive buffer autotuning is off)"})
	}
	switch {
	case boundsOK && bounds.Max >= buf:
		if len(out) == 0 {
			// The kernel already allows the buffer: what held it is an
			// application's own SO_*BUF, or the autotuning's pace.
			out = append(out, model.Fix{Where: "application", Kind: "setsockopt", Command: fmt.Sprintf("%s's maximum (%d) already allows %s: if the application sets %s, raise it to %d or leave it unset", key, bounds.Max, buf.Binary(), sockopt, buf)})
			return out, true
		}
	case boundsOK:
		out = append(out, model.Fix{Where: b.where, Kind: "sysctl", Command: fmt.Sprintf("sysctl -w %s=\"%s\"", key, bounds.WithMax(buf))})
	default:
		out = append(out, model.Fix{Where: b.where, Kind: "sysctl", Command: fmt.Sprintf("sysctl -w %s=\"%s\" (the kernel's minimum and default: this end's were not read)", key, dflt.WithMax(buf))})
	}
	return out, false
}

// allows reports the largest buffer the end's settings let a connection
// grow to without its application pinning it (the autotuning maximum),
// and whether it is known.
func (b bufferFix) allows() (model.Bytes, bool) {
	if b.set == nil {
		return 0, false
	}
	bounds, ok := b.set.Rmem.Get()
	if !b.recv {
		bounds, ok = b.set.Wmem.Get()
	} else if on, known := b.set.Autotuning.Get(); known && !on {
		return bounds.Default, ok // without autotuning the default is all it gets
	}
	return bounds.Max, ok
}

// raisesRate are the limits whose fix raises the rate (a window, a
// buffer): their predicted rate must be above what the transfer got. A
// policer's fix keeps its rate without the loss, and a loss's is the
// path's to make.
var raisesRate = map[string]bool{"rwnd-limited": true, "wscale-off": true, "sndbuf-limited": true}

// sysctlFix reads a fix's "sysctl -w KEY=VALUE" command: the key and its
// numbers (one, or tcp_rmem's three).
var sysctlFix = regexp.MustCompile(`sysctl -w (net\.[a-z0-9_.]+)="?([0-9]+(?: [0-9]+ [0-9]+)?)"?`)

// FixProblems checks the fixes of a diagnosis against the run's hosts:
// no sysctl fix may lower what an end already has (a buffer maximum, a
// default, a cap), and a limit's predicted rate after its fix must be
// above what the transfer got, or the fix leaves the limit where it is.
// It returns one line per problem; none is the rule held.
func FixProblems(run *model.Run, fs []model.Finding) []string {
	var out []string
	settingsOf := func(where string) *model.TCPSettings {
		switch where {
		case "sender (this client)", "receiver (this client)":
			return run.Client.Settings
		case "sender (the server)", "receiver (the server)":
			return run.Remote.Settings
		}
		return nil
	}
	goodput := map[model.Direction]model.Bitrate{}
	for _, d := range run.Summary {
		if g, ok := d.Goodput.Get(); ok {
			goodput[d.Direction] = g
		}
	}
	for _, f := range fs {
		for _, fx := range f.Fix {
			m := sysctlFix.FindStringSubmatch(fx.Command)
			set := settingsOf(fx.Where)
			if m == nil || set == nil {
				continue
			}
			var nums []int64
			for _, s := range regexp.MustCompile(`[0-9]+`).FindAllString(m[2], -1) {
				n, _ := strconv.ParseInt(s, 10, 64)
				nums = append(nums, n)
			}
			var now []int64
			switch m[1] {
			case "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem":
				b, ok := set.Rmem.Get()
				if m[1] == "net.ipv4.tcp_wmem" {
					b, ok = set.Wmem.Get()
				}
				if ok {
					now = []int64{int64(b.Min), int64(b.Default), int64(b.Max)}
				}
			case "net.core.rmem_max", "net.core.wmem_max":
				c, ok := set.RmemMax.Get()
				if m[1] == "net.core.wmem_max" {
					c, ok = set.WmemMax.Get()
				}
				if ok {
					now = []int64{int64(c)}
				}
			}
			if len(now) != len(nums) {
				continue
			}
			for i := range now {
				if nums[i] < now[i] {
					out = append(out, fmt.Sprintf("%s (%s): %q lowers %s from %d to %d", f.ID, f.Direction, fx.Command, m[1], now[i], nums[i]))
				}
			}
			if len(now) == 3 && nums[2] == now[2] || len(now) == 1 && nums[0] == now[0] {
				out = append(out, fmt.Sprintf("%s (%s): %q sets %s to what it is", f.ID, f.Direction, fx.Command, m[1]))
			}
		}
		if p, ok := f.Predicted.Get(); ok && f.Primary && raisesRate[f.ID] {
			if g, ok := goodput[f.Direction]; ok && float64(p) <= float64(g) {
				out = append(out, fmt.Sprintf("%s (%s): the fix predicts %v, no more than the %v the transfer got", f.ID, f.Direction, p, g))
			}
		}
	}
	return out
}
