#!/usr/bin/env bash
# bitarc query end to end: exit codes and caret, formats, --count == --scan for
# a filter table, -w pcap readable by tcpdump/tshark with counts equal to
# tshark's for equivalent display filters, and the same records as nfdump -R
# for flows given to both (NetFlow v5 over loopback to nfcapd, writer API to
# bitarc). Peer parts skip when the tools are missing.
set -u
here=$(pwd)
tmp=$(mktemp -d)
nfpid=""
cleanup() { [ -n "$nfpid" ] && kill "$nfpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BITARC"
MK="$here/query_mkstore"

# ---------- usage errors ----------
"$B" query >/dev/null 2>&1; [ $? -eq 2 ] || fail "no --store must exit 2"
"$MK" "$tmp/fl" 20000 flows 3 || fail "mkstore flows"
out=$("$B" query -r "$tmp/fl" 'src ip 10.4.*.* and dst prot 137' 2>&1); rc=$?
[ $rc -eq 2 ] || fail "syntax error exit $rc"
echo "$out" | grep -q "column 25" || fail "column: $out"
caret=$(echo "$out" | tail -1)
[ "$caret" = "                          ^" ] || fail "caret line '$caret'"
"$B" query -r "$tmp/fl" -t yesterday any >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad window exit"
"$B" query -r "$tmp/fl" -o 'fmt:%zz' any >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad format exit"
"$B" query -r "$tmp/nonexistent" any >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing store exit"
"$B" query --help | grep -q "src ip 10.4" || fail "help has examples"

# ---------- index == scan, filter from argv words and from -f ----------
filters=(
  "any" "ipv6" "src ip 10.4.*.*" "ip 10.4.0-3.*" "dst net 10.5.0.0/24" "ip in [10.5.0.1, 2001:db8::/48]"
  "port 53" "dst port in [80 443 1024-2048]" "portrange 1-1023" "proto udp" "flags S and not flags AFRPU"
  "not flags SA" "bytes > 10k and src ip 10.4.*.*" "not (port 80 or proto icmp)" "icmp-type 8"
  "first seen > 2024-07-11T01:00" "src as 5 or in if 2" "net 2001:db8:0:1::/64" "tos 32"
)
for f in "${filters[@]}"; do
  a=$("$B" query -r "$tmp/fl" --count "$f") || fail "query '$f'"
  b=$("$B" query -r "$tmp/fl" --count --scan "$f") || fail "scan '$f'"
  [ "$a" = "$b" ] || fail "'$f': index $a, scan $b"
done
a=$("$B" query -r "$tmp/fl" --count src ip 10.4.*.* and dst port 53)
b=$("$B" query -r "$tmp/fl" --count 'src ip 10.4.*.* and dst port 53')
[ "$a" = "$b" ] || fail "argv words joined: $a vs $b"
printf 'src ip 10.4.*.*   # sources\nand dst port 53\n' > "$tmp/f.txt"
c=$("$B" query -r "$tmp/fl" --count -f "$tmp/f.txt")
[ "$a" = "$c" ] || fail "-f file: $c vs $a"
n=$("$B" query -r "$tmp/fl" -q -c 7 -o csv 'proto tcp' | wc -l)
[ "$n" -eq 7 ] || fail "-c 7 -q csv gave $n lines (nfdump: no header with -q)"
n=$("$B" query -r "$tmp/fl" -c 7 -o csv 'proto tcp' | head -1)
[ "${n%%,*}" = "ts" ] || fail "csv header: $n"
n=$("$B" query -r "$tmp/fl" -q -o ndjson 'port 53' | wc -l)
m=$("$B" query -r "$tmp/fl" --count 'port 53')
[ "$n" = "$m" ] || fail "ndjson lines $n vs count $m"
"$B" query -r "$tmp/fl" --explain 'src ip 10.4.*.* and dst port 53' | grep -q "src_ip0:10" || fail "explain"
# -t window: nfdump's flows lying inside it; --window-start: the ones starting in it
a=$("$B" query -r "$tmp/fl" --tz utc --window-start --count -t 2024/07/11.00:30-2024/07/11.00:59:59 'proto tcp')
b=$("$B" query -r "$tmp/fl" --count 'proto tcp and first seen >= 2024-07-11T00:30 and first seen < 2024-07-11T00:59:59.001')
[ "$a" = "$b" ] || fail "window-start $a vs first seen $b"
a=$("$B" query -r "$tmp/fl" --tz utc --count -t 2024/07/11.00:30-2024/07/11.00:59:59 'proto tcp')
b=$("$B" query -r "$tmp/fl" --count 'proto tcp and first seen >= 2024-07-11T00:30 and last seen < 2024-07-11T00:59:59.001')
[ "$a" = "$b" ] || fail "window $a vs first/last seen $b"
# local time is the default (nfdump): Prague is UTC+2 in July
a=$(TZ=Europe/Prague "$B" query -r "$tmp/fl" --count -t 2024/07/11.02:30-2024/07/11.02:59:59 'proto tcp')
b=$("$B" query -r "$tmp/fl" --tz utc --count -t 2024/07/11.00:30-2024/07/11.00:59:59 'proto tcp')
[ "$a" = "$b" ] || fail "local window $a vs utc $b"
# options that cannot repeat are refused, naming them; -s repeats
# (-r repeats for several stores; the same store twice is refused, naming it)
out=$("$B" query -r "$tmp/fl" -r "$tmp/fl" any 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q -- "'$tmp/fl' is given twice" || fail "repeated -r: $out"
out=$("$B" query -r "$tmp/fl" -o line -o csv any 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q -- "-o" || fail "repeated -o"
n=$("$B" query -r "$tmp/fl" -q -s srcip -s dstport -n 3 any | grep -c .)
[ "$n" -eq 6 ] || fail "two -s tables: $n rows"
"$B" query -r "$tmp/fl" -q -s srcip -n 3 -o csv any | head -1 | grep -q '^ts,te,td,pr,val' || fail "-s with csv"
# -Z: syntax only; @include in filter files
"$B" query -Z 'port 80 and proto tcp' || fail "-Z good filter"
"$B" query -Z 'port 8x0' 2>/dev/null && fail "-Z bad filter"
printf 'dst port 53\n' > "$tmp/inc.txt"
printf 'src ip 10.4.*.* and\n@include %s\n' "$tmp/inc.txt" > "$tmp/main.txt"
c=$("$B" query -r "$tmp/fl" --count -f "$tmp/main.txt")
[ "$a" ] && [ "$c" = "$("$B" query -r "$tmp/fl" --count 'src ip 10.4.*.* and dst port 53')" ] || fail "@include: $c"
# filters of 100,000 terms (flat chains, long lists) on a store: answered, never a crash
python3 - "$tmp" <<'PY'
import sys
t = sys.argv[1]
open(t + "/or.txt", "w").write(" or ".join("port %d" % (i % 65536) for i in range(100000)))
open(t + "/and.txt", "w").write(" and ".join("not port %d" % ((i * 7) % 65535 + 1) for i in range(100000)))
open(t + "/list.txt", "w").write("ip in [" + " ".join("10.%d.%d.%d" % (i >> 16, (i >> 8) & 255, i & 255) for i in range(100000)) + "]")
PY
"$MK" "$tmp/small" 2000 flows 1 || fail "mkstore small"
for k in or and list; do
  a=$("$B" query -r "$tmp/small" --count -f "$tmp/$k.txt") || fail "100k-term $k filter exit $?"
  b=$("$B" query -r "$tmp/small" --count --scan -f "$tmp/$k.txt") || fail "100k-term $k scan"
  [ "$a" = "$b" ] || fail "100k-term $k: index $a scan $b"
done

# ---------- packets: -w pcap, tshark as the peer ----------
"$MK" "$tmp/pk" 5000 packets 4 || fail "mkstore packets"
"$B" query -r "$tmp/pk" -q -w "$tmp/all.pcap" any || fail "-w"
# the summary of a packet store and of -w counts the packets' bytes and times
out=$("$B" query -r "$tmp/pk" -w "$tmp/all2.pcap" --tz utc any)
echo "$out" | grep -q "total bytes: [1-9]" || fail "-w summary bytes: $out"
echo "$out" | grep -q "Time window: 2024-07-11" || fail "-w summary window: $out"
out=$("$B" query -r "$tmp/pk" -c 3 --tz utc any | tail -3)
echo "$out" | grep -q "total bytes: [1-9]" || fail "packet summary bytes: $out"
if command -v tshark >/dev/null 2>&1; then
  total=$(tshark -r "$tmp/all.pcap" 2>/dev/null | wc -l)
  [ "$total" -eq 5000 ] || fail "pcap has $total frames"
  while IFS='|' read -r bf tf; do
    a=$("$B" query -r "$tmp/pk" --count "$bf")
    t=$(tshark -r "$tmp/all.pcap" -Y "$tf" 2>/dev/null | wc -l)
    [ "$a" = "$t" ] || fail "'$bf': bitarc $a, tshark '$tf' $t"
    "$B" query -r "$tmp/pk" -q -w "$tmp/sel.pcap" "$bf" || fail "-w '$bf'"
    s=$(tshark -r "$tmp/sel.pcap" 2>/dev/null | wc -l)
    [ "$s" = "$a" ] || fail "'$bf': -w wrote $s frames, count $a"
  done <<'T'
proto tcp|tcp
proto udp|udp
ipv6|ipv6
src ip 10.4.*.*|ip.src == 10.4.0.0/16
dst net 10.5.0.0/24|ip.dst == 10.5.0.0/24
ip 10.5.0.1|ip.addr == 10.5.0.1
dst port 80|tcp.dstport == 80 or udp.dstport == 80
port 53|tcp.port == 53 or udp.port == 53
proto udp and port in [1024-2000]|(udp.srcport >= 1024 and udp.srcport <= 2000) or (udp.dstport >= 1024 and udp.dstport <= 2000)
flags S|tcp.flags.syn == 1
flags SA|tcp.flags.syn == 1 and tcp.flags.ack == 1
flags S and not flags AFRPU|tcp.flags.syn == 1 and tcp.flags.ack == 0 and tcp.flags.fin == 0 and tcp.flags.reset == 0 and tcp.flags.push == 0 and tcp.flags.urg == 0
net 2001:db8::/48|ipv6.addr == 2001:db8::/48
icmp-type 8|icmp.type == 8
tos 32|ip.dsfield == 0x20
not (proto tcp or ipv6)|not tcp and not ipv6
T
else
  echo "SKIP tshark comparison: tshark not installed"
fi
if command -v tcpdump >/dev/null 2>&1; then
  n=$(tcpdump -r "$tmp/all.pcap" -nn 2>/dev/null | wc -l)
  [ "$n" -eq 5000 ] || fail "tcpdump reads $n frames"
fi

# ---------- flows: nfdump -R as the peer ----------
GEN="$(dirname "$B")/bench/query/bench_query_gen"
if command -v nfcapd >/dev/null 2>&1 && command -v nfdump >/dev/null 2>&1 && [ -x "$GEN" ]; then
  mkdir -p "$tmp/nf"
  port=$(( 20000 + RANDOM % 20000 ))
  nfcapd -p "$port" -b 127.0.0.1 -w "$tmp/nf" -t 3600 -B 8000000 > "$tmp/nfcapd.log" 2>&1 &
  nfpid=$!
  sleep 1
  "$GEN" --flows 30000 --hours 2 --store "$tmp/bf" --nf-port "$port" --pps 5000 > /dev/null || fail "gen"
  sleep 1
  kill "$nfpid"; wait "$nfpid" 2>/dev/null; nfpid=""
  export TZ=UTC
  nfn=$(nfdump -R "$tmp/nf" -q -o 'fmt:%pr' any | wc -l)
  [ "$nfn" -eq 30000 ] || fail "nfcapd received $nfn of 30000 flows (loopback drops?)"
  fmt='%ts %te %sa %da %sp %dp %flg %pkt %byt %tos %in %out'
  while IFS= read -r f; do
    nfdump -R "$tmp/nf" -q -N -o "fmt:$fmt" "$f" | tr -s ' ' | sed 's/^ //; s/ $//' | sort > "$tmp/n.txt" || fail "nfdump '$f'"
    "$B" query -r "$tmp/bf" -q -N -o "fmt:$fmt" "$f" | tr -s ' ' | sed 's/^ //; s/ $//' | sort > "$tmp/b.txt"
    if ! cmp -s "$tmp/n.txt" "$tmp/b.txt"; then
      diff "$tmp/n.txt" "$tmp/b.txt" | head -5
      fail "'$f': nfdump $(wc -l < "$tmp/n.txt") records, bitarc $(wc -l < "$tmp/b.txt")"
    fi
  done <<'F'
any
proto tcp
src net 10.4.0.0/16 and dst port 137
ip 10.5.0.1
host 10.4.0.3 or host 10.4.0.4
port in [80 443]
dst port > 1023
src port < 1024
flags S and not flags AFRPU
flags SA
not flags SA
not (proto tcp and flags SA)
bytes > 100k
packets < 3
proto udp or proto icmp
icmp-type 8
tos 32
in if 3
out if 7 and not proto tcp
duration > 1000
bps > 1m
pps > 10
bpp < 100
net 192.168.0.0/20
dst net 10.5.0.0 255.255.255.0
ip in [10.4.0.1 10.4.0.2 192.168.0.0/24]
(src port 53 or dst port 53) and bytes > 1k
F
else
  echo "SKIP nfdump comparison: nfcapd/nfdump or bench_query_gen missing"
fi
echo "PASS"
