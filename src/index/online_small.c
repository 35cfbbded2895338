/* Online index builder for domains up to 256 values (address bytes,
 * protocol, flags, time bins; online.c hands them here): each row is applied
 * as it comes, with no batch to count, sort and walk. A value's open chunk
 * (its number and MSB-first literal, 16 bytes) stays in a table of at most
 * 4 KB, in L1; a row ORs its bit into its value's literal, and a row in a
 * later chunk first closes the open one into the value's buffer of
 * SMALL_BUF chunks, which goes to the bitmap by one
 * ba_bitmap_append_groups call when full. At 256 values the batched path of
 * online_dense.c paid for counting, a scatter by value and the walk over
 * each value's rows (~50 instructions per row); here it is ~10, plus the
 * chunk appends both do.
 *
 * The appends are the row-at-a-time algorithm's (codecs.md §8): per chunk
 * holding a row of the value, the zero chunks before it as one run, then
 * its literal; the last chunk cut to the rows at finish. So the words equal
 * the batch builder's and the reference's byte for byte (test_online). */
#include <stdlib.h>
#include <string.h>

#include "codec/bmpool.h"
#include "common/common.h"
#include "index/online_small.h"

#define SMALL_BUF 32 /* chunks per value before an append */
#define UNSEEN UINT64_MAX

/* A value's chunks closed and not yet appended, and what its bitmap holds. */
typedef struct scold {
  ba_bitmap_t *bm;
  uint64_t done; /* chunks the bitmap and the buffer describe (open >= done) */
  uint32_t nbuf;
  uint32_t gaps[SMALL_BUF];
  uint64_t lits[SMALL_BUF];
} scold_t;

struct ba_idx_small {
  ba_codec_t codec;
  unsigned G;
  uint32_t domain;
  uint64_t (*hot)[2]; /* per value: open chunk (UNSEEN: not seen), its literal */
  scold_t *cold;
  size_t nseen;
  ba_bmpool_t *pool; /* the values' bitmaps; goes to finish's output */
};

int ba_idx_small_create(ba_codec_t codec, uint32_t domain, ba_idx_small_t **out) {
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(!out || G == 0 || domain == 0 || domain > BA_IDX_SMALL_MAX, BA_ERR_INVALID);
  ba_idx_small_t *s = ba_calloc(1, sizeof *s);
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  s->codec = codec;
  s->G = G;
  s->domain = domain;
  s->hot = ba_malloc((size_t)domain * sizeof *s->hot);
  s->cold = ba_malloc((size_t)domain * sizeof *s->cold);
  if (!s->hot || !s->cold) {
    ba_idx_small_free(s);
    return BA_ERR_NOMEM;
  }
  for (uint32_t v = 0; v < domain; v++) {
    s->hot[v][0] = UNSEEN;
    s->hot[v][1] = 0;
    s->cold[v].bm = NULL;
  }
  *out = s;
  return BA_OK;
}

void ba_idx_small_free(ba_idx_small_t *s) {
  if (!s) return;
  if (s->cold)
    for (uint32_t v = 0; v < s->domain; v++) ba_bitmap_free(s->cold[v].bm);
  ba_bmpool_free(s->pool); /* after its bitmaps */
  ba_free(s->hot);
  ba_free(s->cold);
  ba_free(s);
}

size_t ba_idx_small_values(const ba_idx_small_t *s) { return s->nseen; }

static int flush(scold_t *c) {
  int rc = c->nbuf ? ba_bitmap_append_groups(c->bm, c->gaps, c->lits, c->nbuf) : BA_OK;
  c->nbuf = 0;
  return rc;
}

/* A row of value v in chunk g, which is not v's open chunk: v's first row
 * (a bitmap, chunk g open), or its open chunk closed into the buffer. */
static __attribute__((noinline)) int reopen(ba_idx_small_t *s, uint32_t v, uint64_t g) {
  uint64_t *h = s->hot[v];
  scold_t *c = &s->cold[v];
  if (h[0] == UNSEEN) {
    if (!s->pool) BA_FORWARD(ba_bmpool_create(&s->pool));
    BA_FORWARD(ba_bmpool_bitmap(s->pool, s->codec, &c->bm));
    c->done = 0;
    c->nbuf = 0;
    s->nseen++;
  } else {
    uint64_t gap = h[0] - c->done;
    if (c->nbuf == SMALL_BUF || gap > UINT32_MAX) {
      BA_FORWARD(flush(c));
      if (gap > UINT32_MAX) {
        BA_FORWARD(ba_bitmap_append_run(c->bm, 0, gap * s->G));
        gap = 0;
      }
    }
    c->gaps[c->nbuf] = (uint32_t)gap;
    c->lits[c->nbuf++] = h[1];
    c->done = h[0] + 1;
  }
  h[0] = g;
  h[1] = 0;
  return BA_OK;
}

/* The rows of vals[0..n), the first at chunk g, offset o; G constant. */
__attribute__((always_inline)) static inline int add_t(ba_idx_small_t *s, const uint32_t *vals, size_t n, uint64_t g,
                                                       unsigned o, const unsigned G) {
  uint64_t(*hot)[2] = s->hot;
  const uint32_t dom = s->domain;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = vals[i];
    if (BA_LIKELY(v < dom)) {
      uint64_t *h = hot[v];
      if (BA_UNLIKELY(h[0] != g)) {
        scold_t *c = &s->cold[v];
        uint64_t gap = h[0] - c->done; /* (h[0] UNSEEN: the test below fails) */
        if (BA_LIKELY(h[0] != UNSEEN && c->nbuf < SMALL_BUF && gap <= UINT32_MAX)) { /* reopen's common case */
          c->gaps[c->nbuf] = (uint32_t)gap;
          c->lits[c->nbuf++] = h[1];
          c->done = h[0] + 1;
          h[0] = g;
          h[1] = 0;
        } else {
          BA_FORWARD(reopen(s, v, g));
        }
      }
      h[1] |= 1ull << (G - 1 - o);
    } else if (v != BA_IDX_NONE) {
      return BA_ERR_INVALID;
    }
    if (++o == G) {
      o = 0;
      g++;
    }
  }
  return BA_OK;
}

int ba_idx_small_add(ba_idx_small_t *s, const uint32_t *vals, size_t n, uint64_t rows_before) {
  if (!vals) return BA_OK; /* rows without a value: only the row count moves (the caller's) */
  const uint64_t g = rows_before / s->G;
  const unsigned o = (unsigned)(rows_before % s->G);
  if (s->G == 31) return add_t(s, vals, n, g, o, 31);
  return add_t(s, vals, n, g, o, 63);
}

int ba_idx_small_finish(ba_idx_small_t *s, uint64_t rows, ba_idx_attr_t *out) {
  memset(out, 0, sizeof *out);
  size_t n = s->nseen, k = 0;
  if (n == 0) return BA_OK;
  int rc = BA_ERR_NOMEM;
  out->values = ba_malloc(n * sizeof *out->values);
  out->bms = ba_calloc(n, sizeof *out->bms);
  if (!out->values || !out->bms) goto fail;
  const unsigned G = s->G;
  for (uint32_t v = 0; v < s->domain; v++) { /* ascending */
    uint64_t *h = s->hot[v];
    if (h[0] == UNSEEN) continue;
    scold_t *c = &s->cold[v];
    uint64_t left = rows - h[0] * G; /* >= 1: the chunk holds a set row */
    unsigned keep = left < G ? (unsigned)left : G;
    uint64_t gap = h[0] - c->done;
    if (keep == G && gap <= UINT32_MAX && c->nbuf < SMALL_BUF) { /* a whole open chunk: with the buffer */
      c->gaps[c->nbuf] = (uint32_t)gap;
      c->lits[c->nbuf++] = h[1];
      if ((rc = flush(c)) < 0) goto fail;
    } else {
      if ((rc = flush(c)) < 0) goto fail;
      if (gap && (rc = ba_bitmap_append_run(c->bm, 0, gap * G)) < 0) goto fail;
      if ((rc = ba_bitmap_append_bits(c->bm, h[1] >> (G - keep), keep)) < 0) goto fail;
    }
    if ((rc = ba_bitmap_finish(c->bm, rows)) < 0) goto fail;
    out->values[k] = v;
    out->bms[k++] = c->bm;
    c->bm = NULL;
    h[0] = UNSEEN;
  }
  out->n = k;
  out->pool = s->pool; /* every bitmap of the pool is in out */
  s->pool = NULL;
  s->nseen = 0;
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  return rc;
}
