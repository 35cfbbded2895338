#!/usr/bin/env bash
# bitarc query --device omp: range ORs run through the GPU module's pipeline
# (Thrust on OpenMP threads) and must give exactly the records of the CPU path
# and of the linear scan, on a plwah store and on a wah64 store.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
export OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B" ingest --store "$tmp/plwah" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
cp -r "$tmp/plwah" "$tmp/wah64"
"$B" reindex --store "$tmp/wah64" --codec wah64 >/dev/null || fail "reindex wah64"
if ! "$B" query -r "$tmp/plwah" --device omp --count any >"$tmp/probe" 2>&1; then
  grep -q "not available" "$tmp/probe" || fail "omp query failed: $(cat "$tmp/probe")"
  echo "SKIP: no OMP device in this build"; exit 0
fi
filters=(
  'dst port in [1-1023]'
  'src port > 1023 and proto udp'
  'port in [50-70, 100-200, 443, 8000-9000]'
  'not dst port in [0-100]'
  'src ip 10.*.*.* or dst net 192.168.0.0/16'
  'proto tcp and (dst port < 1024 or src port < 1024)'
)
n=0
for st in plwah wah64; do
  for f in "${filters[@]}"; do
    "$B" query -r "$tmp/$st" -q -o csv "$f" >"$tmp/cpu.csv" || fail "$st cpu: $f"
    "$B" query -r "$tmp/$st" -q -o csv --device omp "$f" >"$tmp/omp.csv" || fail "$st omp: $f"
    "$B" query -r "$tmp/$st" -q -o csv --scan "$f" >"$tmp/scan.csv" || fail "$st scan: $f"
    cmp -s "$tmp/cpu.csv" "$tmp/omp.csv" || fail "$st: '$f': omp output differs from cpu"
    cmp -s "$tmp/cpu.csv" "$tmp/scan.csv" || fail "$st: '$f': index output differs from the linear scan"
    n=$((n + 1))
  done
done
set +e
"$B" query -r "$tmp/plwah" --device gpu --count any >"$tmp/gpu.out" 2>&1; rc=$?
"$B" query -r "$tmp/plwah" --device tpu --count any >"$tmp/tpu.out" 2>&1; rc2=$?
set -e
if [ $rc -ne 0 ]; then
  [ $rc -eq 2 ] && grep -Eq "not available: (no CUDA device|built without CUDA)" "$tmp/gpu.out" \
    || fail "gpu without a device: exit $rc: $(cat "$tmp/gpu.out")"
fi
[ $rc2 -eq 2 ] && grep -q "expected cpu, omp or gpu" "$tmp/tpu.out" || fail "unknown device: exit $rc2"
echo "query --device omp: $n filter/store pairs identical to cpu and to the scan"
