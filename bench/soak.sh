#!/usr/bin/env bash
# Soak: tcpscope server for 20 minutes (SOAK_DURATION) under legitimate
# tcpscope and stock iperf3 tests beside a bounded attack mix, on loopback.
# Writes bench/results/soak/{summary.md,samples.csv,soak.png,server.log}.
# Forged UDP hellos need root (a raw socket); without it they are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -trimpath -o bin/tcpscope ./cmd/tcpscope
go run ./bench/soak -tcpscope bin/tcpscope -duration "${SOAK_DURATION:-20m}" -out bench/results/soak
# The machine it ran on, first in the summary.
source bench/machine.sh
sum=bench/results/soak/summary.md
if [ -f "$sum" ]; then { machine_line; echo; cat "$sum"; } >"$sum.new" && mv "$sum.new" "$sum"; fi
