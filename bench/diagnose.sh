#!/usr/bin/env bash
# How long `tcpscope diagnose` takes with its defaults against a lab path
# (goal: ≤ 15 s), side by side with what the same facts cost with iperf3
# in the same run: a 5 s test each way, which gives the rates and nothing
# else (no audit, no path facts, no findings). See docs/BENCHMARKS.md.
#   bench/diagnose.sh [-n RUNS] [-p PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 path=vhp
while getopts "n:p:" o; do
  case $o in
    n) runs=$OPTARG ;;
    p) path=$OPTARG ;;
    *) echo "usage: bench/diagnose.sh [-n RUNS] [-p PATH]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench/diagnose.sh: needs root (network namespaces)" >&2; exit 10; }
command -v iperf3 >/dev/null || { echo "bench/diagnose.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
export PATH=$PWD/bin:$PATH
source bench/machine.sh
record diagnose  # bench/results/diagnose.md, the machine first

out=$(printf '%s\nexit\n' "
pf=\$(mktemp); ip netns exec \$NS_B iperf3 -s -D -B \$B -p 5202 -I \$pf >/dev/null 2>&1
for t in \$(seq 100); do ip netns exec \$NS_B ss -Hltn 'sport = :5202' | grep -q . && break; sleep 0.05; done
for i in \$(seq $runs); do
  s=\$EPOCHREALTIME; tcpscope diagnose \$B >/dev/null; e=\$EPOCHREALTIME
  echo RESULT diagnose \$s \$e
  s=\$EPOCHREALTIME; iperf3 -c \$B -p 5202 -t 5 >/dev/null; iperf3 -c \$B -p 5202 -t 5 -R >/dev/null; e=\$EPOCHREALTIME
  echo RESULT iperf3 \$s \$e
done
kill \$(cat \$pf); rm -f \$pf" | SHELL=/bin/bash tcpscope lab shell "$path" 2>/dev/null | grep '^RESULT' || true)

printf '%s\n' "$out" | python3 -c '
import sys, statistics, collections
v = collections.defaultdict(list)
for line in sys.stdin:
    f = line.split()
    if len(f) == 4:
        v[f[1]].append(float(f[3]) - float(f[2]))
d, i = statistics.median(v["diagnose"]), statistics.median(v["iperf3"])
print("| what (path '"$path"') | seconds (median of %d) |" % len(v["diagnose"]))
print("|---|---|")
print("| tcpscope diagnose, defaults | %.1f |" % d)
print("| iperf3 -t 5, then -t 5 -R | %.1f |" % i)
print("| ratio | %.2f (goal: diagnose ≤ 15 s) |" % (d / i))
'
