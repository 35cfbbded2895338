/* Online (streaming) index builder: Lemire's chunk algorithm as generalised in
 * codecs.md §8, fed one row group at a time and built per attribute value.
 *
 * Each value present keeps a pending literal of G rows (G = codec word bits
 * - 1) and the chunk it belongs to. A row in a later chunk flushes that
 * literal and appends the gap as one zero run, so a chunk touches only the
 * values occurring in it. Rows are buffered in batches of up to BATCH_MAX
 * rows (whatever the sizes of the calls), and a batch is first sorted by value (IMC'13
 * §3: (value, row) pairs, LSD radix sort on the value bits, stable so each
 * value's rows stay ascending), then every value's rows are applied in one go:
 * the value's state is loaded once per call instead of once per row, and the
 * walk over values in ascending order lets the next values' state be
 * prefetched. Each bitmap receives exactly the appends the row-at-a-time
 * algorithm makes, so the words are the same. */
#include <stdlib.h>
#include <string.h>

#include "codec/bmpool.h"
#include "common/common.h"
#include "index/index.h"
#include "index/online_dense.h"
#include "index/online_small.h"

/* Chunks buffered per value before they are appended to its bitmap: the
 * bitmap (its struct and word tail, two cache misses at high cardinality) is
 * touched once per TOKBUF chunks instead of once per chunk. */
#define TOKBUF 8
/* Domains up to BA_IDX_DENSE_MAX go to online_dense.c; the larger ones are
 * built here, their values mapped to slots allocated on first sight. */
/* Rows buffered (as sort keys) before they are sorted and applied: the larger
 * the batch, the more rows of each value one visit of its state applies and
 * the closer the ascending walk over values comes to a sequential sweep of
 * the slots (at 65,536 values a row group of 4000 rows touches one slot in 16,
 * a batch of 65,536 rows most of them). Capped by the row offset bits. */
#define BATCH_MAX 65536u

/* One value's state, 128 bytes. Its bitmap describes the chunks before the
 * buffered ones; buffered chunk i is gap[i] zero chunks followed by the
 * literal lit[i]; then come pgap zero chunks and the open literal `pending`
 * of chunk last_group. */
typedef struct slot {
  ba_bitmap_t *bm;    /* NULL: value not seen */
  int64_t last_group; /* chunk of `pending` */
  uint64_t pending;   /* MSB-first literal: row offset o is bit G-1-o */
  uint64_t pgap;      /* zero chunks between the buffered chunks and `pending` */
  uint32_t nbuf;
  uint32_t gap[TOKBUF];
  uint64_t lit[TOKBUF];
} slot_t;

struct ba_idx_online {
  ba_codec_t codec;
  unsigned G;
  uint32_t domain;
  unsigned vbits; /* bits of the largest value (domain - 1), >= 1 */
  ba_idx_small_t *sm; /* domain <= BA_IDX_SMALL_MAX: that builder does the work */
  ba_idx_dense_t *dn; /* else domain <= BA_IDX_DENSE_MAX: that one */
  uint32_t *map;  /* value -> slot index + 1; 0 = absent */
  slot_t *slots;
  size_t nslots, cap; /* values seen; allocated slots */
  uint32_t *seen;     /* the values seen, in order of first sight (slot i's value):
                         finish visits these, never the whole domain */
  size_t seen_cap;
  uint64_t rows;        /* rows added, buffered ones included */
  uint32_t *keys, *tmp; /* buffered keys (value << (32 - vbits) | row offset in the batch), sort scratch */
  size_t kcap;
  size_t batch;  /* rows per batch: min(BATCH_MAX, 2^(32 - vbits)) */
  size_t nkeys;  /* keys buffered */
  size_t krows;  /* rows of the open batch (keys + rows without a value) */
  int err;
};

void ba_idx_attr_clear(ba_idx_attr_t *a) {
  if (!a) return;
  for (size_t i = 0; i < a->n; i++) ba_bitmap_free(a->bms[i]);
  ba_free(a->bms);
  ba_free(a->values);
  ba_free(a->counts);
  ba_bmpool_free(a->pool);
  memset(a, 0, sizeof *a);
}

int ba_idx_attr_alloc(ba_idx_attr_t *a, size_t n, int counts) {
  a->values = ba_malloc(n * sizeof *a->values);
  a->bms = ba_calloc(n, sizeof *a->bms);
  if (counts) a->counts = ba_malloc(n * sizeof *a->counts);
  return a->values && a->bms && (!counts || a->counts) ? BA_OK : BA_ERR_NOMEM;
}

unsigned ba_idx_chunk_rows(ba_codec_t codec) {
  unsigned w = ba_codec_word_bits(codec);
  return w ? w - 1 : 0;
}

int ba_idx_online_create(ba_codec_t codec, uint32_t domain, ba_idx_online_t **out) {
  BA_RETURN_IF(!out || domain == 0 || domain > BA_IDX_MAX_DOMAIN, BA_ERR_INVALID);
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(G == 0, BA_ERR_INVALID);
  ba_idx_online_t *b = ba_calloc(1, sizeof *b);
  BA_RETURN_IF(!b, BA_ERR_NOMEM);
  int rc = domain <= BA_IDX_SMALL_MAX   ? ba_idx_small_create(codec, domain, &b->sm)
           : domain <= BA_IDX_DENSE_MAX ? ba_idx_dense_create(codec, domain, &b->dn)
                                        : BA_OK;
  /* calloc: pages of values never seen are never touched */
  if (rc == BA_OK && !b->dn && !b->sm && !(b->map = ba_calloc(domain, sizeof *b->map))) rc = BA_ERR_NOMEM;
  if (rc < 0) {
    ba_free(b);
    return rc;
  }
  b->codec = codec;
  b->G = G;
  b->domain = domain;
  b->vbits = 1;
  while (b->vbits < 32 && ((domain - 1) >> b->vbits)) b->vbits++;
  /* Row offsets must fit below the value bits: 2^(32 - vbits) rows (65,536 or
   * more for domains up to 65,536, 256 at the largest). */
  size_t piece = (size_t)1 << (32 - b->vbits < 24 ? 32 - b->vbits : 24);
  b->batch = piece < BATCH_MAX ? piece : BATCH_MAX;
  *out = b;
  return BA_OK;
}

void ba_idx_online_free(ba_idx_online_t *b) {
  if (!b) return;
  ba_idx_small_free(b->sm);
  ba_idx_dense_free(b->dn);
  for (size_t i = 0; i < b->nslots; i++) ba_bitmap_free(b->slots[i].bm);
  ba_free(b->seen);
  ba_free(b->slots);
  ba_free(b->map);
  ba_free(b->keys);
  ba_free(b->tmp);
  ba_free(b);
}

uint64_t ba_idx_online_rows(const ba_idx_online_t *b) { return b->rows; }
size_t ba_idx_online_values(const ba_idx_online_t *b) {
  return b->sm ? ba_idx_small_values(b->sm) : b->dn ? ba_idx_dense_values(b->dn) : b->nslots;
}

/* Appends the buffered chunks to the bitmap. */
static int flush_buf(slot_t *s) {
  BA_FORWARD(ba_bitmap_append_groups(s->bm, s->gap, s->lit, s->nbuf));
  s->nbuf = 0;
  return BA_OK;
}

/* Closes the open chunk of s (into the buffer) and opens chunk g > last_group. */
static int advance(ba_idx_online_t *b, slot_t *s, uint64_t g) {
  if (s->nbuf == TOKBUF || s->pgap > UINT32_MAX) BA_FORWARD(flush_buf(s));
  if (s->pgap > UINT32_MAX) { /* a gap too long for the buffer: straight to the bitmap */
    uint32_t none = 0;
    BA_FORWARD(ba_bitmap_append_run(s->bm, 0, s->pgap * b->G));
    BA_FORWARD(ba_bitmap_append_groups(s->bm, &none, &s->pending, 1));
  } else {
    s->gap[s->nbuf] = (uint32_t)s->pgap;
    s->lit[s->nbuf++] = s->pending;
  }
  s->pgap = g - (uint64_t)s->last_group - 1;
  s->last_group = (int64_t)g;
  s->pending = 0;
  return BA_OK;
}

/* Value v's slot, set up on first sight with chunk g open. */
static int slot_of(ba_idx_online_t *b, uint32_t v, uint64_t g, slot_t **out) {
  uint32_t k = b->map[v];
  if (BA_LIKELY(k != 0)) {
    *out = &b->slots[k - 1];
    return BA_OK;
  }
  if (b->nslots == b->cap) {
    void *p = b->slots;
    BA_FORWARD(ba_grow(&p, &b->cap, b->nslots + 1, sizeof(slot_t)));
    b->slots = p;
  }
  slot_t *s = &b->slots[b->nslots];
  memset(s, 0, sizeof *s);
  if (b->nslots == b->seen_cap) {
    void *p = b->seen;
    BA_FORWARD(ba_grow(&p, &b->seen_cap, b->nslots + 1, sizeof *b->seen));
    b->seen = p;
  }
  BA_FORWARD(ba_bitmap_create(b->codec, &s->bm));
  b->seen[b->nslots] = v;
  s->last_group = (int64_t)g;
  s->pgap = g;
  s->pending = 0;
  s->nbuf = 0;
  b->map[v] = (uint32_t)b->nslots + 1;
  b->nslots++;
  *out = s;
  return BA_OK;
}

/* Keys of the rows with a value: value in the high vbits, off + row offset below.
 * Returns how many, or BA_ERR_INVALID for a value outside the domain. */
static long make_keys(const ba_idx_online_t *b, const uint32_t *vals, size_t n, uint32_t off, uint32_t *keys) {
  const unsigned sh = 32 - b->vbits;
  const uint32_t dom = b->domain;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = vals[i];
    if (v == BA_IDX_NONE) continue;
    if (BA_UNLIKELY(v >= dom)) return BA_ERR_INVALID;
    keys[m++] = v << sh | (off + (uint32_t)i);
  }
  return (long)m;
}

/* Stable LSD radix sort of keys[0..m) on their top vbits bits, 8-bit digits
 * (the row offsets below stay in order). The result is in keys, or in tmp
 * when *swapped is set. */
static void sort_keys(unsigned vbits, uint32_t *keys, uint32_t *tmp, size_t m, int *swapped) {
  unsigned lo = 32 - vbits;
  uint32_t *src = keys, *dst = tmp;
  *swapped = 0;
  while (lo < 32) {
    unsigned w = 32 - lo < 8 ? 32 - lo : 8;
    uint32_t cnt[256] = {0};
    uint32_t mask = (1u << w) - 1;
    for (size_t i = 0; i < m; i++) cnt[(src[i] >> lo) & mask]++;
    uint32_t sum = 0;
    for (unsigned d = 0; d <= mask; d++) {
      uint32_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < m; i++) dst[cnt[(src[i] >> lo) & mask]++] = src[i];
    uint32_t *t = src;
    src = dst;
    dst = t;
    *swapped = !*swapped;
    lo += w;
  }
}

/* Prefetches the state of value v: far ahead its map entry, nearer the slot
 * the entry names (the values' state does not fit the cache at these domains). */
static inline void prefetch_far(const ba_idx_online_t *b, uint32_t v) { __builtin_prefetch(&b->map[v]); }
static inline void prefetch_near(const ba_idx_online_t *b, uint32_t v) {
  uint32_t k = b->map[v];
  if (k) {
    const char *p = (const char *)&b->slots[k - 1];
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
  }
}

/* Applies sorted keys of rows base + offset; G is a constant at each call. */
__attribute__((always_inline)) static inline int apply_t(ba_idx_online_t *b, const uint32_t *keys, size_t m,
                                                         uint64_t base, const unsigned G) {
  const unsigned sh = 32 - b->vbits;
  const uint32_t omask = (1u << sh) - 1, base_r = (uint32_t)(base % G);
  const uint64_t base_g = base / G;
  size_t i = 0;
  while (i < m) {
    if (i + 32 < m) prefetch_far(b, keys[i + 32] >> sh);
    if (i + 16 < m) prefetch_near(b, keys[i + 16] >> sh);
    const uint32_t v = keys[i] >> sh;
    uint32_t t = base_r + (keys[i] & omask); /* row - base_g * G */
    slot_t *s;
    BA_FORWARD(slot_of(b, v, base_g + t / G, &s));
    uint64_t lg = (uint64_t)s->last_group, pend = s->pending;
    do {
      t = base_r + (keys[i] & omask);
      uint64_t g = base_g + t / G;
      if (g != lg) {
        s->pending = pend;
        if (BA_LIKELY(s->nbuf < TOKBUF && s->pgap <= UINT32_MAX)) {
          s->gap[s->nbuf] = (uint32_t)s->pgap;
          s->lit[s->nbuf++] = pend;
          s->pgap = g - lg - 1;
          s->last_group = (int64_t)g;
        } else {
          BA_FORWARD(advance(b, s, g));
        }
        lg = g;
        pend = 0;
      }
      pend |= 1ull << (G - 1 - t % G);
    } while (++i < m && (keys[i] >> sh) == v);
    s->pending = pend;
  }
  return BA_OK;
}

static int apply(ba_idx_online_t *b, const uint32_t *keys, size_t m, uint64_t base) {
  if (b->G == 31) return apply_t(b, keys, m, base, 31);
  return apply_t(b, keys, m, base, 63);
}

static int reserve_keys(ba_idx_online_t *b, size_t n) {
  if (n <= b->kcap) return BA_OK;
  size_t cap = b->kcap ? b->kcap : 1024;
  while (cap < n) cap *= 2;
  if (cap > b->batch) cap = b->batch;
  uint32_t *k = ba_realloc(b->keys, cap * sizeof *k);
  if (!k) return BA_ERR_NOMEM;
  b->keys = k;
  uint32_t *t = ba_realloc(b->tmp, cap * sizeof *t);
  if (!t) return BA_ERR_NOMEM;
  b->tmp = t;
  b->kcap = cap;
  return BA_OK;
}

/* Sorts and applies the buffered batch. */
static int drain(ba_idx_online_t *b) {
  int rc = BA_OK;
  if (b->nkeys) {
    int swapped;
    sort_keys(b->vbits, b->keys, b->tmp, b->nkeys, &swapped);
    rc = apply(b, swapped ? b->tmp : b->keys, b->nkeys, b->rows - b->krows);
  }
  b->nkeys = 0;
  b->krows = 0;
  return rc;
}

/* Appends n rows: their values, or with vals NULL rows without a value
 * (they make no keys: only the batch's row count moves). */
static int add_rows(ba_idx_online_t *b, const uint32_t *vals, size_t n) {
  BA_RETURN_IF(b->err, b->err);
  int rc = BA_OK;
  if (b->sm) {
    if ((rc = ba_idx_small_add(b->sm, vals, n, b->rows)) < 0) {
      b->err = rc;
      return rc;
    }
    b->rows += n;
    return BA_OK;
  }
  if (b->dn) {
    rc = vals ? ba_idx_dense_add(b->dn, vals, n, b->rows) : ba_idx_dense_add_absent(b->dn, n, b->rows);
    if (rc < 0) {
      b->err = rc;
      return rc;
    }
    b->rows += n;
    return BA_OK;
  }
  for (size_t off = 0; off < n;) {
    size_t k = b->batch - b->krows;
    if (k > n - off) k = n - off;
    if (vals) {
      if ((rc = reserve_keys(b, b->nkeys + k)) < 0) break;
      long m = make_keys(b, vals + off, k, (uint32_t)b->krows, b->keys + b->nkeys);
      if (m < 0) {
        rc = (int)m;
        break;
      }
      b->nkeys += (size_t)m;
    }
    b->krows += k;
    b->rows += k;
    off += k;
    if (b->krows == b->batch && (rc = drain(b)) < 0) break;
  }
  if (rc < 0) b->err = rc;
  return rc;
}

int ba_idx_online_add(ba_idx_online_t *b, const uint32_t *vals, size_t n) {
  BA_RETURN_IF(!b || (n && !vals), BA_ERR_INVALID);
  return add_rows(b, vals, n);
}

int ba_idx_online_add_absent(ba_idx_online_t *b, size_t n) {
  BA_RETURN_IF(!b, BA_ERR_INVALID);
  return add_rows(b, NULL, n);
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
  return (a > c) - (a < c);
}

int ba_idx_online_finish(ba_idx_online_t *b, ba_idx_attr_t *out) {
  BA_RETURN_IF(!b || !out, BA_ERR_INVALID);
  BA_RETURN_IF(b->err, b->err);
  memset(out, 0, sizeof *out);
  int rc = b->sm ? ba_idx_small_finish(b->sm, b->rows, out) : b->dn ? ba_idx_dense_finish(b->dn, b->rows, out) : drain(b);
  if (rc == BA_OK && (b->dn || b->sm)) {
    b->err = BA_ERR_INVALID; /* spent */
    return BA_OK;
  }
  if (rc < 0) {
    b->err = rc;
    return rc;
  }
  size_t n = b->nslots, k = 0;
  if (n && (rc = ba_idx_attr_alloc(out, n, 0)) < 0) goto fail;
  /* Ascending values: the seen ones, sorted. */
  if (n) qsort(b->seen, n, sizeof *b->seen, cmp_u32);
  for (size_t i = 0; i < n; i++) {
    uint32_t v = b->seen[i];
    slot_t *s = &b->slots[b->map[v] - 1];
    if (!s->bm) continue;
    uint64_t start = (uint64_t)s->last_group * b->G;
    uint64_t left = b->rows - start; /* >= 1: the chunk holds a set row */
    unsigned keep = left < b->G ? (unsigned)left : b->G;
    if ((rc = flush_buf(s)) < 0) goto fail;
    if (s->pgap && (rc = ba_bitmap_append_run(s->bm, 0, s->pgap * b->G)) < 0) goto fail;
    if ((rc = ba_bitmap_append_bits(s->bm, s->pending >> (b->G - keep), keep)) < 0) goto fail;
    if ((rc = ba_bitmap_finish(s->bm, b->rows)) < 0) goto fail;
    out->values[k] = v;
    out->bms[k] = s->bm;
    s->bm = NULL;
    k++;
  }
  out->n = k;
  b->err = BA_ERR_INVALID; /* spent */
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  b->err = rc;
  return rc;
}

int ba_idx_online_finish_fold(ba_idx_online_t *b, uint64_t min_rows, ba_idx_bin_fn bin_of, ba_idx_attr_t *exact,
                              ba_idx_attr_t *bins) {
  BA_RETURN_IF(!b || !exact || !bins || !bin_of, BA_ERR_INVALID);
  BA_RETURN_IF(b->err, b->err);
  memset(bins, 0, sizeof *bins);
  if (b->dn) {
    int rc = ba_idx_dense_finish_fold(b->dn, b->rows, min_rows, bin_of, exact, bins);
    b->err = rc < 0 ? rc : BA_ERR_INVALID; /* spent */
    return rc;
  }
  BA_FORWARD(ba_idx_online_finish(b, exact));
  int rc = exact->n ? ba_idx_fold(exact, bins, min_rows, bin_of, b->codec) : BA_OK;
  if (rc < 0) ba_idx_attr_clear(exact);
  return rc;
}
