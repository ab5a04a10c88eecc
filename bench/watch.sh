#!/usr/bin/env bash
# tcpscope watch against ss on the same sockets, in one run: listing
# 10,000 established loopback connections (20,000 sockets) with their TCP
# details, and the CPU cost of following one connection at 100 Hz. Needs
# no root. See docs/BENCHMARKS.md.
#   bench/watch.sh [-n CONNECTIONS] [-r ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=10000 rounds=5
while getopts "n:r:" o; do
  case $o in
    n) n=$OPTARG ;;
    r) rounds=$OPTARG ;;
    *) echo "usage: bench/watch.sh [-n CONNECTIONS] [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
command -v ss >/dev/null || { echo "bench/watch.sh: ss (iproute2) missing" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
go build -o bin/conns ./bench/conns
source bench/machine.sh
record watch  # bench/results/watch.md, the machine first
work=$(mktemp -d)
cleanup() { exec 3>&- 4>&- 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# Both halves of the connections, each in its own process (open-file limit).
mkfifo "$work/l" "$work/d"
bin/conns -n "$n" -listen <"$work/l" >"$work/l.out" & exec 3>"$work/l"
until [ -s "$work/l.out" ]; do sleep 0.1; done
port=$(awk '{print $2}' "$work/l.out")
bin/conns -n "$n" -dial "$port" <"$work/d" >"$work/d.out" & exec 4>"$work/d"
until [ -s "$work/d.out" ]; do sleep 0.1; done
# A transfer to follow, among them.
bin/tcpscope server --listen 127.0.0.1:5399 >/dev/null 2>&1 &
sleep 0.3
bin/tcpscope test 127.0.0.1:5399 -t 30 >/dev/null &
sleep 1
follow=$(bin/tcpscope watch -c 2 --json-stream --no-process dport 5399 | tail -1 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"][0]["local"].rsplit(":",1)[1])')

python3 - "$rounds" "$follow" <<'PY'
import resource, statistics, subprocess, sys, time
rounds, follow = int(sys.argv[1]), sys.argv[2]
def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0
def cpu(cmd):
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    w = time.perf_counter() - t0
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r.ru_utime + r.ru_stime) - (b.ru_utime + b.ru_stime)
rows = []
for name, a, b in [
    # -a: every socket, idle or not, as ss -a lists them (the default
    # hides the idle connections this benchmark is made of).
    ("list, no owners", ["bin/tcpscope", "watch", "-a", "-c", "1", "--no-process"], ["ss", "-tain"]),
    ("list with owners", ["bin/tcpscope", "watch", "-a", "-c", "1"], ["ss", "-tainp"]),
]:
    ta, tb = [], []
    for _ in range(rounds):  # interleaved, so both see the same machine
        ta.append(timed(a)); tb.append(timed(b))
    ma, mb = statistics.median(ta), statistics.median(tb)
    rows.append((name, ma, mb))
print("| listing (%s) | tcpscope s | ss s | ratio (goal ≤ 0.5) |" % "median of %d" % rounds)
print("|---|---|---|---|")
for name, ma, mb in rows:
    print(f"| {name} | {ma:.3f} | {mb:.3f} | {ma/mb:.2f} |")
# A running watch redraws the list every refresh: its CPU per refresh, in
# the steady state, against a whole ss run.
lst = ["bin/tcpscope", "watch", "-a", "-i", "500ms", "--refresh", "500ms", "--no-process"]
w1, c1 = cpu(lst + ["-c", "2"])
w2, c2 = cpu(lst + ["-c", "12"])
per = (c2 - c1) / 10
print(f"| list, per refresh of a running watch (CPU) vs ss -tain | {per:.3f} | {rows[0][2]:.3f} | {per/rows[0][2]:.2f} |")
follow_cmd = ["bin/tcpscope", "watch", "--conn", f"sport {follow} dport 5399", "-i", "10ms", "--no-process", "--json-stream"]
w1, c1 = cpu(follow_cmd + ["-c", "20"])
w2, c2 = cpu(follow_cmd + ["-c", "520"])
print()
print(f"following one connection at 100 Hz: {100*(c2-c1)/(w2-w1):.2f}% of a core "
      f"({1e6*(c2-c1)/500:.0f} µs per sample; goal < 2%)")
PY
