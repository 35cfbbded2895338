#!/usr/bin/env bash
# bitarc query on real captures (../shared/data/traces): ingest a few pcaps,
# then for a table of filters the index answer == the linear scan (--scan) ==
# tshark's count for the equivalent display filter on the same files. tshark
# fields use the first layer (#1) because bitarc indexes the outer headers
# (tshark's plain ip.src would also match headers quoted inside ICMP errors).
set -u
B="$BITARC"
T="${BA_SHARED_DATA:-}/traces"
[ -d "$T" ] || { echo "SKIP: no shared traces at $T"; exit 0; }
if "$B" ingest --help 2>&1 | grep -q "not implemented"; then echo "SKIP: bitarc ingest not built yet"; exit 0; fi
files=(
  ntop__nDPI/tests/cfgs/default/pcap/synscan.pcap
  ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap
  zeek__zeek/testing/btest/Traces/http/1000-requests-one-dropped-response.pcap
  ntop__nDPI/tests/cfgs/default/pcap/fix2.pcap
  ntop__nDPI/tests/cfgs/default/pcap/KakaoTalk_talk.pcap
  zeek__zeek/testing/btest/Traces/ftp/cwd-navigation.pcap
)
paths=()
for f in "${files[@]}"; do [ -f "$T/$f" ] && paths+=("$T/$f"); done
[ ${#paths[@]} -gt 0 ] || { echo "SKIP: none of the chosen traces present"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$B" ingest --store "$tmp/st" "${paths[@]}" > "$tmp/ingest.log" 2>&1 || { cat "$tmp/ingest.log"; fail "ingest"; }
have_tshark=0
if command -v tshark >/dev/null 2>&1 && command -v mergecap >/dev/null 2>&1; then
  mergecap -w "$tmp/all.pcapng" "${paths[@]}" && have_tshark=1
fi
total=$("$B" query -r "$tmp/st" --count any)
echo "store holds $total records from ${#paths[@]} captures"
[ "$total" -gt 0 ] || fail "empty store"
while IFS='|' read -r bf tf; do
  a=$("$B" query -r "$tmp/st" --count "$bf") || fail "query '$bf'"
  s=$("$B" query -r "$tmp/st" --count --scan "$bf") || fail "scan '$bf'"
  [ "$a" = "$s" ] || fail "'$bf': index $a, scan $s"
  if [ $have_tshark = 1 ] && [ -n "$tf" ]; then
    t=$(tshark -r "$tmp/all.pcapng" -Y "$tf" 2>/dev/null | wc -l)
    [ "$a" = "$t" ] || fail "'$bf': bitarc $a, tshark '$tf' $t"
  fi
  echo "ok  $a  $bf"
done <<'F'
any|frame
ipv4|ip#1 and not ipv6#1
ipv6|ipv6#1 and not ip#1
proto tcp|ip.proto#1 == 6 or ipv6.nxt#1 == 6
proto udp|ip.proto#1 == 17 or ipv6.nxt#1 == 17
flags S|tcp.flags.syn#1 == 1 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)
flags SA|tcp.flags.syn#1 == 1 and tcp.flags.ack#1 == 1 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)
flags S and not flags AFRPU|tcp.flags#1 & 0x3f == 0x02 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)
net 172.16.0.0/12|ip.addr#1 == 172.16.0.0/12
ip 10.0.2.15|ip.addr#1 == 10.0.2.15
dst ip in [10.102.0.2 10.102.0.9 64.13.134.52]|ip.dst#1 == 10.102.0.2 or ip.dst#1 == 10.102.0.9 or ip.dst#1 == 64.13.134.52
src ip 10.0-102.*.*|ip.src#1 >= 10.0.0.0 and ip.src#1 <= 10.102.255.255
src net 10.0.0.0/8|ip.src#1 == 10.0.0.0/8
ip *.*.*.1|
dst port 80|(tcp.dstport#1 == 80 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)) or (udp.dstport#1 == 80 and (ip.proto#1 == 17 or ipv6.nxt#1 == 17))
port 53|(udp.port#1 == 53 and (ip.proto#1 == 17 or ipv6.nxt#1 == 17)) or (tcp.port#1 == 53 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6))
src port > 1023 and proto tcp|tcp.srcport#1 > 1023 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)
ip ::1|ipv6.addr#1 == ::1
src net ::/8 and port 8080|
not (proto tcp or proto udp)|
port in [1024-2048, 8080] and proto tcp|
bytes > 1000|
F
echo PASS
