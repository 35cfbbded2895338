#!/usr/bin/env bash
# IPv6 attributes (doc/format.md §7.4, segment format 3.1) on the bundled
# real capture: every IPv6 host and /48, /64 prefix of it is answered from the
# V6NET/V6HOST bitmaps plus the address check, equal to the linear scan
# (--scan); a 3.0 segment (minor version 0, no IPv6 attributes) is planned
# from IPVER = 6 with the same answers, and `reindex --upgrade` makes it 3.2.
set -euo pipefail
B="$BITARC"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$B" ingest -q --store "$tmp/st" "$BA_SOURCE_DIR/data/cesnet-mixed.pcap"

# check WANT_PLAN: each IPv6 address of the store, as host and as /48 and
# /64 prefix, on both sides: index count == scan count, and the plan says so.
check() {
  local want_plan=$1 n=0
  for a in $("$B" query -r "$tmp/st" -6 -q -o 'fmt:%sa %da' ipv6 | tr ' ' '\n' | grep : | sort -u); do
    for f in "src ip $a" "dst ip $a" "ip $a" "src net $a/48" "dst net $a/64" "not src ip $a"; do
      got=$("$B" query -r "$tmp/st" --count "$f")
      want=$("$B" query -r "$tmp/st" --scan --count "$f")
      [ "$got" = "$want" ] || fail "$f: index $got, scan $want"
      rows=$("$B" query -r "$tmp/st" -q -o csv "$f" | sort | md5sum)
      srows=$("$B" query -r "$tmp/st" --scan -q -o csv "$f" | sort | md5sum)
      [ "$rows" = "$srows" ] || fail "$f: rows differ from the scan's"
    done
    "$B" query -r "$tmp/st" --explain --count "src ip $a" > "$tmp/plan"
    grep -F -- "$want_plan" "$tmp/plan" > /dev/null || fail "src ip $a: plan without '$want_plan': $(grep bitmaps "$tmp/plan")"
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] || fail "only $n IPv6 addresses in the capture"
  echo "ok: $n IPv6 addresses, plan '$want_plan'"
}
check "v6net&v6host+check"

# The segments as 3.0 wrote them: minor version 0 (header offset 10, CRC of
# bytes 0..59 at 60, CRC32C).
python3 - "$tmp/st" <<'PY'
import glob, struct, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
for f in glob.glob(sys.argv[1] + "/*.bitarc"):
    h = bytearray(open(f, "rb").read(64))
    assert h[:8] == b"BITARCSG" and struct.unpack_from("<H", h, 8)[0] == 3, f
    struct.pack_into("<H", h, 10, 0)
    struct.pack_into("<I", h, 60, crc32c(bytes(h[:60])))
    with open(f, "r+b") as o:
        o.write(h)
PY
# 3.0 has no compressed bitmaps (format.md §7.8): reindex, which keeps the
# version, rewrites them raw
"$B" reindex --store "$tmp/st" --codec plwah > /dev/null
"$B" verify -q --store "$tmp/st" || fail "verify after setting minor 0"
check "ipver:6+check"
"$B" reindex --store "$tmp/st" --upgrade > /dev/null
"$B" verify -q --store "$tmp/st" || fail "verify after the upgrade"
check "v6net&v6host+check"
echo "ok"
