#!/usr/bin/env bash
# Query latency over the real captures of ../shared/data/traces: every pcap
# and pcapng file is ingested into one packet store; each filter is timed
# warm (bitarc: median of 3; tshark: one pass) with bitarc query --count, beside tshark -Y with the
# equivalent display filter on the same frames (mergecap'd); counts differ where ingest
# stores a capture of NetFlow/IPFIX exports as flow records instead of frames.
#   bench/query/run_real.sh BUILD_DIR WORK_DIR [TRACES_DIR]
set -eu
build=$(cd "$1" && pwd)
work=$2
traces=${3:-$(cd "$(dirname "$0")/../../.." && pwd)/shared/data/traces}
B="$build/bitarc"
mkdir -p "$work"
echo "command: $0 $*"
echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
mapfile -t files < <(find "$traces" -type f \( -name '*.pcap' -o -name '*.pcapng' \) | sort)
if [ ! -d "$work/st" ]; then
  ok=()
  for f in "${files[@]}"; do
    # keep the files both tools read (tshark's view is the reference)
    capinfos -c "$f" > /dev/null 2>&1 && ok+=("$f")
  done
  "$B" ingest --store "$work/st" "${ok[@]}" > "$work/ingest.log" 2>&1 || true
  mergecap -F pcapng -w "$work/all.pcapng" "${ok[@]}" 2> /dev/null || true
fi
echo "store: $("$B" query -r "$work/st" --count any) records, $(du -sm "$work/st" | cut -f1) MB; pcapng $(du -sm "$work/all.pcapng" | cut -f1) MB"
tm() { local s e; s=$(date +%s.%N); "$@" > "$work/out.txt" 2>/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
printf "%-40s %8s %8s %9s %9s %8s\n" filter bitarc tshark "bitarc s" "tshark s" ratio
while IFS='|' read -r bf tf; do
  bt=()
  for i in 1 2 3; do
    bt+=("$(tm "$B" query -r "$work/st" --count "$bf")"); bc_=$(cat "$work/out.txt")
  done
  # tshark takes about a minute per pass over the 120 MB: one pass
  t=$(tm tshark -r "$work/all.pcapng" -Y "$tf"); tc=$(wc -l < "$work/out.txt")
  b=$(printf '%s\n' "${bt[@]}" | sort -n | sed -n 2p)
  printf "%-40s %8s %8s %9.3f %9.3f %7.1fx\n" "$bf" "$bc_" "$tc" "$b" "$t" "$(echo "$t / $b" | bc -l)"
done <<'F'
ip 10.0.2.15|ip.addr#1 == 10.0.2.15
src net 192.168.0.0/16 and dst port 443|ip.src#1 == 192.168.0.0/16 and tcp.dstport#1 == 443 and ip.proto#1 == 6
flags S and not flags AFRPU|tcp.flags#1 & 0x3f == 0x02 and (ip.proto#1 == 6 or ipv6.nxt#1 == 6)
proto udp and port 53|(ip.proto#1 == 17 or ipv6.nxt#1 == 17) and udp.port#1 == 53
ipv6|ipv6#1 and not ip#1
F
