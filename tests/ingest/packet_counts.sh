#!/usr/bin/env bash
# Every pcap/pcapng under ../shared/data/traces, in one `bitarc ingest` call
# (--as packets --report json): per file, the packets read == capinfos' count
# and every one of them became a record; the store then holds exactly the
# total (bitarc query --count). A truncated file keeps the packets before the
# damage and its error is reported with the file, packet number and offset.
set -euo pipefail
T="${BA_SHARED_DATA:-}/traces"
if [ ! -d "$T" ]; then echo "SKIP: $T not present"; exit 0; fi
for t in capinfos python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
# The store goes to tmpfs when there is one: ~1000 segments, each fsynced.
TMP=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d); trap 'rm -rf "$TMP"' EXIT
find "$T" -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.cap' \) -print0 | sort -z > "$TMP/files"
n=$(tr -cd '\0' < "$TMP/files" | wc -c)
[ "$n" -gt 0 ] || { echo "SKIP: no captures under $T"; exit 0; }
{ xargs -0 capinfos -c -M -T -r < "$TMP/files" 2>/dev/null || true; } | awk -F'\t' '{print $1"\t"$2}' | sort > "$TMP/want"
rc=0
mapfile -d '' files < "$TMP/files"
"$BITARC" ingest --store "$TMP/st" --as packets --report json "${files[@]}" > "$TMP/report.json" 2> "$TMP/err" || rc=$?
# exit 1 = some file damaged (expected when a truncated capture is present), 2 = failure
[ $rc -le 1 ] || { echo "FAIL: bitarc ingest exit $rc"; tail "$TMP/err"; exit 1; }
python3 - "$TMP/report.json" "$TMP/got" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad = 0
with open(sys.argv[2], "w") as out:
    for f in r["files"]:
        c = f["counts"]
        out.write("%s\t%d\n" % (f["file"], c["packets"]))
        if c["records"] != c["packets"]:
            print("records != packets: %s %d %d" % (f["file"], c["records"], c["packets"])); bad = 1
        if f["status"] != "ok" and (not f["error"] or not f["error_packet"]):
            print("error without detail: %s" % f["file"]); bad = 1
        if f["status"] != "ok":
            print("  reported: %s: packet %d, offset %d: %s" % (f["file"], f["error_packet"], f["error_offset"], f["error"]))
if r["stored"] != r["totals"]["packets"] or r["store_dropped"]:
    print("stored %d of %d packets, store dropped %d" % (r["stored"], r["totals"]["packets"], r["store_dropped"])); bad = 1
sys.exit(bad)
PY
sort -o "$TMP/got" "$TMP/got"
if ! diff "$TMP/want" "$TMP/got" > "$TMP/diff"; then
  echo "FAIL: packet counts differ from capinfos:"; head -20 "$TMP/diff"; exit 1
fi
total=$(awk -F'\t' '{s+=$2} END {print s}' "$TMP/want")
instore=$("$BITARC" query -r "$TMP/st" --count -q 'any')
[ "$instore" = "$total" ] || { echo "FAIL: store holds $instore records, capinfos counts $total packets"; exit 1; }
echo "ok: $n files, $total packets: counts equal to capinfos, all stored and found by bitarc query"
