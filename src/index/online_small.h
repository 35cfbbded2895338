/* The online builder's path for domains up to BA_IDX_SMALL_MAX values
 * (online_small.c); online.c dispatches to it before online_dense.c.
 * Internal to the index module. */
#ifndef BA_INDEX_ONLINE_SMALL_H
#define BA_INDEX_ONLINE_SMALL_H

#include "index/index.h"

#define BA_IDX_SMALL_MAX 256u

typedef struct ba_idx_small ba_idx_small_t;
int ba_idx_small_create(ba_codec_t codec, uint32_t domain, ba_idx_small_t **out);
void ba_idx_small_free(ba_idx_small_t *s);
/* The next n rows, rows_before rows having been added before them; vals
 * NULL: n rows without a value. On an error the builder is spent (the
 * caller remembers it). */
int ba_idx_small_add(ba_idx_small_t *s, const uint32_t *vals, size_t n, uint64_t rows_before);
/* Values seen so far. */
size_t ba_idx_small_values(const ba_idx_small_t *s);
/* Finishes every bitmap at `rows` rows (all rows added); out is filled. */
int ba_idx_small_finish(ba_idx_small_t *s, uint64_t rows, ba_idx_attr_t *out);

#endif
