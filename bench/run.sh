#!/usr/bin/env bash
# tcpscope benchmarks, side by side with iperf3 in one run (see
# docs/BENCHMARKS.md). Loopback only. Usage:
#   bench/run.sh [-n RUNS] [-t SECONDS] [-c CLIENTS]
# Prints a Markdown table and writes it to bench/results/latest.md.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5 secs=5 clients=64
while getopts "n:t:c:" o; do
  case $o in
    n) runs=$OPTARG ;;
    t) secs=$OPTARG ;;
    c) clients=$OPTARG ;;
    *) echo "usage: bench/run.sh [-n RUNS] [-t SECONDS] [-c CLIENTS]" >&2; exit 2 ;;
  esac
done
command -v iperf3 >/dev/null || { echo "bench: iperf3 missing (make setup installs it)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 missing" >&2; exit 1; }

CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
ts=bin/tcpscope
tport=5312 iport=5311
out=bench/results
mkdir -p "$out"
raw="$out/raw.tsv"
: >"$raw"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$ts" server --listen 127.0.0.1:$tport >/dev/null 2>&1 & pids+=($!)
iperf3 -s -p $iport -B 127.0.0.1 >/dev/null 2>&1 & pids+=($!)
sleep 0.5

# One measurement: prints the receiver's goodput in bit/s.
iperf() { iperf3 -c 127.0.0.1 -p $iport -t "$secs" -J "$@" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'; }
tscope() { "$ts" test 127.0.0.1:$tport -t "$secs" --json "$@" |
  python3 -c 'import json,sys; print(sum(d["goodput"] for d in json.load(sys.stdin)["summary"]))'; }

# Interleave the tools and alternate who goes first, so drift in the
# machine's state (other load, thermal, page cache) hits both alike.
for i in $(seq 1 "$runs"); do
  for case in P1 P2 sample1s sample10ms; do
    case $case in
      P1) a=(iperf) b=(tscope) ;;
      P2) a=(iperf -P 2) b=(tscope -P 2) ;;
      sample1s|sample10ms) a=(tscope -i 1) b=(tscope -i 0.01) ;;
    esac
    if (( i % 2 )); then first=a; else first=b; fi
    for which in $first $([ $first = a ] && echo b || echo a); do
      if [ $which = a ]; then cmd=("${a[@]}"); else cmd=("${b[@]}"); fi
      v=$("${cmd[@]}")
      printf '%s\t%s\t%s\t%s\n' "$case" "$which" "$i" "$v" >>"$raw"
    done
  done
done

# Server memory with many concurrent single-stream tests: a fresh server,
# $clients clients at once, then its peak resident set (VmHWM).
"$ts" server --listen 127.0.0.1:$((tport+1)) --max-tests $((clients+8)) >/dev/null 2>&1 &
mpid=$!; pids+=($mpid)
sleep 0.5
cpids=()
for _ in $(seq 1 "$clients"); do
  "$ts" test 127.0.0.1:$((tport+1)) -t "$secs" --json >/dev/null 2>&1 & cpids+=($!)
done
failed=0
for p in "${cpids[@]}"; do wait "$p" || failed=$((failed+1)); done
hwm=$(awk '/VmHWM/ {print $2}' /proc/$mpid/status)
printf 'memory\tserver\t1\t%s\n' "$((hwm*1024))" >>"$raw"
printf 'memory\tfailed\t1\t%s\n' "$failed" >>"$raw"

python3 - "$raw" "$runs" "$secs" "$clients" <<'PY' | tee "$out/latest.md"
import statistics, sys, collections, subprocess
raw, runs, secs, clients = sys.argv[1], *sys.argv[2:]
v = collections.defaultdict(list)
for line in open(raw):
    case, who, _, x = line.split("\t")
    v[(case, who)].append(float(x))
med = lambda k: statistics.median(v[k])
iv = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
print(f"{runs} interleaved runs of {secs} s on loopback; medians; peer: {iv}\n")
print("| benchmark | tcpscope | peer | ratio | goal |")
print("|---|---|---|---|---|")
for case, label in (("P1", "single stream vs iperf3"), ("P2", "-P 2 vs iperf3")):
    t, i = med((case, "b")), med((case, "a"))
    print(f"| {label} | {t/1e9:.2f} Gbit/s | {i/1e9:.2f} Gbit/s | {t/i:.3f} | ≥ 1.05 |")
s1, s10 = med(("sample1s", "a")), med(("sample1s", "b"))
print(f"| sampling every 10 ms vs every 1 s | {s10/1e9:.2f} Gbit/s | {s1/1e9:.2f} Gbit/s | {s10/s1:.3f} (cost {100*(1-s10/s1):.1f}%) | cost ≤ 2% |")
mem = v[("memory", "server")][0] / 2**20
fail = int(v[("memory", "failed")][0])
print(f"| server peak RSS, {clients} concurrent tests | {mem:.1f} MiB | — | — | ≤ 200 MiB |")
if fail:
    print(f"\n{fail} of {clients} concurrent clients failed.")
print("\nAll runs (Gbit/s):")
for (case, who), xs in sorted(v.items()):
    if case != "memory":
        print(f"- {case} {'peer' if who == 'a' and case in ('P1','P2') else who}: " + ", ".join(f"{x/1e9:.2f}" for x in xs))
PY
