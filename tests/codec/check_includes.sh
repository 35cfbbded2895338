#!/usr/bin/env bash
# The include rules of src/codec (doc/codecs.md, "Internal structure"): each
# file may include only the codec headers listed for it, so the generic layer
# reaches codecs through their ops tables and no codec includes another's
# private header. Fails naming the file and the include that breaks a rule,
# or a file the table does not know (add it to the table with its rule).
set -euo pipefail
src=${BA_SOURCE_DIR:?set BA_SOURCE_DIR}/src/codec
declare -A allow=(
  [codec.h]=""
  [codec.c]="codec.h"
  [bitmap_internal.h]="codec.h"
  [kernel.h]="bitmap_internal.h"
  [bitmap.c]="bitmap_internal.h"
  [bmpool.h]=""
  [bmpool.c]="bitmap_internal.h bmpool.h"
  [ops.c]="kernel.h"
  [validate.c]="bitmap_internal.h"
  [wah_tmpl.h]=""
  [wah32.c]="kernel.h wah_tmpl.h"
  [wah64.c]="kernel.h wah_tmpl.h"
  [plwah.c]="kernel.h plwah_words.h"
  [plwah_words.h]=""
  [compax.c]="kernel.h"
  [masc_impl.h]="codec.h"
  [masc.c]="masc_impl.h masc_qt_table.h"
  [masc_kernels.c]="kernel.h masc_impl.h"
  [masc_qt_table.h]=""
  [masc_qt_table.c]="masc_qt_table.h bitmap_internal.h masc_impl.h"
  [ref.h]=""
  [ref.c]="ref.h"
)
bad=0
for f in "$src"/*.c "$src"/*.h; do
  name=$(basename "$f")
  if [[ -z ${allow[$name]+x} ]]; then
    echo "check_includes: src/codec/$name is not in the table of tests/codec/check_includes.sh" >&2
    bad=1
    continue
  fi
  while read -r inc; do
    [[ " ${allow[$name]} " == *" $inc "* ]] && continue
    echo "check_includes: src/codec/$name includes codec/$inc, allowed: ${allow[$name]:-none}" >&2
    bad=1
  done < <(sed -n 's/^#include "codec\/\([^"]*\)".*/\1/p' "$f")
done
[[ $bad == 0 ]] && echo "check_includes: src/codec include rules hold"
exit $bad
