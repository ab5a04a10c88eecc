#!/usr/bin/env bash
# The diagnosis's healthy suite (needs root): tuned hosts across healthy lab
# paths (a LAN to 150 ms, 10 Mbit/s to 1 Gbit/s, a queue of one BDP) under
# bbr, cubic and reno, and loopback, RUNS tests each. A healthy transfer's
# verdict is the bottleneck, with nothing of warning or critical severity
# beside it. Prints the table docs/DIAGNOSES.md quotes; with -k DIR keeps
# the runs that were not diagnosed healthy there (tcpscope explain FILE).
#   bench/healthy.sh [-n RUNS] [-k DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 keep=""
while getopts "n:k:" o; do
  case $o in
    n) runs=$OPTARG ;;
    k) keep=$OPTARG ;;
    *) echo "usage: bench/healthy.sh [-n RUNS] [-k DIR]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench/healthy.sh: needs root (network namespaces)" >&2; exit 10; }
args=(-healthy="$runs")
[ -n "$keep" ] && mkdir -p "$keep" && args+=(-healthy-keep="$keep")
# The suite fails when a run is not diagnosed healthy; the table is the
# result either way.
out=$(go test -count=1 -timeout 2h -run 'TestHealthy$' -v ./internal/diagnose/ "${args[@]}" 2>&1) || true
printf '%s\n' "$out" | sed -n '/healthy suite,/,/^--- /p' | sed '$d' | sed 's/^ *healthy_linux_test.go:[0-9]*: //; s/^        //'
printf '%s\n' "$out" | grep -E '^(ok|FAIL)\s' || true
