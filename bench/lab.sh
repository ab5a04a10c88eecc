#!/usr/bin/env bash
# The lab's benchmarks (needs root): what the userspace path emulator
# carries with no impairment, with tcpscope and with iperf3 across the same
# emulated path in one run, and the GigaSunet goal: one CUBIC flow with
# tuned hosts on an emulated 1 Gbit/s, 21 ms path. See docs/BENCHMARKS.md.
#   bench/lab.sh [-n RUNS] [-t SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 secs=5
while getopts "n:t:" o; do
  case $o in
    n) runs=$OPTARG ;;
    t) secs=$OPTARG ;;
    *) echo "usage: bench/lab.sh [-n RUNS] [-t SECONDS]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench/lab.sh: needs root (network namespaces)" >&2; exit 10; }
command -v iperf3 >/dev/null || { echo "bench/lab.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
export PATH=$PWD/bin:$PATH
source bench/machine.sh
record lab  # bench/results/lab.md, the machine first
prof=$(mktemp)
trap 'rm -f "$prof"' EXIT
cat >"$prof" <<'TOML'
[path.unimpaired]
description = "no impairment: the emulator's own ceiling"
rate = "0"
rtt = "0s"
TOML

# inlab PATH HOSTS SCRIPT: runs SCRIPT in a shell on host A of a fresh lab
# path (tcpscope server on B, $B its address, $NS_B its namespace).
inlab() { printf '%s\nexit\n' "$3" | tcpscope lab --profiles "$prof" shell "$1" --hosts "$2" 2>/dev/null | grep '^RESULT' || true; }

goodput='python3 -c "import json,sys; print(sum(d[\"goodput\"] for d in json.load(sys.stdin)[\"summary\"]))"'
iperfput='python3 -c "import json,sys; print(json.load(sys.stdin)[\"end\"][\"sum_received\"][\"bits_per_second\"])"'

unimpaired=$(inlab unimpaired stock "
pf=\$(mktemp); ip netns exec \$NS_B iperf3 -s -D -B \$B -p 5202 -I \$pf >/dev/null 2>&1
for t in \$(seq 100); do ip netns exec \$NS_B ss -Hltn 'sport = :5202' | grep -q . && break; sleep 0.05; done
for i in \$(seq $runs); do
  echo RESULT tcpscope \$(tcpscope test \$B -t $secs --json | $goodput)
  echo RESULT iperf3 \$(iperf3 -c \$B -p 5202 -t $secs -J | $iperfput)
done
kill \$(cat \$pf); rm -f \$pf")
gigasunet=$(inlab gigasunet-21ms tuned "
for i in \$(seq $runs); do
  echo RESULT cubic \$(tcpscope test \$B -t $((secs * 2)) -O 3 -C cubic --json | $goodput)
done")

printf '%s\n%s\n' "$unimpaired" "$gigasunet" | python3 <(cat <<'PY'
import sys, statistics, collections
v = collections.defaultdict(list)
for line in sys.stdin:
    f = line.split()
    if len(f) == 3 and f[2] not in ("", "None"):
        v[f[1]].append(float(f[2]))
def med(k):
    return statistics.median(v[k]) if v[k] else float("nan")
t, i, c = med("tcpscope"), med("iperf3"), med("cubic")
print("| benchmark | measured (median) | goal |")
print("|---|---|---|")
print(f"| through the emulator, no impairment, tcpscope | {t/1e9:.2f} Gbit/s | ≥ 3 Gbit/s |")
print(f"| through the emulator, no impairment, iperf3 3.12 | {i/1e9:.2f} Gbit/s | (the peer, same path) |")
print(f"| gigasunet-21ms (1 Gbit/s, 21 ms), tuned hosts, one CUBIC flow | {c/1e6:.1f} Mbit/s = {c/1e9*100:.1f}% of the rate | ≥ 90% |")
print()
for k, xs in sorted(v.items()):
    print(f"- {k}: " + ", ".join(f"{x/1e6:.1f}" for x in xs) + " Mbit/s")
PY
)
