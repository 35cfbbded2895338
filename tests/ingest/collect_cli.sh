#!/usr/bin/env bash
# bitarc collect from the command line: several --listen addresses, SIGHUP
# (the collector survives, reopens its --log, keeps collecting), the --stats
# file against what the senders sent, options given twice refused, and
# --help naming every option. Senders: flowgen (NetFlow v9, loopback only).
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
FLOWGEN="${FLOWGEN:-$(dirname "$BITARC")/tests/reliability/flowgen}"
[ -x "$FLOWGEN" ] || { echo "flowgen not built at $FLOWGEN"; exit 1; }
SRC="${BA_SOURCE_DIR:?}"
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --- --help lists every option of the option table, with a default -----------
"$BITARC" collect --help >"$tmp/help"
opts=$( (sed -n '/g_lo\[\] = {/,/{0, 0, 0, 0}}/p' "$SRC/src/cli/cmd_collect.c";
         sed -n '/define BA_CLI_STORE_LONGOPTS/,/^#define BA_CLI_STORE_HELP/p' "$SRC/src/cli/cli.h") |
       grep -o '{"[a-z-]*", *[a-z_]*_argument' | sed 's/{"\([a-z-]*\)", *\([a-z_]*\)_argument/\1:\2/')
[ "$(echo "$opts" | wc -l)" -ge 20 ] || fail "could not read the option table ($(echo "$opts" | wc -l) options)"
for o in $opts; do
  name=${o%%:*}
  grep -q -- "--$name\b" "$tmp/help" || fail "--help does not list --$name"
  # an option taking a value names its default on its line or the lines after it
  if [ "${o#*:}" = required ] && [ "$name" != store ]; then
    awk -v n="--$name" 'index($0, n) {on = 1; k = 0} on && k < 4 {print; k++} on && k >= 4 {on = 0}' "$tmp/help" |
      grep -Eqi 'default|required' || fail "--help gives no default for --$name"
  fi
done
echo "help ok: $(echo "$opts" | wc -l) options listed with defaults"

# --- options that hold one value are refused when repeated -----------------------
for args in "--queue 1M --queue 2M" "--store a --store b" "--codec wah32 --codec plwah" \
            "--status-every 1s --report-every 2s" "--stats x --stats y" "--rx-threads 1 --rx-threads 2"; do
  set +e
  "$BITARC" collect --store "$tmp/never" $args >/dev/null 2>"$tmp/rep.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "collect $args exited $rc, not 2"
  grep -q "more than once" "$tmp/rep.err" || fail "collect $args: $(cat "$tmp/rep.err")"
done
[ ! -e "$tmp/never" ] || fail "a refused command created the store"
echo "repeated options refused"

# --- two addresses, SIGHUP with a rotated log, the stats file -------------------
st="$tmp/st"
"$BITARC" collect --store "$st" --listen 127.0.0.1:0 --listen 127.0.0.1:0 --log "$tmp/log" \
  --stats "$tmp/stats.json" --stats-every 1s --status-every 1s --sync-every 1s >"$tmp/out" 2>"$tmp/err" &
cpid=$!
ports=
for _ in $(seq 100); do
  ports=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$tmp/log" 2>/dev/null || true)
  [ "$(echo "$ports" | grep -c .)" = 2 ] && break
  sleep 0.1
done
[ "$(echo "$ports" | grep -c .)" = 2 ] || { cat "$tmp/log" "$tmp/err"; fail "collect did not report two listening addresses"; }
p1=$(echo "$ports" | head -1); p2=$(echo "$ports" | tail -1)
[ "$p1" != "$p2" ] || fail "both addresses got port $p1"
"$FLOWGEN" --port "$p1" --rate 20000 --seconds 2 --seed 1 >"$tmp/sent1" &
g1=$!
"$FLOWGEN" --port "$p2" --rate 10000 --seconds 2 --seed 2 >"$tmp/sent2" &
g2=$!
sleep 1
mv "$tmp/log" "$tmp/log.1"   # log rotation
kill -HUP "$cpid"
sleep 0.5
kill -HUP "$cpid" 2>/dev/null || fail "collect died on the first SIGHUP: $(cat "$tmp/err")"
wait "$g1" "$g2"
sleep 1.5
kill -0 "$cpid" 2>/dev/null || fail "collect died on SIGHUP: $(cat "$tmp/err")"
[ -s "$tmp/log" ] || fail "SIGHUP did not reopen the log"
grep -q "SIGHUP: log reopened" "$tmp/log" || fail "no SIGHUP line in the reopened log: $(cat "$tmp/log")"
grep -q "flows/s" "$tmp/log" || sleep 1.2
grep -q "flows/s" "$tmp/log" || fail "no status line in the reopened log"
python3 - "$tmp/stats.json" <<'EOF' || fail "live stats file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["final"] is False and len(d["sockets"]) == 2, d
EOF
kill -INT "$cpid"
wait "$cpid" || fail "collect exited with $? after SIGINT: $(cat "$tmp/err")"
cpid=
n1=$(awk '{print $2}' "$tmp/sent1"); d1=$(awk '{print $5}' "$tmp/sent1")
n2=$(awk '{print $2}' "$tmp/sent2"); d2=$(awk '{print $5}' "$tmp/sent2")
counted=$("$BITARC" query --store "$st" --count --quiet any | tr -dc '0-9')
[ "$counted" = $((n1 + n2)) ] || fail "store holds $counted flows, senders sent $n1 + $n2"
python3 - "$tmp/stats.json" "$p1" "$p2" "$n1" "$d1" "$n2" "$d2" <<'EOF' || fail "final stats file: $(cat "$tmp/stats.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p1, p2, n1, d1, n2, d2 = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
assert d["final"] is True, "not final"
assert d["stored"] == n1 + n2, ("stored", d["stored"], n1 + n2)
assert d["received"] == d1 + d2, ("received", d["received"], d1 + d2)
assert d["queue_dropped"] == 0 and d["kernel_drops"] == 0, "drops"
assert d["counts"]["records"] == n1 + n2 and d["counts"]["datagrams"] == d1 + d2, d["counts"]
by = {s["address"]: s for s in d["sockets"]}
assert by["127.0.0.1:" + p1]["received"] == d1, ("socket 1", by)
assert by["127.0.0.1:" + p2]["received"] == d2, ("socket 2", by)
assert all(s["listen"] == "127.0.0.1:0" and s["rcvbuf_granted"] > 0 for s in d["sockets"])
assert d["queue"]["capacity"] == 256 << 20 and d["queue"]["peak"] <= d["queue"]["capacity"]
ex = d["exporters"]
assert len(ex) == 1 and ex[0]["exporter"] == "127.0.0.1", ex
assert ex[0]["received"] == d1 + d2 and ex[0]["counts"]["records"] == n1 + n2, ex
assert ex[0]["counts"]["dropped"]["queue-full"] == 0
EOF
grep -q "^bitarc collect: final" "$tmp/log" || fail "final report not in the log"
echo "two listens + SIGHUP ok: $n1 + $n2 flows stored, stats file matches the senders"

# --- a receive buffer the kernel caps: warning naming the size granted ----------
rmax=$(cat /proc/sys/net/core/rmem_max)
[ "$rmax" -lt 536870912 ] || { echo "skipped the capped-buffer check: net.core.rmem_max is $rmax"; exit 0; }
wrap=()
if [ "$(id -u)" = 0 ]; then
  # root may lift the cap (SO_RCVBUFFORCE): drop CAP_NET_ADMIN to see the capped case
  if command -v setpriv >/dev/null && setpriv --bounding-set=-net_admin --inh-caps=-net_admin -- true 2>/dev/null; then
    wrap=(setpriv --bounding-set=-net_admin --inh-caps=-net_admin --)
  else
    echo "skipped the capped-buffer check: cannot drop CAP_NET_ADMIN here"; exit 0
  fi
fi
ask=$((rmax * 2 + 1048576))
"${wrap[@]}" "$BITARC" collect --store "$tmp/capped" --listen 127.0.0.1:0 --rcvbuf "$ask" --duration 1s \
  --stats "$tmp/capped.json" 2>"$tmp/capped.err" || fail "collect with a capped buffer: $(cat "$tmp/capped.err")"
grep -q "warning: the kernel granted a receive buffer of only .* not the .* asked" "$tmp/capped.err" ||
  fail "no warning for a capped receive buffer: $(cat "$tmp/capped.err")"
python3 - "$tmp/capped.json" "$rmax" "$ask" <<'PY' || fail "capped buffer in the stats file: $(cat "$tmp/capped.json")"
import json, sys
s = json.load(open(sys.argv[1]))["sockets"][0]
assert s["rcvbuf_forced"] is False and s["rcvbuf_granted"] == int(sys.argv[2]) and s["rcvbuf_asked"] == int(sys.argv[3]), s
PY
echo "capped receive buffer: warned, $rmax bytes granted of $ask asked"
