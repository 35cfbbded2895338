#!/usr/bin/env bash
# bitarc query over several stores (-r DIR -r DIR, -R, nfdump's -M
# /path/dir1:dir2): the same records written to one store and split over
# three (interleaved in time, each with another slice width) give the same
# output byte for byte in every output mode (line/long/csv/pipe/fmt/ndjson,
# -s, -A, -a, -b, -O, -c, -n, -t, --count, -w pcap), apart from the
# summary's "Total records in ..." line (segment counts and wall time).
# Errors and warnings name the offending store.
set -u
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
nfail=0
bad() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
B="$BITARC"
MK="$here/query_mkstore"
export TZ=Europe/Prague

"$MK" "$tmp/fl" 30000 flows 5 3 || fail "mkstore flows"
"$MK" "$tmp/pk" 6000 packets 9 2 || fail "mkstore packets"
for d in fl.1 fl.2 fl.3 pk.1 pk.2; do [ -d "$tmp/$d" ] || fail "no split store $d"; done

strip() { grep -v '^Total records in'; }
one() { "$B" query -r "$tmp/fl" "$@" 2>&1 | strip; }
three() { "$B" query -r "$tmp/fl.1" -r "$tmp/fl.2" -R "$tmp/fl.3" "$@" 2>&1 | strip; }
# $1 label, then the query arguments
same() {
  local label=$1; shift
  one "$@" > "$tmp/a.txt"; three "$@" > "$tmp/b.txt"
  if ! cmp -s "$tmp/a.txt" "$tmp/b.txt"; then
    bad "$label: one store $(wc -l < "$tmp/a.txt") lines, three stores $(wc -l < "$tmp/b.txt")"
    diff "$tmp/a.txt" "$tmp/b.txt" | head -4
  elif [ "$(wc -l < "$tmp/a.txt")" -lt 2 ]; then
    bad "$label: almost no output ($(head -c 200 "$tmp/a.txt"))"
  fi
}

F1='proto udp or port 53'
same "line" any
same "long" -o long "$F1"
same "extended -N" -o extended -N "$F1"
same "csv" -o csv any
same "pipe" -o pipe 'proto tcp and flags S'
same "ndjson" -o ndjson 'dst port 443'
same "fmt" -o 'fmt:%ts %te %td %pr %sap -> %dap %flg %pkt %byt %bps %bpp %sas %das %in %out' 'src ip 10.4.*.*'
same "-6 line6" -6 -o line6 ipv6
same "-c 100" -c 100 -o csv "$F1"
same "-c 1" -c 1 any
same "-q -c 3333" -q -c 3333 -o pipe any
for o in tstart tend flows packets bytes pps bps bpp; do same "-O $o" -O $o -o 'fmt:%ts %sa %da %pkt %byt' "$F1"; done
for s in srcip dstip ip srcport dstport port proto srcas dstas as inif outif if tos srcip4/24 record; do
  same "-s $s" -s "$s" any
done
same "-s two tables, orders" -s srcip/bytes/packets -s dstport/bps -n 7 'proto tcp'
same "-s csv -n 0" -n 0 -o csv -s ip/flows any
same "-s -N" -N -n 20 -s dstport/bytes any
same "-A" -A srcip,dstport 'proto udp'
same "-A -O bytes csv" -A srcip4/16,proto -O bytes -o csv any
same "-a -c" -a -o long -O packets any
same "-b" -b 'proto tcp'
same "-B" -B -o bilong 'proto tcp'
same "-t window" -t 2024/07/11.02:10-2024/07/11.02:40 -o pipe any
same "-t open" -t 2024/07/11.03:30 -o line 'proto tcp'
same "-t +N" -t +600 any
same "-t -N" -t -900 -o csv any
same "--window-start" --window-start -t 2024/07/11.02:10-2024/07/11.02:40 -o pipe any
same "--tz utc" --tz utc -c 50 any
same "--scan" --scan -o csv 'bytes > 10k and not port 80'
same "no match" -o line 'port 1 and port 2'
a=$(one --count "$F1"); b=$(three --count "$F1")
[ "$a" = "$b" ] && [ "$a" -gt 0 ] || bad "--count: one store $a, three stores $b"
a=$(one --count -c 5 any); b=$(three --count -c 5 any)
[ "$a" = "$b" ] || bad "--count -c 5: $a vs $b"

# -M as nfdump: /path/dir1:dir2:dir3, with or without nfdump's '-R .'
a=$(three -o csv "$F1" | md5sum)
b=$("$B" query -M "$tmp/fl.1:fl.2:fl.3" -o csv "$F1" 2>&1 | strip | md5sum)
[ "$a" = "$b" ] || bad "-M /path/fl.1:fl.2:fl.3 differs from -r -r -r"
b=$(cd "$tmp" && "$B" query -M fl.1:fl.2:fl.3 -R . -o csv "$F1" 2>&1 | strip | md5sum)
[ "$a" = "$b" ] || bad "-M fl.1:fl.2:fl.3 -R . (relative) differs"

# packet stores: -w pcap of two stores == of one store
"$B" query -r "$tmp/pk" -q -w "$tmp/a.pcap" 'proto udp' || bad "-w one store"
"$B" query -r "$tmp/pk.1" -r "$tmp/pk.2" -q -w "$tmp/b.pcap" 'proto udp' || bad "-w two stores"
cmp -s "$tmp/a.pcap" "$tmp/b.pcap" || bad "-w pcap of two packet stores differs from one store"
[ "$(stat -c %s "$tmp/a.pcap")" -gt 1000 ] || bad "pcap almost empty"
a=$("$B" query -r "$tmp/pk" -o csv 'proto tcp' | strip | md5sum)
b=$("$B" query -r "$tmp/pk.1" -r "$tmp/pk.2" -o csv 'proto tcp' | strip | md5sum)
[ "$a" = "$b" ] || bad "packet stores: csv differs"

# errors and warnings name the store
out=$("$B" query -r "$tmp/fl.1" -r "$tmp/nostore" any 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "'$tmp/nostore'" || bad "missing store: exit $rc, '$out'"
out=$("$B" query -M "$tmp/fl.1:nostore" any 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "'$tmp/nostore'.*-M" || bad "missing -M store: exit $rc, '$out'"
out=$("$B" query -M "$tmp/fl.1:fl.2" -R somefile any 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "'somefile'" || bad "-M with -R FILE: exit $rc, '$out'"
out=$("$B" query -r "$tmp/fl.1" -r "$tmp/fl.1/" any 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "given twice" || bad "a store given twice: exit $rc, '$out'"
out=$("$B" query -M "$tmp/fl.1::fl.2" any 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "empty directory name" || bad "-M a::b: exit $rc, '$out'"
mkdir "$tmp/empty"
out=$("$B" query -r "$tmp/fl.1" -r "$tmp/empty" --count any 2>&1 >/dev/null)
echo "$out" | grep -q "store '$tmp/empty' holds no segments" || bad "empty store: no warning ('$out')"
# a damaged segment in the second store: the warning names that store
cp -r "$tmp/fl.2" "$tmp/dmg"
seg=$(ls "$tmp/dmg"/seg-*.bitarc | head -1)
truncate -s 100 "$seg"
out=$("$B" query -r "$tmp/fl.1" -r "$tmp/dmg" -r "$tmp/fl.3" -q -o pipe any 2>&1 >/dev/null); rc=$?
echo "$out" | grep -q "warning: store '$tmp/dmg': segment" || bad "damaged segment: warning does not name the store: '$out'"
[ "$(echo "$out" | grep -c "store '$tmp/dmg': segment")" -eq 1 ] || bad "damaged segment: the warning repeats: '$out'"

# --explain: the plan of each store under its name
out=$("$B" query -r "$tmp/fl.1" -r "$tmp/fl.2" --explain 'port 53')
echo "$out" | grep -q "^store $tmp/fl.2:" || bad "--explain does not name the stores"
"$B" query --help | grep -q -- "-M /path/dir1:dir2" || bad "--help lacks -M"

[ $nfail -eq 0 ] || fail "$nfail differences"
echo "PASS: one store == three stores in every output mode"
