#!/usr/bin/env bash
# Fairness among concurrent tests (issue 15): CLIENTS stock iperf3 clients
# started together, each a single-stream test, against one tcpscope server
# and against CLIENTS `iperf3 -s` processes on CLIENTS ports, rounds
# interleaved (A B, B A, ...). Per round: Jain's fairness index over the
# clients' received rates, the slowest and fastest, and the servers' CPU
# seconds per GB moved. Loopback only; stops only the processes it
# started, by PID. See docs/BENCHMARKS.md.
#   bench/fairness.sh [-c CLIENTS] [-r ROUNDS] [-t SECONDS] [-l LENGTH] [-k iperf3|tcpscope] [-R] [-b BINARY] [-K DIR]
# -k tcpscope: the clients are `tcpscope test` (against iperf3 -s it
# speaks iperf3's protocol); -R: the servers send; -b: a tcpscope binary
# built elsewhere (another commit's, for a before and after) instead of
# this tree's; -K: keep every client's JSON document in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/machine.sh
clients=64 rounds=3 secs=8 len="" kind=iperf3 rev="" ts=bin/tcpscope keep=""
while getopts "c:r:t:l:k:Rb:K:" o; do
  case $o in
    c) clients=$OPTARG ;;
    r) rounds=$OPTARG ;;
    t) secs=$OPTARG ;;
    l) len=$OPTARG ;;
    k) kind=$OPTARG ;;
    R) rev=-R ;;
    b) ts=$OPTARG ;;
    K) keep=$OPTARG ;;
    *) echo "usage: bench/fairness.sh [-c CLIENTS] [-r ROUNDS] [-t SECONDS] [-l LENGTH] [-k iperf3|tcpscope] [-R] [-b BINARY] [-K DIR]" >&2; exit 2 ;;
  esac
done
command -v iperf3 >/dev/null || { echo "bench/fairness.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench/fairness.sh: python3 missing" >&2; exit 1; }
[ "$ts" != bin/tcpscope ] || CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
out=bench/results
mkdir -p "$out"
work=$(mktemp -d)
tport=5320 base=5500

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$work"/*.json "$keep"/ 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The server's defaults admit a few tests per client address; every
# client here is 127.0.0.1, so the bounds are raised above the count.
"$ts" server --listen 127.0.0.1:$tport --max-tests $((clients + 8)) \
  --max-tests-per-address $((clients + 8)) --max-pending-per-address $((clients * 2 + 8)) \
  --max-pending $((clients * 2 + 8)) --max-total-streams $((clients * 2 + 8)) >"$work/ts.log" 2>&1 &
tspid=$!; pids+=("$tspid")
ipids=()
for i in $(seq 0 $((clients - 1))); do
  iperf3 -s -B 127.0.0.1 -p $((base + i)) >/dev/null 2>&1 & ipids+=($!); pids+=($!)
done
listening() { ss -Hltn "sport = :$1" | grep -q .; }
for port in $tport $(seq $base $((base + clients - 1))); do
  for _ in $(seq 200); do listening "$port" && break; sleep 0.05; done
  listening "$port" || { echo "bench/fairness.sh: nothing listens on $port" >&2; exit 1; }
done

# cpu PID...: their utime+stime in clock ticks.
cpu() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }

# round TARGET N: CLIENTS clients at once; one line per client's rate in
# $work/TARGET.N, the server's CPU ticks in $work/TARGET.N.cpu.
round() {
  local target=$1 n=$2 c0 cp=() i port
  if [ "$target" = tcpscope ]; then c0=$(cpu "$tspid"); else c0=$(cpu "${ipids[@]}"); fi
  # The clients start together: each waits for a line on a pipe held
  # open here, and the lines are written once all of them wait (forking
  # 64 clients one by one on a loaded machine spreads their starts over a
  # second or more, and a test alone for part of its time is fast).
  rm -f "$work/go" "$work"/ready.*; mkfifo "$work/go"; exec 9<>"$work/go"
  for i in $(seq 0 $((clients - 1))); do
    if [ "$target" = tcpscope ]; then port=$tport; else port=$((base + i)); fi
    if [ "$kind" = tcpscope ]; then
      { : >"$work/ready.$i"; read -r _ <"$work/go"
        exec "$ts" test "127.0.0.1:$port" -t "$secs" ${len:+-l "$len"} $rev --json >"$work/$target.$n.$i.json" 2>/dev/null; } & cp+=($!)
    else
      { : >"$work/ready.$i"; read -r _ <"$work/go"
        exec iperf3 -c 127.0.0.1 -p "$port" -t "$secs" ${len:+-l "$len"} $rev -J >"$work/$target.$n.$i.json" 2>&1; } & cp+=($!)
    fi
  done
  for _ in $(seq 600); do [ "$(ls "$work" | grep -c '^ready\.')" -ge "$clients" ] && break; sleep 0.05; done
  for i in $(seq "$clients"); do echo; done >&9
  exec 9>&-
  for p in "${cp[@]}"; do wait "$p" || true; done
  if [ "$target" = tcpscope ]; then echo $(($(cpu "$tspid") - c0)) >"$work/$target.$n.cpu"
  else echo $(($(cpu "${ipids[@]}") - c0)) >"$work/$target.$n.cpu"; fi
}
for n in $(seq "$rounds"); do
  if (( n % 2 )); then round tcpscope "$n"; round iperf3 "$n"; else round iperf3 "$n"; round tcpscope "$n"; fi
done

machine=$(machine_line)
python3 - "$work" "$rounds" "$clients" "$secs" "${len:-default}" "$machine" "$(getconf CLK_TCK)" "$kind" "$rev" <<'PY' | tee "$out/fairness${rev}-$kind.md"
import glob, json, statistics, sys
work, rounds, clients, secs, length, machine, hz, kind, rev = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]), sys.argv[8], sys.argv[9]
def rate_of(d):
    """The test's received rate, its bytes and its steady part's rate:
    the intervals past the first 2 s and before the last 1 s, when every
    client runs whatever the skew of their starts."""
    lo, hi = 2.0, float(secs) - 1 + 0.01
    if kind == "tcpscope":
        s = d["summary"]
        ivs = [(iv["start_ns"] / 1e9, iv["end_ns"] / 1e9, sum(x["bytes"] for x in iv["streams"])) for iv in d["client"]["intervals"]]
        rate, nbytes = sum(x["goodput"] for x in s), sum(x["receiver_bytes"] for x in s)
    else:
        ivs = [(iv["sum"]["start"], iv["sum"]["end"], iv["sum"]["bytes"]) for iv in d["intervals"]]
        rate, nbytes = d["end"]["sum_received"]["bits_per_second"], d["end"]["sum_received"]["bytes"]
    ivs = [iv for iv in ivs if iv[0] >= lo and iv[1] <= hi]
    steady = 8 * sum(b for _, _, b in ivs) / sum(e - s for s, e, _ in ivs) if ivs else None
    return rate, nbytes, steady
def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))
who = "stock iperf3" if kind == "iperf3" else "tcpscope"
print(f"{clients} {who} clients at once, -t {secs}, -l {length}{', -R (servers send)' if rev else ''}, {rounds} interleaved rounds on loopback")
print(machine + "\n")
print("| server | round | clients served | Jain index | Jain, steady part | slowest Gbit/s | fastest Gbit/s | total Gbit/s | server CPU s per GB |")
print("|---|---|---|---|---|---|---|---|---|")
summary = {}
for target, name in (("tcpscope", "tcpscope server"), ("iperf3", f"{clients} × iperf3 -s")):
    js, jss = [], []
    for n in range(1, rounds + 1):
        rates, steady, gb = [], [], 0.0
        for i in range(clients):
            try:
                d = json.load(open(f"{work}/{target}.{n}.{i}.json"))
                rate, nbytes, st = rate_of(d)
                rates.append(rate)
                gb += nbytes / 1e9
                if st is not None:
                    steady.append(st)
            except (ValueError, KeyError, OSError, ZeroDivisionError):
                pass  # a client that failed: counted as not served
        ticks = int(open(f"{work}/{target}.{n}.cpu").read())
        # A client not served is a starved test: its rate counts as 0.
        all_rates = rates + [0.0] * (clients - len(rates))
        j = jain(all_rates) if any(all_rates) else float("nan")
        all_steady = steady + [0.0] * (clients - len(steady))
        js2 = jain(all_steady) if any(all_steady) else float("nan")
        js.append(j); jss.append(js2)
        cpg = f"{ticks / hz / gb:.3f}" if gb else "not measured"
        print(f"| {name} | {n} | {len(rates)}/{clients} | {j:.3f} | {js2:.3f} | {min(all_rates)/1e9:.2f} | {max(all_rates)/1e9:.2f} | {sum(rates)/1e9:.1f} | {cpg} |")
    summary[name] = (statistics.median(js), statistics.median(jss))
print()
for name, (j, j2) in summary.items():
    print(f"- {name}: median Jain index {j:.3f} over whole tests, {j2:.3f} over their steady part (from 2 s to 1 s before the end)")
PY
