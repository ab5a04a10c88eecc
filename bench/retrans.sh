#!/usr/bin/env bash
# What each server costs a stock iperf3 client's sending, many rounds,
# interleaved: tcpscope server, iperf3 -s, and any other server given with
# -s (a newer iperf3, a tcpscope build with another environment). Around
# every run it reads the kernel's counters in the client's network
# namespace (loopback: the host's): segments retransmitted (what the
# client prints as "Retr"), duplicate SACKs received (spurious ones) and,
# on the receiving side, segments queued out of order; and the rate the
# client's document reports. It prints each server's median and quartiles.
#
# How often one host's two CPUs interleave a connection's sending varies
# run to run by a factor of ten (docs/INTEROP.md): compare medians of 12
# rounds or more, never single runs.
#
#   bench/retrans.sh [-v] [-p] [-r ROUNDS] [-s 'NAME=COMMAND']... [-- IPERF3_ARGS]
#     -v  across a veth pair between two network namespaces (root)
#     -p  the servers on CPU 1, the client on CPU 0 (as two hosts would be)
#     -s  one more server: COMMAND must take "-p PORT" appended
#   e.g. bench/retrans.sh -v -r 16 -s 'iperf3 3.21=/opt/iperf3/bin/iperf3 -s' -- -t 1 -P 3
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=12 veth="" pin="" extra=()
while getopts "r:s:vp" o; do
  case $o in
    r) rounds=$OPTARG ;;
    s) extra+=("$OPTARG") ;;
    v) veth=1 ;;
    p) pin=1 ;;
    *) echo "usage: bench/retrans.sh [-v] [-p] [-r ROUNDS] [-s 'NAME=COMMAND']... [-- IPERF3_ARGS]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-t 1)
command -v iperf3 >/dev/null || { echo "bench/retrans.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
command -v nstat >/dev/null || { echo "bench/retrans.sh: nstat missing (iproute2)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
source bench/machine.sh
source bench/netns.sh

work=$(mktemp -d)
pids=()
cns="" sns=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
  if [ -n "$cns" ]; then veth_pair_del "$cns" "$sns" "rtc$$"; fi
}
trap cleanup EXIT

sx=() cx=() addr=127.0.0.1
if [ -n "$veth" ]; then
  [ "$(id -u)" = 0 ] || { echo "bench/retrans.sh: -v needs root (network namespaces)" >&2; exit 10; }
  cns=tcpscope-rtc-$$ sns=tcpscope-rts-$$
  veth_pair "$cns" "$sns" "rtc$$" "rts$$" 10.212.0.1/24 10.212.0.2/24
  sx=(ip netns exec "$sns") cx=(ip netns exec "$cns") addr=10.212.0.2
fi
spin=() cpin=()
if [ -n "$pin" ]; then
  [ "$(nproc)" -ge 2 ] || { echo "bench/retrans.sh: -p needs two CPUs" >&2; exit 1; }
  spin=(taskset -c 1) cpin=(taskset -c 0)
fi

names=("tcpscope server" "iperf3 -s") cmds=("bin/tcpscope server" "iperf3 -s")
for e in "${extra[@]}"; do names+=("${e%%=*}"); cmds+=("${e#*=}"); done
ports=()
for i in "${!cmds[@]}"; do
  port=$((5501 + i))
  # shellcheck disable=SC2206 # a server's command is words
  cmd=(${cmds[$i]})
  "${sx[@]}" "${spin[@]}" "${cmd[@]}" -p "$port" >"$work/server.$port.log" 2>&1 &
  pids+=($!)
  ports+=("$port")
done
# Wait for every server to listen, not for a while.
for port in "${ports[@]}"; do
  for _ in $(seq 100); do
    "${sx[@]}" ss -Hltn "sport = :$port" | grep -q . && break
    sleep 0.05
  done
done

# Each namespace's counters, each with its own nstat history.
snap() { # snap c|s FILE: the counters that matter, one "name value" per line
  local side=$1
  if [ "$side" = c ]; then "${cx[@]}" env NSTAT_HISTORY="$work/hist.c" nstat -a; else "${sx[@]}" env NSTAT_HISTORY="$work/hist.s" nstat -a; fi |
    awk '$1=="TcpRetransSegs"||$1=="TcpExtTCPDSACKRecv"||$1=="TcpExtTCPOFOQueue"{print $1, $2}' >"$2"
}
echo "bench/retrans.sh ${veth:+-v }${pin:+-p }-r $rounds -- ${args[*]}"
machine_line
for r in $(seq "$rounds"); do
  for i in "${!ports[@]}"; do
    port=${ports[$i]}
    snap c "$work/c0"; snap s "$work/s0"
    "${cx[@]}" "${cpin[@]}" iperf3 -c "$addr" -p "$port" "${args[@]}" -J >"$work/run.json" 2>&1 || true
    snap c "$work/c1"; snap s "$work/s1"
    python3 - "$work" "$i" "${veth:-0}" >>"$work/tally" <<'PY'
import json, sys
work, i, veth = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def read(f):
    return {k: int(v) for k, v in (l.split() for l in open(f"{work}/{f}"))}
c0, c1, s0, s1 = read("c0"), read("c1"), read("s0"), read("s1")
try:
    end = json.load(open(f"{work}/run.json"))["end"]
    rate = end["sum_received"]["bits_per_second"]
except (ValueError, KeyError):
    print(i, "failed")
    sys.exit()
d = lambda a, b, k: b.get(k, 0) - a.get(k, 0)
# On loopback both ends share the host's counters: count them once.
ooo = d(c0, c1, "TcpExtTCPOFOQueue") + (d(s0, s1, "TcpExtTCPOFOQueue") if veth else 0)
print(i, d(c0, c1, "TcpRetransSegs"), d(c0, c1, "TcpExtTCPDSACKRecv"), ooo, rate)
PY
  done
done
python3 - "$work/tally" "${names[@]}" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(int(f[0]), []).append(f[1:])
names = sys.argv[2:]
def q(v):
    v = sorted(v)
    if len(v) < 2:
        return f"{v[0]:.0f}"
    a, m, b = statistics.quantiles(v, n=4, method="inclusive")
    return f"{m:.0f} ({a:.0f}–{b:.0f})"
stats = []
for i, name in enumerate(names):
    runs = [r for r in rows.get(i, []) if r[0] != "failed"]
    failed = len(rows.get(i, [])) - len(runs)
    cols = list(zip(*[[float(x) for x in r] for r in runs])) if runs else None
    stats.append((name, runs, failed, cols))
ref = statistics.median(stats[1][3][0]) if stats[1][3] else None
print()
print("| server | runs | retransmitted, median (quartiles) | DSACKed | out of order | rate, median | retransmitted against iperf3 -s |")
print("|---|---|---|---|---|---|---|")
for name, runs, failed, cols in stats:
    runs_text = f"{len(runs)}" + (f", {failed} failed" if failed else "")
    if not cols:
        print(f"| {name} | {runs_text} | — | — | — | — | — |")
        continue
    med = statistics.median(cols[0])
    ratio = "—" if ref is None else (f"{(med + 1) / (ref + 1):.2f}× (+1 each)" if ref == 0 else f"{med / ref:.2f}×")
    print(f"| {name} | {runs_text} | {q(cols[0])} | {q(cols[1])} | {q(cols[2])} | {statistics.median(cols[3]) / 1e9:.2f} Gbit/s | {ratio} |")
PY
