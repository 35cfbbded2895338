#!/usr/bin/env bash
# Import rate of nfdump files: bitarc import (decode only, and into a store)
# beside nfdump reading the same files (`nfdump -r FILE -q -o csv > /dev/null`
# and `-o null`). The file is written by Debian's nfcapd from synthetic
# NetFlow v9 (bench_gen_v9: Zipf hosts and ports, 30 flows per datagram)
# replayed on loopback, then its blocks are recompressed with each codec by
# nffile_gen (nfcapd 1.7.1 has no ZSTD, nfdump cannot read that one).
#   bench/import/run.sh BUILD_DIR [FLOWS]     (BUILD_DIR: a Release build with tests and benches)
# Prints a markdown table; CPU seconds are user+sys of the one process.
set -euo pipefail
BUILD=${1:?usage: run.sh BUILD_DIR [FLOWS]}
FLOWS=${2:-2000000}
BITARC="$BUILD/bitarc"
GEN="$BUILD/nffile_gen"
TMP=$(mktemp -d)
trap 'kill $np 2>/dev/null || true; rm -rf "$TMP"' EXIT
np=0
port=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$BUILD/bench/ingest/bench_gen_v9" "$FLOWS" "$TMP/dg" >/dev/null
mkdir -p "$TMP/nf"
nfcapd -w "$TMP/nf" -p "$port" -b 127.0.0.1 -t 3600 -B $((64 << 20)) > "$TMP/nfcapd.log" 2>&1 &
np=$!
sleep 1
"$BUILD/bench/ingest/bench_replay" "$TMP/dg" 4000 "$port" >/dev/null
sleep 2
kill -TERM $np; wait $np || true
np=0
src=$(ls "$TMP"/nf/nfcapd.* | head -1)
cp "$src" "$TMP/none"
for c in lzo lz4 bz2 zstd; do "$GEN" recompress "$TMP/none" "$TMP/$c" $c; done
nflows=$(nfdump -r "$TMP/none" -q -o csv 2>/dev/null | grep -c ,)

cpu() { # prints "cpu_s wall_s" of a command (stdout discarded)
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$@" > /dev/null 2> "$TMP/err" || { cat "$TMP/err" >&2; return 1; }
  t1=$(date +%s.%N)
  awk -v w="$(echo "$t1 - $t0" | bc)" '{printf "%.3f %.3f\n", $1 + $2, w}' "$TMP/time"
}
best() { # best of 3 runs by CPU time
  local b="" r
  for _ in 1 2 3; do
    r=$(cpu "$@")
    if [ -z "$b" ] || awk -v a="${r%% *}" -v c="${b%% *}" 'BEGIN{exit !(a < c)}'; then b=$r; fi
  done
  echo "$b"
}
echo "nfcapd file: $nflows flows, $(stat -c %s "$TMP/none") bytes uncompressed"
echo
echo "| codec | file MB | bitarc import -n: flows/CPU-s | bitarc import --store: flows/CPU-s | nfdump -o csv: flows/CPU-s | nfdump -o null: flows/CPU-s | import -n / nfdump csv | import --store / nfdump csv |"
echo "|---|---|---|---|---|---|---|---|"
for c in none lzo lz4 bz2 zstd; do
  f="$TMP/$c"
  mb=$(awk -v s="$(stat -c %s "$f")" 'BEGIN{printf "%.1f", s / 1048576}')
  dec=$(best "$BITARC" import -n -q "$f")
  rm -rf "$TMP/st"
  sto=$(cpu "$BITARC" import -q --store "$TMP/st" "$f")
  if [ $c = zstd ]; then csv="n/a"; nul="n/a"; else
    csv=$(best nfdump -r "$f" -q -o csv)
    nul=$(best nfdump -r "$f" -q -o null)
  fi
  rate() { [ "$1" = n/a ] && echo n/a || awk -v n="$nflows" -v t="${1%% *}" 'BEGIN{printf "%.0f", n / (t > 0 ? t : 1e-3)}'; }
  rd=$(rate "$dec"); rs=$(rate "$sto"); rc=$(rate "$csv"); rn=$(rate "$nul")
  ratio() { [ "$2" = n/a ] && echo n/a || awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a / b}'; }
  echo "| $c | $mb | $rd | $rs | $rc | $rn | $(ratio "$rd" "$rc") | $(ratio "$rs" "$rc") |"
done
