#!/usr/bin/env bash
# bitarc import against nfdump's own reader, on files made here:
#  - nfcapd (Debian's nfdump 1.7.1, layout 2) on loopback, fed by softflowd
#    replaying two real captures (NetFlow v9 and IPFIX, IPv4 and IPv6) and by
#    nf_richgen.py (v9 and IPFIX with nearly every field nfcapd keeps set),
#    once per compression nfcapd writes: none, LZO (-z), LZ4 (-y), BZ2 (-j);
#  - ZSTD: nfcapd 1.7.1 has none, so nffile_gen recompresses the uncompressed
#    file's blocks with libzstd (nfdump reads the original);
#  - layout 1 (nfdump 1.6): nfcapd 1.7.1 writes only layout 2, so nffile_gen
#    writes random 1.6 files (extension maps, every extension) in each 1.6
#    codec; nfdump 1.7.1 reads them through its 1.6 compatibility code.
# Checks: (1) test_nffile_vs_nfdump compares every decoded flow field by field
# with `nfdump -o raw` (all fields, including those the store keeps only from
# segment format 3.0); (2) every file imported into a store and dumped with
# `bitarc query -o csv` equals nfdump's csv on the stored columns; (3) the CLI
# walks directories like nfdump -R, names damaged files and blocks, and
# refuses files that are not nfdump's.
set -euo pipefail
for t in softflowd softflowctl nfcapd nfdump python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 0; }
done
BIN=$(dirname "$BITARC")
GEN="$BIN/nffile_gen"
CMP="$BIN/test_nffile_vs_nfdump"
SRC="${BA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
PCAPDIR="${BA_SHARED_DATA:-}/traces/ntop__nDPI/tests/cfgs/default/pcap"
PCAP4="$PCAPDIR/1kxun.pcap"
PCAP6="$PCAPDIR/http_ipv6.pcap"
[ -f "$PCAP4" ] && [ -f "$PCAP6" ] || { echo "SKIP: captures not present under $PCAPDIR"; exit 0; }
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
export TZ=UTC

wait_bound() {
  local hex; hex=$(printf '0100007F:%04X' "$1")
  for _ in $(seq 1 200); do
    grep -q " $hex " /proc/net/udp 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
free_port() { python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
run_softflowd() { # port version pcap
  local ctl="$TMP/sf.ctl"
  softflowd -d -r "$3" -n "127.0.0.1:$1" -v "$2" -6 -c "$ctl" -p "$TMP/sf.pid" > "$TMP/sf.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 300); do
    kill -0 $sp 2>/dev/null || break
    softflowctl -c "$ctl" statistics >/dev/null 2>&1 || true
    sleep 0.1
  done
  wait $sp || true
}

# ---- make the files ----
mkdir -p "$TMP/files"
pairs="$TMP/pairs"
: > "$pairs"
for comp in none z y j; do
  d="$TMP/nfcapd_$comp"; mkdir -p "$d"
  flag=""; [ $comp = none ] || flag="-$comp"
  port=$(free_port)
  nfcapd -w "$d" -p "$port" -b 127.0.0.1 -t 3600 $flag > "$TMP/nfcapd_$comp.log" 2>&1 &
  np=$!; pids+=($np)
  wait_bound "$port" || { echo "FAIL: nfcapd did not bind 127.0.0.1:$port"; cat "$TMP/nfcapd_$comp.log"; exit 1; }
  run_softflowd "$port" 9 "$PCAP4"
  run_softflowd "$port" 10 "$PCAP6"
  python3 "$SRC/tests/ingest/nf_richgen.py" --port "$port" --proto v9 --flows 400 --seed 3 --domain 77 >/dev/null
  python3 "$SRC/tests/ingest/nf_richgen.py" --port "$port" --proto ipfix --flows 400 --seed 4 --domain 78 >/dev/null
  sleep 0.5
  kill -TERM $np; wait $np || true
  n=0
  for f in "$d"/nfcapd.*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    cp "$f" "$TMP/files/nfcapd_${comp}_$n"
    echo "$TMP/files/nfcapd_${comp}_$n $TMP/files/nfcapd_${comp}_$n" >> "$pairs"
  done
  [ $n -gt 0 ] || { echo "FAIL: nfcapd ($comp) wrote no file"; cat "$TMP/nfcapd_$comp.log"; exit 1; }
done
for f in "$TMP"/files/nfcapd_none_*; do
  "$GEN" recompress "$f" "$f.zstd" zstd
  echo "$f.zstd $f" >> "$pairs"
done
for c in none lzo bz2 lz4; do
  "$GEN" v1 "$TMP/files/v1_$c" $c 11 2500
  echo "$TMP/files/v1_$c $TMP/files/v1_$c" >> "$pairs"
done
"$GEN" v2 "$TMP/files/v2_gen" none 12 2500
"$GEN" recompress "$TMP/files/v2_gen" "$TMP/files/v2_gen.zstd" zstd
echo "$TMP/files/v2_gen $TMP/files/v2_gen" >> "$pairs"
echo "$TMP/files/v2_gen.zstd $TMP/files/v2_gen" >> "$pairs"

# ---- (1) every field of every decoded flow ----
fail=0
BA_NFFILE_PAIRS="$pairs" "$CMP" || { echo "FAIL: decoded flows differ from nfdump's (above)"; fail=1; }

# ---- (2) through a store ----
while read -r file ref; do
  st="$TMP/st.$(basename "$file")"
  "$BITARC" import --store "$st" -q "$file" || { echo "FAIL: bitarc import $file exited $?"; fail=1; continue; }
  # Both sides print nfdump's csv (the same columns) and the same fmt: times
  # to the millisecond; one parser reads both.
  "$BITARC" query -r "$st" -q -o csv 'any' > "$TMP/got.csv"
  "$BITARC" query -r "$st" -q -o 'fmt:%ts|%te' 'any' > "$TMP/got.ts"
  nfdump -r "$ref" -q -o csv > "$TMP/want.csv" 2>/dev/null
  nfdump -r "$ref" -q -o 'fmt:%ts|%te' > "$TMP/want.ts" 2>/dev/null
  python3 - "$TMP/got.csv" "$TMP/got.ts" "$TMP/want.csv" "$TMP/want.ts" "$file" <<'PY' || fail=1
import sys
got_f, got_ts, want_f, want_ts, name = sys.argv[1:6]
# csv: ts,te,td,sa,da,sp,dp,pr,flg,fwd,stos,ipkt,ibyt,opkt,obyt,in,out,sas,das,...,ra (col 44)
def load(csv_f, ts_f, who):
    tss = [l.split("|") for l in open(ts_f).read().splitlines()]
    rows = [l for l in open(csv_f).read().splitlines() if l.count(",") > 40]
    if len(tss) != len(rows):
        print("FAIL: %s: %s csv %d rows, fmt %d" % (name, who, len(rows), len(tss))); sys.exit(1)
    return [(t[0].strip(), t[1].strip(), c[3], c[4], c[5], c[6], c[7], c[8], c[10], c[11], c[12], c[15], c[16],
             c[17], c[18], c[44]) for c, t in zip((r.split(",") for r in rows), tss)]
got = load(got_f, got_ts, "bitarc")
want = load(want_f, want_ts, "nfdump")
# nfdump prints 0.0.0.0 as router address when the flow has none: bitarc
# keeps the exporter record's address there (checked in step 1)
def key(r, keep_ra):
    return r[:15] + ((r[15],) if keep_ra else ())
keep = all(w[15] != "0.0.0.0" for w in want)
g = sorted(key(r, keep) for r in got)
w = sorted(key(r, keep) for r in want)
if g != w:
    print("FAIL: %s: store has %d flows, nfdump %d; first differences:" % (name, len(g), len(w)))
    sg, sw = set(g), set(w)
    for x in [x for x in w if x not in sg][:3]: print("  nfdump only:", x)
    for x in [x for x in g if x not in sw][:3]: print("  bitarc only:", x)
    sys.exit(1)
print("ok: %s: %d flows in the store equal nfdump's csv" % (name.split("/")[-1], len(g)))
PY
done < "$pairs"

# -s over IPv4 and IPv6 flows together (v2_gen holds both, on shared ports):
# one group per port or protocol, as nfdump counts them.
st="$TMP/st.v2_gen"
for s in dstport srcport proto; do
  nfdump -r "$TMP/files/v2_gen" -q -n 0 -o csv -s "$s" 2>/dev/null | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$TMP/n.s"
  "$BITARC" query -r "$st" -q -n 0 -o csv -s "$s" any | awk -F, 'NR>1 && NF>8 {print $5","$6","$8","$10}' | sort > "$TMP/b.s"
  if [ ! -s "$TMP/n.s" ] || ! cmp -s "$TMP/n.s" "$TMP/b.s"; then
    echo "FAIL: -s $s over IPv4+IPv6: nfdump $(wc -l < "$TMP/n.s") groups, bitarc $(wc -l < "$TMP/b.s")"
    diff "$TMP/n.s" "$TMP/b.s" | head -4; fail=1
  fi
done

# ---- (3) the command line ----
mkdir -p "$TMP/tree/a/b"
cp "$TMP"/files/nfcapd_z_1 "$TMP/tree/a/nfcapd.1"
cp "$TMP"/files/v1_lzo "$TMP/tree/a/b/nfcapd.2"
echo "not a flow file" > "$TMP/tree/a/README"
# (nfdump -R itself stops at the README: "Short read", so count file by file)
want=0
for f in "$TMP/tree/a/nfcapd.1" "$TMP/tree/a/b/nfcapd.2"; do
  want=$((want + $(nfdump -r "$f" -q -o csv 2>/dev/null | grep -c ',' || true)))
done
"$BITARC" import --store "$TMP/st.tree" --report json "$TMP/tree" > "$TMP/tree.json"
python3 - "$TMP/tree.json" "$want" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1])); t = r["totals"]
if t["files"] != 2 or t["skipped_files"] != 1 or t["records"] != int(sys.argv[2]) or t["stored"] != t["records"]:
    print("FAIL: directory import: %s (nfdump: %s flows)" % (t, sys.argv[2])); sys.exit(1)
print("ok: directory tree: 2 nfdump files (%d flows, as nfdump -r of each), 1 other file skipped" % t["records"])
PY
# a damaged file: cut inside its second block
f="$TMP/files/v1_none"
size=$(stat -c %s "$f")
head -c $((size - 100)) "$f" > "$TMP/cut.nf"
set +e
"$BITARC" import --store "$TMP/st.cut" "$TMP/cut.nf" 2> "$TMP/cut.err"; rc=$?
"$BITARC" import --store "$TMP/st.bad" "$TMP/tree/a/README" 2> "$TMP/bad.err"; rc2=$?
set -e
if [ $rc -ne 1 ] || ! grep -q "cut.nf: block [0-9]* at offset [0-9]*: .*file ends" "$TMP/cut.err"; then
  echo "FAIL: truncated file: exit $rc, message:"; cat "$TMP/cut.err"; fail=1
else
  echo "ok: truncated file named with its block: $(head -1 "$TMP/cut.err")"
fi
if [ $rc2 -ne 2 ] || ! grep -q "README: not an nfdump file" "$TMP/bad.err"; then
  echo "FAIL: non-nfdump file: exit $rc2"; cat "$TMP/bad.err"; fail=1
fi
exit $fail
