/* Time order for clustered segments (doc/format.md §7.9): their rows are in
 * address-cluster order, so the records a query delivers from one are first
 * gathered (frames copied), sorted by first_ns stably, and then handed to
 * run_sink (residual check, limit, totals) in that order. Counts, bins and
 * aggregates of column vectors never come here: they need no order. */
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

int tbuf_sink(void *ctx, const ba_record_t *recs, size_t n) {
  tbuf_t *b = ctx;
  BA_FORWARD(ba_grow((void **)&b->recs, &b->cap, b->n + n, sizeof *b->recs));
  for (size_t i = 0; i < n; i++) {
    ba_record_t *d = &b->recs[b->n + i];
    *d = recs[i];
    d->frame = NULL;
    if (recs[i].frame && recs[i].caplen) {
      BA_FORWARD(ba_grow((void **)&b->frames, &b->fcap, b->flen + recs[i].caplen, 1));
      memcpy(b->frames + b->flen, recs[i].frame, recs[i].caplen);
      d->frame = (const uint8_t *)(uintptr_t)(b->flen + 1); /* offset + 1 until delivery */
      b->flen += recs[i].caplen;
    }
  }
  b->n += n;
  return 0;
}

typedef struct tkey {
  uint64_t first, i;
} tkey_t;

/* Stable LSD radix sort of k[0..n) by first (11 bits a pass; a pass where
 * every key has the same digit is skipped); the result ends in k. */
static void sort_first(tkey_t *k, tkey_t *tmp, size_t n) {
  enum { BITS = 11, NB = 1 << 11 };
  size_t cnt[NB];
  tkey_t *src = k, *dst = tmp;
  for (unsigned b = 0; b < 64; b += BITS) {
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++) cnt[(src[i].first >> b) & (NB - 1)]++;
    if (cnt[(src[0].first >> b) & (NB - 1)] == n) continue;
    size_t sum = 0;
    for (unsigned d = 0; d < NB; d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[cnt[(src[i].first >> b) & (NB - 1)]++] = src[i];
    tkey_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != k) memcpy(k, src, n * sizeof *k);
}

int deliver_time_order(runctx_t *run, const ba_record_t *recs, size_t n) {
  if (n == 0) return 0;
  tkey_t *k = ba_malloc(2 * n * sizeof *k);
  ba_record_t *batch = ba_malloc(BA_MIN(n, (size_t)4096) * sizeof *batch);
  int rc = k && batch ? 0 : BA_ERR_NOMEM;
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) k[i] = (tkey_t){recs[i].first_ns, i};
    sort_first(k, k + n, n);
  }
  for (size_t i = 0; rc == 0 && i < n; i += 4096) {
    size_t m = BA_MIN(n - i, (size_t)4096);
    for (size_t j = 0; j < m; j++) {
      if (i + j + 8 < n) __builtin_prefetch(&recs[k[i + j + 8].i]); /* the gather misses the cache */
      batch[j] = recs[k[i + j].i];
    }
    rc = run_sink(run, batch, m);
  }
  ba_free(k);
  ba_free(batch);
  return rc;
}

int tbuf_deliver(tbuf_t *b, runctx_t *run) {
  for (size_t i = 0; i < b->n; i++)
    if (b->recs[i].frame) b->recs[i].frame = b->frames + ((uintptr_t)b->recs[i].frame - 1);
  int rc = deliver_time_order(run, b->recs, b->n);
  tbuf_free(b);
  return rc;
}

void tbuf_free(tbuf_t *b) {
  ba_free(b->recs);
  ba_free(b->frames);
  memset(b, 0, sizeof *b);
}
