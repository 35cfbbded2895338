#!/usr/bin/env bash
# Process start-up (issue 13): the bitarc binary and libbitarc.so link none of
# libpcap (and its dbus/systemd/gcrypt chain), libgomp, libstdc++ or the CUDA
# runtime, and a count query loads none of them; libpcap is loaded when a
# capture is read (a missing one is named, exit 2), the omp device's module
# libbitarc-omp.so when the omp device is opened (found beside the binary
# without $BITARC_OMP_MODULE; a missing one is named, exit 2).
set -euo pipefail
B=${BITARC:?}
BIN=$(dirname "$B")
SRC=${BA_SOURCE_DIR:?}
export OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$B" "$BIN"/libbitarc.so.0; do
  [ -e "$f" ] || fail "no $f"
  needed=$(readelf -d "$f")
  ! grep -iE "NEEDED.*(pcap|gomp|stdc\+\+|dbus|systemd|cudart)" <<<"$needed" || fail "$f links a library it should load on use"
done

# A capture is read through libpcap, loaded on use.
"$B" ingest --store "$tmp/st" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
# A query loads no libpcap, libgomp or libstdc++ (LD_DEBUG lists every object loaded).
LD_DEBUG=files "$B" query -r "$tmp/st" --count 'proto tcp' >"$tmp/count" 2>"$tmp/ld"
[ -s "$tmp/count" ] || fail "count printed nothing"
loaded=$(grep -o "file=[^ ]*" "$tmp/ld" | sort -u)
! grep -E "libpcap|libgomp|libdbus|libsystemd|libgcrypt" <<<"$loaded" || fail "a count query loads libraries it does not use"
LD_DEBUG=files "$B" query -r "$tmp/st" -o csv 'proto tcp' >/dev/null 2>"$tmp/ld"
loaded=$(grep -o "file=[^ ]*" "$tmp/ld" | sort -u)
! grep -E "libpcap|libgomp" <<<"$loaded" || fail "a csv query loads libpcap or libgomp"
LD_DEBUG=files "$B" ingest --store "$tmp/st2" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>"$tmp/ld" || fail "ingest 2"
grep -q "file=libpcap" "$tmp/ld" || fail "ingest did not load libpcap: $(grep -o 'file=[^ ]*' "$tmp/ld" | sort -u | tr '\n' ' ')"

# libpcap missing: the error names it, nothing is written, exit 2.
set +e
BITARC_LIBPCAP="$tmp/nowhere/libpcap.so.0.8" "$B" ingest --store "$tmp/st3" "$SRC/data/cesnet-mixed.pcap" \
  >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "missing libpcap: exit $rc: $(cat "$tmp/err")"
grep -q "libpcap.*$tmp/nowhere/libpcap.so.0.8" "$tmp/err" || fail "missing libpcap not named: $(cat "$tmp/err")"

# The omp device's module.
if grep -q "BA_HAVE_OMP_DEVICE 1" "$BIN/generated/bitarc_config.h"; then
  [ -f "$BIN/libbitarc-omp.so" ] || fail "OMP build but no libbitarc-omp.so"
  env -u BITARC_OMP_MODULE "$B" bench build --device omp --rows 1000 >/dev/null 2>"$tmp/err" \
    || fail "omp module beside the binary: $(cat "$tmp/err")"
  set +e
  BITARC_OMP_MODULE="$tmp/nowhere/libbitarc-omp.so" "$B" bench build --device omp --rows 1000 >/dev/null 2>"$tmp/err"
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "$tmp/nowhere/libbitarc-omp.so" "$tmp/err" || fail "missing omp module: exit $rc: $(cat "$tmp/err")"
  LD_DEBUG=files "$B" query -r "$tmp/st" --device omp --count 'dst port in [1-1023]' >/dev/null 2>"$tmp/ld" \
    || fail "omp query: $(grep -v 'file=' "$tmp/ld" | tail -3)"
  grep -q "file=.*libbitarc-omp.so" "$tmp/ld" || fail "the omp query did not load the module"
else
  set +e
  "$B" bench build --device omp --rows 1000 >/dev/null 2>"$tmp/err"
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "built without OpenMP" "$tmp/err" || fail "no OMP build: exit $rc: $(cat "$tmp/err")"
fi
echo "ok"
