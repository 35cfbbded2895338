#!/usr/bin/env bash
# Issue 7: a query over a store whose index is damaged still answers exactly.
# Bits flipped in a segment's index directory or bitmap records (offsets from
# the footer, doc/format.md §2.5) make that segment's index unreadable; `bitarc query` must warn, answer the segment by a linear
# scan of its (intact) blocks, print exactly the records of the clean store,
# and exit 1. An unreadable segment (truncated) is skipped with a warning while
# the other segments still answer.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 0; }

"$B" ingest --store "$tmp/clean" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
seg=$(ls "$tmp/clean"/*.bitarc | head -1)
filters=('dst port 53' 'proto udp and dst port in [1-1023]' 'src net 10.0.0.0/8 and not proto tcp' 'flags S')
checked=0
for trial in 1 2 3 4 5 6; do
  rm -rf "$tmp/bad"; cp -r "$tmp/clean" "$tmp/bad"
  bad="$tmp/bad/$(basename "$seg")"
  python3 - "$bad" "$trial" <<'PY'
import struct, sys, random
p, seed = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
foot = b[-80:]
table_off, dir_off, index_off = struct.unpack_from("<QQQ", foot, 24)
assert foot[72:80] == b"BASEGEND" and index_off < dir_off < table_off <= len(b), "unexpected footer"
random.seed(seed)
if seed % 2:   # one bit of the index directory: every lookup fails its CRC
    pos = random.randrange(dir_off, table_off)
    b[pos] ^= 1 << random.randrange(8)
else:          # a bit in many bitmap records: whichever the filter reads is damaged
    for pos in range(index_off + seed, dir_off, 29):
        b[pos] ^= 1 << random.randrange(8)
open(p, "wb").write(bytes(b))
PY
  for f in "${filters[@]}"; do
    "$B" query -r "$tmp/clean" -q -o csv "$f" >"$tmp/want.csv" || fail "clean query '$f'"
    set +e
    "$B" query -r "$tmp/bad" -q -o csv "$f" >"$tmp/got.csv" 2>"$tmp/err"; rc=$?
    set -e
    [ $rc -le 1 ] || fail "trial $trial '$f': exit $rc: $(cat "$tmp/err")"
    cmp -s "$tmp/want.csv" "$tmp/got.csv" || fail "trial $trial '$f': records differ from the clean store"
    if [ $rc -eq 1 ]; then
      grep -q "answered by a linear scan" "$tmp/err" || fail "trial $trial '$f': exit 1 without the scan warning: $(cat "$tmp/err")"
      checked=$((checked + 1))
    fi
  done
done
[ $checked -gt 0 ] || fail "no trial hit a bitmap the filters read"

# A segment that cannot be opened is skipped; the others still answer.
rm -rf "$tmp/two"; mkdir -p "$tmp/two"
"$B" ingest --store "$tmp/two" "$SRC/data/cesnet-mixed.pcap" "$SRC/data/cesnet-mixed-softflowd-v9.pcap" --as packets \
  >/dev/null 2>&1 || fail "ingest two"
n=$(ls "$tmp/two"/*.bitarc | wc -l)
if [ "$n" -ge 2 ]; then
  first=$(ls "$tmp/two"/*.bitarc | head -1)
  want=$("$B" query -r "$tmp/two" -q --count any)
  lost=$("$B" stat --store "$tmp/two" -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print([s["records"] for s in d["segments"]][0])' 2>/dev/null || echo "")
  truncate -s 100 "$first"
  set +e
  got=$("$B" query -r "$tmp/two" -q --count any 2>"$tmp/err2"); rc=$?
  set -e
  [ $rc -eq 1 ] || fail "truncated segment: exit $rc: $(cat "$tmp/err2")"
  grep -q "skipped" "$tmp/err2" || fail "truncated segment: no warning: $(cat "$tmp/err2")"
  [ -n "$got" ] && [ "$got" -lt "$want" ] || fail "truncated segment: count $got of $want"
  if [ -n "$lost" ]; then [ "$got" -eq $((want - lost)) ] || fail "count $got, want $want - $lost"; fi
fi
echo "query over damaged stores: $checked damaged-index answers identical to the clean store"
