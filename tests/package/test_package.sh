#!/usr/bin/env bash
# The Debian package: builds the .debs from a copy of the source with
# `dpkg-buildpackage -b -us -uc`, installs them, and checks what an admin and
# a developer get: `bitarc --version`, `man bitarc` (and a page per command),
# `pkg-config --cflags --libs bitarc`, a C program built against the installed
# library (shared and static) that writes a store and counts a query, the
# systemd units, bash completion, and no CUDA runtime in the binary or the
# library. The packages are purged at the end. Needs root (dpkg -i): skipped,
# saying so, otherwise.
set -euo pipefail
SRC=${BA_SOURCE_DIR:?}
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: installing the .deb needs root (run as root, as CI does)"
  exit 77
fi
for t in dpkg-buildpackage dh help2man pkg-config man cc; do
  command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/deps.sh installs it)" >&2; exit 1; }
done
tmp=$(mktemp -d)
pkgs="bitarc libbitarc0 libbitarc0-omp libbitarc-dev python3-bitarc"
cleanup() {
  apt-get purge -y -qq -o DPkg::Lock::Timeout=600 $pkgs >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(sed -n 's/^project(bitarc VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")

# A copy of the source: dpkg-buildpackage writes its .debs next to the tree.
mkdir "$tmp/src"
tar -C "$SRC" --exclude='./build*' --exclude='./land-src' --exclude='./obj-*' --exclude=./.git \
  --exclude='./debian/tmp' -cf - . | tar -C "$tmp/src" -xf -
t0=$(date +%s)
(cd "$tmp/src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1) \
  || { tail -40 "$tmp/build.log"; fail "dpkg-buildpackage"; }
t1=$(date +%s)
echo "dpkg-buildpackage: $((t1 - t0)) s"
ls "$tmp"/*.deb
for p in $pkgs; do ls "$tmp"/${p}_${version}_*.deb >/dev/null || fail "no $p .deb"; done

# The library package needs neither OpenMP nor the C++ runtime: the omp
# module and what it needs are libbitarc0-omp's.
lib_deps=$(dpkg-deb -f "$tmp"/libbitarc0_*.deb Depends)
! grep -E "libgomp|libstdc\+\+" <<<"$lib_deps" >/dev/null || fail "libbitarc0 depends on the omp module's runtime: $lib_deps"
! dpkg-deb -c "$tmp"/libbitarc0_*.deb | grep libbitarc-omp >/dev/null || fail "libbitarc0 holds the omp module"
apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$tmp"/bitarc_*.deb "$tmp"/libbitarc0_*.deb \
  "$tmp"/libbitarc-dev_*.deb "$tmp"/python3-bitarc_*.deb >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "install"; }
# without the omp package, --device omp says what to install
if dpkg-deb -c "$tmp"/libbitarc0-omp_*.deb | grep libbitarc-omp.so >/dev/null; then
  ! env -u BITARC_OMP_MODULE /usr/bin/bitarc bench build --device omp --rows 1000 >/dev/null 2>"$tmp/omp.err" ||
    fail "--device omp ran without libbitarc0-omp installed"
  grep -i "omp" "$tmp/omp.err" >/dev/null || fail "--device omp without its module: '$(cat "$tmp/omp.err")'"
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$tmp"/libbitarc0-omp_*.deb >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "install libbitarc0-omp"; }
fi

[ "$(/usr/bin/bitarc --version)" = "bitarc $version" ] || fail "bitarc --version: $(/usr/bin/bitarc --version)"
LC_ALL=C MANPAGER=cat MANWIDTH=80 man bitarc 2>/dev/null | grep "bitarc-expire(1)" >/dev/null || fail "man bitarc"
for c in ingest collect query stat verify expire reindex bitmap bench; do
  LC_ALL=C MANPAGER=cat man bitarc-$c 2>/dev/null | grep -- "^ *bitarc $c" >/dev/null || fail "man bitarc-$c"
done
flags=$(pkg-config --cflags --libs bitarc) || fail "pkg-config"
echo "pkg-config --cflags --libs bitarc: $flags"
grep -q -- "-lbitarc" <<<"$flags" || fail "pkg-config gives no -lbitarc"

# The 20-line program, against the shared library, then the static one. For
# the static link libpcap's own private libraries (dbus, systemd) are left out:
# Debian ships no static libsystemd; ours (Libs.private) must be complete.
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer" "$SRC/tests/package/consumer.c" $flags
# ldd's output is kept whole first: `ldd | grep -q` under pipefail fails
# whenever grep exits at its match while ldd still writes (SIGPIPE).
deps=$(ldd "$tmp/consumer")
grep -E "libbitarc.so.0 => (/usr)?/lib/" <<<"$deps" >/dev/null ||
  fail "consumer does not use the installed libbitarc.so.0: $(grep libbitarc <<<"$deps" || echo 'not linked')"
"$tmp/consumer" "$tmp/store" || fail "consumer (shared)"
static=$(pkg-config --static --libs bitarc | tr ' ' '\n' | grep -v -e '^-ldbus-1$' -e '^-lsystemd$' | tr '\n' ' ')
cc -std=c11 -o "$tmp/consumer_static" "$SRC/tests/package/consumer.c" $(pkg-config --cflags bitarc) \
  -Wl,-Bstatic -lbitarc -Wl,-Bdynamic ${static/-lbitarc/} || fail "static link with pkg-config --static"
! ldd "$tmp/consumer_static" | grep libbitarc >/dev/null || fail "static consumer still uses libbitarc.so"
"$tmp/consumer_static" "$tmp/store2" || fail "consumer (static)"
/usr/bin/bitarc query -r "$tmp/store" --count 'dst port 80' | grep -x 334 >/dev/null || fail "bitarc query on the program's store"
# The Python binding finds the installed library by itself (Debian's python3:
# the package installs into its dist-packages, not into another interpreter's).
n=$(cd / && env -u BITARC_LIBRARY -u PYTHONPATH /usr/bin/python3 -c \
  "import sys, bitarc; print(bitarc.Store(sys.argv[1]).count('dst port 80').count)" "$tmp/store") ||
  fail "python3 -c 'import bitarc' after installing python3-bitarc"
[ "$n" = 334 ] || fail "bitarc (Python) counts $n, not 334"

# No CUDA runtime in the binary or the library; no libpcap, OpenMP or C++
# runtime either (loaded on use: a capture read, the omp device opened).
for f in /usr/bin/bitarc /usr/lib/*/libbitarc.so.0; do
  ! ldd "$f" | grep -i cuda >/dev/null || fail "$f links CUDA: $(ldd "$f" | grep -i cuda)"
  needed=$(readelf -d "$f")
  ! grep -iE "NEEDED.*(pcap|gomp|stdc\+\+)" <<<"$needed" || fail "$f links a library it loads on use"
done
/usr/bin/bitarc ingest --store "$tmp/pcapstore" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 ||
  fail "bitarc ingest of a capture (libpcap loaded on use)"
if ls /usr/lib/*/bitarc/libbitarc-omp.so >/dev/null 2>&1; then
  # (ctest's $BITARC_OMP_MODULE names the build tree's module: not this one)
  env -u BITARC_OMP_MODULE /usr/bin/bitarc bench build --device omp --rows 1000 >/dev/null ||
    fail "--device omp with the installed module"
  echo "omp module: $(ls /usr/lib/*/bitarc/libbitarc-omp.so)"
fi
# Units, sysusers, completion.
for u in bitarc-collect@.service bitarc-expire@.service bitarc-expire@.timer; do
  [ -f /lib/systemd/system/$u ] || fail "unit $u not installed"
done
grep -q "^ExecStart=/usr/bin/bitarc collect" /lib/systemd/system/bitarc-collect@.service || fail "collect unit ExecStart"
getent passwd bitarc >/dev/null || fail "no bitarc user after install"
bash -c 'source /usr/share/bash-completion/completions/bitarc && complete -p bitarc' >/dev/null || fail "completion"
echo "ok (build $((t1 - t0)) s, total $(( $(date +%s) - t0 )) s)"
