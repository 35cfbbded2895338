#!/usr/bin/env bash
# Real export datagrams of ~45 exporters (routers, firewalls, probes; from
# logstash-codec-netflow's test data, tests/ingest/data/logstash) sent to
# nfcapd and decoded by bitarc: per exporter, the flow/packet/byte totals and
# every record field by field must equal nfdump's, except the deliberate
# differences listed in data/logstash/KNOWN (doc/decoders.md).
set -euo pipefail
for t in nfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
H="$BA_SOURCE_DIR/tests/ingest"
DUMP="$(dirname "$BITARC")/ingest_dump"
TMP=$(mktemp -d)
npid=""
cleanup() { [ -n "$npid" ] && kill "$npid" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
port=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
mkdir -p "$TMP/nfd"
nfcapd -w "$TMP/nfd" -p "$port" -b 127.0.0.1 -t 3600 > "$TMP/nfcapd.log" 2>&1 &
npid=$!
hex=$(printf '0100007F:%04X' "$port")
for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp && break; sleep 0.05; done
python3 "$H/vendor_corpus.py" send "$port"
sleep 1
kill -TERM "$npid"; wait "$npid" || true; npid=""
TZ=UTC nfdump -R "$TMP/nfd" -o csv > "$TMP/nfdump.csv"
python3 "$H/vendor_corpus.py" pcap "$TMP/corpus.pcap"
"$DUMP" --as flows "$TMP/corpus.pcap" > "$TMP/bitarc.csv" 2> "$TMP/bitarc.err"
# group names -> exporter addresses (group i is sent from 127.0.0.(i+2))
python3 "$H/vendor_corpus.py" groups | awk '{print $1, "127.0.0." NR+1}' > "$TMP/map"
awk 'NR==FNR {a[$1]=$2; next} /^#/ || NF < 2 {next} {print (($1 in a) ? a[$1] : $1), $2}' \
  "$TMP/map" "$H/data/logstash/KNOWN" > "$TMP/known"
rc=0
python3 "$H/nfdump_compare.py" "$TMP/nfdump.csv" "$TMP/bitarc.csv" "$TMP/known" > "$TMP/out" || rc=1
awk 'NR==FNR {n[$2]=$1; next} {ip=$2; sub(":", "", ip); print $1, n[ip], substr($0, length($1) + 2)}' "$TMP/map" "$TMP/out"
n=$(grep -c . "$TMP/out")
[ "$n" -ge 40 ] || { echo "FAIL: only $n exporters compared"; rc=1; }
exit $rc
