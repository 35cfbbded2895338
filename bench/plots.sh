#!/usr/bin/env bash
# Draws every plot of bench/RESULTS.md from the data files in bench/data/
# (one file per figure; each names the command that produced its numbers).
# Usage: bench/plots.sh            -> writes bench/plots/*.svg
# Needs gnuplot (gnuplot-nox, installed by scripts/deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
out=$here/plots
mkdir -p "$out"

plot() { # plot NAME 'gnuplot commands' : one SVG per call, same look everywhere
  gnuplot <<GP
set terminal svg size 760,420 font "sans,11" background "white"
set output "$out/$1.svg"
set datafile commentschars "#"
set key top left
set grid ytics
$2
GP
}

plot codec_size "
set title 'Bitmap index size, bytes per set bit (lower is smaller)'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set logscale y; set ylabel 'bytes per set bit'
plot for [c=2:7] '$data/codec_size.dat' using c:xtic(1) title columnhead(c) noenhanced"

plot codec_ops_real "
set title 'Speed on real captures, codec / CRoaring (1 = as fast)'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set logscale y; set ylabel 'ratio to CRoaring'
plot for [c=2:6] '$data/codec_ops_real.dat' using c:xtic(1) title columnhead(c), 1 with lines lc 'black' dt 2 notitle"

plot ingest_collect "
set title 'Collect: flows stored per CPU-second (bitarc indexes, nfcapd does not)'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set yrange [0:*]; set ylabel 'M flows per CPU-second'
plot '$data/ingest_collect.dat' using 2:xtic(1) title 'bitarc collect', '' using 3 title 'nfcapd'"

for q in count rows stats; do
  case $q in count) what='--count' ;; rows) what='-o csv' ;; stats) what='-s srcip/bytes -n 10' ;; esac
  plot "query_$q" "
set title '10 M flows, seconds per query ($what; log scale)' noenhanced
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set logscale y; set ylabel 'seconds'; set xtics rotate by -30 font ',8' noenhanced
set bmargin 9; set key top right
plot '$data/query_$q.dat' using 2:xtic(1) title 'bitarc', '' using 3 title 'nfdump (fastest file variant)'"
done

plot store_size "
set title 'Bytes on disk per flow'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set yrange [0:*]; set ylabel 'bytes per flow'
plot '$data/store_size.dat' using 2:xtic(1) title 'bitarc (archive + index)', '' using 3 title 'nfdump LZ4 (no index)', '' using 4 title 'ClickHouse (LZ4)'"

plot olsh "
set title 'oLSH / arrival order, store size (lower is smaller)'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set yrange [0:1.45]; set ylabel 'ratio'; set key top right horizontal
plot for [c=2:6] '$data/olsh.dat' using c:xtic(1) title columnhead(c) noenhanced, 1 with lines lc 'black' dt 2 notitle"

plot range "
set title 'OR of k WAH64 bins, 20 M rows (ms per query)'
set logscale xy; set xlabel 'bins ORed'; set ylabel 'ms'; set xtics (4,16,64,256,1024)
plot for [c=2:5] '$data/range.dat' using 1:c with linespoints title columnhead(c) noenhanced"

plot gpu_build "
set title 'Index build rate, 2 M rows (IMC13 Fig. 5), 2 CPU cores, no GPU'
set logscale x 2; set xlabel 'cardinality'; set ylabel 'M rows/s'; set yrange [0:*]
set key top right
plot for [c=2:5] '$data/gpu_build.dat' using 1:c with linespoints title columnhead(c) noenhanced"

plot collect_load "
set title 'bitarc collect, 60 s per rate: flows stored'
set logscale x; set xlabel 'k flows/s sent'; set ylabel '% stored'; set yrange [99:100.1]
plot '$data/collect_load.dat' using 1:2 with linespoints title 'stored / sent'"

echo "wrote $(ls "$out"/*.svg | wc -l) plots in $out"
