/* Time order for clustered segments (doc/format.md §7.9): their rows are in
 * address-cluster order, so the records a query delivers from one are first
 * gathered (frames copied), sorted by first_ns stably, and then handed to
 * run_sink (residual check, limit, totals) in that order. At most
 * g_order_max records are held: more candidates are delivered in slabs of
 * first-time ranges, one read of the candidates per slab after one read of
 * their first times. Counts, bins and aggregates of column vectors never
 * come here: they need no order. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "query/plan_int.h"

int tbuf_reserve(tbuf_t *b, uint64_t n) {
  if (n <= b->cap || n > ((size_t)1 << 40) / sizeof *b->recs) return 0;
  BA_FORWARD(ba_grow((void **)&b->recs, &b->cap, (size_t)n, sizeof *b->recs));
  /* Hundreds of MB for a broad query: 2 MB pages fault 512x less often. */
  uintptr_t a = ((uintptr_t)b->recs + 4095) & ~(uintptr_t)4095, e = (uintptr_t)(b->recs + b->cap) & ~(uintptr_t)4095;
  if (e > a + (2u << 20)) madvise((void *)a, e - a, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  /* The n records' pages in one call rather than a page fault each (a
   * third of a selective csv query's time on 10 M flows); an older kernel
   * refuses it and the pages fault in as before. */
  uintptr_t u = (uintptr_t)(b->recs + n) & ~(uintptr_t)4095;
  if (u > a) madvise((void *)a, u - a, MADV_POPULATE_WRITE);
#endif
  return 0;
}

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
_Static_assert(sizeof(tkey_t) == 2 * sizeof(uint64_t), "ba_radix_sort sorts tkey_t as two words");

/* Records handed to run_sink at once: small enough to stay in the cache and
 * on the heap's reused pages (4,096, 1.4 MB, cost a page fault per 4 KB). */
#define ORDER_BATCH 256

int deliver_time_order(runctx_t *run, const ba_record_t *recs, size_t n) {
  if (n == 0) return 0;
  tkey_t *k = ba_malloc(2 * n * sizeof *k);
  ba_record_t *batch = ba_malloc(BA_MIN(n, (size_t)ORDER_BATCH) * sizeof *batch);
  int rc = k && batch ? 0 : BA_ERR_NOMEM;
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) k[i] = (tkey_t){recs[i].first_ns, i};
    ba_radix_sort(&k[0].first, &k[n].first, n, 2, 0, 0, 64); /* by first, stable */
  }
  for (size_t i = 0; rc == 0 && i < n; i += ORDER_BATCH) {
    size_t m = BA_MIN(n - i, (size_t)ORDER_BATCH);
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

/* ---------- bounded: slabs of first-time ranges ---------- */

static uint64_t g_order_max = (uint64_t)1 << 21; /* records held at once: about 720 MB */

void query_set_order_max(uint64_t rows) { g_order_max = rows ? rows : 1; }

typedef struct feed {
  ba_segment_t *seg;
  const ba_bitmap_t *bm; /* NULL: every row */
  uint32_t block_rows;
  int threads;
  uint64_t blocks, damaged;
} feed_t;

static int feed_run(feed_t *f, uint32_t cols, ba_record_sink_fn sink, void *ctx, int count) {
  uint64_t nb = 0, dmg = 0;
  int rc = f->bm ? fetch_rows(f->seg, f->bm, cols, f->block_rows, sink, ctx, f->threads, &nb, &dmg)
                 : ba_segment_scan(f->seg, cols, sink, ctx, &dmg);
  f->blocks += nb;
  if (count) f->damaged += dmg; /* damage counted once, not per pass */
  return rc;
}

typedef struct firsts {
  uint64_t *v;
  size_t n, cap;
} firsts_t;

static int firsts_sink(void *ctx, const ba_record_t *recs, size_t n) {
  firsts_t *f = ctx;
  BA_FORWARD(ba_grow((void **)&f->v, &f->cap, f->n + n, sizeof *f->v));
  for (size_t i = 0; i < n; i++) f->v[f->n + i] = recs[i].first_ns;
  f->n += n;
  return 0;
}

typedef struct slab {
  tbuf_t tb;
  uint64_t lo, hi; /* first times [lo, hi), or [lo, max] when last */
  int last;
} slab_t;

static int slab_sink(void *ctx, const ba_record_t *recs, size_t n) {
  slab_t *s = ctx;
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && recs[j].first_ns >= s->lo && (s->last || recs[j].first_ns < s->hi)) j++;
    if (j > i) BA_FORWARD(tbuf_sink(&s->tb, recs + i, j - i));
    i = j + (j < n); /* skip one outside the slab */
  }
  return 0;
}

int deliver_clustered(ba_segment_t *seg, const ba_bitmap_t *bm, uint64_t ncand, uint32_t cols, uint32_t block_rows,
                      int threads, runctx_t *run, uint64_t *blocks, uint64_t *damaged) {
  feed_t f = {seg, bm, block_rows, threads, 0, 0};
  int rc;
  if (ncand <= g_order_max) {
    tbuf_t tb = {0};
    rc = tbuf_reserve(&tb, ncand);
    if (rc == 0) rc = feed_run(&f, cols, tbuf_sink, &tb, 1);
    if (rc == 0) rc = tbuf_deliver(&tb, run);
    tbuf_free(&tb);
  } else {
    firsts_t fs = {0};
    uint64_t *tmp = NULL;
    rc = feed_run(&f, BA_COL_FIRST, firsts_sink, &fs, 1);
    if (rc == 0 && fs.n && !(tmp = ba_malloc(fs.n * sizeof *tmp))) rc = BA_ERR_NOMEM;
    if (rc == 0) ba_radix_sort(fs.v, tmp, fs.n, 1, 0, 0, 64);
    ba_free(tmp);
    for (size_t start = 0; rc == 0 && start < fs.n;) {
      size_t end = BA_MIN(start + (size_t)g_order_max, fs.n);
      while (end < fs.n && fs.v[end] == fs.v[end - 1]) end++; /* equal first times stay in one slab */
      slab_t s = {.lo = fs.v[start], .hi = end < fs.n ? fs.v[end] : 0, .last = end == fs.n};
      rc = tbuf_reserve(&s.tb, end - start);
      if (rc == 0) rc = feed_run(&f, cols, slab_sink, &s, 0);
      if (rc == 0) rc = tbuf_deliver(&s.tb, run);
      tbuf_free(&s.tb);
      start = end;
    }
    ba_free(fs.v);
  }
  *blocks += f.blocks;
  *damaged += f.damaged;
  return rc;
}
