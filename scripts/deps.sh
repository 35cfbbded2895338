#!/usr/bin/env bash
# Installs everything bitarc needs to build, test and benchmark (Debian/Ubuntu).
# Idempotent: skips apt entirely when every package is already present.
#   scripts/deps.sh           build, tests and the nfdump/nfcapd peers
#   scripts/deps.sh --bench   also ClickHouse (clickhouse-server/-client), the
#                             column-store peer of bench/query/compare.py
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang
      liblzo2-dev liblz4-dev libzstd-dev libbz2-dev libpcap-dev libroaring-dev libcmocka-dev
      softflowd nfdump nfdump-sflow pmacct tshark gnuplot-nox
      python3-cffi python3-numpy python3-dask python3-distributed
      help2man debhelper dpkg-dev)
if [ "${1:-}" = "--bench" ]; then PKGS+=(clickhouse-server clickhouse-client); fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
