#!/usr/bin/env bash
# The differential harness against stock iperf3 at full size: every mode,
# both ways round and stock against stock, ROUNDS times each (default 20),
# interleaved; rewrites the results section of docs/INTEROP.md.
#   bench/interop.sh [-r ROUNDS] [-o ONLY]   (ONLY: modes whose name contains it)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=20 only=""
while getopts "r:o:" o; do
  case $o in
    r) rounds=$OPTARG ;;
    o) only=$OPTARG ;;
    *) echo "usage: bench/interop.sh [-r ROUNDS] [-o ONLY]" >&2; exit 2 ;;
  esac
done
command -v iperf3 >/dev/null || { echo "bench/interop.sh: iperf3 missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
source bench/machine.sh
record interop  # bench/results/interop.md, the machine first
out=$(mktemp); trap 'rm -f "$out"' EXIT
go run ./bench/interop -tcpscope bin/tcpscope -rounds "$rounds" -only "$only" >"$out"
cat "$out"
if [ -z "$only" ]; then
  # Replace what lies between the markers with this run's tables.
  python3 - "$out" "$rounds" "$(machine_line)" <<'PY'
import sys, datetime, subprocess
table = open(sys.argv[1]).read().strip()
ver = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
kernel = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
head = f"Run {datetime.date.today()}, {sys.argv[2]} rounds, {ver}, kernel {kernel}, `bash bench/interop.sh`.\n{sys.argv[3]}\n\n"
doc = open("docs/INTEROP.md").read()
a, b = "<!-- results: bench/interop.sh writes below -->", "<!-- results end -->"
i, j = doc.index(a) + len(a), doc.index(b)
open("docs/INTEROP.md", "w").write(doc[:i] + "\n" + head + table + "\n" + doc[j:])
PY
fi
