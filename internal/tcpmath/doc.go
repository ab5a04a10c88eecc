// Package tcpmath is the arithmetic of TCP performance from the source
// documents: the bandwidth-delay product and the window/RTT bound
// (Tierney), the Mathis bound on a loss-limited transfer and its inverse,
// the loss rate needed for a target (the Web100 paper's equation 2), the
// bit-error-rate model in which rate grows with √MTU (Cisco Networkers
// 2004), packet rates, and round-trip times over fiber.
//
// Calculation is the JSON document of `tcpscope calc` (docs/JSON.md).
//
// Pure: model units in, model units out; no I/O, no clock.
package tcpmath
