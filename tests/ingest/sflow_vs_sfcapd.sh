#!/usr/bin/env bash
# sFlow v5 decoder against nfdump's sfcapd on REAL sFlow datagrams (akvorado's
# test captures, ../shared/data/traces): the same datagrams are sent to sfcapd
# and decoded by bitarc; flow, packet and byte totals and every record field
# by field must equal nfdump's (tests/ingest/nfdump_compare.py), except the
# differences listed below (doc/decoders.md).
set -euo pipefail
D="${BA_SHARED_DATA:-}/traces/akvorado__akvorado/outlet/flow/decoder/sflow/testdata"
[ -d "$D" ] || { echo "SKIP: $D not present"; exit 0; }
for t in sfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh: nfdump-sflow)"; exit 0; }
done
H="$BA_SOURCE_DIR/tests/ingest"
DUMP="$(dirname "$BITARC")/ingest_dump"
TMP=$(mktemp -d)
spid=""
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
port=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
mkdir -p "$TMP/nfd"
sfcapd -w "$TMP/nfd" -p "$port" -b 127.0.0.1 -t 3600 > "$TMP/sfcapd.log" 2>&1 &
spid=$!
hex=$(printf '0100007F:%04X' "$port")
for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp && break; sleep 0.05; done
python3 "$H/pcap_udp.py" send "$port" "$D"/*.pcap
sleep 1
kill -TERM "$spid"; wait "$spid" || true; spid=""
TZ=UTC nfdump -R "$TMP/nfd" -o csv > "$TMP/nfdump.csv"
python3 "$H/pcap_udp.py" pcap "$TMP/sflow.pcap" "$D"/*.pcap
"$DUMP" --as flows "$TMP/sflow.pcap" > "$TMP/bitarc.csv" 2> "$TMP/bitarc.err"
# sFlow has no flow clock: both stamp a sample with its receive time, which
# differs between a live sfcapd and a replayed capture.
printf '%s\n' '* ts receive time' '* te receive time' > "$TMP/known"
rc=0
python3 "$H/nfdump_compare.py" --sfcapd "$TMP/nfdump.csv" "$TMP/bitarc.csv" "$TMP/known" || rc=1
n=$(grep -c '^flow,' "$TMP/bitarc.csv" || true)
[ "$n" -ge 10 ] || { echo "FAIL: only $n flow samples decoded"; rc=1; }
exit $rc
