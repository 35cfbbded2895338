#!/usr/bin/env bash
# IPFIX over TCP from a real exporter: softflowd exports a real capture as
# IPFIX once over TCP (-P tcp) to `bitarc collect --listen tcp:...` and once
# over UDP to `bitarc collect --listen ...`. Every record of the two stores
# must be the same but for its times (softflowd's flows of one capture do not
# depend on the transport; their times do, on the wall clock of each run:
# IPFIX carries them relative to the exporter's uptime), there must be flows
# at all, and the collector's report must show the TCP connection and no
# drop.
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
for t in softflowd softflowctl python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
PCAP="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap"
[ -f "$PCAP" ] || { echo "SKIP: $PCAP not present"; exit 0; }
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Collects one softflowd run into store $1 over transport $2 (tcp or udp).
run() {
  local st=$1 proto=$2 prefix="" port
  [ "$proto" = tcp ] && prefix="tcp:"
  "$BITARC" collect --store "$st" --listen "${prefix}127.0.0.1:0" --log "$TMP/$proto.log" --status-every 1s \
    >"$TMP/$proto.out" 2>"$TMP/$proto.err" &
  local cpid=$!
  pids+=("$cpid")
  port=
  for _ in $(seq 100); do
    port=$(sed -n "s/.*listening on ${prefix}127\.0\.0\.1:\([0-9]*\) .*/\1/p" "$TMP/$proto.log" 2>/dev/null || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$TMP/$proto.log" "$TMP/$proto.err"; fail "collect ($proto) did not report its address"; }
  local ctl="$TMP/sf$proto.ctl"
  softflowd -d -r "$PCAP" -n "127.0.0.1:$port" -v 10 -P "$proto" -6 -c "$ctl" -p "$TMP/sf$proto.pid" \
    >"$TMP/sf$proto.log" 2>&1 &
  local sp=$!
  for _ in $(seq 300); do
    kill -0 $sp 2>/dev/null || break
    softflowctl -c "$ctl" statistics >/dev/null 2>&1 || true
    sleep 0.1
  done
  wait $sp || true
  sleep 1
  kill -TERM "$cpid"
  wait "$cpid" || fail "collect ($proto) exited $?: $(cat "$TMP/$proto.err")"
}

run "$TMP/tcp" tcp
run "$TMP/udp" udp
grep -q "socket tcp:127.0.0.1:[0-9]*: received [1-9][0-9]* messages, queue-full drops 0, connections 1 " "$TMP/tcp.log" ||
  { cat "$TMP/tcp.log"; fail "the TCP collector's report shows no connection or messages"; }
# every field but ts, te, td (the first three) and tr (received, the last)
notimes() { "$BITARC" query -r "$1" -o csv -q -N any | cut -d, -f4- | sed 's/,[^,]*$//' | sort; }
notimes "$TMP/tcp" >"$TMP/tcp.csv"
notimes "$TMP/udp" >"$TMP/udp.csv"
n=$(wc -l <"$TMP/tcp.csv")
[ "$n" -ge 100 ] || fail "only $n flows over TCP"
if ! cmp -s "$TMP/tcp.csv" "$TMP/udp.csv"; then
  diff "$TMP/tcp.csv" "$TMP/udp.csv" | head -20
  fail "flows over TCP ($n) differ from the same export over UDP ($(wc -l <"$TMP/udp.csv"))"
fi
echo "ok: softflowd -P tcp: $n flows, identical to the same export over UDP (but for their times)"

# the store keeps the collector's last report: bitarc stat shows it per socket,
# exporter and template, and the templates' stored records add up to the store
"$BITARC" stat --store "$TMP/tcp" >"$TMP/stat.txt"
grep -q "^last collector report (collector.txt" "$TMP/stat.txt" || fail "bitarc stat shows no collector report"
grep -Eq "^  template 127\.0\.0\.1 ipfix domain [0-9]+ id [0-9]+: [0-9]+ fields, [1-9][0-9]* records, [1-9][0-9]* stored" \
  "$TMP/stat.txt" || { cat "$TMP/stat.txt"; fail "bitarc stat lists no IPFIX template with stored records"; }
"$BITARC" stat --store "$TMP/tcp" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["collector"]
stored = sum(t["stored"] for t in c["templates"])
assert c["final"] is True, "the report is not the final one"
assert stored == d["records"] == int(sys.argv[1]), (stored, d["records"], sys.argv[1])
assert [s["tcp"]["accepted"] for s in c["sockets"]] == [1], c["sockets"]
assert len(c["exporters"]) == 1 and c["exporters"][0]["exporter"] == "127.0.0.1", c["exporters"]
print("ok: bitarc stat: %d templates, %d records stored, 1 TCP connection" % (len(c["templates"]), stored))
' "$n" || fail "bitarc stat -o json: the collector report does not add up"
