#!/usr/bin/env bash
# bitarc collect --max-age / --max-size (issue 17): while collecting, the
# store's oldest complete segments are expired at start and every
# --expire-every, each deletion logged; the slice being written is never
# deleted (every flow sent while old data was being expired is in the store
# afterwards); both limits are honoured; bad values exit 2 naming them.
set -u
tmp=$(mktemp -d)
cpid=""
cleanup() { [ -n "$cpid" ] && kill "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/col.err" ] && sed 's/^/  log: /' "$tmp/col.err" | tail -20; exit 1; }
B="$BITARC"
MK="$(dirname "$B")/tests/query/query_mkstore"
GEN="$(dirname "$B")/bench/query/bench_query_gen"
[ -x "$MK" ] || { echo "SKIP: query_mkstore not built"; exit 0; }

# ---------- usage ----------
"$B" collect --help > "$tmp/help" || fail "collect --help"
for o in max-age max-size expire-every; do
  line=$(grep -A1 -E -- "^ +--$o " "$tmp/help" | tr '\n' ' ')
  [ -n "$line" ] || fail "--help does not list --$o"
  grep -q "default" <<<"$line" || fail "--help: --$o gives no default: '$line'"
done
bad() { # bad "text the error must name" args...
  local want=$1; shift
  "$B" collect --store "$tmp/x" --listen 127.0.0.1:0 --duration 1s "$@" > /dev/null 2> "$tmp/err"; local rc=$?
  [ $rc -eq 2 ] || fail "collect $*: exit $rc, want 2"
  grep -qF -- "$want" "$tmp/err" || fail "collect $*: error '$(cat "$tmp/err")' does not name '$want'"
}
bad "'5y'" --max-age 5y
bad "'12Q'" --max-size 12Q
bad "'0'" --expire-every 0
bad "--max-age" --max-age 30d --max-age 2d

# A collector on the store; its port in $cport.
start_collect() {
  "$B" collect --store "$1" --listen 127.0.0.1:0 --status-every 0 --sync-every 1s --expire-every 1s "${@:2}" \
    > /dev/null 2> "$tmp/col.err" &
  cpid=$!
  cport=""
  for _ in $(seq 1 100); do
    cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/col.err" 2>/dev/null | head -1)
    [ -n "$cport" ] && break; sleep 0.1
  done
  [ -n "$cport" ] || fail "collect did not start"
}
wait_log() { # wait_log PATTERN: up to 10 s
  for _ in $(seq 1 100); do grep -q -- "$1" "$tmp/col.err" && return 0; sleep 0.1; done
  return 1
}

# ---------- --max-age: old segments go, the slice being written stays ----------
"$MK" "$tmp/st" 20000 flows 1 || fail "mkstore"
old=$(cd "$tmp/st" && ls seg-*.bitarc)
[ "$(echo "$old" | wc -l)" -ge 2 ] || fail "mkstore wrote $(echo "$old" | wc -l) segments"
start_collect "$tmp/st" --max-age 30d --duration 30s
for s in $old; do
  wait_log "expired $s (.*--max-age limit)" || fail "$s (2024) not expired by --max-age 30d"
done
[ -z "$(cd "$tmp/st" && ls seg-*.bitarc 2>/dev/null)" ] || fail "old segments left: $(ls "$tmp/st")"
if [ -x "$GEN" ]; then
  # flows of 2024 too: as old as the expired ones, but in the open slice
  "$GEN" --flows 3000 --hours 1 --store "$tmp/ref" --nf-port "$cport" --pps 5000 --seed 3 > /dev/null || fail "gen"
  sleep 0.5
  ls "$tmp/st" | grep -q '\.open$' || fail "no open slice while collecting: $(ls "$tmp/st")"
  n=$(grep -c "expired" "$tmp/col.err")
  sleep 3   # three more passes over the store with the open slice in it
  [ "$(grep -c "expired" "$tmp/col.err")" -eq "$n" ] || fail "a pass expired something of the open slice"
  kill -INT $cpid; wait $cpid; rc=$?; cpid=""
  [ $rc -eq 0 ] || fail "collect exit $rc"
  a=$("$B" query -r "$tmp/st" --count any); b=$("$B" query -r "$tmp/ref" --count any)
  [ "$a" = "$b" ] && [ "$a" -eq 3000 ] || fail "after retention the store holds $a flows, $b were sent"
else
  echo "SKIP open-slice part: bench_query_gen not built"
  kill -INT $cpid; wait $cpid; cpid=""
fi

# ---------- --max-size: the oldest go until the store fits ----------
"$MK" "$tmp/s2" 40000 flows 2 || fail "mkstore s2"
segs=($(cd "$tmp/s2" && ls seg-*.bitarc | sort))
[ ${#segs[@]} -ge 2 ] || fail "s2 has ${#segs[@]} segments"
newest=${segs[-1]}
limit=$(( $(stat -c %s "$tmp/s2/$newest") + 4096 ))
start_collect "$tmp/s2" --max-size "$limit" --max-age 3650d --duration 30s
wait_log "retention: " || fail "no retention pass logged with --max-size $limit"
for s in "${segs[@]}"; do
  [ "$s" = "$newest" ] && continue
  wait_log "expired $s (.*--max-size limit)" || fail "$s not expired by --max-size $limit"
done
kill -INT $cpid; wait $cpid; cpid=""
[ -f "$tmp/s2/$newest" ] || fail "the newest segment was deleted although the store fits without the others"
grep -q "expired $newest" "$tmp/col.err" && fail "the newest segment was expired"
# --quiet: deletions are not logged, trouble is
"$MK" "$tmp/s3" 5000 flows 2 || fail "mkstore s3"
"$B" collect --store "$tmp/s3" --listen 127.0.0.1:0 --status-every 0 --max-age 30d --duration 3s -q \
  > /dev/null 2> "$tmp/col.err" || fail "collect -q exit $?"
[ -z "$(cd "$tmp/s3" && ls seg-*.bitarc 2>/dev/null)" ] || fail "-q: not expired"
grep -q "expired" "$tmp/col.err" && fail "-q still logs each deletion"
echo "PASS: collect --max-age/--max-size expire while collecting, never the open slice"
