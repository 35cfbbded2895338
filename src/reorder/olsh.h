/* oLSH: NET-FLi's online locality-sensitive-hashing reordering buffer
 * (netfli-archive-and-index.txt §4.4, Program 1). Groups similar records so
 * column blocks and bitmap indexes compress better. Depends on nothing but the
 * record type. Records are copied in (frames included) and emitted in batches. */
#ifndef BA_OLSH_H
#define BA_OLSH_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/record.h"

typedef struct ba_olsh_opts {
  uint32_t nfuncs;          /* LSH functions summed into H1 */
  uint32_t nchains;         /* P: H1 mod P picks the chain */
  uint32_t max_block;       /* maxBlockSize */
  uint32_t mmax, mmin;      /* memory bounds in records (MMax, MMin) */
  double width;             /* bucket width w of the p-stable hash */
  uint64_t seed;            /* fixed: runs are reproducible */
} ba_olsh_opts_t;

typedef struct ba_olsh ba_olsh_t;

void ba_olsh_opts_init(ba_olsh_opts_t *o);
int ba_olsh_create(const ba_olsh_opts_t *o, ba_olsh_t **out);
void ba_olsh_free(ba_olsh_t *h);
/* Buffers records; calls emit with reordered batches whenever a bound is hit. */
int ba_olsh_push(ba_olsh_t *h, const ba_record_t *recs, size_t n, ba_record_sink_fn emit, void *ctx);
/* Emits everything still buffered (slice boundary, close). */
int ba_olsh_flush(ba_olsh_t *h, ba_record_sink_fn emit, void *ctx);
/* Records currently buffered. */
size_t ba_olsh_buffered(const ba_olsh_t *h);

#endif
