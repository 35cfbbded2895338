#!/usr/bin/env bash
# The CUDA back end is a module loaded only for --device gpu: the bitarc
# binary and libbitarc.so never need libcudart; a module that cannot be
# loaded is reported naming the missing file or library (exit 2); the module
# is found beside the binary, in an install's lib/.../bitarc/ folder, or from
# $BITARC_GPU_MODULE. (That gpu results equal the CPU's is test_gpu_build's.)
set -euo pipefail
B=${BITARC:?}
BIN=$(dirname "$B")
MOD=${BITARC_GPU_MODULE:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$B" "$BIN"/libbitarc.so.0; do
  [ -e "$f" ] || continue
  ! readelf -d "$f" | grep -i "NEEDED.*cuda" || fail "$f needs the CUDA runtime"
done
gpu() { # runs a gpu bench with env arguments: its stderr in $out, its exit status in $rc
  set +e; env "$@" "$B" bench build --device gpu --rows 1000 >/dev/null 2>"$tmp/err"; rc=$?; set -e
  out=$(cat "$tmp/err")
}
if ! grep -q "BA_HAVE_CUDA 1" "$BIN/generated/bitarc_config.h"; then
  gpu BITARC_GPU_MODULE="$MOD"
  [ $rc -eq 2 ] && grep -q "built without CUDA" <<<"$out" || fail "no CUDA build: exit $rc: $out"
  echo "ok (built without CUDA)"; exit 0
fi
[ -f "$MOD" ] || fail "CUDA build but no module at $MOD"
readelf -d "$MOD" | grep "NEEDED.*libcudart" >/dev/null || fail "the module does not link libcudart"

# A path that does not exist is named.
gpu BITARC_GPU_MODULE="$tmp/nowhere/libbitarc-cuda.so"
[ $rc -eq 2 ] && grep -q "$tmp/nowhere/libbitarc-cuda.so" <<<"$out" || fail "missing module: exit $rc: $out"
# A module whose library is missing: dlopen's message names the library.
printf 'int ba_missing_fn(void) { return 1; }\n' >"$tmp/dep.c"
printf 'int ba_missing_fn(void);\nint use(void) { return ba_missing_fn(); }\n' >"$tmp/mod.c"
cc -shared -fPIC -o "$tmp/libcudart_gone.so" "$tmp/dep.c"
cc -shared -fPIC -o "$tmp/libbitarc-cuda.so" "$tmp/mod.c" -L"$tmp" -lcudart_gone
rm "$tmp/libcudart_gone.so"
gpu BITARC_GPU_MODULE="$tmp/libbitarc-cuda.so"
[ $rc -eq 2 ] && grep -q "libcudart_gone.so" <<<"$out" || fail "module with a missing library: exit $rc: $out"
# A library that is no bitarc module.
cc -shared -fPIC -o "$tmp/libnot.so" "$tmp/dep.c"
gpu BITARC_GPU_MODULE="$tmp/libnot.so"
[ $rc -eq 2 ] && grep -q "not a bitarc CUDA module" <<<"$out" || fail "foreign library: exit $rc: $out"
# The real module loads (no GPU here: the CUDA runtime's own answer, or a GPU).
gpu BITARC_GPU_MODULE="$MOD"
[ $rc -eq 0 ] || grep -q "no CUDA device" <<<"$out" || fail "real module: exit $rc: $out"
# Found without the variable: beside the binary, and in an install layout.
gpu -u BITARC_GPU_MODULE
[ $rc -eq 0 ] || grep -q "no CUDA device" <<<"$out" || fail "module beside the binary: exit $rc: $out"
rel=$(sed -n 's/#define BA_GPU_MODULE_FROM_BINDIR "\(.*\)"/\1/p' "$BIN/generated/bitarc_config.h")
mkdir -p "$tmp/inst/bin" "$tmp/inst/bin/$rel"
cp "$B" "$tmp/inst/bin/bitarc"
out=$(set +e; env -u BITARC_GPU_MODULE "$tmp/inst/bin/bitarc" bench build --device gpu --rows 1000 2>&1 >/dev/null || true)
grep -q "CUDA module libbitarc-cuda.so not found" <<<"$out" || fail "install layout without the module: $out"
cp "$MOD" "$tmp/inst/bin/$rel/"
out=$(set +e; env -u BITARC_GPU_MODULE "$tmp/inst/bin/bitarc" bench build --device gpu --rows 1000 2>&1 >/dev/null || true)
grep -q "no CUDA device" <<<"$out" || [ -z "$out" ] || fail "install layout: $out"
echo "ok"
