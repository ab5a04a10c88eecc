#!/usr/bin/env bash
# The diagnosis's precision on real kernels (docs/DIAGNOSES.md, "Proof"):
# the fixed suites (healthy paths and every impairment) REPEAT times, then
# the randomised suite's COUNT draws from SEED on each path emulator:
# tcpscope's own (userspace) and the kernel's (tc and nftables in a
# router, the emulator only delaying). The rules were tuned on seeds 1 to
# 99; the default seed, 1000, is held out. With -H HSEED:HCOUNT, the
# healthy draws among HSEED's first HCOUNT follow on each emulator (about
# one draw in nine is healthy): enough healthy paths to measure a false
# alarm rate of 1%. Every run is saved under bench/results/precision-runs/
# (tcpscope explain re-diagnoses one), and the tables go to
# bench/results/precision.md.
#   bench/precision.sh [-r REPEAT] [-s SEED] [-c COUNT] [-b emulator|kernel|both] [-H HSEED:HCOUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=5 seed=1000 count=200 backends=both healthy=
while getopts "r:s:c:b:H:" o; do
  case $o in
    r) repeat=$OPTARG ;;
    s) seed=$OPTARG ;;
    c) count=$OPTARG ;;
    b) backends=$OPTARG ;;
    H) healthy=$OPTARG ;;
    *) echo "usage: bench/precision.sh [-r REPEAT] [-s SEED] [-c COUNT] [-b emulator|kernel|both] [-H HSEED:HCOUNT]" >&2; exit 2 ;;
  esac
done
case $backends in
  both) backends="emulator kernel" ;;
  emulator|kernel) ;;
  *) echo "bench/precision.sh: -b emulator, kernel or both" >&2; exit 2 ;;
esac
if [ -n "$healthy" ] && ! [[ $healthy =~ ^[0-9]+:[0-9]+$ ]]; then
  echo "bench/precision.sh: -H wants SEED:COUNT, such as 5000:1900" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || { echo "bench/precision.sh: needs root (network namespaces)" >&2; exit 10; }
command -v nft >/dev/null || { echo "bench/precision.sh: nft missing (make setup installs it)" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -o bin/tcpscope ./cmd/tcpscope
export PATH=$PWD/bin:$PATH
source bench/machine.sh
runs=bench/results/precision-runs
rm -rf "$runs"
record precision # bench/results/precision.md, the machine first

echo "# Fixed suites, $repeat runs each"
echo
if [ "$repeat" -gt 0 ]; then
  tcpscope lab precision --repeat "$repeat" --save "$runs/fixed" 2>>bench/results/precision.log || true
fi
for b in $backends; do
  echo "# Random suite on the $b, seed $seed, $count draws"
  echo
  # A wrong run makes the command exit 1; the table says which.
  tcpscope lab --backend "$b" precision --suite random --seed "$seed" --count "$count" --save "$runs/$b" 2>>bench/results/precision.log || true
done
if [ -n "$healthy" ]; then
  for b in $backends; do
    echo "# Healthy paths on the $b: those among seed ${healthy%%:*}'s first ${healthy##*:} draws"
    echo
    tcpscope lab --backend "$b" precision --suite random --seed "${healthy%%:*}" --count "${healthy##*:}" \
      --only "healthy," --save "$runs/$b-healthy" 2>>bench/results/precision.log || true
  done
fi
