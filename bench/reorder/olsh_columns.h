/* bench_olsh: per-column bytes of the store's column layouts in arrival,
 * oLSH and offline-sorted order (olsh_columns.c). */
#ifndef BENCH_OLSH_COLUMNS_H
#define BENCH_OLSH_COLUMNS_H

#include "olsh_data.h"
#include "reorder/olsh.h"

void olsh_bench_columns(const recset *s, const ba_olsh_opts_t *opts);

#endif
