package hostinfo

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ifreqData is struct ifreq with its union holding a pointer, as
// SIOCETHTOOL takes it: 16 bytes of name, then the pointer, padded to the
// union's 24 bytes.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolValue is struct ethtool_value: a command and its answer.
type ethtoolValue struct{ cmd, data uint32 }

// Offloads reads an interface's segmentation and receive offloads with
// the ethtool ioctls (ETHTOOL_GTSO, GGSO, GGRO), as `ethtool -k` shows
// them. A device without ethtool support (loopback answers, some virtual
// devices do not) gives an error.
func Offloads(name string) (model.Offloads, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return model.Offloads{}, fmt.Errorf("ethtool %s: %w", name, err)
	}
	defer unix.Close(fd)
	get := func(cmd uint32) (bool, error) {
		v := ethtoolValue{cmd: cmd}
		var ifr ifreqData
		copy(ifr.name[:unix.IFNAMSIZ-1], name)
		ifr.data = unsafe.Pointer(&v)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		runtime.KeepAlive(&v)
		if errno != 0 {
			return false, fmt.Errorf("ethtool %s: %w", name, errno)
		}
		return v.data != 0, nil
	}
	var o model.Offloads
	if o.TSO, err = get(unix.ETHTOOL_GTSO); err != nil {
		return o, err
	}
	if o.GSO, err = get(unix.ETHTOOL_GGSO); err != nil {
		return o, err
	}
	if o.GRO, err = get(unix.ETHTOOL_GGRO); err != nil {
		return o, err
	}
	return o, nil
}
