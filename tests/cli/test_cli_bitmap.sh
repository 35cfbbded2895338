#!/usr/bin/env bash
# bitarc bitmap: paper-figure vectors, random round trips, ops against a naive
# bitwise reference, and every error path (exit 2, named input, no crash).
set -u  # no pipefail: `printf | grep -q` may SIGPIPE printf when grep exits early
B=${BITARC:?BITARC must point to the built bitarc}
fails=0
pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# Words printed by encode, joined by spaces.
enc() { "$B" bitmap encode --codec "$1" | tr '\n' ' ' | sed 's/ $//'; }

expect_words() { # codec bits expected-words label
  local got
  got=$(printf '%s' "$2" | enc "$1")
  if [ "$got" = "$4" ]; then ok; else bad "$3 ($1): got '$got', want '$4'"; fi
  # And back: the words decode to the same bits.
  local n=${#2} back
  back=$(printf '%s\n' $4 | "$B" bitmap decode --codec "$1" --rows "$n")
  if [ "$back" = "$2" ]; then ok; else bad "$3 ($1): decode of '$4' gave '$back'"; fi
}

rep() { local s=""; local i; for ((i = 0; i < $2; i++)); do s+=$1; done; printf '%s' "$s"; }

# --- MASC paper Fig. 5 bitmap (doc/codecs.md V-M5): 7 groups of 31 rows, MSB first.
FIG5=""
for g in 00000000 0003FFFF 7FFFF000 00000000 00000000 0003C000 00000000; do
  v=$((16#$g))
  for ((b = 30; b >= 0; b--)); do FIG5+=$(((v >> b) & 1)); done
done
[ ${#FIG5} -eq 217 ] || bad "Fig. 5 bitmap has ${#FIG5} bits"
expect_words masc    "$FIG5" "MASC Fig. 11"    "0000002D 80000026 48000059 0000002E"
expect_words masc-qt "$FIG5" "MASC Fig. 15"    "0000002D C0000026 48000059 0000002E"
expect_words plwah   "$FIG5" "MASC Fig. 12"    "80000001 0003FFFF 7FFFF000 80000002 0003C000 80000001"
expect_words compax  "$FIG5" "MASC Fig. 13"    "00000001 8003FFFF FFFFF000 00000002 8003C000 00000001"
expect_words wah32   "$FIG5" "WAH32 canonical" "80000001 0003FFFF 7FFFF000 80000002 0003C000 80000001"
# The same bits written as 31-character groups, as in `bitarc bitmap --help`.
help_fig5=$("$B" bitmap --help | sed -n '/Fig. 5/,/encode --codec masc/p' | grep -oE '[01]{31}' | tr -d '\n')
[ "$help_fig5" = "$FIG5" ] && ok || bad "the Fig. 5 example in --help is not the figure's bitmap: $help_fig5"

# scripts/demo.sh shows the same bitmap; its bit strings must be the figure's.
if [ -n "${BA_SOURCE_DIR:-}" ] && [ -f "$BA_SOURCE_DIR/scripts/demo.sh" ]; then
  demo_fig5=$(sed -n '/Fig. 5/,/encode --codec masc/p' "$BA_SOURCE_DIR/scripts/demo.sh" | grep -oE '[01]{31}' | tr -d '\n')
  [ "$demo_fig5" = "$FIG5" ] && ok || bad "scripts/demo.sh's Fig. 5 bits differ from the figure: $demo_fig5"
fi

# --- MASC Figs. 2-4 (single words) and the ASCR WAH example (V-M2/3/4, V-W1).
expect_words masc    "$(rep 0 191)" "MASC Fig. 2" "000000C5"
expect_words masc    "$(rep 1 191)" "MASC Fig. 3" "800000C5"
expect_words masc-qt "$(rep 1 191)" "MASC Fig. 14" "C00000C5"
expect_words masc    "$(rep 0 449)$(rep 1 18)" "MASC Fig. 4" "640001CF"
ASCR="1001000111010000010110000010011$(rep 0 62)$(rep 1 93)000100100001111111111110"
expect_words wah32   "$ASCR" "ASCR Fig. A" "48E82C13 80000002 C0000003 090FFF00"

# --- Output format: 8 hex digits per line for 32-bit codecs, 16 for wah64, upper case.
for c in wah32 plwah compax masc masc-qt; do
  out=$(printf '%s' "$FIG5" | "$B" bitmap encode --codec $c)
  if printf '%s\n' "$out" | grep -qvE '^[0-9A-F]{8}$'; then bad "$c output format: $out"; else ok; fi
done
out=$(printf '%s' "$FIG5" | "$B" bitmap encode --codec wah64)
if printf '%s\n' "$out" | grep -qvE '^[0-9A-F]{16}$'; then bad "wah64 output format: $out"; else ok; fi
# Whitespace anywhere is ignored.
spaced=$(printf '%s' "$FIG5" | sed 's/./& /g; s/\(.\{40\}\)/\1\n\t/g')
[ "$(printf '%s' "$spaced" | enc masc)" = "0000002D 80000026 48000059 0000002E" ] && ok \
  || bad "whitespace in the input changed the encoding"
# An empty input is a bitmap of 0 rows: no words, and it decodes back to an empty line.
for c in wah32 wah64 plwah compax masc masc-qt; do
  [ -z "$(printf '' | "$B" bitmap encode --codec $c)" ] && ok || bad "$c: empty input printed words"
  [ "$(printf '' | "$B" bitmap decode --codec $c --rows 0)" = "" ] && ok || bad "$c: empty decode"
done

# --- Random bit strings (uniform, sparse, runs) round-trip in every codec, and
# ops agree with awk's bitwise reference.
gen() { # seed length kind
  awk -v seed="$1" -v n="$2" -v kind="$3" 'BEGIN {
    srand(seed); s = ""; v = 0
    for (i = 0; i < n; i++) {
      if (kind == 0) b = (rand() < 0.5)
      else if (kind == 1) b = (rand() < 0.02)
      else if (kind == 2) { if (rand() < 0.03) v = 1 - v; b = v }
      else { if (rand() < 0.004) v = 1 - v; b = (rand() < 0.97) ? v : 1 - v }
      s = s b
    }
    printf "%s", s }'
}
bitop() { # op a b: naive bitwise result, zero-padding the shorter operand
  awk -v op="$1" -v a="$2" -v b="$3" 'BEGIN {
    n = length(a); if (length(b) > n) n = length(b); s = ""
    for (i = 1; i <= n; i++) {
      x = (i <= length(a)) ? substr(a, i, 1) + 0 : 0
      y = (i <= length(b)) ? substr(b, i, 1) + 0 : 0
      if (op == "AND") r = x && y; else if (op == "OR") r = x || y
      else if (op == "XOR") r = (x != y); else if (op == "ANDNOT") r = x && !y
      else r = !x
      s = s r
    }
    printf "%s", s }'
}
CODECS="wah32 wah64 plwah compax masc masc-qt"
seed=1
for len in 1 30 31 32 62 63 64 93 127 500 1000 2017; do
  for kind in 0 1 2 3; do
    seed=$((seed + 1))
    bits=$(gen $seed $len $kind)
    for c in $CODECS; do
      words=$(printf '%s' "$bits" | "$B" bitmap encode --codec $c)
      rc=$?
      [ $rc -eq 0 ] || { bad "$c encode exit $rc (len $len kind $kind)"; continue; }
      back=$(printf '%s\n' "$words" | "$B" bitmap decode --codec $c --rows $len)
      [ "$back" = "$bits" ] && ok || bad "$c round trip len $len kind $kind: $bits -> $words -> $back"
      # Canonical: re-encoding the decoded bits gives the same words.
      [ "$(printf '%s' "$back" | "$B" bitmap encode --codec $c)" = "$words" ] && ok \
        || bad "$c re-encode differs (len $len kind $kind)"
    done
  done
done
# Ops on random pairs (different lengths too), mixed input/output codecs.
CARR=($CODECS)
i=0
for pair in "100 100" "217 217" "64 31" "1000 1500" "2048 2048"; do
  la=${pair% *}; lb=${pair#* }
  for kind in 0 1 2 3; do
    seed=$((seed + 1)); a=$(gen $seed $la $kind)
    seed=$((seed + 1)); b=$(gen $seed $lb $(((kind + 1) % 4)))
    for op in AND OR XOR ANDNOT NOT; do
      c=${CARR[$((i % 6))]}; oc=${CARR[$(((i * 5 + 3) % 6))]}
      i=$((i + 1))
      if [ $op = NOT ]; then in=$a; want=$(bitop NOT "$a" ""); else
        in="$a"$'\n'"$b"; want=$(bitop $op "$a" "$b"); fi
      out=$(printf '%s\n' "$in" | "$B" bitmap op $op --codec $c --out-codec $oc)
      got=$(printf '%s\n' "$out" | sed -n 's/^# //p')
      [ "$got" = "$want" ] && ok || bad "op $op $c->$oc (pair $pair kind $kind): got $got want $want"
      # The printed words are the canonical encoding of the result.
      wwant=$(printf '%s' "$want" | "$B" bitmap encode --codec $oc)
      [ "$(printf '%s\n' "$out" | grep -v '^#')" = "$wwant" ] && ok || bad "op $op words ($oc)"
    done
  done
done

# --- Error paths: exit status 2, a message naming the problem, never a crash.
expect_err() { # label regex command...  (stdin from $ERR_IN)
  local label=$1 re=$2; shift 2
  local err rc
  err=$(printf '%s' "$ERR_IN" | "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ]; then bad "$label: exit $rc, want 2 ($err)"; return; fi
  if ! printf '%s' "$err" | grep -qE "^bitarc bitmap: "; then bad "$label: no 'bitarc bitmap:' prefix: $err"; return; fi
  if ! printf '%s' "$err" | grep -qE -- "$re"; then bad "$label: message '$err' lacks /$re/"; return; fi
  ok
}
ERR_IN=0101
expect_err "unknown codec" "unknown codec 'ewah'" "$B" bitmap encode --codec ewah
expect_err "missing codec" "--codec" "$B" bitmap encode
expect_err "unknown action" "unknown action 'squash'" "$B" bitmap squash --codec wah32
expect_err "no action" "missing action" "$B" bitmap --codec wah32
expect_err "unknown option" "unknown option '--frobnicate'" "$B" bitmap encode --codec wah32 --frobnicate
expect_err "stray argument" "unexpected argument 'file.txt'" "$B" bitmap encode --codec wah32 file.txt
ERR_IN="0101 0110"$'\n'"01x1"
expect_err "bad character" "'x' at line 2, column 3 \(byte 13" "$B" bitmap encode --codec masc
err=$(printf '01\x0011' | "$B" bitmap encode --codec wah32 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && printf '%s' "$err" | grep -q "byte 0x00 at line 1, column 3" && ok \
  || bad "NUL byte: exit $rc, '$err'"
ERR_IN=0000002D
expect_err "decode without rows" "--rows" "$B" bitmap decode --codec masc
expect_err "bad rows" "--rows '12a'" "$B" bitmap decode --codec masc --rows 12a
expect_err "negative rows" "--rows '-5'" "$B" bitmap decode --codec masc --rows -5
expect_err "rows on encode" "--rows applies to decode" "$B" bitmap encode --codec masc --rows 5
ERR_IN="0000002D 1234567890"
expect_err "word too long" "word 2 '1234567890' is too long for masc: at most 8" "$B" bitmap decode --codec masc --rows 45
ERR_IN="0000000000000000012"
expect_err "wah64 word too long" "too long for wah64: at most 16" "$B" bitmap decode --codec wah64 --rows 63
ERR_IN="0000002D 8000G026"
expect_err "not hex" "word 2 '8000G026' is not hex: 'G' at its character 5" "$B" bitmap decode --codec masc --rows 83
ERR_IN="0x"
expect_err "no digits" "no hex digits" "$B" bitmap decode --codec wah32 --rows 31
ERR_IN="0000002D 80000026 48000059 0000002E"
expect_err "wrong row count" "not a valid masc bitmap of 216 rows" "$B" bitmap decode --codec masc --rows 216
expect_err "too many rows" "not a valid masc bitmap of 218 rows" "$B" bitmap decode --codec masc --rows 218
ERR_IN="0000002D 80000026 48000059"
expect_err "truncated masc" "not a valid masc bitmap of 217 rows" "$B" bitmap decode --codec masc --rows 217
ERR_IN="80000001 0003FFFF 7FFFF000 80000002 0003C000"
expect_err "truncated wah32" "not a valid wah32 bitmap of 217 rows" "$B" bitmap decode --codec wah32 --rows 217
ERR_IN="80000000"
expect_err "wah32 zero fill" "not a valid wah32 bitmap" "$B" bitmap decode --codec wah32 --rows 31
ERR_IN="0000001F"
expect_err "masc additional 31" "not a valid masc bitmap" "$B" bitmap decode --codec masc --rows 31
ERR_IN="60000000"
expect_err "compax reserved 011" "not a valid compax bitmap" "$B" bitmap decode --codec compax --rows 31
ERR_IN="80000000"
expect_err "compax zero literal" "not a valid compax bitmap" "$B" bitmap decode --codec compax --rows 31
ERR_IN="40000001"
expect_err "padding row set" "not a valid plwah bitmap of 30 rows" "$B" bitmap decode --codec plwah --rows 30
ERR_IN="0101"
expect_err "op one operand" "two bit strings" "$B" bitmap op AND --codec wah32
expect_err "op unknown" "unknown operation 'NAND'" "$B" bitmap op NAND --codec wah32
expect_err "op missing" "op needs an operation" "$B" bitmap op --codec wah32
expect_err "out-codec bad" "unknown codec 'zip'" "$B" bitmap op OR --codec wah32 --out-codec zip

# Random garbage words never crash the decoder: exit 0 (valid) or 2 (rejected).
for c in $CODECS; do
  nd=8; [ $c = wah64 ] && nd=16
  for s in 1 2 3 4 5 6 7 8 9 10; do
    words=$(awk -v seed=$s -v nd=$nd 'BEGIN { srand(seed * 7919)
      for (w = 0; w < 1 + int(rand() * 6); w++) { x = ""
        for (d = 0; d < nd; d++) x = x substr("0123456789ABCDEF", 1 + int(rand() * 16), 1)
        print x } }')
    rows=$(( (s * 97) % 400 ))
    printf '%s\n' "$words" | "$B" bitmap decode --codec $c --rows $rows >/dev/null 2>&1
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 2 ] && ok || bad "$c decode of random words exit $rc: $words"
  done
done

# --help teaches: usage, every codec, the Fig. 5 example; exit 0.
help=$("$B" bitmap --help); rc=$?
[ $rc -eq 0 ] && ok || bad "--help exit $rc"
for w in encode decode wah32 wah64 plwah compax masc masc-qt 0000002D "--rows"; do
  printf '%s' "$help" | grep -q -- "$w" && ok || bad "--help does not mention $w"
done

echo "test_cli_bitmap: $pass checks passed, $fails failed"
[ $fails -eq 0 ]
