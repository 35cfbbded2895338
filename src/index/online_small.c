/* Online index builder for domains up to 256 values (address bytes,
 * protocol, flags, time bins; online.c hands them here), chunk by chunk.
 *
 * The rows of one chunk (G rows, G = codec word bits - 1) are applied
 * first: a row ORs its bit into its value's literal, kept in a table of at
 * most 256 words (2 KB, in L1), and the values it reaches for the first time
 * in the chunk go to a list (at most G of them, branch-free: the value is
 * always stored, the count moves only for a zero literal). When the chunk is
 * complete, each listed value closes it: the zero chunks since its last one
 * (gap) and the literal go to the value's buffer of SMALL_BUF chunks, which
 * goes to the bitmap by one ba_bitmap_append_groups call when full. A row
 * costs a load, an OR and two stores, with no test of which chunk the value
 * last had a row in (the row-at-a-time table of (open chunk, literal) did
 * that test per row: ~21 instructions a row before the chunk appends, ~8
 * now); the closes are the same ones, one per (value, chunk) with a row.
 *
 * The appends are the row-at-a-time algorithm's (codecs.md §8): per chunk
 * holding a row of the value, the zero chunks before it as one run, then
 * its literal; the last chunk cut to the rows at finish. So the words equal
 * the batch builder's and the reference's byte for byte (test_online). */
#include <stdlib.h>
#include <string.h>

#include "codec/bmpool.h"
#include "codec/codec.h"
#include "codec/plwah_words.h"
#include "common/common.h"
#include "index/online_small.h"

#define SMALL_BUF 32 /* chunks per value before an append */
#define LIST_MAX 64  /* values with a row in one chunk: <= G <= 63 (+1: the branch-free store) */

/* A value's chunks closed and not yet appended, and what its bitmap holds. */
typedef struct scold {
  ba_bitmap_t *bm; /* NULL: value not seen */
  uint64_t done;   /* chunks the bitmap and the buffer describe */
  uint32_t nbuf;
  uint32_t gaps[SMALL_BUF];
  uint64_t lits[SMALL_BUF];
} scold_t;

/* PLWAH (the store's codec): a value's words are encoded here, as they close,
 * by the three cases that are nearly every chunk of an index (spec §3;
 * plwah.c's put_groups with no open fill: a literal; a 0-fill carrying a
 * one-row literal's position; a 0-fill and a literal), the others through
 * ops->put_groups on the same words and encoder state. No (gap, literal)
 * buffer, no append call per SMALL_BUF chunks: ~15 instructions a chunk
 * where buffer, append_groups and put_groups took ~60. Finish ends the
 * words as ba_bitmap_finish does and hands them to a bitmap. */
typedef struct sdirect {
  uint32_t *p;       /* where the next word goes */
  uintptr_t lim;     /* put_direct writes while p < lim: room for 2 words and no open fill (else 0) */
  uint32_t *w;       /* the words (a ba_wordvec_t's, from ba_malloc) */
  size_t cap;
  uint64_t done;     /* chunks the words describe (the open fill included); 0: no chunk closed */
  uint64_t fill, fn; /* PLWAH encoder state s[0] (open fill value + 1, 0 none), s[1] (its groups) */
  uint64_t pad;      /* 64 bytes: an entry's address is one shift from its value */
} sdirect_t;
_Static_assert(sizeof(sdirect_t) == 64, "sdirect_t is 64 bytes");

struct ba_idx_small {
  ba_codec_t codec;
  const ba_codec_ops_t *ops;
  unsigned G;
  uint32_t domain;
  uint64_t open;  /* the chunk whose rows lit and list describe */
  uint64_t *lit;  /* per value: MSB-first literal of chunk `open` (row offset o is bit G-1-o), 0: no row */
  uint32_t list[LIST_MAX]; /* the values with a row in chunk `open`, in order of first row */
  size_t nlist;
  scold_t *cold;     /* codecs other than PLWAH */
  sdirect_t *direct; /* PLWAH */
  size_t nseen;
  ba_bmpool_t *pool; /* the values' bitmaps; goes to finish's output */
};

int ba_idx_small_create(ba_codec_t codec, uint32_t domain, ba_idx_small_t **out) {
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(!out || G == 0 || G >= LIST_MAX || domain == 0 || domain > BA_IDX_SMALL_MAX, BA_ERR_INVALID);
  ba_idx_small_t *s = ba_calloc(1, sizeof *s);
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  s->codec = codec;
  s->G = G;
  s->domain = domain;
  s->ops = ba_codec_ops(codec);
  s->lit = ba_calloc(domain, sizeof *s->lit);
  if (codec == BA_CODEC_PLWAH) {
    s->direct = ba_calloc(domain, sizeof *s->direct);
  } else {
    s->cold = ba_malloc((size_t)domain * sizeof *s->cold);
    if (s->cold)
      for (uint32_t v = 0; v < domain; v++) s->cold[v].bm = NULL;
  }
  if (!s->ops || !s->lit || (!s->cold && !s->direct)) {
    ba_idx_small_free(s);
    return BA_ERR_NOMEM;
  }
  *out = s;
  return BA_OK;
}

void ba_idx_small_free(ba_idx_small_t *s) {
  if (!s) return;
  if (s->cold)
    for (uint32_t v = 0; v < s->domain; v++) ba_bitmap_free(s->cold[v].bm);
  ba_bmpool_free(s->pool); /* after its bitmaps */
  if (s->direct)
    for (uint32_t v = 0; v < s->domain; v++) ba_free(s->direct[v].w);
  ba_free(s->direct);
  ba_free(s->lit);
  ba_free(s->cold);
  ba_free(s);
}

size_t ba_idx_small_values(const ba_idx_small_t *s) {
  if (!s->direct) return s->nseen;
  size_t n = 0; /* PLWAH: a value with a chunk closed or a row in the open one */
  for (uint32_t v = 0; v < s->domain; v++) n += s->direct[v].done || (s->nlist && s->lit[v]);
  return n;
}

static int flush(scold_t *c) {
  int rc = c->nbuf ? ba_bitmap_append_groups(c->bm, c->gaps, c->lits, c->nbuf) : BA_OK;
  c->nbuf = 0;
  return rc;
}

/* First sight of value c: an empty bitmap. */
static __attribute__((noinline)) int first_sight(ba_idx_small_t *s, scold_t *c) {
  if (!s->pool) BA_FORWARD(ba_bmpool_create(&s->pool));
  BA_FORWARD(ba_bmpool_bitmap(s->pool, s->codec, &c->bm));
  c->done = 0;
  c->nbuf = 0;
  s->nseen++;
  return BA_OK;
}

/* The buffer full or a gap too long for it: to the bitmap first. */
static __attribute__((noinline)) int make_room(ba_idx_small_t *s, scold_t *c, uint64_t *gap) {
  BA_FORWARD(flush(c));
  if (*gap > UINT32_MAX) {
    BA_FORWARD(ba_bitmap_append_run(c->bm, 0, *gap * s->G));
    *gap = 0;
  }
  return BA_OK;
}

/* Chunk entry (gap zero chunks, literal x) of a PLWAH value through the
 * codec's put_groups: the cases put_direct leaves (an open fill, a full
 * literal, a gap past a fill word's count, no room). */
static __attribute__((noinline)) int put_slow(ba_idx_small_t *s, sdirect_t *e, uint64_t gap, uint64_t x) {
  ba_enc_state_t st = {{0}};
  st.s[0] = e->fill;
  st.s[1] = e->fn;
  ba_wordvec_t vec = {e->w, e->w ? (size_t)(e->p - e->w) : 0, e->cap, 0};
  int rc = BA_OK;
  if (gap > UINT32_MAX) { /* as ba_bitmap_append_run: one FILL0 token */
    ba_tok_t t = {gap, 0, BA_TOK_FILL0};
    rc = s->ops->put(&vec, &st, &t);
    gap = 0;
  }
  uint32_t g32 = (uint32_t)gap;
  if (rc == BA_OK) rc = s->ops->put_groups(&vec, &st, &g32, &x, 1, PL_LITMASK);
  if (rc == BA_OK && vec.cap - vec.n < 2) rc = ba_wordvec_reserve(&vec, 2, 4); /* room for put_direct's next */
  e->w = vec.w;
  e->p = e->w + vec.n;
  e->cap = vec.cap;
  e->fill = st.s[0];
  e->fn = st.s[1];
  e->lim = rc == BA_OK && !e->fill ? (uintptr_t)(e->w + e->cap - 1) : 0;
  return rc;
}

/* put_groups of one entry (gap, literal x != 0) on e's words, inline where
 * the encoder has no open fill: the words put_groups writes then. */
static inline int put_direct(ba_idx_small_t *s, sdirect_t *e, uint64_t gap, uint64_t x) {
  uint32_t l = (uint32_t)x;
  /* gap <= PL_MAXCNT and l not all ones (l + 1 = 2^31) in one test */
  if (BA_LIKELY((gap | (uint64_t)((l + 1) >> 31) << PL_POS_SHIFT) <= PL_MAXCNT && (uintptr_t)e->p < e->lim)) {
    uint32_t *w = e->p;
    if (gap == 0) { /* a literal */
      w[0] = l;
      e->p = w + 1;
    } else if (!(l & (l - 1))) { /* one row: the 0-fill carries its position */
      w[0] = PL_FILL | ba_clz32(l) << PL_POS_SHIFT | (uint32_t)gap;
      e->p = w + 1;
    } else { /* the 0-fill, then the literal */
      w[0] = PL_FILL | (uint32_t)gap;
      w[1] = l;
      e->p = w + 2;
    }
    return BA_OK;
  }
  if (gap == 0 && l == PL_LITMASK && e->fill == 2) { /* a full chunk after full ones: the open 1-fill grows */
    e->fn++;
    return BA_OK;
  }
  return put_slow(s, e, gap, x);
}

/* close_chunk of PLWAH builders. */
static int close_direct(ba_idx_small_t *s) {
  const uint64_t g = s->open;
  uint64_t *lit = s->lit;
  sdirect_t *dir = s->direct;
  const size_t nl = s->nlist; /* in a local: the word stores could alias s->nlist */
  const uint32_t *list = s->list;
  for (size_t j = 0; j < nl; j++) {
    uint32_t v = list[j];
    sdirect_t *e = &dir[v];
    uint64_t x = lit[v];
    lit[v] = 0;
    uint64_t gap = g - e->done;
    e->done = g + 1;
    BA_FORWARD(put_direct(s, e, gap, x));
  }
  s->nlist = 0;
  return BA_OK;
}

/* Closes chunk `open`, complete (all its G rows added): each listed value
 * gets its gap and literal in its buffer. */
static int close_chunk(ba_idx_small_t *s) {
  if (s->direct) return close_direct(s);
  const uint64_t g = s->open;
  uint64_t *lit = s->lit;
  for (size_t j = 0; j < s->nlist; j++) {
    uint32_t v = s->list[j];
    scold_t *c = &s->cold[v];
    if (BA_UNLIKELY(!c->bm)) BA_FORWARD(first_sight(s, c));
    uint64_t gap = g - c->done;
    if (BA_UNLIKELY(c->nbuf == SMALL_BUF || gap > UINT32_MAX)) BA_FORWARD(make_room(s, c, &gap));
    c->gaps[c->nbuf] = (uint32_t)gap;
    c->lits[c->nbuf++] = lit[v];
    c->done = g + 1;
    lit[v] = 0;
  }
  s->nlist = 0;
  return BA_OK;
}

/* The rows of vals[0..n), the first at chunk g, offset o; G constant. */
__attribute__((always_inline)) static inline int add_t(ba_idx_small_t *s, const uint32_t *vals, size_t n, uint64_t g,
                                                       unsigned o, const unsigned G) {
  if (s->nlist && s->open != g) BA_FORWARD(close_chunk(s)); /* rows without a value ended it */
  s->open = g;
  uint64_t *lit = s->lit;
  uint32_t *list = s->list;
  const uint32_t dom = s->domain;
  size_t i = 0;
  while (i < n) {
    size_t m = n - i < G - o ? n - i : G - o; /* rows of chunk g here */
    uint64_t bit = 1ull << (G - 1 - o);
    size_t nl = s->nlist;
    const uint32_t *p = vals + i;
    size_t k = 0;
    if (m == G) { /* a whole chunk of one value (IP version, protocol, an address's first bytes): one OR */
      uint32_t v0 = p[0], diff = 0, any = v0;
      for (size_t j = 1; j < G; j++) { /* vectorised, no branch */
        diff |= p[j] ^ v0;
        any |= p[j];
      }
      if (diff == 0 && v0 < dom) {
        uint64_t x = lit[v0];
        list[nl] = v0;
        nl += x == 0;
        lit[v0] = x | ((bit << 1) - 1); /* rows 0..G-1: bits G-1..0 */
        k = m;
      } else if (any < dom) { /* every value in the domain (each is <= their OR): no test per row */
#pragma GCC unroll 64
        for (unsigned j = 0; j < G; j++) { /* unrolled: each row's bit a constant */
          uint32_t v = p[j];
          uint64_t x = lit[v];
          list[nl] = v;
          nl += x == 0;
          lit[v] = x | 1ull << (G - 1 - j);
        }
        k = m;
      }
    }
    for (; k < m; k++, bit >>= 1) {
      uint32_t v = p[k];
      if (BA_LIKELY(v < dom)) {
        uint64_t x = lit[v];
        list[nl] = v;
        nl += x == 0;
        lit[v] = x | bit;
      } else if (v != BA_IDX_NONE) {
        s->nlist = nl;
        return BA_ERR_INVALID;
      }
    }
    s->nlist = nl;
    i += m;
    o += (unsigned)m;
    if (o == G) {
      BA_FORWARD(close_chunk(s));
      s->open = ++g;
      o = 0;
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

/* ba_idx_small_finish of PLWAH builders: per value, a row in the open chunk
 * as its last entry (its rows past `rows` are clear, so the literal is what
 * ba_bitmap_finish would close that group with), then the zero groups to
 * the end as one FILL0 token and the encoder's end: the tokens
 * ba_bitmap_finish gives the encoder. */
static int finish_direct(ba_idx_small_t *s, uint64_t rows, ba_idx_attr_t *out) {
  size_t n = ba_idx_small_values(s), k = 0;
  if (n == 0) return BA_OK;
  int rc = ba_idx_attr_alloc(out, n, 0);
  if (rc < 0) goto fail;
  const unsigned G = s->G;
  const uint64_t groups = rows / G + (rows % G != 0);
  for (uint32_t v = 0; v < s->domain; v++) { /* ascending */
    sdirect_t *e = &s->direct[v];
    if (!e->done && !(s->nlist && s->lit[v])) continue; /* not seen */
    if (s->nlist && s->lit[v]) {
      uint64_t gap = s->open - e->done;
      e->done = s->open + 1;
      if ((rc = put_slow(s, e, gap, s->lit[v])) < 0) goto fail;
      s->lit[v] = 0;
    }
    ba_enc_state_t st = {{0}};
    st.s[0] = e->fill;
    st.s[1] = e->fn;
    ba_wordvec_t vec = {e->w, e->w ? (size_t)(e->p - e->w) : 0, e->cap, 0};
    ba_tok_t t = {groups - e->done, 0, BA_TOK_FILL0};
    if ((rc = s->ops->put(&vec, &st, &t)) == BA_OK) rc = s->ops->end(&vec, &st);
    memset(e, 0, sizeof *e);
    if (rc == BA_OK) rc = ba_bitmap_adopt_built(s->codec, vec.w, vec.n, rows, &out->bms[k]); /* takes the words */
    else ba_wordvec_free(&vec);
    if (rc < 0) goto fail;
    out->values[k++] = v;
  }
  out->n = k;
  s->nlist = 0;
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  return rc;
}

int ba_idx_small_finish(ba_idx_small_t *s, uint64_t rows, ba_idx_attr_t *out) {
  memset(out, 0, sizeof *out);
  const unsigned G = s->G;
  /* chunk `open` complete: closed as any other; else its rows are cut below */
  if (s->nlist && rows >= (s->open + 1) * G) BA_FORWARD(close_chunk(s));
  if (s->direct) return finish_direct(s, rows, out);
  for (size_t j = 0; j < s->nlist; j++) { /* values first seen in the open chunk */
    scold_t *c = &s->cold[s->list[j]];
    if (!c->bm) BA_FORWARD(first_sight(s, c));
  }
  size_t n = s->nseen, k = 0;
  if (n == 0) return BA_OK;
  int rc = ba_idx_attr_alloc(out, n, 0);
  if (rc < 0) goto fail;
  const unsigned keep = (unsigned)(rows - s->open * G); /* rows of an open chunk; < G */
  for (uint32_t v = 0; v < s->domain; v++) { /* ascending */
    scold_t *c = &s->cold[v];
    if (!c->bm) continue;
    if ((rc = flush(c)) < 0) goto fail;
    if (s->nlist && s->lit[v]) { /* a row in the open chunk: the zero chunks before it, its rows */
      uint64_t gap = s->open - c->done;
      if (gap && (rc = ba_bitmap_append_run(c->bm, 0, gap * G)) < 0) goto fail;
      if ((rc = ba_bitmap_append_bits(c->bm, s->lit[v] >> (G - keep), keep)) < 0) goto fail;
      s->lit[v] = 0;
    }
    if ((rc = ba_bitmap_finish(c->bm, rows)) < 0) goto fail;
    out->values[k] = v;
    out->bms[k++] = c->bm;
    c->bm = NULL;
  }
  out->n = k;
  out->pool = s->pool; /* every bitmap of the pool is in out */
  s->pool = NULL;
  s->nseen = 0;
  s->nlist = 0;
  return BA_OK;
fail:
  out->n = k;
  ba_idx_attr_clear(out);
  return rc;
}
