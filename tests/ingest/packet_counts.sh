#!/usr/bin/env bash
# Every pcap/pcapng under ../shared/data/traces: the packets bitarc reads from
# each file == capinfos' packet count, and read as packets every one of them
# becomes a record (a truncated file: the packets before the damage, and the
# error is reported). One call over all files keeps it fast.
set -euo pipefail
T="${BA_SHARED_DATA:-}/traces"
DUMP="$(dirname "$BITARC")/ingest_dump"
if [ ! -d "$T" ]; then echo "SKIP: $T not present"; exit 0; fi
command -v capinfos >/dev/null || { echo "SKIP: capinfos not installed (scripts/deps.sh)"; exit 0; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
find "$T" -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.cap' \) -print0 | sort -z > "$TMP/files"
n=$(tr -cd '\0' < "$TMP/files" | wc -c)
[ "$n" -gt 0 ] || { echo "SKIP: no captures under $T"; exit 0; }
{ xargs -0 capinfos -c -M -T -r < "$TMP/files" 2>/dev/null || true; } | awk -F'\t' '{print $1"\t"$2}' | sort > "$TMP/want"
# ingest_dump prints per file: path, read-as, packets read, records, dropped, status, error
xargs -0 "$DUMP" --as packets < "$TMP/files" 2>"$TMP/got.raw" >/dev/null || true
grep -v '^TOTAL' "$TMP/got.raw" | awk -F'\t' '{print $1"\t"$3}' | sort > "$TMP/got"
grep -v '^TOTAL' "$TMP/got.raw" | awk -F'\t' '$3 != $4 {print "records != packets: " $0}' > "$TMP/bad"
if ! diff "$TMP/want" "$TMP/got" > "$TMP/diff"; then
  echo "FAIL: packet counts differ from capinfos:"; head -20 "$TMP/diff"; exit 1
fi
if [ -s "$TMP/bad" ]; then echo "FAIL:"; head "$TMP/bad"; exit 1; fi
# Files libpcap could not finish must say why (truncation named with the error).
grep -v '^TOTAL' "$TMP/got.raw" | awk -F'\t' '$6 != 0 && $7 == "" {print "error without message: " $0; bad=1} END {exit bad}'
total=$(awk -F'\t' '{s+=$2} END {print s}' "$TMP/got")
echo "ok: $n files, $total packets, counts equal to capinfos"
grep -v '^TOTAL' "$TMP/got.raw" | awk -F'\t' '$6 != 0 {print "  reported: " $1 ": " $7}'
