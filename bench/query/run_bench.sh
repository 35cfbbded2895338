#!/usr/bin/env bash
# Query latency, bitarc beside nfdump -R on the same flows, in one run.
#   bench/query/run_bench.sh BUILD_DIR WORK_DIR [FLOWS] [HOURS]
# The flows are generated once by bench_query_gen: bitarc receives them through
# the store writer API, nfcapd (LZO, -z) receives the same flows as NetFlow v5
# over loopback UDP; the run stops if nfcapd did not get every flow. Each query
# is timed warm (median of 3) as a count over every record: bitarc query
# --count F versus nfdump -R DIR -s proto -n 1 F (which prints the same total
# in its summary); both counts must agree. A second table returns records
# (-o 'fmt:%da', the NET-FLi example projection) for the selective queries.
set -eu
build=$(cd "$1" && pwd)
work=$2
flows=${3:-10000000}
hours=${4:-24}
B="$build/bitarc"
GEN="$build/bench/query/bench_query_gen"
mkdir -p "$work"
st="$work/bitarc-$flows"
nf="$work/nfdump-$flows"
echo "command: $0 $*"
echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GB RAM"
if [ ! -d "$st" ] || [ ! -d "$nf" ]; then
  rm -rf "$st" "$nf"
  mkdir -p "$nf"
  port=$(( 30000 + RANDOM % 20000 ))
  nfcapd -p "$port" -b 127.0.0.1 -w "$nf" -t 86400 -z -B 33554432 > "$work/nfcapd.log" 2>&1 &
  nfpid=$!
  sleep 1
  "$GEN" --flows "$flows" --hours "$hours" --store "$st" --nf-port "$port" --pps 30000
  sleep 2
  kill "$nfpid"
  wait "$nfpid" || true
fi
export TZ=UTC
got=$(nfdump -R "$nf" -s proto -n 1 any | sed -n 's/^Summary: total flows: \([0-9]*\),.*/\1/p')
echo "nfdump holds $got flows, bitarc $("$B" query -r "$st" --count any)"
[ "$got" = "$flows" ] || { echo "nfcapd lost flows (loopback drops): rerun with a lower --pps"; exit 1; }
echo "sizes: bitarc $(du -sm "$st" | cut -f1) MB, nfdump (LZO) $(du -sm "$nf" | cut -f1) MB"

median3() { sort -n | sed -n 2p; }
tm() { local s e; s=$(date +%s.%N); "$@" > "$work/out.txt" 2>/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }

queries=(
  "selective|src ip 10.4.0.7 and dst port 445"
  "selective|src net 10.4.200.0/24 and dst port 137"
  "selective|ip in [10.5.1.1 10.5.1.2 10.5.1.3] and proto udp"
  "medium|src net 10.4.0.0/16 and dst port 137"
  "medium|proto udp and dst port 53"
  "medium|proto tcp and flags S and not flags AFRPU"
  "broad|proto tcp"
  "broad|dst port > 1023"
  "broad|src net 10.4.0.0/16"
)
printf "\n%-9s %-52s %10s %9s %9s %8s\n" class filter matches "bitarc s" "nfdump s" ratio
for q in "${queries[@]}"; do
  cls=${q%%|*}; f=${q#*|}
  bt=(); nt=()
  for i in 1 2 3; do
    bt+=("$(tm "$B" query -r "$st" --count "$f")")
    bc_=$(cat "$work/out.txt")
    nt+=("$(tm nfdump -R "$nf" -s proto -n 1 "$f")")
    nc_=$(sed -n 's/^Summary: total flows: \([0-9]*\),.*/\1/p' "$work/out.txt")
  done
  [ "$bc_" = "$nc_" ] || { echo "COUNT MISMATCH '$f': bitarc $bc_, nfdump $nc_"; exit 1; }
  b=$(printf '%s\n' "${bt[@]}" | median3); n=$(printf '%s\n' "${nt[@]}" | median3)
  printf "%-9s %-52s %10s %9.3f %9.3f %7.1fx\n" "$cls" "$f" "$bc_" "$b" "$n" "$(echo "$n / $b" | bc -l)"
done
printf "\nrecords out (-o 'fmt:%%da'), selective/medium:\n"
printf "%-52s %10s %9s %9s %8s\n" filter records "bitarc s" "nfdump s" ratio
for q in "${queries[@]:0:6}"; do
  f=${q#*|}
  bt=(); nt=()
  for i in 1 2 3; do
    bt+=("$(tm "$B" query -r "$st" -q -o 'fmt:%da' "$f")"); bl=$(($(wc -l < "$work/out.txt") - 1))
    nt+=("$(tm nfdump -R "$nf" -q -o 'fmt:%da' "$f")"); nl=$(grep -vc '^No matching flows' "$work/out.txt" || true)
  done
  [ "$bl" = "$nl" ] || { echo "RECORD MISMATCH '$f': bitarc $bl, nfdump $nl"; exit 1; }
  b=$(printf '%s\n' "${bt[@]}" | median3); n=$(printf '%s\n' "${nt[@]}" | median3)
  printf "%-52s %10s %9.3f %9.3f %7.1fx\n" "$f" "$bl" "$b" "$n" "$(echo "$n / $b" | bc -l)"
done
printf "\nplan of the NET-FLi example query:\n"
"$B" query -r "$st" --explain 'src net 10.4.0.0/16 and dst port 137' | sed -n '1,5p;$p'
