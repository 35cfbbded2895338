#!/usr/bin/env bash
# Issue 7 (files): names inside a store never lead outside it. A segment that
# is a symlink to a valid segment elsewhere is not read (the query warns and
# answers from the real segments); a symlinked .lock or journal is never
# followed, so no file outside the store is created or rewritten.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B" ingest --store "$tmp/st" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
"$B" ingest --store "$tmp/other" "$SRC/data/cesnet-mixed-softflowd-v9.pcap" --as packets >/dev/null 2>&1 || fail "ingest other"
want=$("$B" query -r "$tmp/st" -q --count any)
outside=$(ls "$tmp/other"/*.bitarc | head -1)
ln -s "$outside" "$tmp/st/seg-20300101T000000Z.bitarc"
set +e
got=$("$B" query -r "$tmp/st" -q --count any 2>"$tmp/err"); rc=$?
set -e
[ "$got" = "$want" ] || fail "a symlinked segment was read: count $got, want $want"
[ $rc -eq 1 ] && grep -q "skipped" "$tmp/err" || fail "symlinked segment: exit $rc, no warning: $(cat "$tmp/err")"
rm "$tmp/st/seg-20300101T000000Z.bitarc"

# A symlinked .lock pointing outside: the writer refuses, nothing is created there.
rm -f "$tmp/st/.lock"
ln -s "$tmp/created-outside" "$tmp/st/.lock"
set +e
"$B" ingest --store "$tmp/st" "$SRC/data/cesnet-mixed.pcap" >"$tmp/out" 2>&1; rc=$?
set -e
[ ! -e "$tmp/created-outside" ] || fail "the writer followed a symlinked .lock out of the store"
[ $rc -ne 0 ] || fail "ingest with a symlinked .lock succeeded"

# A journal that is a symlink to an outside file: recovery leaves the target alone.
rm -f "$tmp/st/.lock"
printf 'not a journal, must stay as it is' > "$tmp/victim"
cp "$tmp/victim" "$tmp/victim.orig"
ln -s "$tmp/victim" "$tmp/st/seg-20300101T000000Z.bitarc.open"
"$B" verify --store "$tmp/st" --recover >"$tmp/vout" 2>&1 || true
cmp -s "$tmp/victim" "$tmp/victim.orig" || fail "recovery rewrote a file outside the store"
[ ! -e "$tmp/st/seg-20300101T000000Z.bitarc" ] || [ ! -L "$tmp/st/seg-20300101T000000Z.bitarc" ] \
  || fail "recovery left a segment symlink pointing outside"
echo "store symlinks: segment, .lock and journal symlinks are not followed"
