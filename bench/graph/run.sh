#!/usr/bin/env bash
# bitarc graph beside nfdump computing the same series, in one run.
#   bench/graph/run.sh BUILD_DIR WORK_DIR [FLOWS]
# bench_graph_gen writes FLOWS flows over 24 h once, into a bitarc store and
# into the 288 five-minute nfcapd files nfsen keeps for a day. Per filter:
# `bitarc graph` of the day in 5-minute intervals (flows only, then flows,
# packets and bytes; median of 3, warm cache) and nfdump's series: each
# 5-minute file read by `nfdump -r FILE -N -o null FILTER` (its summary gives
# flows, bytes and packets: what nfsen's per-file pass computes), timed over
# the 288 files. The two series must agree interval by interval. A second
# peer figure is one `nfdump -R DIR -N -o null FILTER` over every file: a
# single process reading each flow once for the day's total only, a lower
# bound on any nfdump run that computes the series. `graph f,p,b 2t` is the
# same series with --threads 2 (the default picks 1 on a loaded machine).
# PEER=0 skips nfdump (a second run on the same data, e.g. of an older build,
# whose peer figures come from the first run); the series are then only
# checked flows-only against flows+packets+bytes.
set -eu
peer=${PEER:-1}
build=$(cd "$1" && pwd)
work=$2
flows=${3:-10000000}
B="$build/bitarc"
GEN="$build/bench/graph/bench_graph_gen"
mkdir -p "$work"
st="$work/bitarc-$flows"
nf="$work/nfdump-$flows"
export TZ=UTC
echo "command: $0 $*"
echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GB RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -d "$st" ] || [ ! -d "$nf" ]; then
  rm -rf "$st" "$nf"
  "$GEN" --flows "$flows" --store "$st" --nfdump "$nf"
fi
echo "sizes: bitarc $(du -smL "$st" | cut -f1) MB, nfdump (LZO) $(du -smL "$nf" | cut -f1) MB in $(ls "$nf" | wc -l) files"
cat "$st"/* "$nf"/* > /dev/null   # warm cache for both (every figure below is warm)
W=2024/07/11.00:00-2024/07/12.00:00
tm() { local s e; s=$(date +%s.%N); "$@" > "$work/out.txt"; e=$(date +%s.%N); echo "$e - $s" | bc; }
cpu() { # CPU seconds (user + sys) of bitarc graph; the machine is shared, wall clock moves with it
  /usr/bin/time -f "%U %S" -o "$work/cpu.txt" "$B" graph -r "$st" --tz utc -t "$W" --bin 5m "$@" > /dev/null
  awk '{print $1 + $2}' "$work/cpu.txt"; }
median3() { sort -n | sed -n 2p; }
graph() { "$B" graph -r "$st" --tz utc -t "$W" --bin 5m "$@"; }
nfseries() { # one line per file: flows,packets,bytes
  for f in "$nf"/nfcapd.*; do
    nfdump -r "$f" -N -o null "$1" |
      sed -n 's/^Summary: total flows: \([0-9]*\), total bytes: \([0-9]*\), total packets: \([0-9]*\),.*/\1,\3,\2/p'
  done
}
cpus=()
filters=("any" "proto tcp" "dst port 443" "src net 10.4.0.0/16 and dst port 53")
printf "\n%-38s %5s %10s %10s %11s %11s %9s %9s %8s %9s %8s\n" filter bins flows "graph f" "graph f,p,b" "f,p,b 2t" "nfdump" "nfdump -R" "ratio f" "ratio fpb" "-R / f"
for f in "${filters[@]}"; do
  t1=(); t3=(); t2=()
  for i in 1 2 3; do
    t1+=("$(tm graph --measure flows "$f")")
    cp "$work/out.txt" "$work/g1.csv"
    t3+=("$(tm graph "$f")")
    cp "$work/out.txt" "$work/g3.csv"
    t2+=("$(tm graph --threads 2 "$f")")
    cmp -s "$work/out.txt" "$work/g3.csv" || { echo "--threads 2 differs"; exit 1; }
  done
  tail -n +2 "$work/g3.csv" | cut -d, -f3- > "$work/b.csv"
  if [ "$peer" = 1 ]; then
    tn=$(tm nfseries "$f")
    cp "$work/out.txt" "$work/nf.csv"
    tr=$(tm nfdump -R "$nf" -N -o null "$f")
  else
    tn=0; tr=0; cp "$work/b.csv" "$work/nf.csv"
  fi
  if ! cmp -s "$work/b.csv" "$work/nf.csv"; then
    echo "SERIES MISMATCH '$f': bitarc $(wc -l < "$work/b.csv") bins, nfdump $(wc -l < "$work/nf.csv")"
    diff "$work/b.csv" "$work/nf.csv" | head -4
    exit 1
  fi
  cmp -s <(cut -d, -f1 "$work/b.csv") <(tail -n +2 "$work/g1.csv" | cut -d, -f3) || { echo "flows-only differs"; exit 1; }
  a=$(printf '%s\n' "${t1[@]}" | median3); b=$(printf '%s\n' "${t3[@]}" | median3)
  b2=$(printf '%s\n' "${t2[@]}" | median3)
  c1=$(cpu --measure flows "$f"); c3=$(cpu "$f"); c2=$(cpu --threads 2 "$f")
  cpus+=("$f: graph flows $c1 CPU s, flows+packets+bytes $c3 CPU s, with --threads 2 $c2 CPU s")
  tot=$(awk -F, '{s += $1} END {print s}' "$work/b.csv")
  printf "%-38s %5s %10s %10.3f %11.3f %11.3f %9.3f %9.3f %7.1fx %8.1fx %7.1fx\n" "$f" "$(wc -l < "$work/b.csv")" \
    "$tot" "$a" "$b" "$b2" "$tn" "$tr" "$(echo "$tn / $a" | bc -l)" "$(echo "$tn / $b" | bc -l)" \
    "$(echo "$tr / $a" | bc -l)"
done
echo "(seconds, wall clock; ratio = nfdump per-file series / bitarc graph; -R / f = nfdump's one pass / bitarc"
echo " graph flows; the series agree interval by interval)"
printf '%s\n' "${cpus[@]}"
