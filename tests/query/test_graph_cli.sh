#!/usr/bin/env bash
# bitarc graph: its csv equals `bitarc query -o csv` rows summed per interval
# by a script (python3: flows, ipkt, ibyt per start-time interval) for
# default and explicit windows, interval widths aligned with the store's 60 s
# index bins and not, several filters with labels, --rate, --measure; three
# stores give the same csv as the one store holding their flows; SVG and PNG
# are drawn (non-empty, PNG of the asked size) when gnuplot is installed;
# without gnuplot svg/png fail naming it and csv still works; damaged
# segments are scanned or skipped with one warning each (exit 1); bad input
# exits 2 naming it.
set -u
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
nfail=0
bad() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
B="$BITARC"
export TZ=Europe/Prague

"$here/query_mkstore" "$tmp/fl" 40000 flows 11 3 >/dev/null || fail "mkstore"

# sum_query OUT GRAPHCSV MEASURES FILTER...: the reference series from
# `bitarc query -o csv` (UTC) over the intervals of the graph's csv.
sum_query() {
  local out=$1 gcsv=$2 meas=$3; shift 3
  local i=0
  for f in "$@"; do
    "$B" query -r "$tmp/fl" -o csv -q --tz utc "$f" > "$tmp/q$i.csv" || fail "query '$f'"
    i=$((i + 1))
  done
  python3 - "$gcsv" "$meas" "$i" "$tmp" > "$out" <<'EOF'
import calendar, csv, sys, time
gcsv, meas, n, tmp = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
rows = list(csv.reader(open(gcsv)))
epochs = [int(r[1]) for r in rows[1:]]
start, width = epochs[0], (epochs[1] - epochs[0] if len(epochs) > 1 else None)
nb = len(epochs)
series = []
for i in range(n):
    acc = [[0, 0, 0] for _ in range(nb)]
    for r in csv.reader(open(f"{tmp}/q{i}.csv")):
        t = calendar.timegm(time.strptime(r[0], "%Y-%m-%d %H:%M:%S"))
        k = (t - start) // width if width else (0 if t >= start else -1)
        if 0 <= k < nb:
            acc[k][0] += 1; acc[k][1] += int(r[11]); acc[k][2] += int(r[12])
    series.append(acc)
idx = {"flows": 0, "packets": 1, "bytes": 2}
for k in range(nb):
    print(",".join(str(series[i][k][idx[m]]) for i in range(n) for m in ("flows", "packets", "bytes") if m in meas))
EOF
}
values() { tail -n +2 "$1" | cut -d, -f3-; }

# check LABEL MEASURES GRAPH-ARGS... -- FILTERS...
check() {
  local label=$1 meas=$2; shift 2
  local args=() filters=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  filters=("$@")
  "$B" graph -r "$tmp/fl" --tz utc --measure "$meas" "${args[@]}" "${filters[@]}" > "$tmp/g.csv" 2> "$tmp/g.err" ||
    { bad "$label: exit $? ($(head -2 "$tmp/g.err"))"; return; }
  sum_query "$tmp/want.csv" "$tmp/g.csv" "$meas" "${filters[@]}"
  values "$tmp/g.csv" > "$tmp/got.csv"
  if ! cmp -s "$tmp/got.csv" "$tmp/want.csv"; then
    bad "$label: the series differs from bitarc query summed per interval"
    diff "$tmp/got.csv" "$tmp/want.csv" | head -4
    return
  fi
  local nz
  nz=$(awk -F, '{for (i = 1; i <= NF; i++) if ($i != 0) n++} END {print n + 0}' "$tmp/got.csv")
  [ "$nz" -ge 3 ] || bad "$label: only $nz non-zero values"
  echo "ok $label: $(wc -l < "$tmp/got.csv") intervals"
}

check "default window and bin" flows,packets,bytes -- any
check "5m, two filters" flows,packets,bytes --bin 5m -l tcp -l dns -- 'proto tcp' 'port 53'
check "90 s bins (not index-aligned)" flows,bytes --bin 90 -- 'src net 10.4.0.0/22 and not proto udp'
check "explicit window, odd start" packets -t 2024/07/11.00:20:30-2024/07/11.01:40 --bin 7m -- 'dst port 443' any
check "1 s bins" flows -t -600 --bin 1s -- 'proto udp'
check "one bin" flows,packets --bin 1d -- 'proto tcp and flags S' 'bytes > 2000'

# the header names each label and measure; --rate divides by the width
"$B" graph -r "$tmp/fl" --tz utc --bin 10m -l 'a,b' 'proto tcp' > "$tmp/c.csv" || bad "label with a comma"
head -1 "$tmp/c.csv" | grep -qx 'start,epoch,"a,b flows","a,b packets","a,b bytes"' ||
  bad "csv header: $(head -1 "$tmp/c.csv")"
"$B" graph -r "$tmp/fl" --tz utc --bin 10m --rate 'proto tcp' > "$tmp/r.csv" || bad "--rate"
paste -d, "$tmp/c.csv" "$tmp/r.csv" | tail -n +2 | awk -F, -v w=600 '
  { for (i = 0; i < 3; i++) { want = $(3 + i) / w; got = $(8 + i) + 0
      if (got - want > 0.001 || want - got > 0.001) { print "rate " got " want " want; bad = 1 } } }
  END { exit bad }' || bad "--rate values"
head -1 "$tmp/r.csv" | grep -q 'proto tcp flows/s' || bad "--rate header: $(head -1 "$tmp/r.csv")"

# several stores add up to the one store holding their flows
"$B" graph -r "$tmp/fl" --bin 5m 'proto udp' any > "$tmp/one.csv"
"$B" graph -r "$tmp/fl.1" -r "$tmp/fl.2" -R "$tmp/fl.3" --bin 5m 'proto udp' any > "$tmp/three.csv"
cmp -s "$tmp/one.csv" "$tmp/three.csv" || bad "three stores differ from one store"
"$B" graph -M "$tmp/fl.1:fl.2:fl.3" --bin 5m 'proto udp' any > "$tmp/m.csv"
cmp -s "$tmp/one.csv" "$tmp/m.csv" || bad "-M differs from one store"

# pictures
if command -v gnuplot >/dev/null; then
  "$B" graph -r "$tmp/fl" --bin 5m -l tcp -l udp 'proto tcp' 'proto udp' --out "$tmp/g.svg" || bad "svg exit $?"
  [ -s "$tmp/g.svg" ] && grep -q '<svg' "$tmp/g.svg" || bad "svg empty or not SVG"
  "$B" graph -r "$tmp/fl" --bin 5m --measure flows,bytes --size 800x500 'proto tcp' --out "$tmp/g.png" || bad "png exit $?"
  size=$(python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print(d[:8]==b'\x89PNG\r\n\x1a\n', *struct.unpack('>II', d[16:24]))" "$tmp/g.png")
  [ "$size" = "True 800 500" ] || bad "png: want an 800x500 PNG, got '$size'"
  "$B" graph -r "$tmp/fl" -o svg 'proto tcp' > "$tmp/o.svg" && [ -s "$tmp/o.svg" ] || bad "svg to stdout"
  echo "ok pictures: svg $(wc -c < "$tmp/g.svg") B, png $(wc -c < "$tmp/g.png") B"
else
  echo "SKIP pictures: gnuplot is not installed (scripts/deps.sh installs gnuplot-nox)"
fi
# without gnuplot: svg/png fail naming it, csv works
set +e
PATH=/nonexistent "$B" graph -r "$tmp/fl" --out "$tmp/x.png" any 2> "$tmp/e.txt"; rc=$?
set -e 2>/dev/null; set +e
[ $rc -eq 2 ] && grep -q "gnuplot" "$tmp/e.txt" && grep -q "gnuplot-nox" "$tmp/e.txt" ||
  bad "no gnuplot: exit $rc, '$(cat "$tmp/e.txt")'"
[ ! -e "$tmp/x.png" ] || bad "no gnuplot: an output file was left"
PATH=/nonexistent "$B" graph -r "$tmp/fl" --bin 5m 'proto udp' any > "$tmp/np.csv" && cmp -s "$tmp/np.csv" "$tmp/one.csv" ||
  bad "csv without gnuplot"

# damage: a segment whose index directory (its attribute table) is damaged is answered by a scan
# (same series, exit 1); a truncated segment is skipped (exit 1); each
# warning is printed once, not once per interval
"$B" graph -r "$tmp/fl" --bin 5m 'proto udp' any > "$tmp/clean.csv"
for kind in index truncate; do
  rm -rf "$tmp/dmg"; cp -r "$tmp/fl" "$tmp/dmg"
  seg=$(ls "$tmp/dmg"/*.bitarc | head -1)
  if [ $kind = index ]; then
    python3 - "$seg" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
table_off, dir_off = struct.unpack_from("<QQ", b[-80:], 24)
b[dir_off + 32 + 8 + 4] ^= 0x10  # the attribute table's first entry (format.md §7.3)
open(p, "wb").write(bytes(b))
PY
  else
    truncate -s 100 "$seg"
  fi
  "$B" graph -r "$tmp/dmg" --bin 5m 'proto udp' any > "$tmp/d.csv" 2> "$tmp/d.err"; rc=$?
  [ $rc -eq 1 ] || bad "damage $kind: exit $rc, want 1 ($(head -2 "$tmp/d.err"))"
  grep -q "$(basename "$seg")" "$tmp/d.err" || bad "damage $kind: the warning does not name the segment: $(head -2 "$tmp/d.err")"
  nw=$(grep -c "warning" "$tmp/d.err"); nd=$(grep "warning" "$tmp/d.err" | sort -u | wc -l)
  [ "$nw" -eq "$nd" ] || bad "damage $kind: $nw warnings, $nd different"
  if [ $kind = index ]; then
    cmp -s "$tmp/d.csv" "$tmp/clean.csv" || bad "damage index: the series differs from the clean store's"
  else
    want=$("$B" query -r "$tmp/dmg" --count any 2>/dev/null)
    got=$(tail -n +2 "$tmp/d.csv" | awk -F, '{s += $6} END {print s}')
    [ "$got" = "$want" ] || bad "damage truncate: $got flows, query --count says $want"
  fi
  echo "ok damage $kind: $(grep -c warning "$tmp/d.err") warning(s)"
done

# top-N stacked (-s STAT[/ORDER] -n N): the series are the N values that
# `bitarc query -s STAT/ORDER -n N` ranks first, in its order, then "other";
# they add up to the filter's own series in every interval and measure (the
# values' terms partition the flows), and the first value's series equals
# bitarc query's rows of "(FILTER) and <term>" summed per interval
topcheck() { # LABEL STAT N TERM-OF-FIRST FILTER
  local label=$1 stat=$2 n=$3 term=$4 filt=$5
  "$B" graph -r "$tmp/fl" --tz utc --bin 10m -s "$stat" -n "$n" "$filt" > "$tmp/s.csv" 2> "$tmp/s.err" ||
    { bad "$label: exit $? ($(head -2 "$tmp/s.err"))"; return; }
  "$B" graph -r "$tmp/fl" --tz utc --bin 10m "$filt" > "$tmp/w.csv" || { bad "$label: whole series"; return; }
  "$B" query -r "$tmp/fl" --tz utc -s "$stat" -n "$n" -o csv "$filt" > "$tmp/top.csv" || { bad "$label: query -s"; return; }
  python3 - "$tmp/s.csv" "$tmp/w.csv" "$tmp/top.csv" "$stat" <<'EOF' || { bad "$label"; return; }
import csv, sys
s = list(csv.reader(open(sys.argv[1]))); w = list(csv.reader(open(sys.argv[2])))
top = [r for r in csv.reader(open(sys.argv[3]))]
stat = sys.argv[4].split("/")[0]
head = top[0]; rows = []
for r in top[1:]:
    if not r: break
    rows.append(dict(zip(head, r)))
want = [("port " + r["val"]) if "port" in stat else r["pr"] if stat == "proto" else r["val"] for r in rows]
labels = [h.rsplit(" ", 1)[0] for h in s[0][2::3]]
if "4/" in sys.argv[4] or "6/" in sys.argv[4]:  # the prefix's label says its length; query -s prints the network alone
    labels = [l.split("/")[0] for l in labels]
assert labels == want + ["other"], "labels %s, query -s ranks %s" % (labels, want)
assert len(s) == len(w) and len(s) > 2, (len(s), len(w))
for a, b in zip(s[1:], w[1:]):
    assert a[:2] == b[:2], (a[:2], b[:2])
    v = list(map(int, a[2:]))
    sums = [sum(v[m::3]) for m in range(3)]
    assert sums == list(map(int, b[2:])), "interval %s: the stacked series add up to %s, the filter's is %s" % (a[0], sums, b[2:])
print("ok %s: %d values + other" % (sys.argv[4], len(want)))
EOF
  # the first value's series against the rows of bitarc query, summed
  cut -d, -f1-5 "$tmp/s.csv" > "$tmp/s1.csv"
  sum_query "$tmp/want1.csv" "$tmp/s1.csv" flows,packets,bytes "($filt) and $term"
  values "$tmp/s1.csv" > "$tmp/got1.csv"
  cmp -s "$tmp/got1.csv" "$tmp/want1.csv" || bad "$label: the first value's series differs from bitarc query's rows"
}
top1() { # STAT N FILTER -> the filter term of -s's first value (from query -s)
  "$B" query -r "$tmp/fl" -s "$1" -n "$2" -o csv "$3" | sed -n 2p | cut -d, -f5
}
p=$(top1 dstport/bytes 5 'proto tcp'); topcheck "top dst ports by bytes" dstport/bytes 5 "dst port $p" 'proto tcp'
a=$(top1 srcip 4 any); topcheck "top source hosts" srcip 4 "src ip $a" any
topcheck "top protocols" proto 3 "proto 6" any
a=$(top1 dstip4/24/packets 3 'dst port 443'); topcheck "top /24 destinations by packets" dstip4/24/packets 3 \
  "dst net $a/24" 'dst port 443'
if command -v gnuplot >/dev/null; then
  "$B" graph -r "$tmp/fl" --bin 5m -s dstport -n 4 'proto udp' --out "$tmp/top.svg" || bad "stacked svg exit $?"
  grep -q '<svg' "$tmp/top.svg" && grep -q 'other' "$tmp/top.svg" || bad "stacked svg: no SVG or no 'other' series"
fi

# bad input: exit 2, the input named
expect2() { # expect2 "text" args...
  local want=$1; shift
  "$B" graph "$@" > /dev/null 2> "$tmp/err"; local rc=$?
  [ $rc -eq 2 ] || { bad "graph $*: exit $rc, want 2 ($(head -2 "$tmp/err"))"; return; }
  grep -qF -- "$want" "$tmp/err" || bad "graph $*: error '$(head -2 "$tmp/err")' does not name '$want'"
}
expect2 "'0'" -r "$tmp/fl" --bin 0
expect2 "'soon'" -r "$tmp/fl" --bin soon
expect2 "'hops'" -r "$tmp/fl" --measure flows,hops
expect2 "'gif'" -r "$tmp/fl" -o gif
expect2 "'7x'" -r "$tmp/fl" -o png --size 7x --out "$tmp/s.png"
expect2 "'yesterday'" -r "$tmp/fl" -t yesterday
expect2 "'proto tcp and'" -r "$tmp/fl" 'proto tcp and'
expect2 "$tmp/none" -r "$tmp/none"
expect2 "-r DIR" any
expect2 "'extra'" -r "$tmp/fl" -l a -l extra 'proto tcp'
expect2 "'9'" -r "$tmp/fl" --threads 9
expect2 "--bin" -r "$tmp/fl" -t 2024/07/01.00:00-2024/07/31.00:00 --bin 1s
expect2 "'ip'" -r "$tmp/fl" -s ip
expect2 "'pps'" -r "$tmp/fl" -s dstport/pps
expect2 "one FILTER" -r "$tmp/fl" -s dstport 'proto tcp' 'proto udp'
expect2 "only with -s" -r "$tmp/fl" -n 5
expect2 "'40'" -r "$tmp/fl" -s srcport -n 40
"$B" graph --help | grep -q 'bitarc graph -r' || bad "--help has no example"

[ $nfail -eq 0 ] || { echo "$nfail failures"; exit 1; }
echo "ok"
