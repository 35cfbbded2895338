#!/bin/sh
# Writes a man page with help2man from `bitarc [CMD] --help`: bitarc.1 when CMD
# is "-", else bitarc-CMD.1 named by the command's summary in `bitarc --help`.
# The wrapper help2man runs turns "usage:" into help2man's "Usage:" (SYNOPSIS)
# and keeps each example line on its own line.
# usage: subcommand.sh HELP2MAN BITARC CMD VERSION INCLUDE OUT
set -eu
h2m=$1 bitarc=$2 cmd=$3 version=$4 include=$5 out=$6
mkdir -p "$(dirname "$out")/bin"
if [ "$cmd" = - ]; then
  wrap=$(dirname "$out")/bin/bitarc; sub=""; set --
else
  name=$("$bitarc" --help | sed -n "s/^  $cmd  *//p")
  [ -n "$name" ] || { echo "subcommand.sh: '$cmd' is not listed by bitarc --help" >&2; exit 1; }
  wrap=$(dirname "$out")/bin/bitarc-$cmd; sub=" $cmd"; set -- --name="$name"
fi
cat >"$wrap" <<WRAP
#!/bin/sh
[ "\$1" = --help ] || exec "$bitarc"$sub "\$@"
"$bitarc"$sub --help | awk '
  /^usage:/ { sub(/^usage:/, "Usage:") }
  /^[a-z][a-z ]*:\$/ { ex = (\$0 ~ /^examples?:\$/) }
  { print } ex && /^ / { print "" }'
WRAP
chmod +x "$wrap"
exec "$h2m" --no-info --section=1 --version-string="$version" --no-discard-stderr \
  --include="$include" --output="$out" "$@" "$wrap"
