#!/usr/bin/env bash
# NetFlow v5/v9 and IPFIX decoders against tshark on REAL export datagrams
# (akvorado's test captures, ../shared/data/traces). For each group of files
# (templates first, then data) both decode the same merged capture; the
# sorted lists src,dst,sport,dport,proto,bytes,packets,in_if,out_if must be
# identical, and the record counts must be equal and non-zero where tshark
# sees flows.
set -euo pipefail
D="${BA_SHARED_DATA:-}/traces/akvorado__akvorado/outlet/flow/decoder/netflow/testdata"
DUMP="$(dirname "$BITARC")/ingest_dump"
if [ ! -d "$D" ]; then echo "SKIP: $D not present"; exit 0; fi
for t in tshark mergecap python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
groups=(
  "nfv5.pcap"
  "template.pcap data.pcap"
  "2x data+templates.pcap"
  "datalink-template.pcap datalink-data.pcap"
  "ethernet-over-mpls-with-control-word-template.pcap ethernet-over-mpls-with-control-word-data.pcap"
  "icmp-template.pcap icmp-data.pcap"
  "ipfix-srv6-template.pcap ipfix-srv6-data.pcap"
  "ipfixprobe-templates.pcap ipfixprobe-data.pcap"
  "juniper-cpid-template.pcap juniper-cpid-data.pcap"
  "mpls.pcap"
  "multiplesamplingrates-options-template.pcap multiplesamplingrates-options-data.pcap multiplesamplingrates-template.pcap multiplesamplingrates-data.pcap"
  "nat.pcap"
  "options-template.pcap options-data.pcap"
  "physicalinterfaces.pcap"
  "samplingrate-template.pcap samplingrate-data.pcap"
)
# Known differences, as "group|tshark line|bitarc line":
# - tshark's MPLS heuristic misses the Ethernet pseudowire control word
#   (00000000) of one sampled frame and dissects the inner frame 4 bytes off;
# - an SRv6 frame (IPv6 + segment routing header + IPv4): bitarc keeps the
#   outer IPv6 header (as for captured packets, next header after the
#   extension headers = 4, IPv4), tshark_flows.py picks the inner IPv4.
known=(
  "ipfix-srv6-template.pcap ipfix-srv6-data.pcap|8.8.8.8,213.36.140.100,0,0,1,118,1,0,0|fc30:2200:1b::f,fc30:2200:23:e009::,0,0,4,118,1,0,0"
  "juniper-cpid-template.pcap juniper-cpid-data.pcap|8.8.8.8,213.36.140.101,0,0,1,118,1,737,0|fc30:2200:1b::f,fc30:2200:23:e009::,0,0,4,118,1,737,0"
  "ethernet-over-mpls-with-control-word-template.pcap ethernet-over-mpls-with-control-word-data.pcap|0.0.0.0,0.0.0.0,0,0,0,1532,1,1022,0|198.51.100.1,198.51.100.2,443,55427,6,1532,1,1022,0"
)
fail=0; total=0
for g in "${groups[@]}"; do
  # "2x F": F's data sets come before their templates in one datagram. bitarc
  # holds them and decodes them once the template follows; tshark cannot, so
  # it is shown the datagram twice and only its decoding of the second copy counts.
  twice=0; [ "${g#2x }" != "$g" ] && { twice=1; g="${g#2x }"; }
  files=(); for f in $g; do files+=("$D/$f"); done
  m="$TMP/merged.pcap"; mt="$TMP/tshark.pcap"
  mergecap -a -F pcap -w "$m" "${files[@]}"
  filter=()
  if [ $twice = 1 ]; then mergecap -a -F pcap -w "$mt" "$m" "$m"; filter=(-Y frame.number==2); else cp "$m" "$mt"; fi
  tshark -r "$mt" "${filter[@]}" -d udp.port==9990,cflow -d udp.port==2100,cflow -d udp.port==8096,cflow \
    -d udp.port==4739,cflow -T json --no-duplicate-keys 2>/dev/null |
    python3 "$BA_SOURCE_DIR/tests/ingest/tshark_flows.py" > "$TMP/want0"
  for k in "${known[@]}"; do
    IFS='|' read -r kg kt kc <<<"$k"
    if [ "$kg" = "$g" ]; then
      grep -qxF "$kt" "$TMP/want0" || { echo "FAIL: known tshark line for $g not seen: $kt"; fail=1; }
      awk -v t="$kt" -v c="$kc" '$0==t && !done {print c; done=1; next} {print}' "$TMP/want0" > "$TMP/want1"
      mv "$TMP/want1" "$TMP/want0"
    fi
  done
  sort "$TMP/want0" > "$TMP/want"
  "$DUMP" --as flows --raw "$m" 2>"$TMP/err" | awk -F, '$1=="flow"{print $4","$5","$6","$7","$8","$12","$11","$13","$14}' |
    sort > "$TMP/got"
  nw=$(wc -l < "$TMP/want"); ng=$(wc -l < "$TMP/got"); total=$((total + ng))
  if ! diff -q "$TMP/want" "$TMP/got" >/dev/null; then
    echo "FAIL: $g: tshark $nw records, bitarc $ng"; diff "$TMP/want" "$TMP/got" | head -10; cat "$TMP/err"; fail=1
  else
    echo "ok: $g: $ng records"
  fi
done
[ "$total" -gt 50 ] || { echo "FAIL: only $total records decoded in all groups"; fail=1; }
exit $fail
