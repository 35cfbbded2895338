#!/usr/bin/env bash
# Reliability (issue 7): load test of `bitarc collect`. flowgen sends NetFlow
# v9 to loopback at increasing flow rates for a bounded time; the collector's
# stored count (its JSON report, cross-checked with `bitarc query --count`)
# must equal the flows sent. Prints the highest rate with zero loss.
# Default (CTest): 2000 and 10000 flows/s for 2 s each, and zero loss is
# required at the lowest rate. BA_LONG_TESTS=1: up to 1.6 M flows/s, 60 s each
# (the issue's figure; $BA_LOAD_SECONDS overrides, $BA_LOAD_RATES the list);
# it stops after two lossy rates in a row. Extra collector options (e.g.
# "--reorder olsh") come from $BA_COLLECT_ARGS.
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
FLOWGEN="${FLOWGEN:-$(dirname "$BITARC")/tests/reliability/flowgen}"
[ -x "$FLOWGEN" ] || { echo "flowgen not built at $FLOWGEN"; exit 1; }
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

if [ "${BA_LONG_TESTS:-0}" != 0 ]; then
  rates="${BA_LOAD_RATES:-10000 100000 200000 400000 600000 800000 1000000 1200000 1600000}"
  seconds=${BA_LOAD_SECONDS:-60}
else
  rates="2000 10000"; seconds=2
fi

best=0
lossy=0
lowest=${rates%% *}
for rate in $rates; do
  rm -rf "$tmp/st" "$tmp/err" "$tmp/report.json"
  # (err is removed first: the background child creates it only after fork,
  # and a stale file would hand us the previous run's port)
  "$BITARC" collect --store "$tmp/st" --listen 127.0.0.1:0 --report json --report-every 0 --sync-every 1s \
    ${BA_COLLECT_ARGS:-} >"$tmp/report.json" 2>"$tmp/err" &
  cpid=$!
  port=
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/err" 2>/dev/null | head -1 || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "collect did not start:"; cat "$tmp/err"; exit 1; }
  "$FLOWGEN" --port "$port" --rate "$rate" --seconds "$seconds" >"$tmp/sent"
  sleep 1 # let the collector drain its socket and queue
  kill -INT "$cpid"
  wait "$cpid" || { echo "collect exited with $? at $rate flows/s:"; cat "$tmp/err"; exit 1; }
  cpid=
  sent=$(awk '{print $2}' "$tmp/sent")
  stored=$(grep -o '"stored":[0-9]*' "$tmp/report.json" | head -1 | cut -d: -f2)
  counted=$("$BITARC" query --store "$tmp/st" --count --quiet any | tr -dc '0-9')
  drops=$(grep -o '"kernel_drops":-\?[0-9]*' "$tmp/report.json" | head -1 | cut -d: -f2)
  qdrops=$(grep -o '"queue_dropped":[0-9]*' "$tmp/report.json" | head -1 | cut -d: -f2)
  echo "rate $rate flows/s for ${seconds}s: sent $sent, collector stored $stored, store holds $counted, kernel drops $drops, queue drops $qdrops ($(cat "$tmp/sent"))"
  if [ "$stored" != "$counted" ]; then
    echo "FAIL: the report says $stored stored but the store holds $counted"; exit 1
  fi
  if [ "$stored" = "$sent" ]; then
    best=$rate
    lossy=0
  elif [ "$rate" = "$lowest" ]; then
    echo "FAIL: loss at the lowest rate ($rate flows/s)"; exit 1
  else
    lossy=$((lossy + 1))
    [ "$lossy" -ge 2 ] && break
  fi
done
echo "highest rate with zero loss: $best flows/s${BA_COLLECT_ARGS:+ (collect $BA_COLLECT_ARGS)}"
