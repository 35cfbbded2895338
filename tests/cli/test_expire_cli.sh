#!/usr/bin/env bash
# bitarc expire: the size limit deletes the oldest segments first and reports
# them; a dry run deletes nothing and names the same segments; the age limit
# against segment slices; bad arguments are named and exit 2.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B" ingest --store "$tmp/st" --slice 60 "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
mapfile -t segs < <(cd "$tmp/st" && ls seg-*.bitarc | sort)   # names sort by slice start
[ ${#segs[@]} -ge 4 ] || fail "want >= 4 segments, got ${#segs[@]}"
total=0; for s in "${segs[@]}"; do total=$((total + $(stat -c %s "$tmp/st/$s"))); done
limit=$((total / 2))
# reference: drop the oldest until the rest fits
want=(); left=$total
for s in "${segs[@]}"; do
  [ $left -gt $limit ] || break
  want+=("$s"); left=$((left - $(stat -c %s "$tmp/st/$s")))
done

"$B" expire --store "$tmp/st" --max-size $limit --dry-run >"$tmp/dry"
got=$(awk '$1 == "would" && $2 == "delete" && $3 ~ /^seg-/ {print $3}' "$tmp/dry")
[ "$got" = "$(printf '%s\n' "${want[@]}")" ] || fail "dry run named: $got; want: ${want[*]}"
[ "$(ls "$tmp/st"/seg-*.bitarc | wc -l)" -eq ${#segs[@]} ] || fail "a dry run deleted something"

"$B" expire --store "$tmp/st" --max-size $limit -o json >"$tmp/json"
python3 - "$tmp/json" ${#want[@]} $left <<'PY' || fail "json report: $(cat "$tmp/json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["segments_deleted"] == int(sys.argv[2]) == len(j["deleted"]), j
assert j["bytes_after"] == int(sys.argv[3]) and j["size_limit_met"], j
assert all(d["reason"] == "size" for d in j["deleted"]), j
PY
for s in "${want[@]}"; do [ ! -e "$tmp/st/$s" ] || fail "$s was not deleted"; done
"$B" verify --store "$tmp/st" -q || fail "the store does not verify after expire"

# Age: these captures are years old, so 1 day deletes every segment.
"$B" expire --store "$tmp/st" --max-age 1d -q >"$tmp/out"
[ -z "$(ls "$tmp/st"/seg-*.bitarc 2>/dev/null)" ] || fail "--max-age 1d left segments"
grep -q "^deleted .* segments" "$tmp/out" || fail "no summary: $(cat "$tmp/out")"

# Bad arguments: exit 2, the offending input named.
check() { # check "expected text" args...
  local want=$1; shift
  set +e; "$B" expire "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "expire $*: exit $rc, want 2"
  grep -qF -- "$want" "$tmp/e" || fail "expire $*: error '$(cat "$tmp/e")' does not name '$want'"
}
check "'30x'" --store "$tmp/st" --max-age 30x
check "'12Q'" --store "$tmp/st" --max-size 12Q
check "'-5'" --store "$tmp/st" --max-size -5
check "--store" --max-age 1d
check "--max-age" --store "$tmp/st"
check "'extra'" --store "$tmp/st" --max-age 1d extra
check "$tmp/none" --store "$tmp/none" --max-age 1d
check "'xml'" --store "$tmp/st" --max-age 1d -o xml
"$B" expire --help | grep -- "--max-size SIZE" >/dev/null || fail "--help"
echo "ok"
