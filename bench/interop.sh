#!/usr/bin/env bash
# The differential harness against stock iperf3 at full size: every mode,
# both ways round and stock against stock, ROUNDS times each (default 20),
# interleaved; rewrites the results section of docs/INTEROP.md. With -v,
# across a veth pair between two network namespaces instead of loopback
# (root; the namespaces are removed at exit), into the veth section.
#   bench/interop.sh [-r ROUNDS] [-o ONLY] [-v]   (ONLY: modes whose name contains it)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=20 only="" veth=""
while getopts "r:o:v" o; do
  case $o in
    r) rounds=$OPTARG ;;
    o) only=$OPTARG ;;
    v) veth=1 ;;
    *) echo "usage: bench/interop.sh [-r ROUNDS] [-o ONLY] [-v]" >&2; exit 2 ;;
  esac
done
command -v iperf3 >/dev/null || { echo "bench/interop.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
source bench/machine.sh
record interop  # bench/results/interop.md, the machine first
out=$(mktemp)
across=() marker=results
if [ -n "$veth" ]; then
  [ "$(id -u)" = 0 ] || { echo "bench/interop.sh: -v needs root (network namespaces)" >&2; exit 10; }
  # Two hosts on one veth pair, offloads on as a veth's are by default:
  # the clients in one, the servers in the other.
  cns=tcpscope-i3c-$$ sns=tcpscope-i3s-$$ cl=i3c$$ sl=i3s$$
  source bench/netns.sh
  trap 'rm -f "$out"; veth_pair_del "$cns" "$sns" "$cl"' EXIT
  veth_pair "$cns" "$sns" "$cl" "$sl" 10.213.0.1/24 10.213.0.2/24
  across=(-server-ns "$sns" -client-ns "$cns" -server-addr 10.213.0.2 -refusals=false)
  marker="veth results"
else
  trap 'rm -f "$out"' EXIT
fi
go run ./bench/interop -tcpscope bin/tcpscope -rounds "$rounds" -only "$only" "${across[@]}" >"$out"
cat "$out"
if [ -z "$only" ]; then
  # Replace what lies between the markers with this run's tables.
  python3 - "$out" "$rounds" "$(machine_line)" "$marker" "${veth:+ -v}" <<'PY'
import sys, datetime, subprocess
table = open(sys.argv[1]).read().strip()
ver = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
kernel = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
head = f"Run {datetime.date.today()}, {sys.argv[2]} rounds, {ver}, kernel {kernel}, `bash bench/interop.sh{sys.argv[5]}`.\n{sys.argv[3]}\n\n"
doc = open("docs/INTEROP.md").read()
a, b = f"<!-- {sys.argv[4]}: bench/interop.sh writes below -->", f"<!-- {sys.argv[4]} end -->"
i, j = doc.index(a) + len(a), doc.index(b)
open("docs/INTEROP.md", "w").write(doc[:i] + "\n" + head + table + "\n" + doc[j:])
PY
fi
