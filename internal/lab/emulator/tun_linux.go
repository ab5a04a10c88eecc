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
//
// A device with offloads can also move a super-packet whole, virtio-net
// header and all (one read or write of up to 64 KiB): the emulator does so
// on a direction that gives every packet the same fate (see wholeFate).
func CreateTUN(name string, mtu int) (Device, error) {
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		raw, rerr := CreateRawTUN(name, mtu)
		if rerr != nil {
			return nil, fmt.Errorf("emulator: create TUN device %s: %w", name, errors.Join(err, rerr))
		}
		return raw, nil
	}
	drainEvents(dev)
	if vnetHeader(dev.File()) {
		return &vnetTUN{Device: dev, f: dev.File()}, nil
	}
	return dev, nil
}

// vnetHeader reports whether the TUN device behind f prefixes every packet
// with a virtio-net header (IFF_VNET_HDR), which wireguard's tun sets when
// the kernel takes its offloads. The descriptor is reached through
// SyscallConn, not Fd, which would make it blocking.
func vnetHeader(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var flags uint16
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err != nil {
			ioErr = err
			return
		}
		if ioErr = unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr); ioErr == nil {
			flags = ifr.Uint16()
		}
	})
	return err == nil && ioErr == nil && flags&unix.IFF_VNET_HDR != 0
}

// vnetTUN is a wireguard TUN device with offloads whose super-packets the
// emulator can also read and write whole, through the device's file (the
// same descriptor, through Go's poller).
type vnetTUN struct {
	tun.Device
	f *os.File
}

// readSuper reads one packet as the kernel hands it over: a virtio-net
// header, then an IP packet of up to 64 KiB (a GSO super-packet or a
// single one).
func (t *vnetTUN) readSuper(b []byte) (int, error) {
	n, err := t.f.Read(b)
	if errors.Is(err, unix.EBADFD) {
		err = os.ErrClosed
	}
	return n, err
}

// writeSuper writes one packet behind a virtio-net header: the kernel
// segments a super-packet itself, or hands it to the receiving stack whole.
func (t *vnetTUN) writeSuper(b []byte) error {
	_, err := t.f.Write(b)
	if errors.Is(err, unix.EBADFD) {
		err = os.ErrClosed
	}
	return err
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
	drainEvents(dev)
	return dev, nil
}

// drainEvents discards a device's link events. It reports them on a small
// channel and blocks when nobody reads it, which would keep its netlink
// socket (and with it the network namespace) alive after Close. Nobody
// here needs them.
func drainEvents(dev tun.Device) {
	go func() {
		for range dev.Events() {
		}
	}()
}
