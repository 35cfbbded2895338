#!/usr/bin/env bash
# bitarc reindex --device: the OMP device (the GPU pipeline on CPU threads) must
# write segment files byte-identical to the CPU batch builder, for every codec
# the devices build; gpu without a GPU and compax on a device fail with a reason.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
export OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B" ingest --store "$tmp/base" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
[ -n "$(ls "$tmp/base"/*.bitarc 2>/dev/null)" ] || fail "no segment written"
if ! "$B" reindex --store "$tmp/base" --codec wah32 --device omp >"$tmp/probe.out" 2>&1; then
  grep -q "not available" "$tmp/probe.out" || fail "omp reindex failed: $(cat "$tmp/probe.out")"
  echo "SKIP: this build has no OMP device: $(cat "$tmp/probe.out")"
  exit 0
fi
checked=0
for codec in wah32 wah64 plwah masc masc-qt; do
  rm -rf "$tmp/cpu" "$tmp/omp"
  cp -r "$tmp/base" "$tmp/cpu"
  cp -r "$tmp/base" "$tmp/omp"
  "$B" reindex --store "$tmp/cpu" --codec "$codec" --device cpu >/dev/null || fail "cpu reindex $codec"
  "$B" reindex --store "$tmp/omp" --codec "$codec" --device omp >/dev/null || fail "omp reindex $codec"
  for f in "$tmp/cpu"/*.bitarc; do
    cmp -s "$f" "$tmp/omp/$(basename "$f")" || fail "$codec: $(basename "$f") differs between cpu and omp"
    checked=$((checked + 1))
  done
  # The reindexed store still answers like the original.
  a=$("$B" query --store "$tmp/base" --count 'proto tcp and dst port 443' 2>/dev/null)
  b=$("$B" query --store "$tmp/omp" --count 'proto tcp and dst port 443' 2>/dev/null)
  [ "$a" = "$b" ] || fail "$codec: query count $a before vs $b after reindex"
done

set +e
"$B" reindex --store "$tmp/omp" --codec wah32 --device gpu >"$tmp/gpu.out" 2>&1; rc=$?
set -e
if [ $rc -ne 0 ]; then
  [ $rc -eq 2 ] || fail "gpu without device: exit $rc"
  grep -Eq "not available: (no CUDA device|built without CUDA)" "$tmp/gpu.out" || fail "gpu message: $(cat "$tmp/gpu.out")"
fi
set +e
"$B" reindex --store "$tmp/omp" --codec compax --device omp >"$tmp/cx.out" 2>&1; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "compax is built on --device cpu only" "$tmp/cx.out" || fail "compax on omp: exit $rc $(cat "$tmp/cx.out")"
echo "reindex --device: $checked segment files identical cpu vs omp"
