// Package hostinfo reads a host's TCP configuration for the audit: the
// sysctls that bound TCP's buffers and features, and each interface's MTU,
// queue length, speed, duplex, driver, root qdisc and error counters.
//
// Everything is read from files under a root directory (/proc/sys and
// /sys/class/net), so tests run the audit on fixture trees recorded from
// real machines; the root qdiscs come from `tc -j qdisc show`, through a
// function the caller may replace for the same reason. The driver name is
// the link of /sys/class/net/IFACE/device/driver, the one ethtool -i
// reports.
package hostinfo
