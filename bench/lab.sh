#!/usr/bin/env bash
# The lab's benchmarks (needs root): what the userspace path emulator
# carries with no impairment, with tcpscope and with iperf3 across the same
# emulated path in one run, interleaved with the same transfers over a plain
# veth pair (the kernel's own ceiling), the emulator's CPU seconds per GB
# moved, and the GigaSunet goal: one CUBIC flow with tuned hosts on an
# emulated 1 Gbit/s, 21 ms path. See docs/BENCHMARKS.md.
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
# The veth pair: two namespaces of our own (named by this script's PID),
# 198.18.0.0/30 (RFC 2544's benchmarking range), and a tcpscope and an
# iperf3 server on its B side, stopped by their PIDs.
va=tcpscope-bench-$$-a vb=tcpscope-bench-$$-b vpf=$(mktemp) vts=
cleanup() {
  [ -s "$vpf" ] && kill "$(cat "$vpf")" 2>/dev/null
  [ -n "$vts" ] && kill "$vts" 2>/dev/null
  ip netns del "$va" 2>/dev/null; ip netns del "$vb" 2>/dev/null
  rm -f "$prof" "$vpf"
}
trap cleanup EXIT
ip netns add "$va"; ip netns add "$vb"
ip link add veth0 netns "$va" type veth peer name veth0 netns "$vb"
ip -n "$va" addr add 198.18.0.1/30 dev veth0; ip -n "$vb" addr add 198.18.0.2/30 dev veth0
for n in "$va" "$vb"; do ip -n "$n" link set lo up; ip -n "$n" link set veth0 up; done
rm -f "$vpf"; ip netns exec "$vb" iperf3 -s -D -B 198.18.0.2 -p 5202 -I "$vpf" >/dev/null 2>&1
ip netns exec "$vb" tcpscope server -B 198.18.0.2 >/dev/null 2>&1 & vts=$!
for t in $(seq 100); do
  [ "$(ip netns exec "$vb" ss -Hltn '( sport = :5201 or sport = :5202 )' | wc -l)" -ge 2 ] && break; sleep 0.05
done
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
# emucpu: the emulator's CPU time so far, in clock ticks: the lab shell's
# parent is the tcpscope process that runs it (its tcpscope server on B is
# a process of its own).
emucpu='awk "{print \$14+\$15}" /proc/$PPID/stat'

unimpaired=$(inlab unimpaired stock "
pf=\$(mktemp); ip netns exec \$NS_B iperf3 -s -D -B \$B -p 5202 -I \$pf >/dev/null 2>&1
for t in \$(seq 100); do ip netns exec \$NS_B ss -Hltn 'sport = :5202' | grep -q . && break; sleep 0.05; done
hz=\$(getconf CLK_TCK)
for i in \$(seq $runs); do
  c0=\$($emucpu); r=\$(tcpscope test \$B -t $secs --json | $goodput); c1=\$($emucpu)
  echo RESULT tcpscope \$r; echo RESULT cpu-tcpscope \$(python3 -c \"print((\$c1-\$c0)/\$hz / (\$r*$secs/8e9))\")
  c0=\$($emucpu); r=\$(iperf3 -c \$B -p 5202 -t $secs -J | $iperfput); c1=\$($emucpu)
  echo RESULT iperf3 \$r; echo RESULT cpu-iperf3 \$(python3 -c \"print((\$c1-\$c0)/\$hz / (\$r*$secs/8e9))\")
  echo RESULT veth-tcpscope \$(ip netns exec $va tcpscope test 198.18.0.2 -t $secs --json | $goodput)
  echo RESULT veth-iperf3 \$(ip netns exec $va iperf3 -c 198.18.0.2 -p 5202 -t $secs -J | $iperfput)
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
vt, vi = med("veth-tcpscope"), med("veth-iperf3")
print("| benchmark | measured (median) | goal |")
print("|---|---|---|")
print(f"| through the emulator, no impairment, tcpscope | {t/1e9:.2f} Gbit/s ({t/vt:.2f} of a veth pair's {vt/1e9:.2f}) | ≥ 15 Gbit/s |")
print(f"| through the emulator, no impairment, iperf3 3.12 | {i/1e9:.2f} Gbit/s ({i/vi:.2f} of a veth pair's {vi/1e9:.2f}) | (the peer, same path) |")
print(f"| the emulator's CPU per GB moved (tcpscope; iperf3) | {med('cpu-tcpscope'):.2f}; {med('cpu-iperf3'):.2f} CPU-s/GB | |")
print(f"| gigasunet-21ms (1 Gbit/s, 21 ms), tuned hosts, one CUBIC flow | {c/1e6:.1f} Mbit/s = {c/1e9*100:.1f}% of the rate | ≥ 90% |")
print()
for k, xs in sorted(v.items()):
    if k.startswith("cpu-"):
        print(f"- {k}: " + ", ".join(f"{x:.2f}" for x in xs) + " CPU-s/GB")
    else:
        print(f"- {k}: " + ", ".join(f"{x/1e6:.1f}" for x in xs) + " Mbit/s")
PY
)
