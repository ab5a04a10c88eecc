#!/usr/bin/env bash
# Sourced by the bench scripts: machine_line prints one line naming the
# machine a result was measured on (CPU model, cores, kernel, default
# congestion control, Go, and each peer's version), for the tables they
# print and the files they write under bench/results. A tool not installed
# is said so, never left blank. Safe under set -euo pipefail.
machine_line() {
  local cpu cores kernel cc gov i3 i2 nut
  cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
  cores=$(nproc 2>/dev/null || echo "?")
  kernel=$(uname -r)
  cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo "not read")
  gov=$(go env GOVERSION 2>/dev/null || echo "go not installed")
  i3=$(iperf3 --version 2>/dev/null | awk 'NR==1 {print $2}' || true)
  # command: bench/run.sh has a function named iperf (iperf3's client).
  i2=$(command iperf -v 2>&1 | awk '/^iperf version/ {print $3}' || true)
  nut=$(nuttcp -V 2>&1 | sed -n 's/^nuttcp-//p' | head -1 || true)
  printf 'machine: %s, %s cores; Linux %s; tcp_congestion_control %s; %s; iperf3 %s; iperf2 %s; nuttcp %s; %s\n' \
    "${cpu:-CPU not read}" "$cores" "$kernel" "$cc" "$gov" "${i3:-not installed}" "${i2:-not installed}" \
    "${nut:-not installed}" "$(date -u +%Y-%m-%dT%H:%MZ)"
}

# record NAME: from here on the script's output also goes to
# bench/results/NAME.md, which begins with the machine's line.
record() {
  mkdir -p bench/results
  exec > >(tee "bench/results/$1.md")
  machine_line
  echo
}
