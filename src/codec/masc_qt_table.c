/* MASC query table, and the range selection of MASC bitmaps through it:
 * see masc_qt_table.h. */
#include <stdatomic.h>

#include "codec/masc_qt_table.h"
#include "codec/bitmap_internal.h"
#include "codec/masc_impl.h"

struct ba_masc_qt_table {
  int qt;
  size_t nwords;
  uint64_t *start; /* nwords + 1 entries; start[nwords] = row count */
  uint64_t *tag;   /* bit i: word i holds ones */
};

int ba_masc_qt_table_build(ba_codec_t codec, const uint32_t *words, size_t nwords,
                           ba_masc_qt_table_t **out) {
  BA_RETURN_IF(codec != BA_CODEC_MASC && codec != BA_CODEC_MASC_QT, BA_ERR_INVALID);
  BA_RETURN_IF(!out || (nwords && !words), BA_ERR_INVALID);
  BA_RETURN_IF(nwords > SIZE_MAX / sizeof(uint64_t) - 64, BA_ERR_NOMEM);
  *out = NULL;
  ba_masc_qt_table_t *t = ba_calloc(1, sizeof *t);
  if (!t) return BA_ERR_NOMEM;
  t->qt = codec == BA_CODEC_MASC_QT;
  t->nwords = nwords;
  t->start = ba_malloc((nwords + 1) * sizeof *t->start);
  t->tag = ba_calloc(nwords / 64 + 1, sizeof *t->tag);
  int rc = BA_ERR_NOMEM;
  if (!t->start || !t->tag) goto fail;
  uint64_t at = 0;
  for (size_t i = 0; i < nwords; i++) {
    int v;
    uint64_t len;
    uint32_t carry;
    if ((rc = ba_masc_word(words[i], t->qt, &v, &len, &carry)) < 0) goto fail;
    t->start[i] = at;
    len += carry;
    rc = BA_ERR_OVERFLOW;
    if (len > UINT64_MAX - at) goto fail;
    at += len;
    if (v || carry) t->tag[i / 64] |= (uint64_t)1 << (i % 64);
  }
  t->start[nwords] = at;
  *out = t;
  return BA_OK;
fail:
  ba_masc_qt_table_free(t);
  return rc;
}

void ba_masc_qt_table_free(ba_masc_qt_table_t *t) {
  if (!t) return;
  ba_free(t->start);
  ba_free(t->tag);
  ba_free(t);
}

uint64_t ba_masc_qt_table_rows(const ba_masc_qt_table_t *t) { return t->start[t->nwords]; }

size_t ba_masc_qt_table_seek(const ba_masc_qt_table_t *t, uint64_t row) {
  if (row >= t->start[t->nwords]) return t->nwords;
  size_t lo = 0, hi = t->nwords - 1; /* start[lo] <= row < start[hi + 1] */
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (t->start[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Next tagged word index >= i, or nwords. */
static size_t qt_next_tagged(const ba_masc_qt_table_t *t, size_t i) {
  while (i < t->nwords) {
    uint64_t m = t->tag[i / 64] >> (i % 64);
    if (m) return i + ba_ctz64(m);
    i = (i / 64 + 1) * 64;
  }
  return t->nwords;
}

/* The set rows of tagged word i: [end - ones, end), where end = start[i + 1]
 * (a 1-fill's ones fill the word; a carried word's ones follow its zeros). */
static void qt_ones(const ba_masc_qt_table_t *t, const uint32_t *words, size_t i, uint64_t *lo, uint64_t *hi) {
  int v = 0;
  uint64_t len = 0;
  uint32_t carry = 0;
  (void)ba_masc_word(words[i], t->qt, &v, &len, &carry); /* validated by build */
  *hi = t->start[i + 1];
  *lo = *hi - (v ? len : carry);
}

/* Calls fn(ctx, lo, hi) for the non-empty ranges of set rows within [a, b), in order. */
static int qt_walk(const ba_masc_qt_table_t *t, const uint32_t *words, uint64_t a, uint64_t b,
                   int (*fn)(void *ctx, uint64_t lo, uint64_t hi), void *ctx) {
  b = BA_MIN(b, t->start[t->nwords]);
  if (a >= b) return BA_OK;
  for (size_t i = qt_next_tagged(t, ba_masc_qt_table_seek(t, a)); i < t->nwords && t->start[i] < b;
       i = qt_next_tagged(t, i + 1)) {
    uint64_t lo, hi;
    qt_ones(t, words, i, &lo, &hi);
    lo = BA_MAX(lo, a);
    hi = BA_MIN(hi, b);
    if (hi > lo) {
      int rc = fn(ctx, lo, hi);
      if (rc) return rc;
    }
  }
  return BA_OK;
}

typedef struct {
  ba_rows_fn fn;
  void *ctx;
  size_t n;
  uint64_t buf[256];
} qt_rows_t;

static int qt_rows_range(void *ctx, uint64_t lo, uint64_t hi) {
  qt_rows_t *q = ctx;
  for (uint64_t r = lo; r < hi; r++) {
    q->buf[q->n++] = r;
    if (q->n == BA_ARRAY_LEN(q->buf)) {
      int rc = q->fn(q->ctx, q->buf, q->n);
      if (rc) return rc;
      q->n = 0;
    }
  }
  return 0;
}

int ba_masc_qt_table_select(const ba_masc_qt_table_t *t, const uint32_t *words, uint64_t a, uint64_t b,
                            ba_rows_fn fn, void *ctx) {
  qt_rows_t q;
  q.fn = fn;
  q.ctx = ctx;
  q.n = 0;
  int rc = qt_walk(t, words, a, b, qt_rows_range, &q);
  if (rc) return rc;
  return q.n ? fn(ctx, q.buf, q.n) : BA_OK;
}

static int qt_count_range(void *ctx, uint64_t lo, uint64_t hi) {
  *(uint64_t *)ctx += hi - lo;
  return 0;
}

uint64_t ba_masc_qt_table_count(const ba_masc_qt_table_t *t, const uint32_t *words, uint64_t a, uint64_t b) {
  uint64_t n = 0;
  (void)qt_walk(t, words, a, b, qt_count_range, &n);
  return n;
}

/* ---- range selection of a MASC bitmap (ops->range_rows, range_count) ---- */

/* Below BA_MASC_QT_MIN_WORDS words a linear walk is as fast as building the
 * table (bench/codec_fast: 16 windows over the rank-0 real-data bitmap,
 * 10k+ words, 4.6k -> 104.8k walks/s with the table). */
static const ba_masc_qt_table_t *ms_table(const ba_bitmap_t *bm) {
  if (bm->group || bm->vec.n < BA_MASC_QT_MIN_WORDS) return NULL;
  ba_bitmap_t *m = (ba_bitmap_t *)bm; /* the cache is not part of the value */
  void *t = atomic_load_explicit(&m->cache, memory_order_acquire), *none = NULL;
  if (t) return (const ba_masc_qt_table_t *)t;
  ba_masc_qt_table_t *nt;
  if (ba_masc_qt_table_build(bm->ops->id, (const uint32_t *)bm->vec.w, bm->vec.n, &nt) < 0) return NULL;
  if (!atomic_compare_exchange_strong(&m->cache, &none, (void *)nt)) {
    ba_masc_qt_table_free(nt);
    return (const ba_masc_qt_table_t *)none;
  }
  return nt;
}

int ba_masc_range_rows(const ba_bitmap_t *bm, uint64_t from, uint64_t to, ba_rows_fn fn, void *ctx,
                       int *done) {
  const ba_masc_qt_table_t *t = ms_table(bm);
  *done = t != NULL;
  return t ? ba_masc_qt_table_select(t, (const uint32_t *)bm->vec.w, from, to, fn, ctx) : BA_OK;
}

int ba_masc_range_count(const ba_bitmap_t *bm, uint64_t from, uint64_t to, uint64_t *out, int *done) {
  const ba_masc_qt_table_t *t = ms_table(bm);
  *done = t != NULL;
  if (t) *out = ba_masc_qt_table_count(t, (const uint32_t *)bm->vec.w, from, to);
  return BA_OK;
}

void ba_masc_cache_free(void *cache) { ba_masc_qt_table_free((ba_masc_qt_table_t *)cache); }
