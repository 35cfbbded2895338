#!/usr/bin/env bash
# softflowd exports a real capture as NetFlow v5, v9, IPFIX and bidirectional
# IPFIX (RFC 5103, -b); the datagrams are recorded once, then decoded by
# bitarc (ingest_dump) and sent to nfcapd. Flow, packet and byte totals (in +
# out) and every record field by field must equal nfdump's, except the
# deliberate differences of doc/decoders.md that softflowd's exports show:
# v9 ICMP ports (nfdump: 0), IPFIX flowStart/EndSysUpTime (nfdump 1.7.1
# swaps them), and in biflows the reverse flags and ToS (nfdump overwrites
# the forward values with them).
set -euo pipefail
for t in softflowd softflowctl nfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
PCAP="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap"
[ -f "$PCAP" ] || { echo "SKIP: $PCAP not present"; exit 0; }
H="$BA_SOURCE_DIR/tests/ingest"
DUMP="$(dirname "$BITARC")/ingest_dump"
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
wait_bound() {
  local hex; hex=$(printf '0100007F:%04X' "$1")
  for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
free_port() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
fail=0
for mode in "5" "9" "10" "10 -b"; do
  tag=${mode// /}
  # record softflowd's datagrams
  python3 "$H/udp_sink.py" "$TMP/dg$tag" > "$TMP/sinkport$tag" 2> "$TMP/sink$tag.log" &
  spid=$!; pids+=($spid)
  for _ in $(seq 1 100); do [ -s "$TMP/sinkport$tag" ] && break; sleep 0.05; done
  port=$(cat "$TMP/sinkport$tag")
  ctl="$TMP/sf$tag.ctl"
  # shellcheck disable=SC2086
  softflowd -d -r "$PCAP" -n "127.0.0.1:$port" -v $mode -6 -c "$ctl" -p "$TMP/sf$tag.pid" > "$TMP/sf$tag.log" 2>&1 &
  sp=$!
  for _ in $(seq 1 300); do
    kill -0 $sp 2>/dev/null || break
    softflowctl -c "$ctl" statistics >/dev/null 2>&1 || true
    sleep 0.1
  done
  wait $sp || true
  wait $spid || true
  # nfcapd fed the same datagrams
  nport=$(free_port); nd="$TMP/nfd$tag"; mkdir -p "$nd"
  nfcapd -w "$nd" -p "$nport" -b 127.0.0.1 -t 3600 > "$TMP/nfcapd$tag.log" 2>&1 &
  npid=$!; pids+=($npid)
  wait_bound "$nport" || { echo "FAIL: nfcapd did not bind"; exit 1; }
  python3 "$H/vendor_corpus.py" file2udp "$TMP/dg$tag" "$nport"
  sleep 1
  kill -TERM "$npid"; wait "$npid" || true
  TZ=UTC nfdump -R "$nd" -o csv > "$TMP/nfdump$tag.csv"
  python3 "$H/vendor_corpus.py" file2pcap "$TMP/dg$tag" "$TMP/dg$tag.pcap"
  "$DUMP" --as flows "$TMP/dg$tag.pcap" > "$TMP/bitarc$tag.csv" 2> "$TMP/bitarc$tag.err"
  case "$mode" in
    9) printf '* dp\n' ;;
    10) printf '* ts\n* te\n' ;;
    "10 -b") printf '* ts\n* te\n* flg\n* stos\n' ;;
    *) : ;;
  esac > "$TMP/known$tag"
  if python3 "$H/nfdump_compare.py" "$TMP/nfdump$tag.csv" "$TMP/bitarc$tag.csv" "$TMP/known$tag" > "$TMP/out$tag"; then
    echo "ok: softflowd -v $mode: $(cat "$TMP/out$tag")"
  else
    echo "FAIL: softflowd -v $mode: $(cat "$TMP/out$tag")"; fail=1
  fi
  n=$(grep -c '^flow' "$TMP/bitarc$tag.csv" || true)
  [ "$n" -ge 100 ] || { echo "FAIL: softflowd -v $mode: only $n flows"; fail=1; }
  if [ "$mode" = "10 -b" ]; then
    # a biflow export carries reverse counters: some records must have them
    o=$(awk -F, '$1=="flow" && $25 > 0' "$TMP/bitarc$tag.csv" | wc -l)
    [ "$o" -gt 0 ] || { echo "FAIL: no reverse counters decoded from softflowd -b"; fail=1; }
  fi
done
exit $fail
