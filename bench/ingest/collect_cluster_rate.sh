#!/bin/bash
# One `bitarc collect` run at a fixed rate (bench/RESULTS.md, "Clustering
# beside collect"): bench_query_gen sends FLOWS NetFlow v5 flows at PPS
# datagrams/s (30 flows each) to a collector writing segments of SEGROWS
# rows; prints the collector's own CPU (utime+stime before SIGINT) and that
# of its waited children (the --cluster child), the load average, the final
# report and the clustering lines.
#   collect_cluster_rate.sh BUILD OUT NAME FLOWS PPS SEGROWS [collect options, e.g. --cluster]
# Environment: PRESTORE=DIR copies a store in first (cp -a); DURING='cmd'
# runs cmd DURING_AFTER (5) seconds after sending starts (its output is
# printed at the end), e.g. a `reindex --cluster --idle` beside the collector.
set -u
build=$1 out=$2 name=$3 flows=$4 pps=$5 segrows=$6
shift 6
R=$build/bitarc
GEN=$build/bench/query/bench_query_gen
d=$out/$name
rm -rf "$d"
mkdir -p "$d"
[ -n "${PRESTORE:-}" ] && cp -a "$PRESTORE" "$d/st" && rm -f "$d/st"/collector.*
"$R" collect --store "$d/st" --listen 127.0.0.1:0 --status-every 10s --segment-rows "$segrows" "$@" \
  > "$d/out" 2> "$d/err" &
cpid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/err" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "collect did not start: $(cat "$d/err")"; exit 1; }
l0=$(cut -d' ' -f1 /proc/loadavg)
t0=$(date +%s.%N)
if [ -n "${DURING:-}" ]; then
  (sleep "${DURING_AFTER:-5}"; eval "$DURING") > "$d/during" 2>&1 &
fi
"$GEN" --flows "$flows" --hours 1 --nf-port "$port" --pps "$pps" --seed 7 > "$d/gen" 2>&1
sleep "${SETTLE:-2}"
read -r ut st cut cst < <(awk '{print $14, $15, $16, $17}' "/proc/$cpid/stat")
t1=$(date +%s.%N)
l1=$(cut -d' ' -f1 /proc/loadavg)
kill -INT "$cpid"
wait
tck=$(getconf CLK_TCK)
echo "$name: wall $(echo "$t1 - $t0" | bc) s, collector CPU $(echo "scale=1; ($ut + $st) / $tck" | bc) s," \
  "children $(echo "scale=1; ($cut + $cst) / $tck" | bc) s, load $l0 -> $l1"
grep -E "final|clustering:" "$d/err"
grep "cluster: " "$d/err"
[ -n "${DURING:-}" ] && cat "$d/during"
exit 0
