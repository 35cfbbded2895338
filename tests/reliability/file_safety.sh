#!/usr/bin/env bash
# Reliability (issue 7): file safety.
#  1. A store made by `bitarc collect` (killed with SIGKILL, so journals are
#     left too) and by `bitarc verify --recover` has mode 0700 and every file
#     in it 0600, even under umask 022.
#  2. `bitarc collect` without --listen binds 127.0.0.1 only (checked in
#     /proc/net/udp{,6} by the socket inodes of the process); skipped with a
#     message if the default port 2055 is taken by someone else.
#  3. Entries planted in the store that point outside it (symlinked journal,
#     temp file and lock) are not followed: recovery and a new writer leave
#     the outside files exactly as they were and create nothing outside.
set -euo pipefail
: "${BITARC:?BITARC must point to the bitarc binary}"
FLOWGEN="${FLOWGEN:-$(dirname "$BITARC")/tests/reliability/flowgen}"
[ -x "$FLOWGEN" ] || { echo "flowgen not built at $FLOWGEN"; exit 1; }
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
umask 022
fail() { echo "FAIL: $*"; exit 1; }

wait_port() { # $1 = stderr file; prints the port collect listens on
  local p=
  for _ in $(seq 100); do
    p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" 2>/dev/null | head -1 || true)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  return 1
}

# --- 1. permissions ---------------------------------------------------------
st="$tmp/store"
"$BITARC" collect --store "$st" --listen 127.0.0.1:0 --slice 1 --time-bin 1 --block-rows 200 \
  --sync-every 1s --report-every 0 >/dev/null 2>"$tmp/err" &
cpid=$!
port=$(wait_port "$tmp/err") || { cat "$tmp/err"; fail "collect did not start"; }
"$FLOWGEN" --port "$port" --rate 3000 --seconds 3 >/dev/null
sleep 0.3
kill -9 "$cpid"; wait "$cpid" 2>/dev/null || true; cpid=
check_modes() {
  local m
  m=$(stat -c %a "$st")
  [ "$m" = 700 ] || fail "store directory has mode $m, want 700"
  local n=0
  while IFS= read -r -d '' f; do
    m=$(stat -c %a "$f")
    [ "$m" = 600 ] || fail "$(basename "$f") has mode $m, want 600 ($1)"
    n=$((n + 1))
  done < <(find "$st" -mindepth 1 -print0)
  [ "$n" -gt 1 ] || fail "store holds only $n files ($1)"
  echo "modes ok ($1): store 700, $n files 600: $(ls "$st" | sed 's/seg-[0-9T]*Z/seg-*/' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
ls "$st" | grep '\.bitarc$' >/dev/null || fail "no complete segment after 3 s of 1 s slices"
check_modes "after kill -9 of collect"
"$BITARC" verify --store "$st" --recover >"$tmp/v" 2>&1 || { cat "$tmp/v"; fail "verify --recover"; }
grep -q '^recovered [0-9]* records' "$tmp/v" || { cat "$tmp/v"; fail "verify --recover did not say what it recovered"; }
check_modes "after verify --recover"

# --- 2. default listen address ------------------------------------------------
d="$tmp/dflt"
"$BITARC" collect --store "$d" --report-every 0 >/dev/null 2>"$tmp/err2" &
cpid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/err2" 2>/dev/null | head -1 || true)
  [ -n "$port" ] && break
  kill -0 "$cpid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  kill -9 "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true; cpid=
  if grep -qi 'in use' "$tmp/err2"; then
    echo "skipped default-address check: port 2055 is taken here ($(head -1 "$tmp/err2"))"
  else
    cat "$tmp/err2"; fail "collect without --listen did not start"
  fi
else
  [ "$port" = 127.0.0.1:2055 ] || fail "collect without --listen says it listens on $port"
  inodes=$(for f in /proc/$cpid/fd/*; do readlink "$f"; done 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
  [ -n "$inodes" ] || fail "no sockets found for collect"
  found=0
  for i in $inodes; do
    # fields: sl local_address rem_address st ... inode (10th)
    while read -r _ local _ _ _ _ _ _ _ inode _; do
      [ "$inode" = "$i" ] || continue
      found=$((found + 1))
      [ "$local" = 0100007F:0807 ] || fail "collect's UDP socket is bound to $local (want 127.0.0.1:2055 = 0100007F:0807)"
    done < <(tail -n +2 /proc/net/udp; tail -n +2 /proc/net/udp6)
  done
  [ "$found" -ge 1 ] || fail "collect's UDP socket not found in /proc/net/udp"
  echo "default address ok: $found UDP socket(s), all 127.0.0.1:2055"
  kill -INT "$cpid"; wait "$cpid" || fail "collect did not exit cleanly on SIGINT"; cpid=
fi

# --- 3. nothing outside the store is followed ----------------------------------
out="$tmp/outside"
mkdir "$out"
head -c 5000 /dev/urandom >"$out/victim-journal"
head -c 300 /dev/urandom >"$out/victim-tmp"
printf 'keep me\n' >"$out/victim-lock-target-exists"
before=$(cd "$out" && sha256sum * | sort)
ln -s "$out/victim-journal" "$st/seg-20300101T000000Z.bitarc.open"
ln -s "$out/victim-tmp" "$st/seg-20300101T000000Z.bitarc.tmp"
ln -s "$out/../outside/victim-journal" "$st/seg-20300101T010000Z.bitarc.open"
"$BITARC" verify --store "$st" --recover >"$tmp/v2" 2>&1 || true
after=$(cd "$out" && sha256sum * | sort)
[ "$before" = "$after" ] || { echo "$before"; echo "$after"; fail "recovery changed or created files outside the store"; }
"$BITARC" verify --store "$st" >"$tmp/v3" 2>&1 || { cat "$tmp/v3"; fail "store does not verify after planted links"; }
echo "planted links outside the store: outside files unchanged ($(wc -l <<<"$after") files)"
echo "ok"
