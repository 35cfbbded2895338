#!/usr/bin/env bash
# bitarc query's helper thread (src/cli/query_out_wr.c): rows written by it
# (by default with --threads 2 and output to a file or pipe; BITARC_QUERY_WRITER=1 there) are
# byte-identical to rows written by the query's own thread
# (BITARC_QUERY_WRITER=0), headers, -O, -s/-A tables, summary and errors
# included; a full disk (/dev/full) and a reader
# that goes away (EPIPE with SIGPIPE ignored, or SIGPIPE) end both the same
# way, exit status and messages alike, and nothing hangs.
set -u
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BITARC"
MK="$here/query_mkstore"
# 3 stores of the same 60000 flows: st (one) and st.1 .. st.3 (merged)
"$MK" "$tmp/st" 60000 flows 5 3 >/dev/null || fail "mkstore"

# runs "$@" with and without the helper thread; stdout (the summary's wall
# time masked), stderr and exit status must agree
both() {
  local name=$1
  shift
  for w in 1 0; do
    BITARC_QUERY_WRITER=$w timeout 120 "$@" >"$tmp/out.$w" 2>"$tmp/err.$w"
    echo "exit $?" >>"$tmp/err.$w"
    sed -i 's/wall: [0-9.]*s/wall: Xs/' "$tmp/out.$w"
  done
  grep -q "^exit 124" "$tmp/err.1" && fail "$name: timed out"
  cmp -s "$tmp/out.1" "$tmp/out.0" || fail "$name: stdout differs ($(wc -c <"$tmp/out.1") vs $(wc -c <"$tmp/out.0") bytes)"
  cmp -s "$tmp/err.1" "$tmp/err.0" || fail "$name: stderr/exit differ: $(cat "$tmp/err.1") // $(cat "$tmp/err.0")"
}

modes=(
  "-o csv" "-o line" "-o long" "-o extended -6" "-o pipe" "-o ndjson" "-o csv -q" "-o csv -c 1000"
  "-o long -O bytes" "-o csv -O tstart" "-s srcip/bytes -n 10" "-s record/bytes" "-A srcip,dstport"
  "-o fmt:%ts%sa%da%dp%byt" "-o csv --tz utc" "-o null"
)
filters=("any" "proto udp" "src ip 10.4.*.* and port 53" "ip 203.0.113.7")
for m in "${modes[@]}"; do
  for f in "${filters[@]}"; do
    # shellcheck disable=SC2086
    both "$m '$f'" "$B" query -r "$tmp/st" --threads 2 $m "$f"
  done
  # shellcheck disable=SC2086
  both "$m merged" "$B" query -r "$tmp/st.1" -r "$tmp/st.2" -r "$tmp/st.3" --threads 2 $m any
done
out=$(BITARC_QUERY_WRITER=1 "$B" query -r "$tmp/st" --threads 2 -o csv any | wc -c)
[ "$out" -gt $((4 << 20)) ] || fail "the csv output is $out bytes: too few chunks to test the thread"
# a pipe read to the end: the same bytes as a file
BITARC_QUERY_WRITER=1 "$B" query -r "$tmp/st" --threads 2 -o csv -q any | cat >"$tmp/pipe.csv"
BITARC_QUERY_WRITER=0 "$B" query -r "$tmp/st" --threads 2 -o csv -q any >"$tmp/file.csv"
cmp -s "$tmp/pipe.csv" "$tmp/file.csv" || fail "csv through a pipe differs"

# errors mid-stream
for m in "-o csv" "-o line" "-o long -O bytes" "-s srcip"; do
  # shellcheck disable=SC2086
  both "$m /dev/full" sh -c "exec \"\$0\" query -r \"\$1\" --threads 2 $m any >/dev/full" "$B" "$tmp/st"
  grep -q "write error: No space left on device" "$tmp/err.1" || fail "$m /dev/full: $(cat "$tmp/err.1")"
  grep -q "^exit 2" "$tmp/err.1" || fail "$m /dev/full: $(tail -1 "$tmp/err.1")"
  # the reader reads 100 kB and goes: EPIPE (SIGPIPE ignored), then SIGPIPE
  both "$m EPIPE" bash -c "trap '' PIPE; \"\$0\" query -r \"\$1\" --threads 2 $m any | head -c 100000 >/dev/null;
    exit \${PIPESTATUS[0]}" "$B" "$tmp/st"
  case $m in
  -s*) ;;
  *) grep -q "write error: Broken pipe" "$tmp/err.1" || fail "$m EPIPE: $(cat "$tmp/err.1")" ;;
  esac
  both "$m SIGPIPE" bash -c "\"\$0\" query -r \"\$1\" --threads 2 $m any | head -c 100000 >/dev/null;
    exit \${PIPESTATUS[0]}" "$B" "$tmp/st"
  case $m in
  -s*) ;;
  *) grep -q "^exit 141" "$tmp/err.1" || fail "$m SIGPIPE: $(cat "$tmp/err.1")" ;;
  esac
done
# stdout closed
both "stdout closed" sh -c "exec \"\$0\" query -r \"\$1\" --threads 2 -o csv any >&-" "$B" "$tmp/st"
grep -q "^exit 2" "$tmp/err.1" || fail "stdout closed: $(cat "$tmp/err.1")"
echo "ok"
