package emulator

import (
	"fmt"

	"golang.zx2c4.com/wireguard/tun"
)

// CreateTUN creates a TUN device with the given name and MTU in the
// calling thread's network namespace (lock the thread and setns first to
// put it elsewhere; the device stays in that namespace and its fd works
// from any thread). The device has offloads on (IFF_VNET_HDR with TSO4/6
// and USO when the kernel has them): reads split the kernel's super-packets
// into single packets, batched writes coalesce them again. It disappears
// when closed.
func CreateTUN(name string, mtu int) (Device, error) {
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, fmt.Errorf("emulator: create TUN device %s: %w", name, err)
	}
	// The device reports link events on a small channel and blocks when
	// nobody reads it, which would keep its netlink socket (and with it
	// the network namespace) alive after Close. Nobody here needs them.
	go func() {
		for range dev.Events() {
		}
	}()
	return dev, nil
}
