#!/usr/bin/env bash
# Real export datagrams of ~45 exporters (tests/ingest/data/logstash),
# akvorado's real captures and softflowd's NetFlow v5/v9/IPFIX and
# bidirectional IPFIX exports of a real capture, decoded by bitarc and by
# tshark: every record tshark decodes must be one of bitarc's and no record of
# bitarc's may be left over; every field of bitarc's record must hold
# tshark's value, or 0 where tshark decodes no element for it (addresses,
# ports, protocol, flags, ToS, in/out counters, interfaces, AS, masks, next
# hops, VLANs, MACs, MPLS, NAT, firewall events, VRFs, engine, domain,
# sampling, start and end time), after the named conventions of
# cflow_tshark.py (doc/decoders.md, "Against tshark"). Counters as sent
# (ingest_dump --raw) are compared with tshark's, the default
# (sampling-scaled) decode with them, and a store written by `bitarc ingest
# --as flows` must hold the decoder's records (`bitarc query -o ndjson`).
# tshark sees each v5 message and v9/IPFIX set in a frame of its own (it
# decodes only the first message of a datagram and gives up on the rest of a
# datagram after a field it cannot read), in two passes (-2: a data set
# before its template is decoded with it); bitarc the datagrams as sent.
set -euo pipefail
for t in tshark python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
H="$BA_SOURCE_DIR/tests/ingest"
DUMP="$(dirname "$BITARC")/ingest_dump"
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
fail=0

# check NAME PCAP SPLITPCAP MAP: decode both ways, compare (output in $TMP/NAME.out)
check() {
  local n=$1 d="$TMP/$1"
  mkdir -p "$d"
  "$DUMP" --as flows --raw --report "$2" > "$d/raw.csv" 2> "$d/rep.txt"
  "$DUMP" --as flows "$2" > "$d/scaled.csv" 2> /dev/null
  TZ=UTC tshark -2 -r "$3" -d udp.port==2055,cflow -T json --no-duplicate-keys 2> "$d/tshark.err" > "$d/tshark.json"
  "$BITARC" ingest -w "$d/store" --as flows -q "$2"
  "$BITARC" query -r "$d/store" -o ndjson -q any > "$d/store.ndjson"
  python3 "$H/vendors_tshark_compare.py" "$d/tshark.json" "$d/raw.csv" "$d/scaled.csv" "$d/rep.txt" "$4" \
    "$d/store.ndjson" > "$n.out" 2>&1
}

cd "$TMP"
python3 "$H/vendor_corpus.py" pcap corpus.pcap
python3 "$H/vendor_corpus.py" splitpcap split.pcap
# group names -> exporter addresses (group i is sent from 127.0.0.(i+2))
python3 "$H/vendor_corpus.py" groups | awk '{print $1, "127.0.0." NR+1}' > map
if check vendors corpus.pcap split.pcap map; then cat vendors.out; else cat vendors.out; fail=1; fi
ok=$(grep -c '^ok .*: tshark [1-9][0-9]* records' vendors.out || true)
echo "exporters with records, no record lost and no value wrong: $ok"
[ "$ok" -ge 15 ] || { echo "FAIL: fewer than 15 exporters fully checked"; fail=1; }

# the comparison must notice a wrong value, a lost record and a wrong scale
d="$TMP/vendors"
mutate() { python3 "$H/vendors_tshark_compare.py" "$d/tshark.json" "$1" "$2" "$d/rep.txt" map > /dev/null 2>&1; }
awk -F, -v OFS=, '$1=="flow" && !done {$12=$12+1; done=1} {print}' "$d/raw.csv" > bad.csv
mutate bad.csv "$d/scaled.csv" && { echo "FAIL: a wrong byte count went unnoticed"; fail=1; }
awk -F, -v OFS=, '$1=="flow" && !done {$28="10.9.9.9"; done=1} {print}' "$d/raw.csv" > bad.csv
mutate bad.csv "$d/scaled.csv" && { echo "FAIL: a wrong next hop went unnoticed"; fail=1; }
awk -F, -v OFS=, '$1=="flow" && !done {$41=1234; done=1} {print}' "$d/raw.csv" > bad.csv
mutate bad.csv "$d/scaled.csv" && { echo "FAIL: a NAT port tshark does not show went unnoticed"; fail=1; }
awk '$1 ~ /^flow/ && !done {done=1; next} {print}' "$d/raw.csv" > bad.csv
mutate bad.csv "$d/scaled.csv" && { echo "FAIL: a lost record went unnoticed"; fail=1; }
cp "$d/raw.csv" bad.csv
mutate "$d/raw.csv" bad.csv && { echo "FAIL: unscaled sampled counters went unnoticed"; fail=1; }
echo "self-check: a changed value, an invented value, a lost record and unscaled counters are all reported"

# akvorado's real NetFlow v5/v9/IPFIX captures (Juniper, Cisco, ipfixprobe,
# sampled frames, MPLS, SRv6, NAT), one exporter per group; in
# "data+templates" data sets come before their template in one datagram
# (bitarc holds them; tshark's second pass, -2, decodes them)
D="${BA_SHARED_DATA:-}/traces/akvorado__akvorado/outlet/flow/decoder/netflow/testdata"
if [ -d "$D" ]; then
  ak=0
  for g in "nfv5" "template data" "data+templates" "datalink-template datalink-data" \
      "ethernet-over-mpls-with-control-word-template ethernet-over-mpls-with-control-word-data" \
      "icmp-template icmp-data" "ipfix-srv6-template ipfix-srv6-data" "ipfixprobe-templates ipfixprobe-data" \
      "juniper-cpid-template juniper-cpid-data" "mpls" "multiplesamplingrates-options-template \
      multiplesamplingrates-options-data multiplesamplingrates-template multiplesamplingrates-data" "nat" \
      "options-template options-data" "physicalinterfaces" "samplingrate-template samplingrate-data"; do
    files=(); for f in $g; do files+=("$D/$f.pcap"); done
    n="ak_${g%% *}"
    python3 "$H/pcap_udp.py" "$n.dg" "${files[@]}"
    python3 "$H/vendor_corpus.py" file2pcap "$n.dg" "$n.pcap"
    python3 "$H/vendor_corpus.py" file2pcap "$n.dg" "$n.split.pcap" split
    echo "akvorado_${g%% *} 127.0.0.2" > "$n.map"
    if check "$n" "$n.pcap" "$n.split.pcap" "$n.map"; then head -1 "$n.out"; else cat "$n.out"; fail=1; fi
    grep -q '^ok .*: tshark [1-9][0-9]* records' "$n.out" && ak=$((ak + 1))
  done
  [ "$ak" -ge 14 ] || { echo "FAIL: only $ak akvorado groups with records checked"; fail=1; }
else
  echo "SKIP (akvorado part): $D not present"
fi

# softflowd (uni- and bidirectional) exporting a real capture
PCAP="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap/gnutella.pcap"
if ! command -v softflowd >/dev/null || [ ! -f "$PCAP" ]; then
  echo "SKIP (softflowd part): softflowd or $PCAP missing"; exit $fail
fi
for mode in "5" "9" "10" "10 -b"; do
  tag=${mode// /}
  python3 "$H/udp_sink.py" "dg$tag" > "sinkport$tag" 2> "sink$tag.log" &
  spid=$!; pids+=("$spid")
  for _ in $(seq 1 100); do [ -s "sinkport$tag" ] && break; sleep 0.05; done
  # shellcheck disable=SC2086
  softflowd -d -r "$PCAP" -n "127.0.0.1:$(cat "sinkport$tag")" -v $mode -6 -c "sf$tag.ctl" -p "sf$tag.pid" \
    > "sf$tag.log" 2>&1 &
  sp=$!
  for _ in $(seq 1 300); do
    kill -0 $sp 2>/dev/null || break
    softflowctl -c "sf$tag.ctl" statistics >/dev/null 2>&1 || true
    sleep 0.1
  done
  wait $sp || true
  wait $spid || true
  python3 "$H/vendor_corpus.py" file2pcap "dg$tag" "dg$tag.pcap"
  python3 "$H/vendor_corpus.py" file2pcap "dg$tag" "dg$tag.split.pcap" split
  echo "softflowd_v$tag 127.0.0.2" > "map$tag"
  if check "sf$tag" "dg$tag.pcap" "dg$tag.split.pcap" "map$tag"; then head -1 "sf$tag.out"
  else cat "sf$tag.out"; fail=1; fi
  grep -q "^ok softflowd_v$tag 127.0.0.2: tshark [1-9][0-9][0-9]* records" "sf$tag.out" ||
    { echo "FAIL: softflowd -v $mode: fewer than 10 records checked"; fail=1; }
  if [ "$mode" = "10 -b" ]; then
    o=$(awk -F, '$1=="flow" && $25 > 0' "$TMP/sf$tag/raw.csv" | wc -l)
    [ "$o" -gt 0 ] || { echo "FAIL: no reverse counters decoded from softflowd -b"; fail=1; }
  fi
done
exit $fail
