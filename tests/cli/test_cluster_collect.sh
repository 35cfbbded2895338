#!/usr/bin/env bash
# Clustering beside a running collector (issue 13, doc/format.md 7.9):
#  A. `reindex --cluster` run again and again while `bitarc collect` stores
#     flows, with queries running meanwhile: every query succeeds, no flow is
#     lost, the store verifies clean, and the clustered store answers as the
#     arrival-order reference does (and as its own --scan does);
#  B. `collect --cluster` end to end: segments clustered as they close, the
#     counts in the report and JSON match the store;
#  C. the collector's clustering child killed -9 at random moments: the store
#     verifies clean with every flow, a later reindex --cluster finishes it;
#  D. the collector itself killed -9 while its child clusters: the child
#     finishes alone without changing the flows, the store verifies clean.
# Flows: bench_query_gen as NetFlow v5 over loopback, the same flows written
# straight to a reference store.
set -u
tmp=$(mktemp -d)
cpid=""
bg=""
cleanup() {
  [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
  for p in $bg; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/col.err" ] && sed 's/^/  log: /' "$tmp/col.err" | tail -15; exit 1; }
B="$BITARC"
GEN="$(dirname "$B")/bench/query/bench_query_gen"
[ -x "$GEN" ] || { echo "SKIP: bench_query_gen not built"; exit 0; }
FLOWS=60000

# A collector on store $1 (more options after it); its port in $cport.
start_collect() {
  "$B" collect --store "$1" --listen 127.0.0.1:0 --segment-rows 8000 --block-rows 1000 \
    "${@:2}" > "$tmp/col.out" 2> "$tmp/col.err" &
  cpid=$!
  cport=""
  for _ in $(seq 1 100); do
    cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/col.err" 2>/dev/null | head -1)
    [ -n "$cport" ] && break; sleep 0.1
  done
  [ -n "$cport" ] || fail "collect did not start"
}
stop_collect() {
  kill -INT "$cpid"; wait "$cpid"; local rc=$?; cpid=""
  [ $rc -eq 0 ] || fail "collect exit $rc"
}
send() { # send REFSTORE SEED: the flows to the collector, paced (about 7 s)
  "$GEN" --flows $FLOWS --hours 2 --store "$1" --nf-port "$cport" --pps 300 --seed "$2" > /dev/null ||
    fail "bench_query_gen"
}
nclustered() { "$B" stat --store "$1" -o json | grep -o '"clustered": true' | wc -l; }
nsegs() { ls "$1" | grep -c '^seg-.*\.bitarc$'; }
FMT='fmt:%ts %te %sa %da %sp %dp %pr %flg %ipkt %ibyt %in %out %sas %das'
# The store answers as the reference (rows as multisets, aggregates exactly)
# and as its own linear scan (rows in the same order).
same_answers() {
  local st=$1 ref=$2 f
  for f in 'src ip 10.4.0.81' 'dst ip 10.5.0.1 or src net 192.168.3.0/24' 'src net 10.4.0.0/16 and dst port 443' \
           'proto udp and bytes > 1000' 'any'; do
    "$B" query -q -r "$st" -o "$FMT" "$f" > "$tmp/o1" 2> "$tmp/o1.err" || fail "query '$f': $(cat "$tmp/o1.err")"
    "$B" query -q -r "$ref" -o "$FMT" "$f" > "$tmp/o2" || fail "query ref '$f'"
    [ "$(sort "$tmp/o1" | md5sum)" = "$(sort "$tmp/o2" | md5sum)" ] || fail "'$f': rows differ from the reference"
    "$B" query -q -r "$st" --scan -o "$FMT" "$f" > "$tmp/o3" || fail "query --scan '$f'"
    cmp -s "$tmp/o1" "$tmp/o3" || fail "'$f': index and --scan differ on the clustered store"
    [ -s "$tmp/o1" ] || fail "'$f': no rows"
    for s in srcip/bytes dstport/flows; do
      "$B" query -q -r "$st" -s "$s" "$f" > "$tmp/o1"; "$B" query -q -r "$ref" -s "$s" "$f" > "$tmp/o2"
      cmp -s "$tmp/o1" "$tmp/o2" || fail "'$f' -s $s differs from the reference"
    done
  done
}
verify_clean() {
  "$B" verify --store "$1" > "$tmp/v" 2>&1 || fail "verify $1: $(tail -3 "$tmp/v")"
  grep -q " 0 damaged, 0 damaged blocks, $FLOWS records in clean segments" "$tmp/v" || fail "verify: $(tail -1 "$tmp/v")"
  [ "$("$B" query -r "$1" --count any)" = "$FLOWS" ] || fail "$1 holds $("$B" query -r "$1" --count any) flows"
}

# ---------- options ----------
bad() { # bad EXIT "text the error must name" args...
  local want=$1 text=$2; shift 2
  "$B" "$@" > /dev/null 2> "$tmp/err"; local rc=$?
  [ $rc -eq "$want" ] || fail "bitarc $*: exit $rc, want $want ($(cat "$tmp/err"))"
  grep -qF -- "$text" "$tmp/err" || fail "bitarc $*: error '$(cat "$tmp/err")' does not name '$text'"
}
mkdir -p "$tmp/e"
bad 2 "--segment goes with --cluster" reindex --store "$tmp/e" --segment seg-x.bitarc
bad 2 "--idle goes with --cluster" reindex --store "$tmp/e" --codec wah32 --idle
bad 3 "no segment 'seg-20240711T000000Z.bitarc'" reindex --store "$tmp/e" --cluster --segment seg-20240711T000000Z.bitarc
bad 2 "--cluster-memory '0'" collect --store "$tmp/e" --listen 127.0.0.1:0 --cluster --cluster-memory 0
"$B" collect --help | grep -A1 -E -- "^ +--cluster " | grep -q "default: off" || fail "collect --help: --cluster"
"$B" collect --help | grep -A1 -E -- "^ +--cluster-memory " | grep -q "default 1024" || fail "collect --help: --cluster-memory"

# ---------- A: reindex --cluster while collect writes, queries meanwhile ----------
start_collect "$tmp/a" --status-every 0
send "$tmp/aref" 3 &
gpid=$!
bg="$gpid"
# Flows are only added: a query's count never falls (a segment missing for a
# moment, or read half old and half new, would make it fall or fail).
( prev=0
  while :; do
    n=$("$B" query -r "$tmp/a" --count 'src net 10.4.0.0/16 or dst port 443' 2> "$tmp/q.err") ||
      { echo "query failed: $(cat "$tmp/q.err")" > "$tmp/q.bad"; }
    grep -qi "damag\|error\|cannot" "$tmp/q.err" && cp "$tmp/q.err" "$tmp/q.bad"
    [ "${n:-0}" -ge "$prev" ] || echo "count fell from $prev to $n" > "$tmp/q.bad"
    prev=${n:-0}
  done ) &
qpid=$!
bg="$gpid $qpid"
runs=0
while kill -0 $gpid 2>/dev/null; do
  "$B" reindex --store "$tmp/a" --cluster -q 2> "$tmp/r.err" || fail "reindex --cluster beside collect: $(cat "$tmp/r.err")"
  runs=$((runs + 1))
done
wait $gpid || fail "sender"
sleep 1
"$B" reindex --store "$tmp/a" --cluster -q || fail "reindex --cluster after sending"
kill $qpid; wait $qpid 2>/dev/null; bg=""
[ -f "$tmp/q.bad" ] && fail "a query beside the clustering: $(cat "$tmp/q.bad")"
c1=$(nclustered "$tmp/a")
[ "$c1" -ge 4 ] || fail "only $c1 segments clustered beside the collector ($runs runs)"
ls "$tmp/a" | grep -q '\.open$' || fail "no open slice while the collector runs: $(ls "$tmp/a")"
stop_collect
[ "$(nclustered "$tmp/a")" -eq "$c1" ] || fail "segments clustered after the runs"
"$B" reindex --store "$tmp/a" --cluster -q || fail "reindex --cluster after stop"
[ "$(nclustered "$tmp/a")" -eq "$(nsegs "$tmp/a")" ] || fail "not every segment clustered"
[ -e "$tmp/a/.cluster" ] && fail "scratch left: $(ls -a "$tmp/a")"
verify_clean "$tmp/a"
same_answers "$tmp/a" "$tmp/aref"
echo "A: $runs reindex --cluster runs beside collect, $c1 segments clustered while it ran"

# ---------- B: collect --cluster ----------
start_collect "$tmp/b" --cluster --status-every 1s --stats "$tmp/b.json"
send "$tmp/bref" 4
sleep 3
stop_collect
line=$(grep "clustering: " "$tmp/col.err") || fail "no clustering line in the report"
read -r nc ns nf <<<"$(sed -E 's/.*clustering: ([0-9]+) segments clustered, ([0-9]+) skipped.*, ([0-9]+) failed/\1 \2 \3/' <<<"$line")"
[ "$nf" -eq 0 ] || fail "collect --cluster: $nf failed"
# Segments closing while the child still clusters one are skipped (counted):
# how many that is depends on the machine's load (an ASan child takes ~3 s
# a segment), so at least one is clustered and every closed one is counted.
[ "$nc" -ge 1 ] || fail "collect --cluster clustered none"
[ $((nc + ns)) -ge 3 ] || fail "collect --cluster: $nc clustered + $ns skipped, expected every closed segment (>= 3) counted"
[ "$(nclustered "$tmp/b")" -eq "$nc" ] || fail "report says $nc clustered, the store has $(nclustered "$tmp/b")"
grep -q "\"cluster\":{\"clustered\":$nc,\"skipped\":$ns,\"failed\":0}" "$tmp/b.json" || fail "--stats JSON: $(cat "$tmp/b.json")"
grep -q "segments clustered [0-9]*, skipped [0-9]*, failed 0" "$tmp/col.err" || fail "status line without the counts"
verify_clean "$tmp/b"
"$B" reindex --store "$tmp/b" --cluster -q || fail "reindex --cluster after collect --cluster"
same_answers "$tmp/b" "$tmp/bref"
echo "B: collect --cluster clustered $nc segments, skipped $ns"

# ---------- C: the clustering child killed -9 at random moments ----------
start_collect "$tmp/c" --cluster --status-every 0
send "$tmp/cref" 5 &
gpid=$!
bg="$gpid"
kills=0
while kill -0 $gpid 2>/dev/null; do
  sleep "0.$((RANDOM % 4))$((RANDOM % 10))"
  for p in $(pgrep -P "$cpid"); do kill -9 "$p" 2>/dev/null && kills=$((kills + 1)); done
done
wait $gpid || fail "sender"
bg=""
sleep 2
stop_collect
line=$(grep "clustering: " "$tmp/col.err") || fail "no clustering line in the report"
nf=$(sed -E 's/.*, ([0-9]+) failed/\1/' <<<"$line")
[ "$kills" -eq 0 ] || [ "$nf" -ge 1 ] || fail "$kills kills, none counted as failed: $line"
grep -q "killed by signal 9" "$tmp/col.err" || [ "$kills" -eq 0 ] || fail "no kill logged"
verify_clean "$tmp/c"
"$B" reindex --store "$tmp/c" --cluster -q || fail "reindex --cluster after the kills"
[ "$(nclustered "$tmp/c")" -eq "$(nsegs "$tmp/c")" ] || fail "not every segment clustered after the kills"
[ -e "$tmp/c/.cluster" ] && fail "scratch left after reindex: $(ls -a "$tmp/c")"
verify_clean "$tmp/c"
same_answers "$tmp/c" "$tmp/cref"
echo "C: $kills clustering children killed -9 ($line)"
# ---------- D: the collector killed -9 while its child clusters ----------
start_collect "$tmp/d" --cluster --status-every 0 --sync-every 1s
"$GEN" --flows $FLOWS --hours 2 --nf-port "$cport" --pps 300 --seed 6 > /dev/null &
gpid=$!
bg="$gpid"
child=""
for _ in $(seq 1 300); do
  child=$(pgrep -P "$cpid" | head -1)
  [ -n "$child" ] && break
  sleep 0.05
done
[ -n "$child" ] || fail "no clustering child seen"
kill -9 "$cpid"; wait "$cpid" 2>/dev/null; cpid=""
kill "$gpid" 2>/dev/null; wait "$gpid" 2>/dev/null; bg=""
before=$("$B" query -r "$tmp/d" --count any)
for _ in $(seq 1 600); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
kill -0 "$child" 2>/dev/null && fail "the orphaned clustering child did not finish"
after=$("$B" query -r "$tmp/d" --count any)
[ "$before" = "$after" ] || fail "the orphaned child changed the flows: $before before, $after after"
[ -e "$tmp/d/.cluster" ] && fail "the orphaned child left its scratch: $(ls -a "$tmp/d/.cluster")"
"$B" verify --store "$tmp/d" --recover > "$tmp/v" 2>&1 || fail "verify --recover after the kill: $(tail -3 "$tmp/v")"
grep -q " 0 damaged, 0 damaged blocks" "$tmp/v" || fail "verify after the kill: $(tail -1 "$tmp/v")"
"$B" reindex --store "$tmp/d" --cluster -q || fail "reindex --cluster after the kill"
[ "$("$B" query -r "$tmp/d" --count any)" -ge "$after" ] || fail "flows lost by the reindex after the kill"
echo "D: collector killed -9 while clustering; its child finished alone, $after flows before and after"
echo "PASS: clustering beside collect"
