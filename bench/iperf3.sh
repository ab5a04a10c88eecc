#!/usr/bin/env bash
# A stock iperf3 client against tcpscope's server and against iperf3's own
# server, on loopback, interleaved in one run: the ratios of what the
# client measures (goal ≥ 0.95), of the server's CPU, and of the segments
# the sender retransmitted (goal ≤ 1.5: a server's receive path must not
# make the sender resend). TCP and UDP. See docs/BENCHMARKS.md.
#   bench/iperf3.sh [-r ROUNDS] [-t SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 secs=3
while getopts "r:t:" o; do
  case $o in
    r) rounds=$OPTARG ;;
    t) secs=$OPTARG ;;
    *) echo "usage: bench/iperf3.sh [-r ROUNDS] [-t SECONDS]" >&2; exit 2 ;;
  esac
done
command -v iperf3 >/dev/null || { echo "bench/iperf3.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
source bench/machine.sh
record iperf3  # bench/results/iperf3.md, the machine first
bin/tcpscope server --listen 127.0.0.1:5411 >/dev/null 2>&1 & ts=$!
iperf3 -s -B 127.0.0.1 -p 5412 >/dev/null 2>&1 & is=$!
trap 'kill $ts $is 2>/dev/null || true' EXIT
sleep 0.5
# Per run: what the client measured, the server's CPU (as the client's
# document reports it) and the kernel's retransmitted segments (host-wide
# counters around the run: the runs are one at a time on loopback).
retr() { awk '/^Tcp:/{if(n++)print $13}' /proc/net/snmp; }
one() { # PORT ARGS...
  local port=$1; shift
  local r0; r0=$(retr)
  iperf3 -c 127.0.0.1 -p "$port" -t "$secs" "$@" -J | python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]
print(e["sum_received"]["bits_per_second"], e["cpu_utilization_percent"]["remote_total"], end=" ")'
  echo $(( $(retr) - r0 ))
}
modes=("" "-R" "-u -b 100M" "-u -b 100M -R" "-u -b 500M")
for i in $(seq "$rounds"); do
  for m in "${!modes[@]}"; do
    # shellcheck disable=SC2086
    echo "tcpscope $m $(one 5411 ${modes[$m]})"
    # shellcheck disable=SC2086
    echo "iperf3 $m $(one 5412 ${modes[$m]})"
  done
done | python3 -c '
import sys, statistics, collections
names = ["client sends", "server sends (-R)", "UDP -b 100M", "UDP -b 100M -R", "UDP -b 500M"]
v = collections.defaultdict(list)
for line in sys.stdin:
    who, m, rate, cpu, retr = line.split()
    v[who, int(m)].append((float(rate), float(cpu), int(retr)))
n = len(v["tcpscope", 0])
print("| stock iperf3 client, loopback (median of %d) | against tcpscope server: rate, server CPU, retransmitted | against iperf3 -s | rate ratio (goal ≥ 0.95) | CPU ratio | retransmissions ratio (goal ≤ 1.5) |" % n)
print("|---|---|---|---|---|---|")
for m, name in enumerate(names):
    t = [statistics.median(c) for c in zip(*v["tcpscope", m])]
    i = [statistics.median(c) for c in zip(*v["iperf3", m])]
    ratio = lambda a, b: "%.2f" % (a / b) if b else ("1" if a == 0 else "+%d" % a)
    rr = ratio(t[2], i[2]) if m < 2 else "—"
    print(f"| {name} | {t[0]/1e9:.2f} Gbit/s, {t[1]:.2f}%, {t[2]:.0f} | {i[0]/1e9:.2f} Gbit/s, {i[1]:.2f}%, {i[2]:.0f} | {t[0]/i[0]:.2f} | {ratio(t[1], i[1])} | {rr} |")
'
