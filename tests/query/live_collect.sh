#!/usr/bin/env bash
# Live query during `bitarc collect` (issue 17): a sender that logs every
# flow it sends (flowgen: NetFlow v5, then v9) feeds a collector on loopback;
# 2 s after the last datagram, with the slice still open (no segment yet),
# `bitarc query --count` and `-o csv` must see exactly the flows sent, field
# for field (csv rows against a linear scan of the sender's log), a filtered
# count must equal the log's, and --no-live must see none. After the
# collector stops, the finished segment holds the same flows.
# Rates are low, so row groups never fill: the rows are visible only because
# the collector writes them early (--live-every, default 1 s).
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
FLOWGEN="${FLOWGEN:-$(dirname "$BITARC")/tests/reliability/flowgen}"
[ -x "$FLOWGEN" ] || { echo "flowgen not built at $FLOWGEN"; exit 1; }
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -5 "$tmp/log"; exit 1; }

st="$tmp/st"
# LIVE_COLLECT_ARGS: more collect options (ctest runs it also with
# --reorder olsh: rows the reordering buffer holds must be seen as well)
# shellcheck disable=SC2086
"$BITARC" collect --store "$st" --listen 127.0.0.1:0 --log "$tmp/log" --status-every 0 ${LIVE_COLLECT_ARGS:-} >"$tmp/out" 2>"$tmp/err" &
cpid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$tmp/log" 2>/dev/null || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/err"; fail "collect did not report its port"; }

# compare.py LOG CSV: the csv rows (UTC) as a multiset against the log lines
# "first_s src dst sport dport proto packets bytes" (addresses as integers).
cat >"$tmp/compare.py" <<'EOF'
import calendar, csv, ipaddress, sys, time
from collections import Counter
sent = Counter()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 8:
        t, s, d, sp, dp, pr, pk, by = map(int, f)
        sent[(t, str(ipaddress.IPv4Address(s)), str(ipaddress.IPv4Address(d)), sp, dp, pr, pk, by)] += 1
got = Counter()
names = {"TCP": 6, "UDP": 17}
with open(sys.argv[2]) as fh:
    rows = list(csv.reader(fh))
assert rows and rows[0][:3] == ["ts", "te", "td"], rows[:1]
for r in rows[1:]:
    if not r or r[0] == "Summary":
        break
    t = calendar.timegm(time.strptime(r[0], "%Y-%m-%d %H:%M:%S"))
    pr = names.get(r[7], None)
    pr = int(r[7]) if pr is None else pr
    got[(t, r[3], r[4], int(r[5]), int(r[6]), pr, int(r[11]), int(r[12]))] += 1
if got != sent:
    missing, extra = sent - got, got - sent
    print("sent %d, csv %d, missing %d (e.g. %s), extra %d (e.g. %s)" % (
        sum(sent.values()), sum(got.values()), sum(missing.values()), list(missing)[:2],
        sum(extra.values()), list(extra)[:2]))
    sys.exit(1)
print("csv = sent: %d flows" % sum(sent.values()))
EOF

check_live() { # $1: label
  local n udp c u nl
  n=$(cat "$tmp"/sent.* | wc -l)
  udp=$(cat "$tmp"/sent.* | awk '$6 == 17' | wc -l)
  c=$("$BITARC" query -r "$st" --count)
  [ "$c" = "$n" ] || fail "$1: query --count says $c, the sender sent $n"
  u=$("$BITARC" query -r "$st" --count 'proto udp and dst port 53')
  [ "$u" = "$udp" ] || fail "$1: --count 'proto udp and dst port 53' says $u, the sender sent $udp"
  "$BITARC" query -r "$st" -o csv --tz utc >"$tmp/q.csv"
  cat "$tmp"/sent.* >"$tmp/all.txt"
  python3 "$tmp/compare.py" "$tmp/all.txt" "$tmp/q.csv" || fail "$1: -o csv differs from what was sent"
  # -t +N / -N: the first / last N seconds of the data, live rows included
  c=$("$BITARC" query -r "$st" --count -t +3600)
  [ "$c" = "$n" ] || fail "$1: -t +3600 counts $c of the $n flows sent (the live rows are the data)"
  c=$("$BITARC" query -r "$st" --count -t -3600)
  [ "$c" = "$n" ] || fail "$1: -t -3600 counts $c of the $n flows sent"
  echo "$1: $n flows seen ($udp udp/53)"
}

# NetFlow v5, 300 flows over 1.5 s (groups of 4000 rows stay open)
"$FLOWGEN" --port "$port" --rate 200 --seconds 1.5 --seed 7 --v5 --log "$tmp/sent.1" >/dev/null
sleep 2
ls "$st"/*.open >/dev/null 2>&1 || fail "no journal: the slice should still be open"
! ls "$st"/seg-*.bitarc >/dev/null 2>&1 || fail "a segment exists already: the test would not test live rows"
check_live "v5 live"
nl=$("$BITARC" query -r "$st" --count --no-live)
[ "$nl" = 0 ] || fail "--no-live counted $nl rows of an open slice"

# NetFlow v9 on top, a trickle of 40 flows
"$FLOWGEN" --port "$port" --rate 40 --seconds 1 --seed 8 --per-datagram 4 --log "$tmp/sent.2" >/dev/null
sleep 2
check_live "v9 live"

kill -INT "$cpid"
wait "$cpid" || fail "collect exited $?: $(cat "$tmp/err")"
cpid=
! ls "$st"/*.open >/dev/null 2>&1 || fail "a journal is left after collect stopped"
grep -q "kernel drops 0" "$tmp/log" || fail "the kernel dropped datagrams: the counts cannot be exact"
check_live "finished"
nl=$("$BITARC" query -r "$st" --count --no-live)
[ "$nl" = "$(cat "$tmp"/sent.* | wc -l)" ] || fail "--no-live after the finish: $nl"
# the collector's report in the store counts the LIVE blocks it wrote
"$BITARC" stat --store "$st" -o json | python3 -c '
import json, sys
live = json.load(sys.stdin)["collector"]["live"]
assert live["blocks"] >= 2 and live["bytes"] > 0, live
' || fail "bitarc stat: the collector report shows no LIVE blocks"
grep -q "live queries: [1-9][0-9]* LIVE blocks written" "$st/collector.txt" || fail "collector.txt names no LIVE blocks"
echo "live_collect: ok"
