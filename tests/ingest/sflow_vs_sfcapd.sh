#!/usr/bin/env bash
# sFlow v5 decoder against nfdump's sfcapd: the same datagrams are sent to
# sfcapd and decoded by bitarc; flow, packet and byte totals and every record
# field by field must equal nfdump's (tests/ingest/nfdump_compare.py --sfcapd),
# except the differences doc/decoders.md lists. Two sources of datagrams:
#  A. akvorado's real sFlow test captures (../shared/data/traces);
#  B. a real sFlow exporter, pmacct's sfprobe (Debian `pmacct`), sampling
#     every packet of real captures (skipped if pmacctd is not installed).
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

# ---------- B: pmacct's sfprobe exporting real captures ----------
command -v pmacctd >/dev/null || { echo "SKIP B: pmacctd not installed (scripts/deps.sh: pmacct)"; exit $rc; }
T="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap"
for cap in gnutella.pcap fix2.pcap http_ipv6.pcap; do
  [ -f "$T/$cap" ] || { echo "SKIP B: $cap missing"; continue; }
  tag=${cap%.pcap}
  # record sfprobe's datagrams (one flow sample per packet: sampling 1/1)
  python3 "$H/udp_sink.py" "$TMP/dg.$tag" 8 > "$TMP/sink.$tag" 2> "$TMP/sink.$tag.log" &
  kpid=$!
  for _ in $(seq 1 100); do [ -s "$TMP/sink.$tag" ] && break; sleep 0.05; done
  printf 'daemonize: false\npcap_savefile: %s\nplugins: sfprobe\nsfprobe_receiver: 127.0.0.1:%s\nsampling_rate: 1\npcap_savefile_delay: 0\n' \
    "$T/$cap" "$(cat "$TMP/sink.$tag")" > "$TMP/pm.$tag.conf"
  # its exit status varies at the end of a savefile; the sample count below decides
  timeout 120 pmacctd -f "$TMP/pm.$tag.conf" > "$TMP/pm.$tag.log" 2>&1 || true
  wait $kpid || true
  mkdir -p "$TMP/nfd.$tag"
  sfcapd -w "$TMP/nfd.$tag" -p "$port" -b 127.0.0.1 -t 3600 > "$TMP/sfcapd.$tag.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp && break; sleep 0.05; done
  python3 "$H/vendor_corpus.py" file2udp "$TMP/dg.$tag" "$port"
  sleep 1
  kill -TERM "$spid"; wait "$spid" || true; spid=""
  TZ=UTC nfdump -R "$TMP/nfd.$tag" -o csv > "$TMP/nfdump.$tag.csv"
  python3 "$H/vendor_corpus.py" file2pcap "$TMP/dg.$tag" "$TMP/dg.$tag.pcap"
  "$DUMP" --as flows "$TMP/dg.$tag.pcap" > "$TMP/bitarc.$tag.csv" 2> "$TMP/bitarc.$tag.err"
  if python3 "$H/nfdump_compare.py" --sfcapd "$TMP/nfdump.$tag.csv" "$TMP/bitarc.$tag.csv" "$TMP/known" > "$TMP/out.$tag"; then
    echo "ok: sfprobe $cap: $(cat "$TMP/out.$tag")"
  else
    echo "FAIL: sfprobe $cap: $(cat "$TMP/out.$tag")"; rc=1
  fi
  n=$(grep -c '^flow,' "$TMP/bitarc.$tag.csv" || true)
  [ "$n" -ge 100 ] || { echo "FAIL: sfprobe $cap: only $n flow samples"; rc=1; }
done
exit $rc
