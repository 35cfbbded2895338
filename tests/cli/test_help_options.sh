#!/usr/bin/env bash
# Every option a subcommand accepts (read from its getopt table in the
# source) is listed by its --help on a line that gives its default (or says
# it is required); bad values and unknown arguments exit 2 with an error that
# names the offending input. collect and query belong to other tests.
set -euo pipefail
B=${BITARC:?}
SRC=${BA_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

long_opts() { # long option names of the getopt tables in the given files
  grep -ohE '\{"[a-z0-9-]+", *([0-9]|no_argument|required_argument|optional_argument)' "$@" |
    sed -E 's/^\{"([^"]+)".*/\1/' | sort -u
}
check_help() { # check_help NAME HELPFILE SOURCES...
  local name=$1 help=$2; shift 2
  local n=0
  for o in $(long_opts "$@"); do
    [ "$o" = help ] && { grep -qE -- "--help" "$help" || fail "$name --help does not list --help"; continue; }
    line=$(grep -E -- "^ +(-[a-zA-Z], +)?--$o([ =]|$)" "$help" | head -1) ||
      fail "$name --help does not list --$o"
    grep -qE "default|required" <<<"$line" || fail "$name --help: --$o gives no default: '$line'"
    n=$((n + 1))
  done
  [ $n -ge 1 ] || fail "$name: no options found in its source"
  echo "$name: $n options listed with defaults"
}
for c in stat verify expire reindex bitmap graph; do
  "$B" $c --help >"$tmp/$c.help" || fail "$c --help exit $?"
  check_help $c "$tmp/$c.help" "$SRC/src/cli/cmd_$c.c"
done
"$B" ingest --help >"$tmp/ingest.help"
check_help ingest "$tmp/ingest.help" "$SRC/src/cli/cmd_ingest.c" "$SRC/src/cli/cli.h"
"$B" bench build --help >"$tmp/bench.help"
"$B" bench range --help >>"$tmp/bench.help"
"$B" bench build --online --help >>"$tmp/bench.help"
check_help bench "$tmp/bench.help" "$SRC/src/cli/cmd_bench.c"
"$B" bench --help | grep "range" >/dev/null || fail "bench --help"

# Bad input: exit 2 and the input named.
"$B" ingest --store "$tmp/st" "$SRC/data/cesnet-mixed.pcap" >/dev/null 2>&1 || fail "ingest"
bad() { # bad "text the error must contain" command args...
  local want=$1; shift
  set +e; "$B" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "bitarc $*: exit $rc, want 2 ($(cat "$tmp/err"))"
  grep -qF -- "$want" "$tmp/err" || fail "bitarc $*: error '$(head -3 "$tmp/err")' does not name '$want'"
}
bad "nosuch" nosuch
bad "$tmp/missing.pcap" ingest --store "$tmp/st2" "$tmp/missing.pcap"
echo "not a capture" >"$tmp/notes.txt"
bad "$tmp/notes.txt: not a pcap/pcapng capture" ingest --dry-run "$tmp/notes.txt"
set +e; "$B" ingest --dry-run --report json "$tmp/notes.txt" >"$tmp/json" 2>/dev/null; set -e
grep -qF '"status":"not a pcap/pcapng capture"' "$tmp/json" || fail "ingest --report json: status of a non-capture: $(head -c 300 "$tmp/json")"
bad "'bogus'" ingest --store "$tmp/st2" --codec bogus "$SRC/data/cesnet-mixed.pcap"
bad "'lots'" ingest --store "$tmp/st2" --threads lots "$SRC/data/cesnet-mixed.pcap"
bad "'5y'" ingest --store "$tmp/st2" --slice 5y "$SRC/data/cesnet-mixed.pcap"
bad "--store" ingest "$SRC/data/cesnet-mixed.pcap"
bad "$tmp/none" stat --store "$tmp/none"
# a store path with a quote and a backslash stays valid JSON
mkdir "$tmp/q\"b\\s" && cp -r "$tmp/st/." "$tmp/q\"b\\s/"
"$B" stat --store "$tmp/q\"b\\s" -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["store"].endswith("q\"b\\s"), d["store"]' || fail "stat -o json of an odd store path"
bad "'xml'" stat --store "$tmp/st" -o xml
bad "'extra'" stat --store "$tmp/st" extra
bad "--store" stat
bad "$tmp/none" verify --store "$tmp/none"
bad "'extra'" verify --store "$tmp/st" extra
bad "'bogus'" reindex --store "$tmp/st" --codec bogus
bad "'99'" reindex --store "$tmp/st" --codec plwah --threads 99
bad "'tpu'" reindex --store "$tmp/st" --codec plwah --device tpu
bad "--codec" reindex --store "$tmp/st"
bad "'extra'" reindex --store "$tmp/st" --codec plwah extra
bad "'bogus'" bitmap encode --codec bogus
bad "'ten'" bitmap decode --codec wah32 --rows ten
bad "'frobnicate'" bitmap frobnicate --codec wah32
bad "'abc'" bench build --rows abc
bad "'0'" bench build --repeat 0
bad "'tpu'" bench build --device tpu
bad "'bogus'" bench build --codecs wah32,bogus
bad "'x'" bench range --bins x
bad "'1,y'" bench range --sizes 1,y
bad "'nosuch'" bench nosuch
bad "'abc'" bench build --online --rows abc
bad "$tmp/none/st: mkdir: No such file or directory" ingest --store "$tmp/none/st" "$SRC/data/cesnet-mixed.pcap"
if command -v flock >/dev/null; then # a second writer is refused, and told why
  flock "$tmp/st/.lock" sleep 30 & lpid=$!
  for _ in $(seq 1 100); do flock -n "$tmp/st/.lock" true || break; sleep 0.05; done
  bad "another writer holds it" ingest --store "$tmp/st" "$SRC/data/cesnet-mixed.pcap"
  kill $lpid; wait $lpid 2>/dev/null || true
fi
bad "'0'" bench build --online --group 0
bad "'2x'" bench build --online --repeat 2x
bad "'bogus'" bench build --online --codecs plwah,bogus
bad "at most 16" bench range --sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
bad "'3'" query -r "$tmp/st" --threads 3 any
bad "'mars'" query -r "$tmp/st" --tz mars any
bad "'mars'" graph -r "$tmp/st" --tz mars
bad "'2x'" graph -r "$tmp/st" --threads 2x
bad "'$tmp/st' with -M" graph -r "$tmp/st" -M "$tmp/a:b"
bad "'yesterday'" graph -r "$tmp/st" -t yesterday
echo "ok"
