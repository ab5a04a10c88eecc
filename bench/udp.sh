#!/usr/bin/env bash
# UDP at full speed, tcpscope against iperf3 side by side (see
# docs/BENCHMARKS.md): `-u -b 0 -l 1400` on loopback, interleaved runs
# (A B, B A, ...), medians. Per run: the rate the receiver got, the loss at
# the receiving socket (on loopback nothing else drops), and CPU seconds
# per GB received on each side (the client's from its rusage, the server's
# from /proc/PID/stat). Usage:
#   bench/udp.sh [-n RUNS] [-t SECONDS] [-b BINARY] [-a] [-- extra tcpscope test flags]
# -a pins the servers to CPU 1 and the clients to CPU 0 (taskset), each
# tool alike: on a machine shared with other work, the two ends then do
# not also take turns on one CPU. Prints a Markdown table. Stops only the
# servers it started, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=9 secs=5 bin="" pin=()
while getopts "n:t:b:a" o; do
  case $o in
    n) runs=$OPTARG ;;
    t) secs=$OPTARG ;;
    b) bin=$OPTARG ;;
    a) pin=(taskset -c 1) ;;
    *) echo "usage: bench/udp.sh [-n RUNS] [-t SECONDS] [-b BINARY] [-a] [-- tcpscope test flags]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND-1))
command -v iperf3 >/dev/null || { echo "bench: iperf3 missing (make setup installs it)" >&2; exit 1; }
if [ -z "$bin" ]; then
  CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
  bin=bin/tcpscope
fi
tport=5322 iport=5321

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
"${pin[@]}" "$bin" server --listen 127.0.0.1:$tport >/dev/null 2>&1 & tpid=$!; pids+=($tpid)
"${pin[@]}" iperf3 -s -p $iport -B 127.0.0.1 >/dev/null 2>&1 & ipid=$!; pids+=($ipid)
python3 - "$tport" "$iport" <<'PY'
import socket, sys, time
for port in sys.argv[1:]:
    until = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", int(port)), 0.2).close()
            break
        except OSError:
            if time.time() > until:
                sys.exit(f"bench: nothing listens on port {port}")
            time.sleep(0.05)
PY

python3 - "$bin" "$tport" "$iport" "$tpid" "$ipid" "$runs" "$secs" "${#pin[@]}" "$@" <<'PY'
import json, os, platform, resource, statistics, subprocess, sys
bin, tport, iport, tpid, ipid, runs, secs, pinned = sys.argv[1:9]
extra = sys.argv[9:]
pin = ["taskset", "-c", "0"] if pinned != "0" else []
hz = os.sysconf("SC_CLK_TCK")

def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz  # utime + stime

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def measure(cmd, server_pid, parse):
    s0, c0 = proc_cpu(server_pid), child_cpu()
    out = subprocess.run(pin + cmd, capture_output=True, text=True, check=True).stdout
    s1, c1 = proc_cpu(server_pid), child_cpu()
    rate, loss, received = parse(json.loads(out))
    gb = received / 1e9
    return rate, loss, (c1 - c0) / gb, (s1 - s0) / gb

def tcpscope(d):
    s = d["summary"][0]
    u = s["udp"]
    return s["goodput"], u.get("lost", 0) / u["packets"], s["receiver_bytes"]

def iperf(d):
    r = d["end"]["sum_received"]
    return r["bits_per_second"], r["lost_packets"] / r["packets"], r["bytes"]

A = ([bin, "test", f"127.0.0.1:{tport}", "-u", "-b", "0", "-l", "1400", "-t", secs, "--json"] + extra, tpid, tcpscope)
B = (["iperf3", "-c", "127.0.0.1", "-p", iport, "-u", "-b", "0", "-l", "1400", "-t", secs, "-J"], ipid, iperf)
res = {"A": [], "B": []}
for i in range(int(runs)):
    for who in (("A", "B") if i % 2 == 0 else ("B", "A")):
        res[who].append(measure(*(A if who == "A" else B)))

med = lambda who, k: statistics.median(r[k] for r in res[who])
iv = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"UDP `-u -b 0 -l 1400`{' ' + ' '.join(extra) if extra else ''}: {runs} interleaved runs of {secs} s on loopback{', clients on CPU 0 and servers on CPU 1' if pin else ''}; medians; "
      f"peer: {iv}; {cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}\n")
print("| UDP measure | tcpscope | iperf3 | ratio tcpscope/iperf3 | goal |")
print("|---|---|---|---|---|")
a, b = med("A", 0), med("B", 0)
print(f"| received rate | {a/1e9:.2f} Gbit/s | {b/1e9:.2f} Gbit/s | {a/b:.2f} | ≥ 1.5 |")
a, b = med("A", 1), med("B", 1)
print(f"| lost at the receiving socket | {100*a:.2f}% | {100*b:.2f}% | | ≤ 1% |")
for k, side in ((2, "sender (client)"), (3, "receiver (server)")):
    a, b = med("A", k), med("B", k)
    print(f"| CPU per GB received, {side} | {a:.2f} s | {b:.2f} s | {a/b:.2f} | ≤ 0.7 |")
# -b 0 tells how fast each sender goes, and a sender faster than its
# receiver loses the difference: it is not the rate a receiver keeps with
# no loss. So tcpscope also runs paced at 1.5 times iperf3's median, the
# goal's rate, to show the loss it keeps there.
goal = 1.5 * med("B", 0)
C = ([bin, "test", f"127.0.0.1:{tport}", "-u", "-b", str(int(goal)), "-l", "1400", "-t", secs, "--json"] + extra, tpid, tcpscope)
res["C"] = [measure(*C) for _ in range(int(runs))]
a = med("C", 0)
print(f"| tcpscope paced at 1.5 × iperf3's received rate (`-b {goal/1e9:.2f}G`): received, lost | {a/1e9:.2f} Gbit/s, {100*med('C', 1):.2f}% | | {a/med('B', 0):.2f} | ≥ 1.5, ≤ 1% |")
print("\nEvery run (rate Gbit/s, loss %, client CPU s/GB, server CPU s/GB):")
for who, name in (("A", "tcpscope"), ("B", "iperf3"), ("C", "tcpscope paced")):
    print(f"- {name}: " + "; ".join(f"{r[0]/1e9:.2f} {100*r[1]:.1f}% {r[2]:.2f} {r[3]:.2f}" for r in res[who]))
PY
