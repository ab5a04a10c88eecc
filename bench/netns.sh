#!/usr/bin/env bash
# Sourced by the bench scripts that run a client and a server on two
# hosts of their own: two network namespaces joined by a veth pair
# (offloads on, as a veth's are by default). Needs root. Safe under
# set -euo pipefail; each step on its own, so that a trap can undo what
# was done so far.

# veth_pair CNS SNS CLINK SLINK CADDR SADDR: namespaces CNS and SNS, the
# link CLINK in CNS with CADDR (an address with its prefix) and SLINK in
# SNS with SADDR, every interface up.
veth_pair() {
  local cns=$1 sns=$2 cl=$3 sl=$4 ca=$5 sa=$6 ns
  ip netns add "$cns"
  ip netns add "$sns"
  ip link add "$cl" type veth peer name "$sl"
  ip link set "$cl" netns "$cns"
  ip link set "$sl" netns "$sns"
  ip -n "$cns" addr add "$ca" dev "$cl"
  ip -n "$sns" addr add "$sa" dev "$sl"
  for ns in "$cns" "$sns"; do ip -n "$ns" link set lo up; done
  ip -n "$cns" link set "$cl" up
  ip -n "$sns" link set "$sl" up
}

# veth_pair_del CNS SNS CLINK: undoes veth_pair, or what it did before it
# failed; never fails.
veth_pair_del() {
  ip link del "$3" 2>/dev/null || true
  ip netns del "$1" 2>/dev/null || true
  ip netns del "$2" 2>/dev/null || true
}
