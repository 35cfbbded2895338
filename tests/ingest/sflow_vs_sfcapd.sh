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
hex=$(printf '0100007F:%04X' "$port")
# sFlow has no flow clock: both stamp a sample with its receive time, which
# differs between a live sfcapd and a replayed capture.
printf '%s\n' '* ts receive time' '* te receive time' > "$TMP/known"
rc=0

# compare NAME DATAGRAMS MIN: the recorded datagrams (udp_sink.py's format)
# go to a fresh sfcapd and, as a capture, to bitarc's decoder; every record
# must agree and bitarc must decode at least MIN flow samples.
compare() {
  local name=$1 dg=$2 min=$3
  rm -rf "$TMP/nfd"; mkdir -p "$TMP/nfd"
  sfcapd -w "$TMP/nfd" -p "$port" -b 127.0.0.1 -t 3600 > "$TMP/sfcapd.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp && break; sleep 0.05; done
  python3 "$H/vendor_corpus.py" file2udp "$dg" "$port"
  sleep 1
  kill -TERM "$spid"; wait "$spid" || true; spid=""
  TZ=UTC nfdump -R "$TMP/nfd" -o csv > "$TMP/nfdump.csv"
  python3 "$H/vendor_corpus.py" file2pcap "$dg" "$TMP/dg.pcap"
  "$DUMP" --as flows "$TMP/dg.pcap" > "$TMP/bitarc.csv" 2> "$TMP/bitarc.err"
  if python3 "$H/nfdump_compare.py" --sfcapd "$TMP/nfdump.csv" "$TMP/bitarc.csv" "$TMP/known" > "$TMP/out"; then
    echo "ok: $name: $(cat "$TMP/out")"
  else
    echo "FAIL: $name: $(cat "$TMP/out")"; rc=1
  fi
  local n
  n=$(grep -c '^flow,' "$TMP/bitarc.csv" || true)
  [ "$n" -ge "$min" ] || { echo "FAIL: $name: only $n flow samples decoded"; rc=1; }
}

# ---------- A: akvorado's real sFlow datagrams ----------
python3 "$H/pcap_udp.py" "$TMP/dg.akvorado" "$D"/*.pcap
compare "akvorado captures" "$TMP/dg.akvorado" 10

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
  compare "sfprobe $cap" "$TMP/dg.$tag" 100
done
exit $rc
