#!/usr/bin/env bash
# A stock iperf3 client against tcpscope's server and against iperf3's own
# server, on loopback, interleaved in one run: the ratio of what the
# client measures (goal ≥ 0.95). See docs/BENCHMARKS.md.
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
rate='import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'
for i in $(seq "$rounds"); do
  for mode in "" "-R"; do
    echo "tcpscope${mode} $(iperf3 -c 127.0.0.1 -p 5411 -t "$secs" $mode -J | python3 -c "$rate")"
    echo "iperf3${mode} $(iperf3 -c 127.0.0.1 -p 5412 -t "$secs" $mode -J | python3 -c "$rate")"
  done
done | python3 -c '
import sys, statistics, collections
v = collections.defaultdict(list)
for line in sys.stdin:
    k, x = line.split()
    v[k].append(float(x))
print("| stock iperf3 client, loopback (median of %d) | against tcpscope server | against iperf3 -s | ratio (goal ≥ 0.95) |" % len(v["tcpscope"]))
print("|---|---|---|---|")
for mode, name in (("", "client sends"), ("-R", "server sends (-R)")):
    t, i = statistics.median(v["tcpscope" + mode]), statistics.median(v["iperf3" + mode])
    print(f"| {name} | {t/1e9:.1f} Gbit/s | {i/1e9:.1f} Gbit/s | {t/i:.2f} |")
'
