#!/usr/bin/env bash
# Differential suite against nfdump 1.7.1 (GRAMMAR.md lists the deliberate
# differences). The same flows go to bitarc and to nfcapd:
#   A. generated NetFlow v5 flows (bench_query_gen: writer API to bitarc,
#      UDP to nfcapd), every field the store keeps compared;
#   B. softflowd's NetFlow v9 exports of real captures (traces/) sent to
#      `bitarc collect` and to nfcapd (times left out: the collectors turn
#      softflowd's uptimes into different clocks, an ingest matter);
#   C. IPFIX flows with every extended field set (ipfix_allfields.py) sent to
#      both collectors: MACs, MPLS, VLANs, NAT, VRFs, next hops, masks.
# Then for every filter primitive the record sets are equal (pipe output byte
# for byte), csv/pipe/fmt/line/long/extended are equal byte for byte, -s and
# -A tables by value, -t/-c/-O/-q/-N/-6/-b by their effect. Times print in
# local time (TZ=Europe/Prague) on both sides.
set -u
B="$BITARC"
for t in nfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
GEN="$(dirname "$B")/bench/query/bench_query_gen"
[ -x "$GEN" ] || { echo "SKIP: bench_query_gen not built"; exit 0; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
nfail=0
bad() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
export TZ=Europe/Prague
free_port() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# collect_port ERRFILE: the port `bitarc collect --listen 127.0.0.1:0` reports
# (waits up to 30 s: an ASan build on a loaded machine starts slowly).
collect_port() {
  local p=""
  for _ in $(seq 1 300); do
    p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" 2>/dev/null || true)
    [ -n "$p" ] && break; sleep 0.1
  done
  echo "$p"
}
# settle STORE: waits (up to 30 s) until a live count of the collector's store
# has stopped changing for 2 s and is not zero, so that stopping the collector
# loses no datagram still queued in its socket under load.
settle() {
  local last=-1 n same=0
  for _ in $(seq 1 60); do
    n=$("$B" query -r "$1" --count any 2>/dev/null || echo -1)
    if [ "$n" = "$last" ] && [ "$n" != 0 ] && [ "$n" != -1 ]; then same=$((same + 1)); [ $same -ge 4 ] && return 0
    else same=0; fi
    last=$n; sleep 0.5
  done
  return 0
}
wait_bound() {
  local hex; hex=$(printf '0100007F:%04X' "$1")
  for _ in $(seq 1 200); do grep -q " $hex " /proc/net/udp 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
# start_pair STORE NFDIR NAME: `bitarc collect` on STORE and nfcapd on NFDIR,
# each on a free loopback port; sets cpid, cport, npid, nport.
start_pair() {
  rm -rf "$1" "$2"; mkdir -p "$2"
  "$B" collect --store "$1" --listen 127.0.0.1:0 --report-every 0 --sync-every 0 > /dev/null 2> "$1.err" &
  cpid=$!; pids+=("$cpid")
  cport=$(collect_port "$1.err")
  [ -n "$cport" ] || fail "bitarc collect ($3) did not report its port: $(head -3 "$1.err")"
  nport=$(free_port)
  nfcapd -w "$2" -p "$nport" -b 127.0.0.1 -t 3600 > /dev/null 2>&1 &
  npid=$!; pids+=("$npid")
  wait_bound "$nport" || fail "nfcapd ($3) did not bind"
}
# stop_pair STORE: waits for the collector's store to settle, then stops both.
stop_pair() {
  settle "$1"
  kill -TERM "$cpid" "$npid"; wait "$cpid" 2>/dev/null; wait "$npid" 2>/dev/null
}
# softflowd_to CAPTURE PORT ARGS...: softflowd reads CAPTURE and exports its
# flows to 127.0.0.1:PORT (waits until it has sent them all and exited).
softflowd_to() {
  local f=$1 P=$2; shift 2
  softflowd -d -r "$f" -n 127.0.0.1:"$P" "$@" -6 -c "$tmp/sf.$P" -p "$tmp/sf.$P.pid" > /dev/null 2>&1 &
  local sp=$!
  for _ in $(seq 1 300); do kill -0 $sp 2>/dev/null || break; softflowctl -c "$tmp/sf.$P" statistics >/dev/null 2>&1; sleep 0.1; done
  wait $sp 2>/dev/null
}

# ---------- A: generated flows ----------
mkdir -p "$tmp/nf"
port=$(free_port)
nfcapd -p "$port" -b 127.0.0.1 -w "$tmp/nf" -t 3600 -B 8000000 > "$tmp/nfcapd.log" 2>&1 &
pids+=($!)
wait_bound "$port" || fail "nfcapd did not bind"
N=20000
"$GEN" --flows $N --hours 2 --store "$tmp/st" --nf-port "$port" --pps 5000 --seed 7 > /dev/null || fail "gen"
sleep 1
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null; pids=()
nfd() { nfdump -R "$tmp/nf" "$@" | grep -v '^No matching flows$'; }
bq() { "$B" query -r "$tmp/st" "$@"; }
n=$(nfd -q -o pipe any | wc -l)
[ "$n" -eq $N ] || fail "nfcapd received $n of $N flows (loopback drops?)"

# Same output, order-insensitive: $1 = label, then the common arguments.
same() {
  local label=$1; shift
  nfd "$@" 2>"$tmp/ne" | sort > "$tmp/n.txt"
  bq "$@" 2>"$tmp/be" | sort > "$tmp/b.txt"
  if ! cmp -s "$tmp/n.txt" "$tmp/b.txt"; then
    bad "$label: nfdump $(wc -l < "$tmp/n.txt") lines, bitarc $(wc -l < "$tmp/b.txt")"
    diff "$tmp/n.txt" "$tmp/b.txt" | head -4
    head -2 "$tmp/ne" "$tmp/be"
    return 1
  fi
  return 0
}

# 1. every filter primitive: the same flows (pipe output, byte for byte)
while IFS= read -r f; do
  [ -z "$f" ] && continue
  same "filter '$f'" -q -o pipe "$f"
done <<'F'
any
proto tcp
proto udp
proto icmp
ipv4
not ipv6
src ip 10.4.0.1
dst host 10.5.0.2
ip 10.4.0.3 or ip 10.4.0.4
net 10.4.0.0/16
src net 192.168.0.0/20
dst net 10.5.0.0 255.255.255.0
ip in [10.4.0.1 10.4.0.2 192.168.0.0/24]
src and dst net 10.0.0.0/8
port 80
src port 53
dst port > 1023
port < 1024
port in [80 443 8080]
dst port in [ 22 25 ]
flags S
flags SA
flags S and not flags AFRPU
not flags SA
not flags S
flags 2
flags 0x12
flags 0x1b
not flags 2
flags > 16
flags < 4
flags 0
bytes > 100k
packets < 3
in bytes > 5000
out bytes 0
out packets > 0
duration > 1000
bps > 1m
pps > 10
bpp < 100
tos 32
src tos 32
dst tos 0
if 3
in if 3
out if 7 and not proto tcp
vlan 0
dst vlan 0
next ip 0.0.0.0
bgpnext ip 0.0.0.0
router ip 127.0.0.1
router ip 127.0.0.2
src mask 0
mask > 0
engine-type 0
engine-id 0
mpls label1 0
in src mac 00:00:00:00:00:01
flowdir ingress
nat event 0
asa event 0
xip 0.0.0.0
xport 0
ingress vrf 0
observation domain id 0
flows 1
icmp-type 8
icmp-code 0
proto udp or proto icmp
(src port 53 or dst port 53) and bytes > 1k
not (proto tcp and flags SA)
F
# AS filters: nfdump 1.7.1 refuses them without a geo database; bitarc answers
# them (GRAMMAR.md). The answer is checked against the AS numbers nfdump prints.
nfdump -R "$tmp/nf" -q -o pipe 'as 0' > "$tmp/n.txt" 2>&1; [ $? -ne 0 ] || echo "note: this nfdump answers AS filters"
nfdump -R "$tmp/nf" -q -N -o 'fmt:%sas %das %pr' any | tr -s ' ' | sed 's/^ //' > "$tmp/as.txt"
while IFS='|' read -r f awkc; do
  a=$(bq --count "$f"); b=$(awk "$awkc" "$tmp/as.txt" | wc -l)
  [ "$a" = "$b" ] || bad "'$f': bitarc $a, nfdump's AS numbers $b"
done <<'F'
as 0|$1 == 0 || $2 == 0
src as 100|$1 == 100
dst as > 60000|$2 > 60000
as in [1 2 3 4 5]|($1 >= 1 && $1 <= 5) || ($2 >= 1 && $2 <= 5)
src and dst as < 10|$1 < 10 && $2 < 10
F

# 2. output formats, byte for byte
for o in line long extended biline bilong line6 long6 extended6 nsel nel pipe csv 'fmt:%ts|%tevt|%msec|%te' \
  'fmt:%ts %te %td %tds %pr %sa %da %sap %dap %sp %dp %it %ic %flg %pkt %byt %fl %tos %stos %dtos %in %out %sas %das %nas %pas %ra %bps %pps %bpp %ipkt %opkt %ibyt %obyt %sn %dn %nh %nhb %smk %dmk %svln %dvln %dir %eng %mpls1 %mpls2 %mpls9 %ismc %odmc %idmc %osmc %tsr' \
  'fmt:%sa|%da|%xsa|%xda|%xsp|%xdp|%xsap|%xdap|%evt|%xevt|%ivrf|%evrf|%odid'; do
  if [ "$o" = csv ]; then
    # exid (nfdump's exporter number) and tr (receive time) are not stored by bitarc
    nfd -q -o csv 'proto tcp' | cut -d, -f1-46 | sort > "$tmp/n.txt"
    bq -q -o csv 'proto tcp' | cut -d, -f1-46 | sort > "$tmp/b.txt"
    cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "-o csv"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
    continue
  fi
  same "-o $o" -q -o "$o" 'port 53 or proto icmp'
  same "-N -o $o" -q -N -o "$o" 'dst port > 1023'
done
same "-6 -o line" -q -6 -o line any
# the header line and -q
h1=$(nfd -o line -c 1 any | head -1); h2=$(bq -o line -c 1 any | head -1)
[ "$h1" = "$h2" ] || bad "line header: '$h1' vs '$h2'"
h1=$(nfd -o 'fmt:%ts %sap %ibyt %obyt %td' -c 1 any | head -1); h2=$(bq -o 'fmt:%ts %sap %ibyt %obyt %td' -c 1 any | head -1)
[ "$h1" = "$h2" ] || bad "fmt header: '$h1' vs '$h2'"
h1=$(nfd -o csv -c 1 any | head -1); h2=$(bq -o csv -c 1 any | head -1)
[ "$h1" = "$h2" ] || bad "csv header"

# 3. -c N, -O, -t
a=$(bq -q -c 17 any | wc -l); [ "$a" -eq 17 ] || bad "-c 17 gave $a records"
for ord in bytes packets tstart tend bps; do
  nfd -q -N -O $ord -o 'fmt:%byt %pkt' 'proto udp' | tr -s ' ' > "$tmp/n.txt"
  bq -q -N -O $ord -o 'fmt:%byt %pkt' 'proto udp' | tr -s ' ' > "$tmp/b.txt"
  if [ $ord = bytes ] || [ $ord = packets ]; then
    a=$(awk -v c=$([ $ord = bytes ] && echo 1 || echo 2) '{print $c}' "$tmp/n.txt" | md5sum)
    b=$(awk -v c=$([ $ord = bytes ] && echo 1 || echo 2) '{print $c}' "$tmp/b.txt" | md5sum)
    [ "$a" = "$b" ] || bad "-O $ord: the sequences differ"
  fi
  [ "$(sort "$tmp/n.txt" | md5sum)" = "$(sort "$tmp/b.txt" | md5sum)" ] || bad "-O $ord: the records differ"
done
for w in 2024/07/11.02:10-2024/07/11.02:40 2024/07/11.02:59:30-2024/07/11.03:00:30 2024/07/11.03:15; do
  same "-t $w" -q -o pipe -t "$w" 'proto tcp'
done
# -t +N: nfdump 1.7.1 -R applies a delta window to file selection only (every
# flow of the first hour's file passes); bitarc keeps the flows inside the
# first N seconds of the data (GRAMMAR.md): the same as the absolute window.
first=$(bq -q -N -O tstart -c 1 -o 'fmt:%tsr' any | cut -d. -f1)
a=$(bq -q -o pipe -t +600 'proto tcp' | sort | md5sum)
b=$(bq -q -o pipe -t "$(date -d @$first +%Y/%m/%d.%H:%M:%S)-$(date -d @$((first + 600)) +%Y/%m/%d.%H:%M:%S)" 'proto tcp' | sort | md5sum)
[ "$a" = "$b" ] || bad "-t +600 is not the first 600 s"

# 4. -s statistics by value (csv: val, flows, packets, bytes), all groups
for s in srcip dstip ip srcport dstport port proto srcas dstas as inif outif if tos srctos dsttos srcvlan dstvlan vlan srcmask dstmask router nhip; do
  for ord in flows bytes; do
    nfd -q -n 0 -o csv -s "$s/$ord" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$tmp/n.txt"
    bq -q -n 0 -o csv -s "$s/$ord" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$tmp/b.txt"
    if ! cmp -s "$tmp/n.txt" "$tmp/b.txt" || [ ! -s "$tmp/n.txt" ]; then
      bad "-s $s/$ord: nfdump $(wc -l < "$tmp/n.txt") groups, bitarc $(wc -l < "$tmp/b.txt")"
      diff "$tmp/n.txt" "$tmp/b.txt" | head -3
    fi
  done
done
# -s srcip4/16 (bitarc; nfdump has the mask for -A only) == nfdump -A srcip4/16
for m in srcip4/16 dstip4/24; do
  nfd -q -N -A "$m" -o 'fmt:%sa %da %fl %pkt %byt' any | tr -s ' ' | sed 's/^ //' |
    awk -v d=$([ ${m:0:3} = src ] && echo 1 || echo 2) '{print $d","$3","$4","$5}' | sort > "$tmp/n.txt"
  bq -q -n 0 -o csv -s "$m" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$tmp/b.txt"
  cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "-s $m vs nfdump -A $m"; diff "$tmp/n.txt" "$tmp/b.txt" | head -3; }
done
# the text table: the top 5 by bytes, same values in the same order
nfd -q -n 5 -N -s dstport/bytes any | awk 'NF>8 {print $5, $6, $7, $8}' > "$tmp/n.txt"
bq -q -n 5 -N -s dstport/bytes any | awk 'NF>8 {print $5, $6, $7, $8}' > "$tmp/b.txt"
cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "-s dstport/bytes text table"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
# the text tables byte for byte for the rate orders, and -s record as flow lines
# (a top-N cut inside a tie may keep different groups: orders with few ties only)
for st in srcip/pps dstip/bps proto/packets; do
  nfd -q -n 5 -N -s "$st" 'proto udp' > "$tmp/n.txt"; bq -q -n 5 -N -s "$st" 'proto udp' > "$tmp/b.txt"
  cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "-s $st table"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
done
same "-s record/bytes" -q -N -n 5 -o line -s record/bytes 'proto udp'
# -s STAT:p (split by protocol) and -s with -o pipe / csv, byte for byte: all
# groups (sorted: tie order aside) and the top 5 of orders with few ties
for st in dstport:p/bytes srcip:p/bytes ip:p/packets proto/bytes srcport:p/bps dstip/flows; do
  for o in pipe csv line; do
    same "-s $st -o $o (all)" -q -N -n 0 -o $o -s "$st" 'proto udp or proto icmp or port 80'
  done
done
for st in dstport:p/bytes srcip:p/bytes proto/packets dstip/bytes; do
  for o in pipe csv; do
    nfd -q -n 5 -o $o -s "$st" any > "$tmp/n.txt"; bq -q -n 5 -o $o -s "$st" any > "$tmp/b.txt"
    cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "-s $st -o $o top 5"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
  done
done
# two -s give two tables
a=$(bq -q -n 3 -s srcip -s dstport any | grep -c '[0-9]')
b=$(nfd -q -n 3 -s srcip -s dstport any | grep -c '[0-9]')
[ "$a" = "$b" ] || bad "two -s: $a vs $b lines"

# 5. -A / -a / -b / -B by value
for A in srcip,dstport proto,dstport srcip4/24 dstip4/16,proto srcip,dstip,srcport,dstport,proto srcas,inif tos,dstport; do
  same "-A $A" -q -N -A "$A" -o 'fmt:%sa %da %sp %dp %pr %pkt %byt %fl %sas %in %tos' 'proto udp'
done
same "-a" -q -N -a -o 'fmt:%sa %da %sp %dp %pr %pkt %byt %fl' 'proto tcp'
same "-b" -q -N -b -o 'fmt:%sa %da %sp %dp %pr %ipkt %opkt %ibyt %obyt %fl' any
same "-B" -q -N -B -o 'fmt:%sa %da %sp %dp %pr %ipkt %opkt %ibyt %obyt %fl' any

# -Z: the same filters accepted and refused as nfdump -Z (syntax check only)
while IFS= read -r flt; do
  nfdump -Z "$flt" > /dev/null 2>&1; n=$?
  bq -Z "$flt" > /dev/null 2>&1; b=$?
  [ $((n == 0)) = $((b == 0)) ] || bad "-Z '$flt': nfdump exit $n, bitarc exit $b"
done <<'F'
proto tcp
src ip 1.2.3.4 and flags S
net 10.0.0.0/8 and not port in [53 80]
proto tcp and
port 99999
net 10.0.0.0/33
bogus
bytes > 1M and packets < 10
F

# ---------- B: softflowd exports of real captures ----------
if command -v softflowd >/dev/null && command -v softflowctl >/dev/null; then
  T="${BA_SHARED_DATA:-}/traces"
  files=(ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap ntop__nDPI/tests/cfgs/default/pcap/fix2.pcap)
  for f in "${files[@]}"; do
    [ -f "$T/$f" ] || { echo "SKIP B: $f missing"; continue; }
    start_pair "$tmp/bst" "$tmp/bnf" "B"
    for P in $cport $nport; do softflowd_to "$T/$f" $P -v 9; done
    stop_pair "$tmp/bst"
    fmt='fmt:%sa %da %sp %dp %pr %flg %pkt %byt %tos %in %out %sas %das %sap %dap %stos %dtos %ipkt %opkt %ibyt %obyt'
    # ICMP: nfcapd drops softflowd's v9 ICMP type/code (prints 0.0), bitarc keeps
    # it; the port columns are compared for the other protocols only.
    while IFS= read -r flt; do
      nfdump -R "$tmp/bnf" -q -N -o "$fmt" "($flt) and not proto icmp and not proto icmp6" | grep -v '^No matching' | sort > "$tmp/n.txt"
      "$B" query -r "$tmp/bst" -q -N -o "$fmt" "($flt) and not proto icmp and not proto icmp6" | sort > "$tmp/b.txt"
      cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "B $(basename "$f") '$flt': nfdump $(wc -l < "$tmp/n.txt"), bitarc $(wc -l < "$tmp/b.txt")"; diff "$tmp/n.txt" "$tmp/b.txt" | head -3; }
    done <<'F'
any
ipv6
proto tcp and flags 2
flags S and not flags AFRPU
not flags SA
port 53
net fe80::/10
dst ip 255.255.255.255
bytes > 1000
proto udp and dst port > 1023
F
    # deliberate differences (GRAMMAR.md): bitarc's ::/0 is every flow, `ip ::`
    # the IPv6 unspecified address only, 0.0.0.0/0 the IPv4 flows
    all=$("$B" query -r "$tmp/bst" --count any)
    [ "$("$B" query -r "$tmp/bst" --count 'net ::/0')" = "$all" ] || bad "B net ::/0"
    v4=$("$B" query -r "$tmp/bst" --count ipv4)
    [ "$("$B" query -r "$tmp/bst" --count 'net 0.0.0.0/0')" = "$v4" ] || bad "B net 0.0.0.0/0"
    n6=$(nfdump -R "$tmp/bnf" -q -o 'fmt:%sa %da' ipv6 | grep -v '^No matching' | tr -s ' ' | awk '$1 == "::" || $2 == "::"' | wc -l)
    [ "$("$B" query -r "$tmp/bst" --count 'ip ::')" = "$n6" ] || bad "B ip ::"
    f2='fmt:%sa %da %pr %pkt %byt %tos'
    a=$(nfdump -R "$tmp/bnf" -q -N -o "$f2" 'proto icmp or proto icmp6' | grep -v '^No matching' | sort | md5sum)
    b=$("$B" query -r "$tmp/bst" -q -N -o "$f2" 'proto icmp or proto icmp6' | sort | md5sum)
    [ "$a" = "$b" ] || bad "B $(basename "$f") ICMP flows"
  done
  # bidirectional IPFIX (softflowd -b): nfdump's totals and -s packets/bytes
  # orders count both directions; -s proto groups IPv4 and IPv6 flows
  f=ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap
  if [ -f "$T/$f" ]; then
    start_pair "$tmp/bst" "$tmp/bnf" "biflows"
    for P in $cport $nport; do softflowd_to "$T/$f" $P -v 10 -b; done
    stop_pair "$tmp/bst"
    [ "$(nfdump -R "$tmp/bnf" -q -o 'fmt:%opkt' any | awk '{s += $1} END {print s + 0}')" -gt 0 ] || bad "biflows: no reverse packets"
    a=$(nfdump -R "$tmp/bnf" any | grep '^Summary' | sed 's/, avg bps.*//')
    b=$("$B" query -r "$tmp/bst" any | grep '^Summary' | sed 's/, avg bps.*//')
    [ "$a" = "$b" ] || bad "biflows summary: '$a' vs '$b'"
    # value, flows, packets, bytes with their percentages (times: see above;
    # ICMP ports: nfcapd drops them; 0.0.0.0 and :: are one address to nfdump)
    for st in srcip/bytes dstip/packets ip/flows proto/bytes dstport:p/packets srcport/bytes port:p/bps \
      srcip/opkg dstip/ibyte proto/obyte dstport:p/opkg srcport/ibpp; do
      for v in ipv4 ipv6; do
        flt="$v and not proto icmp and not proto icmp6"
        nfdump -R "$tmp/bnf" -q -n 0 -o csv -s "$st" "$flt" | awk -F, 'NR > 1 && NF > 8 {print $4","$5","$6","$7","$8","$9","$10","$11}' | sort > "$tmp/n.txt"
        "$B" query -r "$tmp/bst" -q -n 0 -o csv -s "$st" "$flt" | awk -F, 'NR > 1 && NF > 8 {print $4","$5","$6","$7","$8","$9","$10","$11}' | sort > "$tmp/b.txt"
        cmp -s "$tmp/n.txt" "$tmp/b.txt" && [ -s "$tmp/n.txt" ] || { bad "biflows -s $st ($v)"; diff "$tmp/n.txt" "$tmp/b.txt" | head -3; }
      done
      a=$(nfdump -R "$tmp/bnf" -q -n 1 -o csv -s "$st" any | head -1); b=$("$B" query -r "$tmp/bst" -q -n 1 -o csv -s "$st" any | head -1)
      [ "$a" = "$b" ] || bad "biflows -s $st csv header: '$a' vs '$b'"
      a=$(nfdump -R "$tmp/bnf" -n 1 -s "$st" any | head -1); b=$("$B" query -r "$tmp/bst" -n 1 -s "$st" any | head -1)
      [ "$a" = "$b" ] || bad "biflows -s $st title: '$a' vs '$b'"
    done
  fi
else
  echo "SKIP B: softflowd not installed"
fi

# ---------- C: IPFIX flows with every extended field set ----------
# ipfix_allfields.py sends the same datagrams to bitarc collect and nfcapd:
# next hops, masks, VLANs, four MACs, three MPLS labels, NAT addresses, ports
# and event, VRFs, flow direction, both ToS and both counter directions.
start_pair "$tmp/cst" "$tmp/cnf" "C"
python3 "$(dirname "$0")/ipfix_allfields.py" --flows 3000 --seed 11 "$cport" "$nport" > /dev/null || fail "ipfix_allfields.py"
stop_pair "$tmp/cst"
cn() { nfdump -R "$tmp/cnf" "$@" | grep -v '^No matching flows$'; }
cb() { "$B" query -r "$tmp/cst" "$@"; }
csame() {
  local label=$1; shift
  cn "$@" 2>&1 | sort > "$tmp/n.txt"; cb "$@" 2>&1 | sort > "$tmp/b.txt"
  if ! cmp -s "$tmp/n.txt" "$tmp/b.txt"; then
    bad "C $label: nfdump $(wc -l < "$tmp/n.txt") lines, bitarc $(wc -l < "$tmp/b.txt")"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4
  fi
}
[ "$(cn -q -o pipe any | wc -l)" -eq 3000 ] && [ "$(cb --count any)" -eq 3000 ] || fail "C: not every flow arrived"
# records byte for byte (%nas %pas: nfcapd 1.7.1 does not keep IPFIX IE 128/129; %tr: receive time)
csame "fmt" -q -N -o 'fmt:%ts %te %td %sa %da %sap %dap %pr %flg %stos %dtos %ipkt %ibyt %opkt %obyt %in %out %sas %das %smk %dmk %nh %nhb %ra %svln %dvln %ismc %odmc %idmc %osmc %mpls1 %mpls2 %mpls3 %dir %xsa %xda %xsp %xdp %xsap %xdap %nevt %ivrf %evrf %bps %pps %bpp' any
for o in line long extended pipe; do csame "-o $o" -q -N -o $o any; done
cn -q -N -o csv any | cut -d, -f1-46 | sort > "$tmp/n.txt"; cb -q -N -o csv any | cut -d, -f1-46 | sort > "$tmp/b.txt"
cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "C -o csv"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
# nsel/nel without the event time column (GRAMMAR.md: no separate event time stored)
for o in nsel nel; do
  cn -q -N -o $o any | cut -c24- | sort > "$tmp/n.txt"; cb -q -N -o $o any | cut -c24- | sort > "$tmp/b.txt"
  cmp -s "$tmp/n.txt" "$tmp/b.txt" || { bad "C -o $o (after the time)"; diff "$tmp/n.txt" "$tmp/b.txt" | head -4; }
done
while IFS= read -r f; do
  [ -z "$f" ] && continue
  csame "filter '$f'" -q -o pipe "$f"
done <<'F'
next ip 10.0.0.2
next ip in [10.0.0.1 10.0.0.3]
bgpnext ip 172.16.0.3
router ip 127.0.0.1
src mask 16
dst mask 32
mask 24
src vlan 2
dst vlan 13
vlan 3
vlan 12
in src mac 00:11:22:00:38:02
out dst mac 00:11:22:00:39:01
in dst mac 00:11:22:00:50:00
out src mac 00:11:22:00:51:03
mac 00:11:22:00:50:00
src mac 00:11:22:00:38:02
dst mac 00:11:22:00:39:01
mpls label1 17
mpls label2 > 116
mpls label3 219
mpls exp1 4
mpls exp3 < 2
mpls eos 219
flowdir ingress
flowdir egress
flowdir 1
src xip 100.64.0.12
dst xip 8.8.8.3
xip 8.8.8.2
src xnet 100.64.0.0/29
nip 8.8.8.3
src xport 40002
dst xport 443
xport 53
nport 443
nat event add
nat event 2
ingress vrf 1
egress vrf 2
dst tos 46
src tos 32
tos 46
out bytes > 100000
out packets < 100
in packets > 500
in if 3
out if 3
if 5
F
# mpls any N: nfdump 1.7.1 matches the bottom-of-stack label only (as `mpls
# eos`); bitarc any entry (the manual's meaning, GRAMMAR.md), checked against
# the labels nfdump prints
cn -q -o 'fmt:%mpls1 %mpls2 %mpls3' any | tr -s ' ' | sed 's/^ //' > "$tmp/lbl.txt"
for l in 17 118 219; do
  a=$(cb --count "mpls any $l")
  b=$(awk -v l=$l '{ for (i = 1; i <= 3; i++) { split($i, p, "-"); if (p[1] == l) { n++; break } } } END { print n + 0 }' "$tmp/lbl.txt")
  [ "$a" = "$b" ] && [ "$a" -gt 0 ] || bad "C mpls any $l: bitarc $a, nfdump's labels $b"
done
# -b/-B on flows with both counter directions (-B: a TCP/UDP flow from a port
# below 1024 to one from 1024 up is the server's, as nfdump 1.7.1)
for o in -b -B; do
  csame "$o" -q -N $o -o 'fmt:%sa %da %sp %dp %pr %ipkt %opkt %ibyt %obyt %fl' any
done
# -o null: the summary only (its first line; the time window: GRAMMAR.md)
a=$(cn -o null 'proto udp' | head -1); b=$(cb -o null 'proto udp' | head -1)
[ "$a" = "$b" ] && [ -n "$a" ] || bad "C -o null: '$a' vs '$b'"
# -A and -s on the extended fields, by value
for A in srcvlan,dstvlan srcmask,dstmask srcas,dstas,inif,outif dsttos,srctos router,proto next,bgpnext \
  srcip4/24,dstip4/28 srcip,dstip4/28 srcip4/24,dstip srcip4/28,dstport; do
  csame "-A $A" -q -N -A "$A" -o 'fmt:%sa %da %dp %svln %dvln %smk %dmk %sas %das %in %out %stos %dtos %ra %nh %nhb %pr %pkt %byt %fl' any
done
for s in srcvlan dstvlan vlan srcmask dstmask mask router nhip nhbip inif outif srctos dsttos dir; do
  cn -q -n 0 -o csv -s "$s/bytes" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$tmp/n.txt"
  cb -q -n 0 -o csv -s "$s/bytes" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$tmp/b.txt"
  cmp -s "$tmp/n.txt" "$tmp/b.txt" && [ -s "$tmp/n.txt" ] || { bad "C -s $s/bytes"; diff "$tmp/n.txt" "$tmp/b.txt" | head -3; }
done

[ $nfail -eq 0 ] || fail "$nfail differences"
echo PASS
