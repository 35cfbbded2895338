/* The building blocks of the pair kernels and the bitset paths, written
 * once over a decoder and an encoder passed as compile-time constants:
 * ops.c instantiates them through the ops tables (any codec), each codec
 * file with its own inline coder (BA_GROUP_KERNELS, BA_BITSET_PATHS), so a
 * codec's fast paths live with the codec and the generic layer never
 * includes a codec. Internal to src/codec. */
#ifndef BA_CODEC_KERNEL_H
#define BA_CODEC_KERNEL_H

#include "codec/bitmap_internal.h"
#include "common/common.h"

static inline uint64_t op_mask(unsigned k) { return k >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << k) - 1); }

static inline uint64_t op_eval(int op, uint64_t a, uint64_t b) {
  switch (op) {
    case BA_OP_AND: return a & b;
    case BA_OP_OR: return a | b;
    case BA_OP_XOR: return a ^ b;
    case BA_OP_ANDNOT: return a & ~b;
    case BA_OPX_NOT: return ~a;
    default: return a;
  }
}

/* Result value when operand `side` (0 = a, 1 = b) is a fill of value v,
 * whatever the other operand holds; -1 when the other operand matters. */
static inline int op_dominant(int op, int side, int v) {
  switch (op) {
    case BA_OP_AND: return v == 0 ? 0 : -1;
    case BA_OP_OR: return v == 1 ? 1 : -1;
    case BA_OP_ANDNOT: return (side == 0 && v == 0) || (side == 1 && v == 1) ? 0 : -1;
    default: return -1;
  }
}

/* Where results go: an output bitmap, or a count (optionally stopping at the
 * first set row, for equality). */
typedef struct ba_op_sink {
  ba_bitmap_t *out;
  uint64_t count;
  int stop_nonzero;
  int stopped;
} op_sink_t;

static inline int sink_run(op_sink_t *s, int v, uint64_t k) {
  if (s->out) return ba_bitmap_append_run(s->out, v, k);
  if (v) {
    s->count += k;
    s->stopped = s->stop_nonzero;
  }
  return BA_OK;
}

static inline int sink_bits(op_sink_t *s, uint64_t bits, unsigned k) {
  if (s->out) return ba_bitmap_append_bits(s->out, bits, k);
  if (bits) {
    s->count += ba_popcount64(bits);
    s->stopped = s->stop_nonzero;
  }
  return BA_OK;
}


typedef int (*op_dec_fn)(ba_dec_t *, ba_tok_t *);
typedef int (*op_put_fn)(ba_wordvec_t *, ba_enc_state_t *, const ba_tok_t *);

typedef struct {
  op_dec_fn dec; /* the operand's decoder; NULL once past its end */
  ba_dec_t d;
  uint64_t rem;  /* groups left in the current token */
  uint64_t lit;
  int kind;
  int unit; /* one word per group: word i is group i (gcur_skip) */
} op_gcur_t;

static inline void gcur_init(op_gcur_t *c, const ba_bitmap_t *bm) {
  c->dec = bm ? bm->ops->dec_next : NULL;
  c->rem = 0;
  c->lit = 0;
  c->kind = BA_TOK_FILL0;
  /* A finished bitmap's words cover its ceil(rows / G) groups exactly
   * (validated, or so encoded) and each word covers at least one group, so
   * as many words as groups means every word is exactly one group (a literal
   * or a one-group fill; no PLWAH piggyback): the dense index bitmaps of a
   * popular address byte, all literals. */
  c->unit = bm && bm->group && bm->vec.n == (bm->rows + bm->group - 1) / bm->group;
  if (bm) bm->ops->dec_init(&c->d, bm->vec.w, bm->vec.n);
}

/* `dec` is a compile-time constant in the specialised kernels (NULL in the
 * generic one, which then calls through c->dec). */
static inline __attribute__((always_inline)) int gcur_load(op_gcur_t *c, op_dec_fn dec) {
  ba_tok_t t;
  int rc = c->dec ? (dec ? dec(&c->d, &t) : c->dec(&c->d, &t)) : 0;
  if (rc < 0) return BA_ERR_CORRUPT;
  if (rc == 0) { /* past the end: zero padding (D-6) */
    c->dec = NULL;
    c->kind = BA_TOK_FILL0;
    c->rem = UINT64_MAX;
    return BA_OK;
  }
  c->kind = t.kind;
  c->lit = t.lit;
  c->rem = t.kind == BA_TOK_LIT ? 1 : t.n;
  return c->rem ? BA_OK : BA_ERR_CORRUPT;
}

/* Word layout a specialised kernel may skip without decoding (0: decode
 * every token). Literal words of WAH32, WAH64 and PLWAH have the top bit
 * clear and cover exactly one group each. */
#define OPK_NONE 0
#define OPK_W32 1
#define OPK_W64 2
#define OPK_PL 3

/* Between tokens (c->rem == 0, and for PLWAH no piggybacked literal due),
 * steps over runs of literal words, eight at a time, while at least eight
 * groups are left to skip: under a long dominating fill of the other operand
 * (AND with a sparse bitmap) a dense operand is mostly literals, and each
 * then costs one OR of eight words instead of one decoded token. Returns the
 * groups skipped. Finished bitmaps were validated, and a literal word is
 * always a valid token. */
static inline __attribute__((always_inline)) uint64_t gcur_skip_lits(op_gcur_t *c, uint64_t k, int wk) {
  if (!c->dec || (wk == OPK_PL && c->d.s[0])) return 0;
  size_t pos = c->d.pos, end = c->d.nwords;
  const size_t start = pos;
  if (wk == OPK_W64) {
    const uint64_t *w = (const uint64_t *)c->d.words;
    while (k - (pos - start) >= 8 && end - pos >= 8 &&
           !((w[pos] | w[pos + 1] | w[pos + 2] | w[pos + 3] | w[pos + 4] | w[pos + 5] | w[pos + 6] |
              w[pos + 7]) >> 63))
      pos += 8;
  } else {
    const uint32_t *w = (const uint32_t *)c->d.words;
    while (k - (pos - start) >= 8 && end - pos >= 8 &&
           !((w[pos] | w[pos + 1] | w[pos + 2] | w[pos + 3] | w[pos + 4] | w[pos + 5] | w[pos + 6] |
              w[pos + 7]) >> 31))
      pos += 8;
  }
  c->d.pos = pos;
  return pos - start;
}

static inline __attribute__((always_inline)) int gcur_skip(op_gcur_t *c, uint64_t k, op_dec_fn dec, int wk) {
  while (k) {
    if (!c->rem && wk != OPK_NONE && c->unit && c->dec && !(wk == OPK_PL && c->d.s[0])) {
      /* one word a group: k groups are k words, without reading them (the
       * position never passes the last word; past it, groups are 0) */
      size_t left = c->d.nwords - c->d.pos, step = k < left ? (size_t)k : left;
      c->d.pos += step;
      k -= step;
      if (!k) break;
    }
    if (!c->rem) {
      if (wk != OPK_NONE && k >= 8 && (k -= gcur_skip_lits(c, k, wk)) == 0) break;
      BA_FORWARD(gcur_load(c, dec));
    }
    uint64_t t = BA_MIN(k, c->rem);
    c->rem -= t;
    k -= t;
  }
  return BA_OK;
}

/* direct: the output has the operands' group size and takes group tokens
 * straight into its encoder (through `put` when specialised). */
static inline __attribute__((always_inline)) int gsink_tok(op_sink_t *s, int direct, op_put_fn put,
                                                           unsigned G, const ba_tok_t *t) {
  if (direct) return put ? put(&s->out->vec, &s->out->st, t) : s->out->ops->put(&s->out->vec, &s->out->st, t);
  if (t->kind == BA_TOK_LIT) return sink_bits(s, t->lit, G);
  return sink_run(s, t->kind == BA_TOK_FILL1, t->n * G);
}

static inline __attribute__((always_inline)) int op_groups(int op, const ba_bitmap_t *a,
                                                           const ba_bitmap_t *b, uint64_t N,
                                                           op_sink_t *s, op_dec_fn dec,
                                                           op_put_fn put, int wk) {
  const unsigned G = a->group;
  const uint64_t all = op_mask(G), full = N / G;
  const unsigned tail = (unsigned)(N % G);
  const int direct = s->out && s->out->group == G;
  op_gcur_t A, B;
  ba_tok_t t;
  gcur_init(&A, a);
  gcur_init(&B, b);
  uint64_t g = 0;
  while (g < full && !s->stopped) {
    if (wk != OPK_NONE && A.unit && B.unit && !A.rem && !B.rem && A.dec && B.dec &&
        !(wk == OPK_PL && (A.d.s[0] || B.d.s[0]))) {
      /* Both one word per group, at word g: literal pairs straight from the
       * words (a literal word is its group's bits); a fill word ends the
       * batch and goes through the tokens below. */
      size_t n = BA_MIN(BA_MIN(A.d.nwords - A.d.pos, B.d.nwords - B.d.pos), full - g), j = 0;
      t.kind = BA_TOK_LIT;
      t.n = 1;
      if (wk == OPK_W64) {
        const uint64_t *wa = (const uint64_t *)A.d.words + A.d.pos, *wb = (const uint64_t *)B.d.words + B.d.pos;
        for (; j < n && !((wa[j] | wb[j]) >> 63) && !s->stopped; j++) {
          t.lit = op_eval(op, wa[j], wb[j]) & all;
          BA_FORWARD(gsink_tok(s, direct, put, G, &t));
        }
      } else {
        const uint32_t *wa = (const uint32_t *)A.d.words + A.d.pos, *wb = (const uint32_t *)B.d.words + B.d.pos;
        for (; j < n && !((wa[j] | wb[j]) >> 31) && !s->stopped; j++) {
          t.lit = op_eval(op, wa[j], wb[j]) & all;
          BA_FORWARD(gsink_tok(s, direct, put, G, &t));
        }
      }
      A.d.pos += j;
      B.d.pos += j;
      g += j;
      if (j) continue;
    }
    if (!A.rem) BA_FORWARD(gcur_load(&A, dec));
    if (!B.rem) BA_FORWARD(gcur_load(&B, dec));
    uint64_t left = full - g, k;
    int da = A.kind != BA_TOK_LIT ? op_dominant(op, 0, A.kind) : -1;
    int db = B.kind != BA_TOK_LIT ? op_dominant(op, 1, B.kind) : -1;
    if (da >= 0) {
      k = BA_MIN(A.rem, left);
      A.rem -= k;
      BA_FORWARD(gcur_skip(&B, k, dec, wk));
      t.kind = (uint8_t)da;
    } else if (db >= 0) {
      k = BA_MIN(B.rem, left);
      B.rem -= k;
      BA_FORWARD(gcur_skip(&A, k, dec, wk));
      t.kind = (uint8_t)db;
    } else if (A.kind != BA_TOK_LIT && B.kind != BA_TOK_LIT) {
      k = BA_MIN(BA_MIN(A.rem, B.rem), left);
      A.rem -= k;
      B.rem -= k;
      t.kind = (uint8_t)(op_eval(op, (uint64_t)A.kind, (uint64_t)B.kind) & 1);
    } else {
      uint64_t x = A.kind == BA_TOK_LIT ? A.lit : (A.kind ? all : 0);
      uint64_t y = B.kind == BA_TOK_LIT ? B.lit : (B.kind ? all : 0);
      A.rem--;
      B.rem--;
      k = 1;
      t.kind = BA_TOK_LIT;
      t.lit = op_eval(op, x, y) & all;
    }
    t.n = k;
    BA_FORWARD(gsink_tok(s, direct, put, G, &t));
    g += k;
  }
  if (tail && !s->stopped) {
    if (!A.rem) BA_FORWARD(gcur_load(&A, dec));
    if (!B.rem) BA_FORWARD(gcur_load(&B, dec));
    uint64_t x = A.kind == BA_TOK_LIT ? A.lit : (A.kind ? all : 0);
    uint64_t y = B.kind == BA_TOK_LIT ? B.lit : (B.kind ? all : 0);
    uint64_t res = op_eval(op, x, y) & all & ~op_mask(G - tail);
    if (!direct) return sink_bits(s, res >> (G - tail), tail);
    t.kind = BA_TOK_LIT;
    t.n = 1;
    t.lit = res;
    BA_FORWARD(gsink_tok(s, direct, put, G, &t));
  }
  if (direct) s->out->rows = N; /* whole groups went in; the padding is zero */
  return BA_OK;
}

typedef ba_pair_kernel_fn op_fn;

/* ---- bitset paths (ba_bitmap_or_many) ---- */

/* Row r is bit 63 - r % 64 of word r / 64 (MSB first, as append_bits takes it). */
static inline void bs_set_range(uint64_t *bs, uint64_t lo, uint64_t hi) {
  if (lo >= hi) return;
  uint64_t wl = lo >> 6, wh = (hi - 1) >> 6;
  uint64_t ml = ~UINT64_C(0) >> (lo & 63), mh = ~UINT64_C(0) << (63 - ((hi - 1) & 63));
  if (wl == wh) {
    bs[wl] |= ml & mh;
    return;
  }
  bs[wl] |= ml;
  for (uint64_t i = wl + 1; i < wh; i++) bs[i] = ~UINT64_C(0);
  bs[wh] |= mh;
}

/* ORs the rows of one finished bitmap into bs, which has N / 64 + 2 words for
 * N >= its rows: its words were validated (whole groups, padding rows 0), so a
 * literal ends at most G - 1 rows past its row count. `dec` is the codec's
 * inline decoder in the specialised instances below (NULL: through ops). */
static inline __attribute__((always_inline)) int bs_or(uint64_t *bs, const ba_bitmap_t *bm, op_dec_fn dec) {
  const ba_codec_ops_t *ops = bm->ops;
  const unsigned G = bm->group;
  uint64_t base = 0;
  ba_dec_t d;
  ba_tok_t t;
  int rc;
  ops->dec_init(&d, bm->vec.w, bm->vec.n);
  while ((rc = dec ? dec(&d, &t) : ops->dec_next(&d, &t)) == 1) {
    if (t.kind == BA_TOK_LIT) {
      if (t.lit) {
        uint64_t bits = t.lit << (64 - G), off = base & 63;
        bs[base >> 6] |= bits >> off;
        if (off && 64 - off < G) bs[(base >> 6) + 1] |= bits << (64 - off);
      }
      base += G;
      continue;
    }
    uint64_t len = G ? t.n * G : t.n;
    if (t.kind == BA_TOK_FILL1) bs_set_range(bs, base, BA_MIN(base + len, bm->rows));
    base += len;
  }
  return rc < 0 ? BA_ERR_CORRUPT : BA_OK;
}

/* The G rows of bs from row r on, first row as the MSB (bs has a spare word). */
static inline uint64_t bs_group(const uint64_t *bs, uint64_t r, unsigned G) {
  uint64_t w = r >> 6;
  unsigned off = (unsigned)(r & 63);
  uint64_t x = bs[w] << off;
  if (off > 64 - G) x |= bs[w + 1] >> (64 - off);
  return x >> (64 - G);
}

/* Feeds rows [0, N) of bs to a group-codec output o (o->group = G, 31 or
 * 63) as group tokens cut straight out of the bitset: runs of 0 or all-ones
 * groups go in as one fill (handing the encoder each such group as a literal
 * costs 5-6% more instructions on a range count), the partial last group as
 * a literal with zero padding, as the kernels do. `put` is the output's
 * inline encoder when specialised (NULL: through ops). */
static inline __attribute__((always_inline)) int bs_put_groups(const uint64_t *bs, uint64_t N, ba_bitmap_t *o,
                                                               op_put_fn put) {
  const unsigned G = o->group, tail = (unsigned)(N % G);
  const uint64_t all = op_mask(G), full = N / G;
  ba_tok_t fill = {0, 0, BA_TOK_FILL0}, lit = {1, 0, BA_TOK_LIT};
#define BS_PUT(tok) ((put) ? (put)(&o->vec, &o->st, (tok)) : o->ops->put(&o->vec, &o->st, (tok)))
  for (uint64_t g = 0; g <= full; g++) {
    uint64_t grp = g < full ? bs_group(bs, g * G, G) : 0;
    int homog = g < full && (grp == 0 || grp == all);
    uint8_t kind = grp ? BA_TOK_FILL1 : BA_TOK_FILL0;
    if (fill.n && (!homog || kind != fill.kind)) { /* the open run ends */
      BA_FORWARD(BS_PUT(&fill));
      fill.n = 0;
    }
    if (homog) {
      fill.kind = kind;
      fill.n++;
    } else if (g < full || tail) {
      lit.lit = g < full ? grp : bs_group(bs, full * G, G) & ~op_mask(G - tail); /* last: zero padded */
      BA_FORWARD(BS_PUT(&lit));
    }
  }
#undef BS_PUT
  o->rows = N; /* whole groups went in; the padding is zero */
  return BA_OK;
}


/* The six pair kernels of a group codec over its inline coder, as the table
 * `pfx##_kernels` for ops->kernels (index 0..5 = AND, OR, XOR, ANDNOT, NOT,
 * COPY). wk: the word layout gcur_skip_lits may step over (OPK_*). */
#define BA_GROUP_KERNELS(pfx, dec, put, wk)                                                   \
  static int pfx##_k_and(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(BA_OP_AND, a, b, N, s, dec, put, wk);                                        \
  }                                                                                               \
  static int pfx##_k_or(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) {  \
    return op_groups(BA_OP_OR, a, b, N, s, dec, put, wk);                                         \
  }                                                                                               \
  static int pfx##_k_xor(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(BA_OP_XOR, a, b, N, s, dec, put, wk);                                        \
  }                                                                                               \
  static int pfx##_k_andnot(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N,               \
                            op_sink_t *s) {                                                       \
    return op_groups(BA_OP_ANDNOT, a, b, N, s, dec, put, wk);                                     \
  }                                                                                               \
  static int pfx##_k_not(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(BA_OPX_NOT, a, b, N, s, dec, put, wk);                                       \
  }                                                                                               \
  static int pfx##_k_copy(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) {\
    return op_groups(BA_OPX_COPY, a, b, N, s, dec, put, wk);                                      \
  }                                                                                               \
  static const ba_pair_kernel_fn pfx##_kernels[6] = {pfx##_k_and, pfx##_k_or,     pfx##_k_xor,    \
                                                     pfx##_k_andnot, pfx##_k_not, pfx##_k_copy};

/* ops->bitset_or and ops->bitset_put of a group codec over its inline coder:
 * `pfx##_bitset_or`, `pfx##_bitset_put`. */
/* Whole groups into an encoder (ops->put_groups, the fast path of
 * ba_bitmap_append_groups): per entry, gaps[i] zero groups as one FILL0 token,
 * then the group lits[i] & all as a LIT or FILL token (the tokens the rows
 * would give one by one), through the codec's inline coder. */
static inline __attribute__((always_inline)) int groups_put(ba_wordvec_t *v, ba_enc_state_t *st, const uint32_t *gaps,
                                                            const uint64_t *lits, size_t n, uint64_t all,
                                                            op_put_fn put) {
  for (size_t i = 0; i < n; i++) {
    ba_tok_t t;
    if (gaps[i]) {
      t.n = gaps[i];
      t.lit = 0;
      t.kind = BA_TOK_FILL0;
      BA_FORWARD(put(v, st, &t));
    }
    uint64_t g = lits[i] & all;
    t.n = 1;
    t.lit = g;
    t.kind = g == 0 ? BA_TOK_FILL0 : g == all ? BA_TOK_FILL1 : BA_TOK_LIT;
    BA_FORWARD(put(v, st, &t));
  }
  return BA_OK;
}

#define BA_BITSET_PATHS(pfx, dec, put)                                                        \
  static int pfx##_bitset_or(uint64_t *bs, const ba_bitmap_t *bm) { return bs_or(bs, bm, dec); } \
  static int pfx##_bitset_put(const uint64_t *bs, uint64_t N, ba_bitmap_t *o) {                 \
    return bs_put_groups(bs, N, o, put);                                                        \
  }                                                                                             \
  static int pfx##_put_groups(ba_wordvec_t *v, ba_enc_state_t *st, const uint32_t *gaps,        \
                              const uint64_t *lits, size_t n, uint64_t all) {                   \
    return groups_put(v, st, gaps, lits, n, all, put);                                          \
  }

#endif
