/* PLWAH, 32-bit, one piggybacked position (spec §3, D-7, D-8).
 * literal: 0 | 31-bit group.  fill: 1 | value | p (5 bits) | count (25 bits).
 * p = 0: no piggyback; p in 1..31: after the count groups comes one literal
 * group that differs from the fill value in payload bit 31 - p only (a 0-fill
 * carries a single 1, a 1-fill a single 0).
 *
 * Encoder state: s[0] = open fill value + 1 (0 = none), s[1] = its count.
 * The open fill is written when the next token shows whether it can absorb a
 * literal: only the last word of a split run gets a position. */
#include "codec/kernel.h"
#include "codec/plwah_words.h"

static inline int plwah_flush(ba_wordvec_t *out, ba_enc_state_t *st, uint32_t p) {
  uint32_t hdr = PL_FILL | (st->s[0] == 2 ? PL_VAL : 0);
  uint64_t c = st->s[1];
  if (c <= PL_MAXCNT) {
    st->s[0] = 0;
    return ba_wordvec_push32(out, hdr | (p << PL_POS_SHIFT) | (uint32_t)c);
  }
  BA_FORWARD(ba_wordvec_reserve(out, (size_t)(c / PL_MAXCNT) + 1, 4));
  while (c > PL_MAXCNT) {
    ba_wordvec_push32(out, hdr | PL_MAXCNT);
    c -= PL_MAXCNT;
  }
  ba_wordvec_push32(out, hdr | (p << PL_POS_SHIFT) | (uint32_t)c);
  st->s[0] = 0;
  return 0;
}

static inline int plwah_put(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok) {
  unsigned kind = tok->kind;
  uint64_t n = tok->n;
  if (kind == BA_TOK_LIT) {
    uint32_t lit = (uint32_t)tok->lit & PL_LITMASK;
    if (lit != 0 && lit != PL_LITMASK) {
      if (st->s[0]) {
        uint32_t p = 0;
        if (st->s[0] == 1) {
          if (!(lit & (lit - 1))) p = ba_clz32(lit); /* exactly one 1 */
        } else {
          uint32_t inv = ~lit & PL_LITMASK;
          if (!(inv & (inv - 1))) p = ba_clz32(inv); /* exactly one 0 */
        }
        BA_FORWARD(plwah_flush(out, st, p));
        if (p) return 0;
      }
      return ba_wordvec_push32(out, lit);
    }
    kind = lit ? BA_TOK_FILL1 : BA_TOK_FILL0;
    n = 1;
  }
  if (n == 0) return 0;
  if (st->s[0] == kind + 1u) {
    st->s[1] += n;
    return 0;
  }
  if (st->s[0]) BA_FORWARD(plwah_flush(out, st, 0));
  st->s[0] = kind + 1u;
  st->s[1] = n;
  return 0;
}

static inline int plwah_end(ba_wordvec_t *out, ba_enc_state_t *st) {
  return st->s[0] ? plwah_flush(out, st, 0) : 0;
}

/* Decoder state: s[0] = 1 when a piggybacked literal is due, s[1] = it. */
static inline void plwah_dec_init(ba_dec_t *d, const void *words, size_t nwords) {
  d->words = words;
  d->nwords = nwords;
  d->pos = 0;
  d->s[0] = 0;
}

static inline int plwah_dec_next(ba_dec_t *d, ba_tok_t *tok) {
  if (d->s[0]) {
    d->s[0] = 0;
    tok->kind = BA_TOK_LIT;
    tok->lit = d->s[1];
    tok->n = 1;
    return 1;
  }
  if (d->pos >= d->nwords) return 0;
  uint32_t x = ((const uint32_t *)d->words)[d->pos++];
  if (!(x & PL_FILL)) {
    tok->kind = BA_TOK_LIT;
    tok->lit = x;
    tok->n = 1;
    return 1;
  }
  uint32_t k = x & PL_MAXCNT;
  if (k == 0) return BA_ERR_CORRUPT; /* D-5 */
  uint32_t p = (x >> PL_POS_SHIFT) & 31u;
  int one = (x & PL_VAL) != 0;
  if (p) {
    uint32_t bit = 1u << (31 - p);
    d->s[0] = 1;
    d->s[1] = one ? (PL_LITMASK ^ bit) : bit;
  }
  tok->kind = one ? BA_TOK_FILL1 : BA_TOK_FILL0;
  tok->n = k;
  tok->lit = 0;
  return 1;
}

/* The word loop of validate.c's rules (see the note there): a fill covers
 * its count (0 is bad) plus the piggybacked literal group, a literal one. */
static int plwah_validate(const void *words, size_t n, uint64_t nrows) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t expect = nrows / 31 + (nrows % 31 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], m = 0u - (x >> 31), cnt = x & PL_MAXCNT, pos = (x >> PL_POS_SHIFT) & 31u;
    bad |= (int)(m & (cnt == 0));
    total += ((cnt + (pos != 0)) & m) | (1u & ~m); /* a position piggybacks one literal group */
  }
  return ba_bm_validate_end(&ba_plwah_ops, w, n, nrows, expect, total, bad);
}

static int plwah_count(const void *words, size_t n, uint64_t *out) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i];
    if (!(x >> 31)) {
      c += ba_bm_popcnt(x);
      continue;
    }
    int one = (x & 0x40000000u) != 0, pos = ((x >> 25) & 31u) != 0;
    if (one) c += (uint64_t)(x & 0x01FFFFFFu) * 31 + (pos ? 30 : 0);
    else c += (uint64_t)pos;
  }
  *out = c;
  return 1;
}

BA_GROUP_KERNELS(plwah, plwah_dec_next, plwah_put, OPK_PL)
BA_BITSET_PATHS(plwah, plwah_dec_next, plwah_put)

/* ops->put_groups of PLWAH: the tokens groups_put (kernel.h) would give
 * plwah_put, with the encoder state and the word vector in registers and
 * one room check per entry (at most three words: a fill the gap ends, the
 * gap's fill, the literal)
 * instead of a token, a call and a check per word. The online index's
 * bitmaps close millions of chunks per segment; this was ~50 instructions
 * a chunk through the token path, most of the index's appends. Same words
 * (test_online's append_groups test compares with row-level appends). */
static int plwah_put_groups_fast(ba_wordvec_t *v, ba_enc_state_t *st, const uint32_t *gaps, const uint64_t *lits,
                                 size_t n, uint64_t all) {
  uint64_t s0 = st->s[0], s1 = st->s[1]; /* open fill: value + 1 (0 none), groups */
  uint32_t *w = v->w;
  size_t k = v->n, cap = v->cap;
  (void)all; /* PL_LITMASK: G = 31 */
#define PG_SYNC() (v->n = k, st->s[0] = s0, st->s[1] = s1)
#define PG_LOAD() (w = v->w, k = v->n, cap = v->cap, s0 = st->s[0], s1 = st->s[1])
  /* The open fill as words with position p; a count past PL_MAXCNT in
   * plwah_flush (rare: gaps of 2^25 groups). */
#define PG_FLUSH(p)                                                                     \
  do {                                                                                  \
    if (BA_LIKELY(s1 <= PL_MAXCNT)) {                                                   \
      w[k++] = PL_FILL | (s0 == 2 ? PL_VAL : 0) | ((uint32_t)(p) << PL_POS_SHIFT) | (uint32_t)s1; \
      s0 = 0;                                                                           \
    } else {                                                                            \
      PG_SYNC();                                                                        \
      BA_FORWARD(plwah_flush(v, st, (p)));                                              \
      PG_LOAD();                                                                        \
      BA_FORWARD(ba_wordvec_reserve(v, 3, 4));                                          \
      PG_LOAD();                                                                        \
    }                                                                                   \
  } while (0)
  for (size_t i = 0; i < n; i++) {
    if (BA_UNLIKELY(cap - k < 3)) { /* a fill ended by the gap, the gap's fill, the literal */
      v->n = k;
      BA_FORWARD(ba_wordvec_reserve(v, 3, 4));
      w = v->w;
      cap = v->cap;
    }
    uint32_t gap = gaps[i], lit = (uint32_t)lits[i] & PL_LITMASK;
    /* The sparse case (most entries of address bytes and rare values): no
     * open fill, zero groups, then one set row: one 0-fill word carrying
     * its position, what the general path below writes for it. */
    if (s0 == 0 && gap - 1u < PL_MAXCNT && lit && !(lit & (lit - 1))) {
      w[k++] = PL_FILL | (ba_clz32(lit) << PL_POS_SHIFT) | gap;
      continue;
    }
    if (gap) { /* FILL0 of gap groups */
      if (s0 == 1) {
        s1 += gap;
      } else {
        if (s0) PG_FLUSH(0);
        s0 = 1;
        s1 = gap;
      }
    }
    if (BA_LIKELY(lit != 0 && lit != PL_LITMASK)) { /* a literal: piggybacked on the open fill if it can */
      if (s0) {
        uint32_t x = s0 == 1 ? lit : ~lit & PL_LITMASK, p = 0;
        if (!(x & (x - 1))) p = ba_clz32(x); /* exactly one 1 (a 0-fill) / one 0 (a 1-fill) */
        PG_FLUSH(p);
        if (p) continue;
      }
      w[k++] = lit;
      continue;
    }
    uint64_t kind1 = lit ? 2 : 1; /* a homogeneous group: a fill of one */
    if (s0 == kind1) {
      s1++;
    } else {
      if (s0) PG_FLUSH(0);
      s0 = kind1;
      s1 = 1;
    }
  }
  PG_SYNC();
#undef PG_FLUSH
#undef PG_LOAD
#undef PG_SYNC
  return 0;
}
/* The token path (BA_BITSET_PATHS) stays defined; put_groups is the above. */
static int (*const plwah_put_groups_tokens)(ba_wordvec_t *, ba_enc_state_t *, const uint32_t *, const uint64_t *,
                                            size_t, uint64_t) __attribute__((unused)) = plwah_put_groups;

const ba_codec_ops_t ba_plwah_ops = {
  .id = BA_CODEC_PLWAH,
  .name = "plwah",
  .word_bytes = 4,
  .group_bits = 31,
  .put = plwah_put,
  .end = plwah_end,
  .dec_init = plwah_dec_init,
  .dec_next = plwah_dec_next,
  .validate = plwah_validate,
  .count = plwah_count,
  .kernels = plwah_kernels,
  .bitset_or = plwah_bitset_or,
  .bitset_put = plwah_bitset_put,
  .put_groups = plwah_put_groups_fast,
};
