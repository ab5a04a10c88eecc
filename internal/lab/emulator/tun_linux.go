package emulator

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
)

// cloneDevice is the TUN driver's clone device.
const cloneDevice = "/dev/net/tun"

// CreateTUN creates a TUN device with the given name and MTU in the
// calling thread's network namespace (lock the thread and setns first to
// put it elsewhere; the device stays in that namespace and its fd works
// from any thread). The device has offloads on (IFF_VNET_HDR with TSO4/6
// and USO when the kernel has them): reads split the kernel's super-packets
// into single packets, batched writes coalesce them again. Where the kernel
// or a sandbox refuses offloads, it falls back to CreateRawTUN. The device
// disappears when closed.
func CreateTUN(name string, mtu int) (Device, error) {
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		raw, rerr := CreateRawTUN(name, mtu)
		if rerr != nil {
			return nil, fmt.Errorf("emulator: create TUN device %s: %w", name, errors.Join(err, rerr))
		}
		return raw, nil
	}
	return drainEvents(dev), nil
}

// CreateRawTUN creates a TUN device without offloads: every read and
// write is one packet, and the host segments TCP before handing it over.
// It is slower than CreateTUN's (one system call per packet) and works on
// any kernel with TUN.
func CreateRawTUN(name string, mtu int) (Device, error) {
	fd, err := unix.Open(cloneDevice, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("emulator: open %s: %w", cloneDevice, err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("emulator: TUN device name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("emulator: create raw TUN device %s: %w", name, err)
	}
	// Non-blocking before the runtime's poller takes the descriptor.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("emulator: raw TUN device %s: %w", name, err)
	}
	file := os.NewFile(uintptr(fd), cloneDevice)
	dev, err := tun.CreateTUNFromFile(file, mtu)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("emulator: raw TUN device %s: %w", name, err)
	}
	return drainEvents(dev), nil
}

// drainEvents discards a device's link events. It reports them on a small
// channel and blocks when nobody reads it, which would keep its netlink
// socket (and with it the network namespace) alive after Close. Nobody
// here needs them.
func drainEvents(dev tun.Device) tun.Device {
	go func() {
		for range dev.Events() {
		}
	}()
	return dev
}
