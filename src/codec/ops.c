/* Boolean algebra in the compressed domain (spec §2.5, §3.5, §4.6, §5.4).
 *
 * Two loops, both over decoded tokens, neither materialising a bitmap:
 * - op_groups: both operands have the same group size G (wah32/plwah/compax
 *   pairs, wah64 pairs). Works group-wise; an output codec with the same G is
 *   fed whole-group tokens directly, any other output goes through row appends.
 * - op_bits: any mix (31 vs 63 vs bit runs). A cursor per operand yields
 *   segments at row granularity; literal pieces of up to 63 rows are combined
 *   with shifts.
 * Both skip the other operand under a dominating fill (AND: 0-fill, OR:
 * 1-fill, ANDNOT: 0-fill in a or 1-fill in b); the same-codec WAH and PLWAH
 * kernels step over runs of literal words there eight at a time. The
 * shorter operand is padded with zeros (D-6); the result is cut at N rows, so
 * NOT re-masks its tail. */
#include "codec/codec_internal.h"
#include "common/common.h"

#include "codec/ops_groups.h"

/* ---- group-wise fast path ---- */

/* Inline copies of the WAH and PLWAH coders, so that the same-codec kernels
 * below decode and encode without an indirect call per word. */
#define WAH_W uint32_t
#define WAH_BITS 32
#define WAH_PUSH ba_wordvec_push32
#define WAH_PFX(x) opw32_##x
#include "codec/wah_tmpl.h"
#undef WAH_W
#undef WAH_BITS
#undef WAH_PUSH
#undef WAH_PFX
#define WAH_W uint64_t
#define WAH_BITS 64
#define WAH_PUSH ba_wordvec_push64
#define WAH_PFX(x) opw64_##x
#include "codec/wah_tmpl.h"
#undef WAH_W
#undef WAH_BITS
#undef WAH_PUSH
#undef WAH_PFX

#include "codec/plwah_impl.h"

/* One kernel per (operation, coder set): generic, wah32, wah64, plwah pair;
 * COMPAX pairs in ops_compax.c (instantiated in this file they cost the WAH
 * kernels 25% of their OR speed: real wah32 1.20M -> 0.91M/s, GCC inlines
 * less once the unit grows). */
#define OP_KERNELS(name, op)                                                                     \
  static int name##_any(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, NULL, NULL, OPK_NONE);                                     \
  }                                                                                              \
  static int name##_w32(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, opw32_dec_next, opw32_put, OPK_W32);                       \
  }                                                                                              \
  static int name##_w64(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, opw64_dec_next, opw64_put, OPK_W64);                       \
  }                                                                                              \
  static int name##_pl(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) {  \
    return op_groups(op, a, b, N, s, plwah_dec_next, plwah_put, OPK_PL);                        \
  }
OP_KERNELS(op_and, BA_OP_AND)
OP_KERNELS(op_or, BA_OP_OR)
OP_KERNELS(op_xor, BA_OP_XOR)
OP_KERNELS(op_andnot, BA_OP_ANDNOT)
OP_KERNELS(op_not, BA_OPX_NOT)
OP_KERNELS(op_copy, BA_OPX_COPY)

static const op_fn op_groups_tab[6][4] = {
    {op_and_any, op_and_w32, op_and_w64, op_and_pl},
    {op_or_any, op_or_w32, op_or_w64, op_or_pl},
    {op_xor_any, op_xor_w32, op_xor_w64, op_xor_pl},
    {op_andnot_any, op_andnot_w32, op_andnot_w64, op_andnot_pl},
    {op_not_any, op_not_w32, op_not_w64, op_not_pl},
    {op_copy_any, op_copy_w32, op_copy_w64, op_copy_pl},
};

/* Picks the kernel once per operand pair: a specialised kernel when every
 * operand and the output (if any) share that codec. */
static op_fn op_pick(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, const ba_bitmap_t *out) {
  ba_codec_t c = a->ops->id;
  int v = c == BA_CODEC_WAH32 ? 1 : c == BA_CODEC_WAH64 ? 2 : c == BA_CODEC_PLWAH ? 3 : 0;
  if ((b && b->ops->id != c) || (out && out->ops->id != c)) return op_groups_tab[op][0];
  if (c == BA_CODEC_COMPAX) return ba_ops_compax_tab[op];
  return op_groups_tab[op][v];
}

/* ---- bit-granular generic path ---- */

typedef struct {
  const ba_codec_ops_t *ops;
  ba_dec_t d;
  unsigned G;
  int kind;
  uint64_t rem; /* rows left in the current segment */
  uint64_t lit; /* LIT: the rows left, MSB-aligned at bit 63 */
} op_bcur_t;

static void bcur_init(op_bcur_t *c, const ba_bitmap_t *bm) {
  c->ops = bm ? bm->ops : NULL;
  c->G = bm ? bm->group : 0;
  c->kind = BA_TOK_FILL0;
  c->rem = 0;
  c->lit = 0;
  if (bm) c->ops->dec_init(&c->d, bm->vec.w, bm->vec.n);
}

static int bcur_load(op_bcur_t *c) {
  ba_tok_t t;
  int rc = c->ops ? c->ops->dec_next(&c->d, &t) : 0;
  if (rc < 0) return BA_ERR_CORRUPT;
  if (rc == 0) {
    c->ops = NULL;
    c->kind = BA_TOK_FILL0;
    c->rem = UINT64_MAX;
    return BA_OK;
  }
  c->kind = t.kind;
  if (t.kind == BA_TOK_LIT) {
    BA_RETURN_IF(c->G == 0, BA_ERR_CORRUPT);
    c->lit = t.lit << (64 - c->G);
    c->rem = c->G;
  } else {
    c->rem = c->G ? t.n * c->G : t.n;
  }
  return c->rem ? BA_OK : BA_ERR_CORRUPT;
}

/* k in 1..63, k <= rem. */
static inline uint64_t bcur_take(op_bcur_t *c, unsigned k) {
  uint64_t r;
  if (c->kind == BA_TOK_LIT) {
    r = c->lit >> (64 - k);
    c->lit <<= k;
  } else {
    r = c->kind ? op_mask(k) : 0;
  }
  c->rem -= k;
  return r;
}

static int bcur_skip(op_bcur_t *c, uint64_t k) {
  while (k) {
    if (!c->rem) BA_FORWARD(bcur_load(c));
    uint64_t t = BA_MIN(k, c->rem);
    if (c->kind == BA_TOK_LIT) c->lit = t >= 64 ? 0 : c->lit << t;
    c->rem -= t;
    k -= t;
  }
  return BA_OK;
}

static int op_bits(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) {
  op_bcur_t A, B;
  bcur_init(&A, a);
  bcur_init(&B, b);
  uint64_t pos = 0;
  while (pos < N && !s->stopped) {
    if (!A.rem) BA_FORWARD(bcur_load(&A));
    if (!B.rem) BA_FORWARD(bcur_load(&B));
    uint64_t left = N - pos, k;
    int da = A.kind != BA_TOK_LIT ? op_dominant(op, 0, A.kind) : -1;
    int db = B.kind != BA_TOK_LIT ? op_dominant(op, 1, B.kind) : -1;
    if (da >= 0) {
      k = BA_MIN(A.rem, left);
      A.rem -= k;
      BA_FORWARD(bcur_skip(&B, k));
      BA_FORWARD(sink_run(s, da, k));
    } else if (db >= 0) {
      k = BA_MIN(B.rem, left);
      B.rem -= k;
      BA_FORWARD(bcur_skip(&A, k));
      BA_FORWARD(sink_run(s, db, k));
    } else if (A.kind != BA_TOK_LIT && B.kind != BA_TOK_LIT) {
      k = BA_MIN(BA_MIN(A.rem, B.rem), left);
      A.rem -= k;
      B.rem -= k;
      BA_FORWARD(sink_run(s, (int)(op_eval(op, (uint64_t)A.kind, (uint64_t)B.kind) & 1), k));
    } else {
      k = BA_MIN(BA_MIN(A.rem, B.rem), left); /* <= 63: one side is a literal */
      unsigned kk = (unsigned)k;
      uint64_t x = bcur_take(&A, kk), y = bcur_take(&B, kk);
      BA_FORWARD(sink_bits(s, op_eval(op, x, y) & op_mask(kk), kk));
    }
    pos += k;
  }
  return BA_OK;
}

/* ---- MASC x MASC run merge ---- */

/* Both operands are bit-run codecs (masc, masc-qt): merge the two alternating
 * run sequences directly, decoding words inline (no token calls), and hand
 * maximal result runs to the output (a bit-run output gets FILL tokens straight
 * into its encoder; any other output gets row runs). Words of a finished bitmap
 * were validated when it was built or wrapped, so only the progress guard
 * (a run of length 0) is checked here. */
typedef struct {
  const uint32_t *w;
  size_t pos, n;
  uint64_t rem;   /* rows left in the current run */
  uint32_t carry; /* ones carried by the last word, not yet visited */
  int v;
} op_mcur_t;

static inline void mcur_init(op_mcur_t *c, const ba_bitmap_t *bm) {
  c->w = (const uint32_t *)bm->vec.w;
  c->pos = 0;
  c->n = bm->vec.n;
  c->rem = 0;
  c->carry = 0;
  c->v = 0;
}

static inline __attribute__((always_inline)) int mcur_load(op_mcur_t *c) {
  if (c->carry) {
    c->v = 1;
    c->rem = c->carry;
    c->carry = 0;
    return BA_OK;
  }
  if (c->pos >= c->n) { /* past the end: zero padding (D-6) */
    c->v = 0;
    c->rem = UINT64_MAX;
    return BA_OK;
  }
  uint32_t x = c->w[c->pos++];
  c->rem = (uint64_t)((x & 0x01FFFFFFu) >> 5) * 31 + (x & 31u);
  c->v = (int)(x >> 31);
  c->carry = (x & 0xC0000000u) == 0x40000000u ? (x >> 25) & 31u : 0;
  return c->rem ? BA_OK : BA_ERR_CORRUPT;
}

static inline __attribute__((always_inline)) int mcur_skip(op_mcur_t *c, uint64_t k) {
  while (k > c->rem) {
    k -= c->rem;
    BA_FORWARD(mcur_load(c));
  }
  c->rem -= k;
  return BA_OK;
}

/* Output run accumulator: consecutive equal values are merged before the
 * encoder (or the counter) sees them. */
typedef struct {
  op_sink_t *s;
  int direct; /* the output is a bit-run codec: FILL tokens into its encoder */
  int v;
  uint64_t len;
} op_mout_t;

static inline __attribute__((always_inline)) int mout_flush(op_mout_t *o) {
  if (!o->len) return BA_OK;
  uint64_t len = o->len;
  o->len = 0;
  if (o->direct) {
    ba_tok_t t = {len, 0, (uint8_t)(o->v ? BA_TOK_FILL1 : BA_TOK_FILL0)};
    return o->s->out->ops->put(&o->s->out->vec, &o->s->out->st, &t);
  }
  return sink_run(o->s, o->v, len);
}

static inline __attribute__((always_inline)) int mout_run(op_mout_t *o, int v, uint64_t k) {
  if (o->len && v != o->v) BA_FORWARD(mout_flush(o));
  o->v = v;
  o->len += k;
  return BA_OK;
}

static inline __attribute__((always_inline)) int op_masc(int op, const ba_bitmap_t *a,
                                                         const ba_bitmap_t *b, uint64_t N,
                                                         op_sink_t *s) {
  op_mcur_t A, B;
  mcur_init(&A, a);
  mcur_init(&B, b);
  op_mout_t o = {s, s->out && s->out->group == 0, 0, 0};
  uint64_t pos = 0;
  while (pos < N) {
    if (!A.rem) BA_FORWARD(mcur_load(&A));
    if (!B.rem) BA_FORWARD(mcur_load(&B));
    uint64_t left = N - pos, k;
    int da = op_dominant(op, 0, A.v), db = op_dominant(op, 1, B.v), v;
    if (da >= 0) {
      k = BA_MIN(A.rem, left);
      A.rem -= k;
      BA_FORWARD(mcur_skip(&B, k));
      v = da;
    } else if (db >= 0) {
      k = BA_MIN(B.rem, left);
      B.rem -= k;
      BA_FORWARD(mcur_skip(&A, k));
      v = db;
    } else {
      k = BA_MIN(BA_MIN(A.rem, B.rem), left);
      A.rem -= k;
      B.rem -= k;
      v = (int)(op_eval(op, (uint64_t)A.v, (uint64_t)B.v) & 1);
    }
    BA_FORWARD(mout_run(&o, v, k));
    pos += k;
    if (s->stopped || (!s->out && o.v && o.len && s->stop_nonzero)) {
      s->stopped = 1;
      break;
    }
  }
  BA_FORWARD(mout_flush(&o));
  if (o.direct) s->out->rows = N; /* every row went into the encoder */
  return BA_OK;
}

#define OP_MASC_KERNEL(name, op) \
  static int name##_ms(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_masc(op, a, b, N, s);                                                            \
  }
OP_MASC_KERNEL(op_and, BA_OP_AND)
OP_MASC_KERNEL(op_or, BA_OP_OR)
OP_MASC_KERNEL(op_xor, BA_OP_XOR)
OP_MASC_KERNEL(op_andnot, BA_OP_ANDNOT)

static const op_fn op_masc_tab[4] = {op_and_ms, op_or_ms, op_xor_ms, op_andnot_ms};

/* The kernel of a fast-path pair, or NULL for the bit-granular loop. */
static op_fn op_pick_fast(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, const ba_bitmap_t *out) {
  if (a->group && (!b || b->group == a->group)) return op_pick(op, a, b, out);
  if (b && a->group == 0 && b->group == 0 && op <= BA_OP_ANDNOT) return op_masc_tab[op];
  return NULL;
}

/* ---- entry points ---- */

static int op_check(const ba_bitmap_t *bm) { return bm && bm->finished ? BA_OK : BA_ERR_INVALID; }

static int op_run(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t out_codec,
                  ba_bitmap_t **out, int allow_fast) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  int unary = op == BA_OPX_NOT || op == BA_OPX_COPY;
  BA_FORWARD(op_check(a));
  if (unary)
    b = NULL;
  else
    BA_FORWARD(op_check(b));
  BA_RETURN_IF(out_codec < BA_CODEC_MIN || out_codec > BA_CODEC_MAX, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = ba_codec_ops(out_codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  uint64_t N = b ? BA_MAX(a->rows, b->rows) : a->rows;
  ba_bitmap_t *o;
  BA_FORWARD(ba_bm_new(ops, &o));
  op_sink_t s = {o, 0, 0, 0};
  int rc = BA_OK;
  /* Output words come from input token boundaries: reserve their sum once
   * (AND usually needs less; a hint, the encoders still check). */
  if (ops->word_bytes == a->ops->word_bytes)
    rc = ba_wordvec_reserve(&o->vec, a->vec.n + (b ? b->vec.n : 0) + 2, ops->word_bytes);
  op_fn fast = allow_fast ? op_pick_fast(op, a, b, o) : NULL;
  if (rc == BA_OK) rc = fast ? fast(a, b, N, &s) : op_bits(op, a, b, N, &s);
  if (rc == BA_OK) rc = ba_bm_close(o, N);
  if (rc < 0) {
    ba_bitmap_free(o);
    return rc;
  }
  *out = o;
  return BA_OK;
}

int ba_bitmap_op_generic(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t out_codec,
                         ba_bitmap_t **out) {
  BA_RETURN_IF(op < 0 || op > BA_OPX_COPY, BA_ERR_INVALID);
  return op_run(op, a, b, out_codec, out, 0);
}

int ba_bitmap_op(ba_op_t op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t out_codec,
                 ba_bitmap_t **out) {
  BA_RETURN_IF((int)op < BA_OP_AND || (int)op > BA_OP_ANDNOT, BA_ERR_INVALID);
  return op_run((int)op, a, b, out_codec, out, 1);
}

int ba_bitmap_and(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OP_AND, a, b, c, out, 1);
}
int ba_bitmap_or(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OP_OR, a, b, c, out, 1);
}
int ba_bitmap_xor(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OP_XOR, a, b, c, out, 1);
}
int ba_bitmap_andnot(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OP_ANDNOT, a, b, c, out, 1);
}
int ba_bitmap_not(const ba_bitmap_t *a, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OPX_NOT, a, NULL, c, out, 1);
}
int ba_bitmap_convert(const ba_bitmap_t *a, ba_codec_t c, ba_bitmap_t **out) {
  return op_run(BA_OPX_COPY, a, NULL, c, out, 1);
}

/* Counts the rows of (a op b) without building it. */
static int op_count(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, int stop, uint64_t *out) {
  BA_FORWARD(op_check(a));
  BA_FORWARD(op_check(b));
  uint64_t N = BA_MAX(a->rows, b->rows);
  op_sink_t s = {NULL, 0, stop, 0};
  op_fn fast = op_pick_fast(op, a, b, NULL);
  BA_FORWARD(fast ? fast(a, b, N, &s) : op_bits(op, a, b, N, &s));
  *out = s.count;
  return BA_OK;
}

int ba_bitmap_and_count(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t *out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  return op_count(BA_OP_AND, a, b, 0, out);
}

int ba_bitmap_equal(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  BA_FORWARD(op_check(a));
  BA_FORWARD(op_check(b));
  if (a->rows != b->rows) return 0;
  uint64_t c;
  BA_FORWARD(op_count(BA_OP_XOR, a, b, 1, &c));
  return c == 0;
}

/* ---- OR of many: one plain bitset ---- */

/* Crossover, measured with bench/codec_fast (2-vCPU AMD EPYC, Release, CPU
 * time; unions/s of the k most frequent values, tree vs bitset):
 * - operand count: at k = 4 the tree wins for group codecs (real wah32 31.8k
 *   vs 18.1k, uniform 3.8k vs 1.5k, zipf 638 vs 459), k = 8 is even (real
 *   17.0k vs 15.3k, uniform 1.2k vs 991), from k = 16 the bitset wins (real
 *   10.1k vs 14.7k, k = 1024: 500 vs 3.1k). MASC operands pay their many runs
 *   in every tree level: the bitset already wins at k = 4 (real 1.4k vs 1.9k,
 *   zipf 37 vs 76; uniform 2.7k vs 2.3k is the exception).
 * - density: on clustered runs the inputs are tiny next to N / 64 and the tree
 *   wins up to k = 64 (wah32 4.5k vs 2.3k) and loses from k = 256 (912 vs
 *   1.4k). The rule words * ceil(log2 k) >= N / 64 (ratio 1:1 below) picks the
 *   faster side in every measured case but the near-ties (within 10%).
 * - since the bitset is encoded by cutting group tokens out of it (same
 *   bench, second session), k = 4 on real data: bitset 16.7k vs tree 14.3k
 *   (wah32), 21.8k vs 10.2k (plwah); zipf 602 vs 451, 396 vs 284; uniform
 *   (sparse operands) still tree, 3.2k vs 2.1k. Dense operands (words for a
 *   quarter of the groups) take the bitset from 3 on: 'ip in [3 addrs] and
 *   proto udp' over 100 M flows, whose last address byte ORs three dense
 *   bitmaps, 10% fewer cycles. */
#define BA_ORMANY_MIN_N_GROUP 8
#define BA_ORMANY_MIN_N_RUNS 3
#define BA_ORMANY_MIN_N_DENSE 3
#define BA_ORMANY_RATIO_NUM 1
#define BA_ORMANY_RATIO_DEN 1


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

static int bs_or_any(uint64_t *bs, const ba_bitmap_t *bm) { return bs_or(bs, bm, NULL); }
static int bs_or_w32(uint64_t *bs, const ba_bitmap_t *bm) { return bs_or(bs, bm, opw32_dec_next); }
static int bs_or_w64(uint64_t *bs, const ba_bitmap_t *bm) { return bs_or(bs, bm, opw64_dec_next); }
static int bs_or_pl(uint64_t *bs, const ba_bitmap_t *bm) { return bs_or(bs, bm, plwah_dec_next); }

static int bs_or_bitmap(uint64_t *bs, const ba_bitmap_t *bm) {
  switch (bm->ops->id) {
    case BA_CODEC_WAH32: return bs_or_w32(bs, bm);
    case BA_CODEC_WAH64: return bs_or_w64(bs, bm);
    case BA_CODEC_PLWAH: return bs_or_pl(bs, bm);
    default: return bs_or_any(bs, bm);
  }
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

static int bs_put_w32(const uint64_t *bs, uint64_t N, ba_bitmap_t *o) { return bs_put_groups(bs, N, o, opw32_put); }
static int bs_put_w64(const uint64_t *bs, uint64_t N, ba_bitmap_t *o) { return bs_put_groups(bs, N, o, opw64_put); }
static int bs_put_pl(const uint64_t *bs, uint64_t N, ba_bitmap_t *o) { return bs_put_groups(bs, N, o, plwah_put); }
static int bs_put_any(const uint64_t *bs, uint64_t N, ba_bitmap_t *o) { return bs_put_groups(bs, N, o, NULL); }

/* Encodes rows [0, N) of bs (N / 64 + 2 words) into a new bitmap of
 * out_codec: group codecs take group tokens cut from the bitset; bit-run
 * codecs take homogeneous words as runs (merged by the generic layer) and
 * mixed words as 64 MSB-first rows. */
static int bs_encode(const uint64_t *bs, uint64_t N, ba_codec_t out_codec, ba_bitmap_t **out) {
  ba_bitmap_t *o;
  BA_FORWARD(ba_bitmap_create(out_codec, &o));
  int rc = BA_OK;
  if (o->group) {
    switch (out_codec) {
      case BA_CODEC_WAH32: rc = bs_put_w32(bs, N, o); break;
      case BA_CODEC_WAH64: rc = bs_put_w64(bs, N, o); break;
      case BA_CODEC_PLWAH: rc = bs_put_pl(bs, N, o); break;
      default: rc = bs_put_any(bs, N, o); break;
    }
    if (rc == BA_OK) rc = ba_bm_close(o, N);
  } else {
    for (uint64_t i = 0, full = N / 64; i < full && rc == BA_OK; i++) {
      uint64_t x = bs[i];
      rc = x == 0 ? ba_bitmap_append_run(o, 0, 64)
                  : x == ~UINT64_C(0) ? ba_bitmap_append_run(o, 1, 64) : ba_bitmap_append_bits(o, x, 64);
    }
    if (rc == BA_OK && N % 64) {
      unsigned k = (unsigned)(N % 64);
      rc = ba_bitmap_append_bits(o, bs[N / 64] >> (64 - k), k);
    }
    if (rc == BA_OK) rc = ba_bitmap_finish(o, N);
  }
  if (rc < 0) {
    ba_bitmap_free(o);
    return rc;
  }
  *out = o;
  return BA_OK;
}

static int or_many_bitset(const ba_bitmap_t *const *bms, size_t n, uint64_t N, ba_codec_t out_codec,
                          ba_bitmap_t **out) {
  /* One spare word: a literal of the last group may reach past N by G-1 rows. */
  uint64_t nw = N / 64 + 2;
  BA_RETURN_IF(nw > SIZE_MAX / sizeof(uint64_t), BA_ERR_NOMEM);
  uint64_t *bs = (uint64_t *)ba_calloc((size_t)nw, sizeof *bs);
  BA_RETURN_IF(!bs, BA_ERR_NOMEM);
  int rc = BA_OK;
  for (size_t i = 0; i < n && rc == BA_OK; i++) rc = bs_or_bitmap(bs, bms[i]);
  if (rc == BA_OK) rc = bs_encode(bs, N, out_codec, out);
  ba_free(bs);
  return rc;
}

int ba_bitmap_or_many(const ba_bitmap_t *const *bms, size_t n, ba_codec_t out_codec,
                      ba_bitmap_t **out) {
  return ba_bitmap_or_many_with(bms, n, out_codec, BA_ORMANY_AUTO, out);
}

/* Strategy choice of ba_bitmap_or_many (AUTO): see or_many_pick. */
static int or_many_pick(const ba_bitmap_t *const *bms, size_t n, uint64_t N) {
  uint64_t words = 0;
  for (size_t i = 0; i < n; i++) words += bms[i]->vec.n;
  unsigned lg = 0;
  while (((size_t)1 << lg) < n) lg++;
  /* Tree: about words * log2(n) word visits (each level re-reads every row's
   * encoding); bitset: N / 64 words cleared, scanned and encoded plus one visit
   * of every input word. BA_ORMANY_RATIO_NUM/DEN is the measured cost of one bitset
   * word relative to one tree word visit (see the crossover note above). */
  size_t min_n = bms[0]->group ? BA_ORMANY_MIN_N_GROUP : BA_ORMANY_MIN_N_RUNS;
  /* Dense group-codec operands (words for at least a quarter of the groups
   * each, on average): every tree level builds a dense result, so the bitset
   * wins from 3 operands on (see the crossover note above). */
  unsigned G = bms[0]->group;
  if (G && n >= BA_ORMANY_MIN_N_DENSE && words * 4 >= (uint64_t)n * (N / G)) return 1;
  return n >= min_n && words * lg * BA_ORMANY_RATIO_DEN >= (N / 64) * BA_ORMANY_RATIO_NUM;
}

int ba_bitmap_or_many_with(const ba_bitmap_t *const *bms, size_t n, ba_codec_t out_codec, int strategy,
                           ba_bitmap_t **out) {
  BA_RETURN_IF(!out || (n && !bms), BA_ERR_INVALID);
  BA_RETURN_IF(strategy < BA_ORMANY_AUTO || strategy > BA_ORMANY_BITSET, BA_ERR_INVALID);
  *out = NULL;
  if (n == 0) {
    ba_bitmap_t *e;
    BA_FORWARD(ba_bitmap_create(out_codec, &e));
    int rc = ba_bitmap_finish(e, 0);
    if (rc < 0) {
      ba_bitmap_free(e);
      return rc;
    }
    *out = e;
    return BA_OK;
  }
  for (size_t i = 0; i < n; i++) BA_FORWARD(op_check(bms[i]));
  BA_RETURN_IF(out_codec < BA_CODEC_MIN || out_codec > BA_CODEC_MAX, BA_ERR_INVALID);
  BA_RETURN_IF(!ba_codec_ops(out_codec), BA_ERR_UNSUPPORTED);
  uint64_t N = 0;
  for (size_t i = 0; i < n; i++) N = BA_MAX(N, bms[i]->rows);
  if (strategy == BA_ORMANY_BITSET || (strategy == BA_ORMANY_AUTO && or_many_pick(bms, n, N)))
    return or_many_bitset(bms, n, N, out_codec, out);
  if (n == 1) return ba_bitmap_convert(bms[0], out_codec, out);
  if (n == 2) return ba_bitmap_or(bms[0], bms[1], out_codec, out);
  /* Intermediate levels keep the first operand's codec (same-group fast path
   * when the inputs share one); only the last OR writes out_codec. */
  ba_codec_t mid = bms[0]->ops->id;
  ba_bitmap_t **cur = (ba_bitmap_t **)ba_malloc(n * sizeof *cur);
  BA_RETURN_IF(!cur, BA_ERR_NOMEM);
  size_t m = 0;
  int rc = BA_OK;
  for (size_t i = 0; i + 1 < n && rc == BA_OK; i += 2) rc = ba_bitmap_or(bms[i], bms[i + 1], mid, &cur[m++]);
  if (rc == BA_OK && (n & 1)) rc = ba_bitmap_clone(bms[n - 1], &cur[m++]);
  if (rc < 0 && m && !cur[m - 1]) m--;
  while (rc == BA_OK && m > 2) {
    size_t k = 0;
    for (size_t i = 0; i < m; i += 2) {
      if (i + 1 == m) {
        cur[k++] = cur[i];
        continue;
      }
      ba_bitmap_t *r = NULL;
      if (rc == BA_OK) rc = ba_bitmap_or(cur[i], cur[i + 1], mid, &r);
      ba_bitmap_free(cur[i]);
      ba_bitmap_free(cur[i + 1]);
      if (r) cur[k++] = r;
    }
    m = k;
  }
  if (rc == BA_OK) rc = m == 2 ? ba_bitmap_or(cur[0], cur[1], out_codec, out)
                               : ba_bitmap_convert(cur[0], out_codec, out);
  for (size_t i = 0; i < m; i++) ba_bitmap_free(cur[i]);
  ba_free(cur);
  return rc;
}
