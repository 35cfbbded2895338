#!/usr/bin/env bash
# Installs dependencies, builds bitarc (release) and runs its main job on a
# bundled capture. Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# The demo needs no GPU code; scripts/test.sh compiles the CUDA module when nvcc is present.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBA_BUILD_TESTS=OFF -DBA_ENABLE_CUDA=OFF >build.configure.log 2>&1 \
  || { cat build.configure.log; exit 1; }
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target bitarc_cli
B=build/bitarc
echo "== Ingest a bundled real capture (data/cesnet-mixed.pcap, packets) and the NetFlow v9"
echo "   export softflowd made of it (data/cesnet-mixed-softflowd-v9.pcap, flows) into temporary stores"
DEMO_ST=$(mktemp -d)
trap 'rm -rf "$DEMO_ST"' EXIT
"$B" ingest --store "$DEMO_ST/packets" data/cesnet-mixed.pcap
"$B" ingest --store "$DEMO_ST/flows" data/cesnet-mixed-softflowd-v9.pcap
"$B" stat --store "$DEMO_ST/packets"
echo
echo "== bitarc query: UDP packets to DNS, NTP or DHCP ports (answered from the bitmap index)"
"$B" query -r "$DEMO_ST/packets" 'udp and dst port in [53, 67, 123]' -c 10
echo
echo "== bitarc query: the flows, top talkers by bytes"
"$B" query -r "$DEMO_ST/flows" -s srcip/bytes -n 5 'any'

echo
echo "== MASC paper Fig. 5 bitmap, encoded with MASC (expect Fig. 11's words)"
printf '%s' 0000000000000000000000000000000 0000000000000111111111111111111 \
  1111111111111111111000000000000 0000000000000000000000000000000 \
  0000000000000000000000000000000 0000000000000111100000000000000 \
  0000000000000000000000000000000 | "$B" bitmap encode --codec masc
