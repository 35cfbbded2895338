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

static int cmp_tkey(const void *a, const void *b) {
  const tkey_t *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

int deliver_time_order(runctx_t *run, const ba_record_t *recs, size_t n) {
  if (n == 0) return 0;
  tkey_t *k = ba_malloc(n * sizeof *k);
  ba_record_t *batch = ba_malloc(BA_MIN(n, (size_t)4096) * sizeof *batch);
  int rc = k && batch ? 0 : BA_ERR_NOMEM;
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) k[i] = (tkey_t){recs[i].first_ns, i};
    qsort(k, n, sizeof *k, cmp_tkey);
  }
  for (size_t i = 0; rc == 0 && i < n; i += 4096) {
    size_t m = BA_MIN(n - i, (size_t)4096);
    for (size_t j = 0; j < m; j++) batch[j] = recs[k[i + j].i];
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
