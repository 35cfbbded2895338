#!/usr/bin/env bash
# Clustered segments (doc/format.md 7.9) end to end: a store and its copy
# rewritten by `bitarc reindex --cluster` answer every filter in every output
# mode (csv, line, -s, -A, --count, -t windows, limits, IPv6, zone-map ranges)
# byte for byte alike, and like the linear scan (--scan) of the clustered
# copy; the copy verifies clean and is flagged; a second run clusters nothing.
# query_mkstore's start times increase strictly, so the arrival store's row
# order is time order: the clustered store must give the same order.
set -u
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BITARC"
MK="$here/query_mkstore"
body() { grep -v -e '^Total records' -e 'wall:' -e '^Summary' ; }

for kind in flows packets; do
  "$MK" "$tmp/a-$kind" 30000 $kind 11 || fail "mkstore $kind"
  cp -a "$tmp/a-$kind" "$tmp/c-$kind"
  "$B" reindex --store "$tmp/c-$kind" --cluster --memory 2 2>"$tmp/log" || fail "cluster $kind: $(cat "$tmp/log")"
  grep -q "segments clustered" "$tmp/log" || fail "no summary: $(cat "$tmp/log")"
  grep -q "passes" "$tmp/log" || fail "no progress: $(cat "$tmp/log")"
  "$B" verify --store "$tmp/c-$kind" >"$tmp/v" 2>&1 || fail "verify $kind: $(cat "$tmp/v")"
  "$B" reindex --store "$tmp/c-$kind" --cluster 2>"$tmp/log" || fail "second cluster"
  grep -q "^bitarc reindex: 0 segments clustered" "$tmp/log" || fail "second run: $(cat "$tmp/log")"
  "$B" stat --store "$tmp/c-$kind" -o json 2>/dev/null | grep -q '"clustered": *true' || fail "stat: not flagged"
done

filters=(
  "any" "ipv6" "src ip 10.4.0.7" "dst ip 10.5.5.3" "ip 10.4.0-3.*" "src net 10.4.0.0/16 and dst port 137"
  "dst net 10.5.0.0/24" "ip in [10.5.0.1, 2001:db8::/48]" "net 2001:db8:0:1::/64" "port 53" "proto udp"
  "bytes > 10k and src ip 10.4.*.*" "duration > 1000" "packets < 3 and proto tcp" "not (port 80 or proto icmp)"
  "first seen > 2024-07-11T01:00" "tos 32"
)
modes=("-o csv" "-o line" "-o ndjson" "-s srcip/bytes -n 10" "-s dstport/flows" "-A srcip,dstport" "--count"
       "-o csv --limit 17")
n=0
for kind in flows packets; do
  for f in "${filters[@]}"; do
    for m in "${modes[@]}"; do
      for t in "" "-t 2024-07-11T00:20:00-2024-07-11T01:10:00"; do
        for w in a c s; do
          st="$tmp/$w-$kind" extra=""
          [ $w = a ] || st="$tmp/c-$kind"
          [ $w = s ] && extra="--scan"
          # shellcheck disable=SC2086
          "$B" query -r "$st" $extra $m $t "$f" >"$tmp/out" 2>&1 || fail "$w '$f' $m $t: $(cat "$tmp/out")"
          body <"$tmp/out" >"$tmp/$w.txt"
        done
        cmp -s "$tmp/a.txt" "$tmp/c.txt" || { diff "$tmp/a.txt" "$tmp/c.txt" | head; fail "$kind '$f' $m $t: clustered != arrival"; }
        cmp -s "$tmp/c.txt" "$tmp/s.txt" || { diff "$tmp/c.txt" "$tmp/s.txt" | head; fail "$kind '$f' $m $t: index != scan"; }
        n=$((n + 1))
      done
    done
  done
done
echo "ok: $n filter x mode x window checks"
