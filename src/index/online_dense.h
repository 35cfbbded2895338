/* The online builder's path for domains up to BA_IDX_DENSE_MAX values
 * (online_dense.c); online.c dispatches to it. Internal to the index module. */
#ifndef BA_INDEX_ONLINE_DENSE_H
#define BA_INDEX_ONLINE_DENSE_H

#include "index/index.h"

#define BA_IDX_DENSE_MAX 65536u

typedef struct ba_idx_dense ba_idx_dense_t;
int ba_idx_dense_create(ba_codec_t codec, uint32_t domain, ba_idx_dense_t **out);
void ba_idx_dense_free(ba_idx_dense_t *d);
/* The next n rows, rows_before rows having been added before them. On an
 * error the builder is spent (the caller remembers it). */
int ba_idx_dense_add(ba_idx_dense_t *d, const uint32_t *vals, size_t n, uint64_t rows_before);
/* The same for n rows without a value (vals all BA_IDX_NONE). */
int ba_idx_dense_add_absent(ba_idx_dense_t *d, size_t n, uint64_t rows_before);
/* Values seen in the batches applied so far. */
size_t ba_idx_dense_values(const ba_idx_dense_t *d);
/* Finishes every bitmap at `rows` rows (all rows added); out is filled. */
int ba_idx_dense_finish(ba_idx_dense_t *d, uint64_t rows, ba_idx_attr_t *out);
/* ba_idx_dense_finish, then ba_idx_fold(out, bins, min_rows, bin_of, codec):
 * see ba_idx_online_finish_fold. out and bins are overwritten. */
int ba_idx_dense_finish_fold(ba_idx_dense_t *d, uint64_t rows, uint64_t min_rows, ba_idx_bin_fn bin_of,
                             ba_idx_attr_t *out, ba_idx_attr_t *bins);

#endif
