#!/usr/bin/env bash
# End to end against the reference collector: softflowd turns a real capture
# into NetFlow v5, v9 and IPFIX exports, sent once to `bitarc collect` and once
# to nfcapd (both on loopback). The flows bitarc stored (read back with
# `bitarc query -o csv`) must equal nfdump's: same count, same
# (src, dst, sport, dport, proto, packets, bytes) multiset (ICMP ports left
# out: nfdump prints 0, bitarc type<<8|code). The collector's own report must
# account for every datagram and record.
set -euo pipefail
for t in softflowd softflowctl nfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
PCAP="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap"
[ -f "$PCAP" ] || { echo "SKIP: $PCAP not present"; exit 0; }
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
# Waits until something is bound to UDP 127.0.0.1:$1 (nfcapd starting up
# under load), reading /proc/net/udp so as not to race for the port.
wait_bound() {
  local hex; hex=$(printf '0100007F:%04X' "$1")
  for _ in $(seq 1 200); do
    grep -q " $hex " /proc/net/udp 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
free_port() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# softflowd -r only advances when woken; poke it through its control socket
# until it has read the whole file and exited (then it has exported everything).
run_softflowd() { # port version
  local ctl="$TMP/sf.$1.ctl"
  softflowd -d -r "$PCAP" -n "127.0.0.1:$1" -v "$2" -6 -c "$ctl" -p "$TMP/sf.$1.pid" > "$TMP/sf.$1.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 300); do
    kill -0 $sp 2>/dev/null || break
    softflowctl -c "$ctl" statistics >/dev/null 2>&1 || true
    sleep 0.1
  done
  wait $sp || true
  grep -E "Flows exported" "$TMP/sf.$1.log" | tail -1
}

fail=0
for V in 5 9 10; do
  st="$TMP/st$V"; nd="$TMP/nfd$V"; mkdir -p "$nd"
  "$BITARC" collect --store "$st" --listen 127.0.0.1:0 --report json --report-every 0 --sync-every 0 \
    > "$TMP/col$V.json" 2> "$TMP/col$V.err" &
  cpid=$!; pids+=($cpid)
  port=""
  for _ in $(seq 1 100); do
    # (the background child may not have created its stderr file yet)
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/col$V.err" 2>/dev/null || true)
    [ -n "$port" ] && break; sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL: bitarc collect did not start"; cat "$TMP/col$V.err"; exit 1; }
  nport=$(free_port)
  nfcapd -w "$nd" -p "$nport" -b 127.0.0.1 -t 3600 > "$TMP/nfcapd$V.log" 2>&1 &
  npid=$!; pids+=($npid)
  wait_bound "$nport" || { echo "FAIL: nfcapd did not bind 127.0.0.1:$nport"; cat "$TMP/nfcapd$V.log"; exit 1; }
  e1=$(run_softflowd "$port" "$V")
  e2=$(run_softflowd "$nport" "$V")
  sleep 1
  kill -TERM "$cpid" "$npid"
  wait "$cpid" || { echo "FAIL: bitarc collect exited with $?"; cat "$TMP/col$V.err"; fail=1; }
  wait "$npid" || true
  "$BITARC" query -r "$st" -o csv -q 'any' |
    awk -F, 'NF>13 {p=$8; sp=$6; dp=$7; if (p=="ICMP"||p=="ICMP6") {sp="-"; dp="-"}; print $4","$5","sp","dp","p","$12","$13}' |
    sort > "$TMP/got$V"
  nfdump -R "$nd" -q -o csv | awk -F, 'NF>13 {p=$8; sp=$6; dp=$7; if (p=="ICMP"||p=="ICMP6") {sp="-"; dp="-"}; print $4","$5","sp","dp","p","$12","$13}' |
    sort > "$TMP/want$V"
  ng=$(wc -l < "$TMP/got$V"); nw=$(wc -l < "$TMP/want$V")
  python3 - "$TMP/col$V.json" "$ng" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1])); c = r["counts"]; ng = int(sys.argv[2])
bad = []
if r["stored"] != ng: bad.append("stored %d but query finds %d" % (r["stored"], ng))
if c["records"] != r["stored"]: bad.append("decoded %d, stored %d" % (c["records"], r["stored"]))
if r["received"] != c["datagrams"]: bad.append("received %d datagrams, decoded %d" % (r["received"], c["datagrams"]))
if any(c["dropped"].values()) or r["queue_dropped"]: bad.append("drops: %s" % c["dropped"])
if bad: print("FAIL: collector report: " + "; ".join(bad)); sys.exit(1)
PY
  if [ "$nw" -lt 10 ]; then echo "FAIL: v$V: nfcapd got only $nw flows ($e2)"; fail=1; continue; fi
  if ! diff -q "$TMP/want$V" "$TMP/got$V" >/dev/null; then
    echo "FAIL: v$V: nfdump $nw flows, bitarc $ng"; diff "$TMP/want$V" "$TMP/got$V" | head -10; fail=1
  else
    echo "ok: v$V: $ng flows identical to nfdump's (softflowd: $e1)"
  fi
done
exit $fail
