/* Generic bitmap layer: the only code that knows row-level appends. Rows are
 * cut into whole groups (FILL for homogeneous groups, LIT otherwise) for group
 * codecs, or into maximal bit runs for bit-run codecs, and fed to the codec's
 * encoder. Also: wrapping validated foreign words (validate.c), counting,
 * iteration, serialization. Boolean operations live in ops.c. Codecs are
 * reached through their ops tables only (codec.h). */
#include <stdatomic.h>
#include <string.h>

#include "codec/bitmap_internal.h"
#include "common/common.h"

#define BM_SER_HDR 20u

static inline uint64_t bm_mask(unsigned k) { return k >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << k) - 1); }

/* ---- lifecycle ---- */

int ba_bm_new(const ba_codec_ops_t *ops, ba_bitmap_t **out) {
  ba_bitmap_t *bm = (ba_bitmap_t *)ba_calloc(1, sizeof *bm);
  BA_RETURN_IF(!bm, BA_ERR_NOMEM);
  bm->ops = ops;
  bm->group = ops->group_bits;
  *out = bm;
  return BA_OK;
}

int ba_bitmap_create(ba_codec_t codec, ba_bitmap_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(codec < BA_CODEC_MIN || codec > BA_CODEC_MAX, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = ba_codec_ops(codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  return ba_bm_new(ops, out);
}

void ba_bitmap_free(ba_bitmap_t *bm) {
  if (!bm) return;
  if (bm->ops->cache_free) bm->ops->cache_free(atomic_load(&bm->cache));
  ba_wordvec_free(&bm->vec);
  if (!bm->pooled) ba_free(bm);
}

int ba_bitmap_clone(const ba_bitmap_t *bm, ba_bitmap_t **out) {
  BA_RETURN_IF(!bm || !out, BA_ERR_INVALID);
  *out = NULL;
  ba_bitmap_t *c = (ba_bitmap_t *)ba_malloc(sizeof *c);
  BA_RETURN_IF(!c, BA_ERR_NOMEM);
  memcpy(c, bm, sizeof *c);
  atomic_init(&c->cache, NULL);
  c->pooled = 0;
  c->vec.w = NULL;
  c->vec.n = c->vec.cap = 0;
  c->vec.fixed = 0;
  if (bm->vec.n) {
    int rc = ba_wordvec_reserve(&c->vec, bm->vec.n, bm->ops->word_bytes);
    if (rc < 0) {
      ba_free(c);
      return rc;
    }
    memcpy(c->vec.w, bm->vec.w, bm->vec.n * bm->ops->word_bytes);
    c->vec.n = bm->vec.n;
  }
  *out = c;
  return BA_OK;
}

/* ---- row-level appends ---- */

/* One whole group of payload `g` (first row = MSB of the G bits). */
static inline int bm_emit_group(ba_bitmap_t *bm, uint64_t g) {
  ba_tok_t t;
  t.n = 1;
  t.lit = g;
  t.kind = g == 0 ? BA_TOK_FILL0 : (g == bm_mask(bm->group) ? BA_TOK_FILL1 : BA_TOK_LIT);
  return bm->ops->put(&bm->vec, &bm->st, &t);
}

static int bm_run(ba_bitmap_t *bm, int v, uint64_t len) {
  if (len == 0) return BA_OK;
  bm->rows += len;
  if (bm->group == 0) {
    if (bm->run_len == 0 || bm->run_val == v) {
      bm->run_val = v;
      bm->run_len += len;
      return BA_OK;
    }
    ba_tok_t t = {bm->run_len, 0, (uint8_t)(bm->run_val ? BA_TOK_FILL1 : BA_TOK_FILL0)};
    bm->run_val = v;
    bm->run_len = len;
    return bm->ops->put(&bm->vec, &bm->st, &t);
  }
  unsigned G = bm->group;
  if (bm->pend_n) {
    unsigned t = G - bm->pend_n;
    if (t > len) t = (unsigned)len;
    bm->pend = (bm->pend << t) | (v ? bm_mask(t) : 0);
    bm->pend_n += t;
    len -= t;
    if (bm->pend_n < G) return BA_OK;
    uint64_t g = bm->pend;
    bm->pend = 0;
    bm->pend_n = 0;
    BA_FORWARD(bm_emit_group(bm, g));
  }
  uint64_t groups = len / G;
  unsigned r = (unsigned)(len % G);
  if (groups) {
    ba_tok_t t = {groups, 0, (uint8_t)(v ? BA_TOK_FILL1 : BA_TOK_FILL0)};
    BA_FORWARD(bm->ops->put(&bm->vec, &bm->st, &t));
  }
  bm->pend = v ? bm_mask(r) : 0;
  bm->pend_n = r;
  return BA_OK;
}

/* `nbits` (1..64) rows, MSB-first, bits above nbits already clear. */
static int bm_bits(ba_bitmap_t *bm, uint64_t bits, unsigned nbits) {
  if (bm->group == 0) {
    uint64_t x = bits << (64 - nbits);
    unsigned rem = nbits;
    while (rem) {
      int top = (int)(x >> 63);
      uint64_t y = top ? ~x : x;
      unsigned run = y ? ba_clz64(y) : 64;
      if (run > rem) run = rem;
      BA_FORWARD(bm_run(bm, top, run));
      x = run >= 64 ? 0 : x << run;
      rem -= run;
    }
    return BA_OK;
  }
  unsigned G = bm->group;
  bm->rows += nbits;
  while (nbits) {
    unsigned t = G - bm->pend_n;
    if (t > nbits) t = nbits;
    uint64_t chunk = (bits >> (nbits - t)) & bm_mask(t);
    bm->pend = (bm->pend << t) | chunk;
    bm->pend_n += t;
    nbits -= t;
    if (bm->pend_n == G) {
      uint64_t g = bm->pend;
      bm->pend = 0;
      bm->pend_n = 0;
      BA_FORWARD(bm_emit_group(bm, g));
    }
  }
  return BA_OK;
}

int ba_bitmap_append_run(ba_bitmap_t *bm, int value, uint64_t nrows) {
  BA_RETURN_IF(!bm || bm->finished || (value != 0 && value != 1), BA_ERR_INVALID);
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS - bm->rows, BA_ERR_OVERFLOW);
  return bm_run(bm, value, nrows);
}

int ba_bitmap_append_bits(ba_bitmap_t *bm, uint64_t bits, unsigned nbits) {
  BA_RETURN_IF(!bm || bm->finished || nbits == 0 || nbits > 64, BA_ERR_INVALID);
  BA_RETURN_IF(nbits > BA_BITMAP_MAX_ROWS - bm->rows, BA_ERR_OVERFLOW);
  return bm_bits(bm, bits & bm_mask(nbits), nbits);
}

int ba_bitmap_set(ba_bitmap_t *bm, uint64_t row) {
  BA_RETURN_IF(!bm || bm->finished || row < bm->rows, BA_ERR_INVALID);
  BA_RETURN_IF(row >= BA_BITMAP_MAX_ROWS, BA_ERR_OVERFLOW);
  /* Fast path: the row falls inside the open group (dense columns). */
  uint64_t step = row - bm->rows + 1;
  if (bm->group && step < bm->group - bm->pend_n) {
    bm->pend = (bm->pend << step) | 1;
    bm->pend_n += (unsigned)step;
    bm->rows = row + 1;
    return BA_OK;
  }
  BA_FORWARD(bm_run(bm, 0, row - bm->rows));
  return bm_run(bm, 1, 1);
}

int ba_bitmap_append_groups(ba_bitmap_t *bm, const uint32_t *gaps, const uint64_t *lits, size_t n) {
  BA_RETURN_IF(!bm || bm->finished || (n && (!gaps || !lits)), BA_ERR_INVALID);
  const unsigned G = bm->ops->word_bytes * 8 - 1;
  uint64_t add = 0;
  for (size_t i = 0; i < n; i++) add += ((uint64_t)gaps[i] + 1) * G; /* < 2^32 * 64 * n */
  BA_RETURN_IF(add > BA_BITMAP_MAX_ROWS - bm->rows, BA_ERR_OVERFLOW);
  const uint64_t all = bm_mask(G);
  if (bm->group != G || bm->pend_n) {
    /* bit-run codecs, or rows not on a group boundary: the row-level path */
    for (size_t i = 0; i < n; i++) {
      BA_FORWARD(bm_run(bm, 0, (uint64_t)gaps[i] * G));
      BA_FORWARD(bm_bits(bm, lits[i] & all, G));
    }
    return BA_OK;
  }
  /* whole groups straight to the encoder's inline loop (every group codec has one) */
  BA_RETURN_IF(!bm->ops->put_groups, BA_ERR_UNSUPPORTED);
  BA_FORWARD(bm->ops->put_groups(&bm->vec, &bm->st, gaps, lits, n, all));
  bm->rows += add;
  return BA_OK;
}

/* Pads to nrows (when short), closes the open group/run, flushes the encoder. */
int ba_bm_close(ba_bitmap_t *bm, uint64_t nrows) {
  if (bm->rows < nrows) BA_FORWARD(bm_run(bm, 0, nrows - bm->rows));
  if (bm->group) {
    if (bm->pend_n) {
      uint64_t g = bm->pend << (bm->group - bm->pend_n);
      bm->pend = 0;
      bm->pend_n = 0;
      BA_FORWARD(bm_emit_group(bm, g));
    }
  } else if (bm->run_len) {
    ba_tok_t t = {bm->run_len, 0, (uint8_t)(bm->run_val ? BA_TOK_FILL1 : BA_TOK_FILL0)};
    bm->run_len = 0;
    BA_FORWARD(bm->ops->put(&bm->vec, &bm->st, &t));
  }
  BA_FORWARD(bm->ops->end(&bm->vec, &bm->st));
  bm->rows = nrows;
  bm->finished = 1;
  return BA_OK;
}

int ba_bitmap_finish(ba_bitmap_t *bm, uint64_t nrows) {
  BA_RETURN_IF(!bm || bm->finished || nrows < bm->rows, BA_ERR_INVALID);
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS, BA_ERR_OVERFLOW);
  return ba_bm_close(bm, nrows);
}

/* ---- access ---- */

ba_codec_t ba_bitmap_codec(const ba_bitmap_t *bm) { return bm ? bm->ops->id : (ba_codec_t)0; }

uint64_t ba_bitmap_rows(const ba_bitmap_t *bm) { return bm ? bm->rows : 0; }

const void *ba_bitmap_words(const ba_bitmap_t *bm, size_t *nwords) {
  if (!bm || !bm->finished) {
    if (nwords) *nwords = 0;
    return NULL;
  }
  if (nwords) *nwords = bm->vec.n;
  return bm->vec.w;
}

size_t ba_bitmap_size_bytes(const ba_bitmap_t *bm) { return bm ? bm->vec.n * bm->ops->word_bytes : 0; }

/* Takes ownership of vec on success. */
static int bm_wrap(const ba_codec_ops_t *ops, ba_wordvec_t *vec, uint64_t nrows, ba_bitmap_t **out) {
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS, BA_ERR_CORRUPT);
  BA_FORWARD(ba_bm_validate(ops, vec->w, vec->n, nrows, 0));
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bm_new(ops, &bm));
  bm->vec = *vec;
  bm->rows = nrows;
  bm->finished = 1;
  vec->w = NULL;
  vec->n = vec->cap = 0;
  *out = bm;
  return BA_OK;
}

int ba_bitmap_from_words(ba_codec_t codec, const void *words, size_t nwords, uint64_t nrows,
                         ba_bitmap_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(codec < BA_CODEC_MIN || codec > BA_CODEC_MAX || (nwords && !words), BA_ERR_INVALID);
  const ba_codec_ops_t *ops = ba_codec_ops(codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  ba_wordvec_t v = {NULL, 0, 0, 0};
  if (nwords) {
    BA_FORWARD(ba_wordvec_reserve(&v, nwords, ops->word_bytes));
    memcpy(v.w, words, nwords * ops->word_bytes);
    v.n = nwords;
  }
  int rc = bm_wrap(ops, &v, nrows, out);
  ba_wordvec_free(&v);
  return rc;
}

int ba_bitmap_adopt_words(ba_codec_t codec, void *words, size_t nwords, uint64_t nrows, ba_bitmap_t **out) {
  const ba_codec_ops_t *ops = codec >= BA_CODEC_MIN && codec <= BA_CODEC_MAX ? ba_codec_ops(codec) : NULL;
  ba_wordvec_t v = {words, nwords, nwords, 0};
  int rc = !out || (nwords && !words) ? BA_ERR_INVALID : !ops ? BA_ERR_UNSUPPORTED : BA_OK;
  if (out) *out = NULL;
  if (rc == BA_OK) rc = bm_wrap(ops, &v, nrows, out);
  ba_free(v.w); /* NULL once the bitmap took it */
  return rc;
}

int ba_bitmap_adopt_built(ba_codec_t codec, void *words, size_t nwords, uint64_t nrows, ba_bitmap_t **out) {
#ifdef NDEBUG
  const ba_codec_ops_t *ops = codec >= BA_CODEC_MIN && codec <= BA_CODEC_MAX ? ba_codec_ops(codec) : NULL;
  ba_bitmap_t *bm = NULL;
  int rc = !out || (nwords && !words) ? BA_ERR_INVALID : !ops ? BA_ERR_UNSUPPORTED : BA_OK;
  if (rc == BA_OK && nrows > BA_BITMAP_MAX_ROWS) rc = BA_ERR_CORRUPT;
  if (rc == BA_OK) rc = ba_bm_new(ops, &bm);
  if (out) *out = NULL;
  if (rc < 0) {
    ba_free(words);
    return rc;
  }
  bm->vec = (ba_wordvec_t){words, nwords, nwords, 0};
  bm->rows = nrows;
  bm->finished = 1;
  *out = bm;
  return BA_OK;
#else
  return ba_bitmap_adopt_words(codec, words, nwords, nrows, out);
#endif
}

int ba_bitmap_from_rows(ba_codec_t codec, const uint64_t *rows, size_t n, uint64_t nrows,
                        ba_bitmap_t **out) {
  BA_RETURN_IF(!out || (n && !rows), BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS, BA_ERR_OVERFLOW);
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bitmap_create(codec, &bm));
  int rc = BA_OK;
  for (size_t i = 0; i < n && rc == BA_OK; i++) {
    if (rows[i] >= nrows || (i && rows[i] <= rows[i - 1]))
      rc = BA_ERR_INVALID;
    else
      rc = ba_bitmap_set(bm, rows[i]);
  }
  if (rc == BA_OK) rc = ba_bitmap_finish(bm, nrows);
  if (rc < 0) {
    ba_bitmap_free(bm);
    return rc;
  }
  *out = bm;
  return BA_OK;
}

/* ---- queries ---- */

int ba_bitmap_count(const ba_bitmap_t *bm, uint64_t *out) {
  BA_RETURN_IF(!bm || !out || !bm->finished, BA_ERR_INVALID);
  /* The codec's word loop over its validated words; the token loop (the
   * reference) when it has none or declines. */
  if (bm->ops->count && bm->ops->count(bm->vec.w, bm->vec.n, out)) return BA_OK;
  return ba_bitmap_count_generic(bm, out);
}

int ba_bitmap_count_generic(const ba_bitmap_t *bm, uint64_t *out) {
  BA_RETURN_IF(!bm || !out || !bm->finished, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = bm->ops;
  uint64_t G = bm->group, c = 0;
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  ops->dec_init(&d, bm->vec.w, bm->vec.n);
  while ((rc = ops->dec_next(&d, &t)) == 1) {
    if (t.kind == BA_TOK_LIT)
      c += ba_bm_popcnt(t.lit);
    else if (t.kind == BA_TOK_FILL1)
      c += G ? t.n * G : t.n;
  }
  BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  *out = c;
  return BA_OK;
}

#define BM_BATCH 256

int ba_bitmap_foreach(const ba_bitmap_t *bm, ba_rows_fn fn, void *ctx) {
  BA_RETURN_IF(!bm || !fn || !bm->finished, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = bm->ops;
  const uint64_t G = bm->group, last = G ? G - 1 : 0;
  uint64_t buf[BM_BATCH], base = 0;
  size_t k = 0;
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  ops->dec_init(&d, bm->vec.w, bm->vec.n);
  while ((rc = ops->dec_next(&d, &t)) == 1) {
    if (t.kind == BA_TOK_LIT) {
      uint64_t w = t.lit;
      if (k > BM_BATCH - 64) {
        if ((rc = fn(ctx, buf, k)) != 0) return rc;
        k = 0;
      }
      while (w) {
        unsigned b = 63 - ba_clz64(w);
        buf[k++] = base + (last - b);
        w ^= UINT64_C(1) << b;
      }
      base += G;
      continue;
    }
    uint64_t len = G ? t.n * G : t.n;
    if (t.kind == BA_TOK_FILL1) {
      uint64_t end = base + len;
      if (end > bm->rows) end = bm->rows;
      for (uint64_t r = base; r < end; r++) {
        buf[k++] = r;
        if (k == BM_BATCH) {
          if ((rc = fn(ctx, buf, k)) != 0) return rc;
          k = 0;
        }
      }
    }
    base += len;
  }
  BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  if (k) return fn(ctx, buf, k);
  return BA_OK;
}

/* Calls range(ctx, lo, hi, lit, G) for the pieces of set rows in [from, to):
 * fills as lo..hi with lit = 0 (all set), literals as the group at row lo with
 * payload lit masked to [from, to). Stops early at `to`. */
typedef int (*bm_piece_fn)(void *ctx, uint64_t lo, uint64_t hi, uint64_t lit, unsigned G);

static int bm_walk_range(const ba_bitmap_t *bm, uint64_t from, uint64_t to, bm_piece_fn piece, void *ctx) {
  to = BA_MIN(to, bm->rows);
  if (from >= to) return BA_OK;
  const ba_codec_ops_t *ops = bm->ops;
  const unsigned G = bm->group;
  uint64_t base = 0;
  ba_dec_t d;
  ba_tok_t t;
  int rc = 0;
  ops->dec_init(&d, bm->vec.w, bm->vec.n);
  while (base < to && (rc = ops->dec_next(&d, &t)) == 1) {
    uint64_t len = t.kind == BA_TOK_LIT ? G : G ? t.n * G : t.n;
    uint64_t end = base + len;
    if (end > from && t.kind != BA_TOK_FILL0) {
      if (t.kind == BA_TOK_FILL1) {
        rc = piece(ctx, BA_MAX(base, from), BA_MIN(end, to), 0, 0);
      } else {
        uint64_t lit = t.lit;
        if (from > base) lit &= bm_mask(G - (unsigned)(from - base));
        if (to < end) lit &= ~bm_mask((unsigned)(end - to));
        rc = lit ? piece(ctx, base, end, lit, G) : 0;
      }
      if (rc) return rc;
    }
    base = end;
  }
  if (base < to) BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  return BA_OK;
}

typedef struct {
  ba_rows_fn fn;
  void *ctx;
  size_t k;
  uint64_t buf[BM_BATCH];
} bm_range_rows_t;

static int bm_range_rows(void *ctx, uint64_t lo, uint64_t hi, uint64_t lit, unsigned G) {
  bm_range_rows_t *q = (bm_range_rows_t *)ctx;
  int rc;
  if (G) {
    if (q->k > BM_BATCH - 64) {
      if ((rc = q->fn(q->ctx, q->buf, q->k)) != 0) return rc;
      q->k = 0;
    }
    while (lit) {
      unsigned b = 63 - ba_clz64(lit);
      q->buf[q->k++] = lo + (G - 1 - b);
      lit ^= UINT64_C(1) << b;
    }
    return 0;
  }
  for (uint64_t r = lo; r < hi; r++) {
    q->buf[q->k++] = r;
    if (q->k == BM_BATCH) {
      if ((rc = q->fn(q->ctx, q->buf, q->k)) != 0) return rc;
      q->k = 0;
    }
  }
  return 0;
}

static int bm_range_count(void *ctx, uint64_t lo, uint64_t hi, uint64_t lit, unsigned G) {
  *(uint64_t *)ctx += G ? ba_bm_popcnt(lit) : hi - lo;
  return 0;
}

int ba_bitmap_foreach_range(const ba_bitmap_t *bm, uint64_t from, uint64_t to, ba_rows_fn fn, void *ctx) {
  BA_RETURN_IF(!bm || !fn || !bm->finished, BA_ERR_INVALID);
  if (bm->ops->range_rows) { /* MASC: the query table of a large bitmap */
    int done = 0, rc = bm->ops->range_rows(bm, from, to, fn, ctx, &done);
    if (done) return rc;
  }
  bm_range_rows_t *q = (bm_range_rows_t *)ba_malloc(sizeof *q);
  BA_RETURN_IF(!q, BA_ERR_NOMEM);
  q->fn = fn;
  q->ctx = ctx;
  q->k = 0;
  int rc = bm_walk_range(bm, from, to, bm_range_rows, q);
  if (rc == 0 && q->k) rc = fn(ctx, q->buf, q->k);
  ba_free(q);
  return rc;
}

int ba_bitmap_count_range(const ba_bitmap_t *bm, uint64_t from, uint64_t to, uint64_t *out) {
  BA_RETURN_IF(!bm || !out || !bm->finished, BA_ERR_INVALID);
  if (bm->ops->range_count) { /* MASC: the query table of a large bitmap */
    int done = 0, rc = bm->ops->range_count(bm, from, to, out, &done);
    if (done) return rc;
  }
  uint64_t c = 0;
  BA_FORWARD(bm_walk_range(bm, from, to, bm_range_count, &c));
  *out = c;
  return BA_OK;
}

typedef struct {
  uint64_t *rows;
  size_t cap, n;
} bm_collect_t;

static int bm_collect(void *ctx, const uint64_t *rows, size_t n) {
  bm_collect_t *c = (bm_collect_t *)ctx;
  for (size_t i = 0; i < n; i++, c->n++)
    if (c->n < c->cap) c->rows[c->n] = rows[i];
  return 0;
}

int ba_bitmap_to_rows(const ba_bitmap_t *bm, uint64_t *rows, size_t cap, size_t *n) {
  BA_RETURN_IF(!n || (cap && !rows), BA_ERR_INVALID);
  bm_collect_t c = {rows, cap, 0};
  BA_FORWARD(ba_bitmap_foreach(bm, bm_collect, &c));
  *n = c.n;
  return BA_OK;
}

typedef struct {
  ba_runs_fn fn;
  void *ctx;
  uint64_t pos, start, len, limit;
  int val;
} bm_runs_t;

static inline int bm_runs_add(bm_runs_t *r, int v, uint64_t len) {
  if (len > r->limit - r->pos) len = r->limit - r->pos;
  if (len == 0) return 0;
  if (r->len && v == r->val) {
    r->len += len;
  } else {
    if (r->len) {
      int rc = r->fn(r->ctx, r->val, r->start, r->len);
      if (rc) return rc;
    }
    r->val = v;
    r->start = r->pos;
    r->len = len;
  }
  r->pos += len;
  return 0;
}

int ba_bitmap_foreach_run(const ba_bitmap_t *bm, ba_runs_fn fn, void *ctx) {
  BA_RETURN_IF(!bm || !fn || !bm->finished, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = bm->ops;
  const unsigned G = bm->group;
  bm_runs_t r = {fn, ctx, 0, 0, 0, bm->rows, 0};
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  ops->dec_init(&d, bm->vec.w, bm->vec.n);
  while ((rc = ops->dec_next(&d, &t)) == 1) {
    if (t.kind != BA_TOK_LIT) {
      if ((rc = bm_runs_add(&r, t.kind == BA_TOK_FILL1, G ? t.n * G : t.n)) != 0) return rc;
      continue;
    }
    uint64_t x = t.lit << (64 - G);
    unsigned rem = G;
    while (rem) {
      int top = (int)(x >> 63);
      uint64_t y = top ? ~x : x;
      unsigned run = y ? ba_clz64(y) : 64;
      if (run > rem) run = rem;
      if ((rc = bm_runs_add(&r, top, run)) != 0) return rc;
      x <<= run; /* run <= G < 64 */
      rem -= run;
    }
  }
  BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  if (r.len) return fn(ctx, r.val, r.start, r.len);
  return BA_OK;
}

/* ---- serialization ---- */

size_t ba_bitmap_serialized_size(const ba_bitmap_t *bm) {
  return bm ? BM_SER_HDR + bm->vec.n * bm->ops->word_bytes : 0;
}

int ba_bitmap_serialize(const ba_bitmap_t *bm, uint8_t *buf, size_t cap, size_t *len) {
  BA_RETURN_IF(!bm || !bm->finished || (!buf && cap), BA_ERR_INVALID);
  size_t need = ba_bitmap_serialized_size(bm);
  BA_RETURN_IF(cap < need, BA_ERR_OVERFLOW);
  buf[0] = (uint8_t)bm->ops->id;
  buf[1] = 0;
  ba_store_le16(buf + 2, 0);
  ba_store_le64(buf + 4, bm->rows);
  ba_store_le64(buf + 12, (uint64_t)bm->vec.n);
  uint8_t *p = buf + BM_SER_HDR;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* the words are little-endian in memory already: one copy */
  if (bm->vec.n) memcpy(p, bm->vec.w, bm->vec.n * bm->ops->word_bytes);
#else
  if (bm->ops->word_bytes == 4) {
    const uint32_t *w = (const uint32_t *)bm->vec.w;
    for (size_t i = 0; i < bm->vec.n; i++, p += 4) ba_store_le32(p, w[i]);
  } else {
    const uint64_t *w = (const uint64_t *)bm->vec.w;
    for (size_t i = 0; i < bm->vec.n; i++, p += 8) ba_store_le64(p, w[i]);
  }
#endif
  if (len) *len = need;
  return BA_OK;
}

int ba_bitmap_deserialize(const uint8_t *buf, size_t len, ba_bitmap_t **out, size_t *consumed) {
  BA_RETURN_IF(!out || (!buf && len), BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(len < BM_SER_HDR, BA_ERR_TRUNCATED);
  unsigned codec = buf[0];
  BA_RETURN_IF(codec < BA_CODEC_MIN || codec > BA_CODEC_MAX, BA_ERR_CORRUPT);
  BA_RETURN_IF(buf[1] != 0 || ba_load_le16(buf + 2) != 0, BA_ERR_CORRUPT);
  const ba_codec_ops_t *ops = ba_codec_ops((ba_codec_t)codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  uint64_t nrows = ba_load_le64(buf + 4);
  uint64_t nwords = ba_load_le64(buf + 12);
  size_t wb = ops->word_bytes;
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS, BA_ERR_CORRUPT);
  BA_RETURN_IF(nwords > (len - BM_SER_HDR) / wb, BA_ERR_TRUNCATED);
  ba_wordvec_t v = {NULL, 0, 0, 0};
  if (nwords) {
    BA_FORWARD(ba_wordvec_reserve(&v, (size_t)nwords, ops->word_bytes));
    const uint8_t *p = buf + BM_SER_HDR;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(v.w, p, (size_t)nwords * wb); /* little-endian in memory too */
#else
    if (wb == 4) {
      uint32_t *w = (uint32_t *)v.w;
      for (size_t i = 0; i < nwords; i++, p += 4) w[i] = ba_load_le32(p);
    } else {
      uint64_t *w = (uint64_t *)v.w;
      for (size_t i = 0; i < nwords; i++, p += 8) w[i] = ba_load_le64(p);
    }
#endif
    v.n = (size_t)nwords;
  }
  int rc = bm_wrap(ops, &v, nrows, out);
  ba_wordvec_free(&v);
  if (rc == BA_OK && consumed) *consumed = BM_SER_HDR + (size_t)nwords * wb;
  return rc;
}
