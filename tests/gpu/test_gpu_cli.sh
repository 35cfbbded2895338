#!/usr/bin/env bash
# bitarc bench build|range: small runs print their tables (the range bench
# checks every strategy's result against the CPU's itself); --device gpu says
# why it is absent.
set -euo pipefail
out=$("$BITARC" bench build --device omp --rows 20000 --cards 256,4096 --codecs wah32,plwah,masc)
echo "$out"
grep -q "^256 " <<<"$out"
grep -q "^4096 " <<<"$out"
grep -q "^sort " <<<"$out"
out=$("$BITARC" bench range --device omp --rows 20000 --bins 16 --sizes 2,8 --repeat 1)
echo "$out"
grep -q "^8 " <<<"$out"
set +e
err=$("$BITARC" bench build --device gpu --rows 1000 2>&1 >/dev/null)
rc=$?
set -e
echo "$err"
[ "$rc" -eq 2 ]
grep -Eq "no CUDA device|built without CUDA" <<<"$err"
if "$BITARC" bench nosuch 2>/dev/null; then exit 1; fi
echo "ok"
