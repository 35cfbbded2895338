#!/usr/bin/env bash
# Packet parser against tshark on real captures: a deterministic sample of
# the shared pcap/pcapng files (every Nth of the sorted list, N from
# BA_PKT_SAMPLE_STEP, default 80; 1 = all, slow), compared packet by packet by
# packets_vs_tshark.py (lengths, outer addresses, protocol, ports, VLAN).
set -euo pipefail
T="${BA_SHARED_DATA:-}/traces"
DUMP="$(dirname "$BITARC")/ingest_dump"
[ -d "$T" ] || { echo "SKIP: $T not present"; exit 0; }
command -v tshark >/dev/null || { echo "SKIP: tshark not installed (scripts/deps.sh)"; exit 0; }
STEP="${BA_PKT_SAMPLE_STEP:-80}"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
mapfile -t files < <(find "$T" -type f \( -name '*.pcap' -o -name '*.pcapng' \) | sort | awk -v s="$STEP" 'NR % s == 1')
fail=0; n=0; pk=0
for f in "${files[@]}"; do
  tshark -r "$f" -n -o ip.defragment:FALSE -o ipv6.defragment:FALSE -T fields -E occurrence=f \
    -e frame.len -e frame.cap_len -e ip.src -e ip.dst -e ipv6.src -e ipv6.dst -e ip.proto \
    -e tcp.srcport -e tcp.dstport -e udp.srcport -e udp.dstport -e vlan.id > "$TMP/want" 2>/dev/null || true
  "$DUMP" --as packets "$f" > "$TMP/got" 2>/dev/null || true
  python3 "$BA_SOURCE_DIR/tests/ingest/packets_vs_tshark.py" "$TMP/want" "$TMP/got" "${f#$T/}" || fail=1
  n=$((n + 1)); pk=$((pk + $(wc -l < "$TMP/got")))
done
[ $fail = 0 ] && echo "ok: $n captures, $pk packets agree with tshark"
exit $fail
