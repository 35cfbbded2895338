#!/usr/bin/env bash
# sFlow v5 decoder against tshark on REAL sFlow datagrams (akvorado's test
# captures, ../shared/data/traces): per capture, every flow sample's
# addresses, ports, protocol, TCP flags, packets (= rate), bytes (rate x frame
# length), interfaces, VLANs, AS numbers, masks and next hops must be equal.
set -euo pipefail
D="${BA_SHARED_DATA:-}/traces/akvorado__akvorado/outlet/flow/decoder/sflow/testdata"
DUMP="$(dirname "$BITARC")/ingest_dump"
if [ ! -d "$D" ]; then echo "SKIP: $D not present"; exit 0; fi
for t in tshark python3; do command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 0; }; done
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fail=0; total=0
for f in "$D"/*.pcap; do
  tshark -r "$f" -T json --no-duplicate-keys 2>/dev/null | python3 "$BA_SOURCE_DIR/tests/ingest/sflow_tshark.py" |
    sort > "$TMP/want"
  # src,dst,sport,dport,proto,packets,bytes,in_if,out_if,vlan,dst_vlan,src_as,dst_as,src_mask,dst_mask,nh,bgp_nh,flags
  "$DUMP" --as flows "$f" 2>"$TMP/err" |
    awk -F, '$1=="flow"{print $4","$5","$6","$7","$8","$11","$12","$13","$14","$17","$33","$15","$16","$30","$31","$28","$29","$9}' |
    sort > "$TMP/got"
  n=$(wc -l < "$TMP/got"); total=$((total + n))
  if ! diff -q "$TMP/want" "$TMP/got" >/dev/null || [ "$n" -eq 0 ]; then
    echo "FAIL: $(basename "$f"): tshark $(wc -l < "$TMP/want") samples, bitarc $n"
    diff "$TMP/want" "$TMP/got" | head -6 || true; fail=1
  else
    echo "ok: $(basename "$f"): $n flow samples"
  fi
done
[ "$total" -ge 10 ] || { echo "FAIL: only $total samples"; fail=1; }
exit $fail
