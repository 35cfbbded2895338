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
 * 1-fill, ANDNOT: 0-fill in a or 1-fill in b). The shorter operand is padded
 * with zeros (D-6); the result is cut at N rows, so NOT re-masks its tail. */
#include "codec/codec_internal.h"
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
typedef struct {
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

typedef int (*op_dec_fn)(ba_dec_t *, ba_tok_t *);
typedef int (*op_put_fn)(ba_wordvec_t *, ba_enc_state_t *, const ba_tok_t *);

typedef struct {
  op_dec_fn dec; /* the operand's decoder; NULL once past its end */
  ba_dec_t d;
  uint64_t rem;  /* groups left in the current token */
  uint64_t lit;
  int kind;
} op_gcur_t;

static inline void gcur_init(op_gcur_t *c, const ba_bitmap_t *bm) {
  c->dec = bm ? bm->ops->dec_next : NULL;
  c->rem = 0;
  c->lit = 0;
  c->kind = BA_TOK_FILL0;
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

static inline __attribute__((always_inline)) int gcur_skip(op_gcur_t *c, uint64_t k, op_dec_fn dec) {
  while (k) {
    if (!c->rem) BA_FORWARD(gcur_load(c, dec));
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
                                                           op_put_fn put) {
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
    if (!A.rem) BA_FORWARD(gcur_load(&A, dec));
    if (!B.rem) BA_FORWARD(gcur_load(&B, dec));
    uint64_t left = full - g, k;
    int da = A.kind != BA_TOK_LIT ? op_dominant(op, 0, A.kind) : -1;
    int db = B.kind != BA_TOK_LIT ? op_dominant(op, 1, B.kind) : -1;
    if (da >= 0) {
      k = BA_MIN(A.rem, left);
      A.rem -= k;
      BA_FORWARD(gcur_skip(&B, k, dec));
      t.kind = (uint8_t)da;
    } else if (db >= 0) {
      k = BA_MIN(B.rem, left);
      B.rem -= k;
      BA_FORWARD(gcur_skip(&A, k, dec));
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

/* One kernel per (operation, coder set): generic, wah32, wah64, plwah pair. */
#define OP_KERNELS(name, op)                                                                     \
  static int name##_any(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, NULL, NULL);                                                \
  }                                                                                              \
  static int name##_w32(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, opw32_dec_next, opw32_put);                                 \
  }                                                                                              \
  static int name##_w64(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, opw64_dec_next, opw64_put);                                 \
  }                                                                                              \
  static int name##_pl(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) {  \
    return op_groups(op, a, b, N, s, plwah_dec_next, plwah_put);                                 \
  }
OP_KERNELS(op_and, BA_OP_AND)
OP_KERNELS(op_or, BA_OP_OR)
OP_KERNELS(op_xor, BA_OP_XOR)
OP_KERNELS(op_andnot, BA_OP_ANDNOT)
OP_KERNELS(op_not, BA_OPX_NOT)
OP_KERNELS(op_copy, BA_OPX_COPY)

typedef int (*op_fn)(const ba_bitmap_t *, const ba_bitmap_t *, uint64_t, op_sink_t *);
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
  if ((b && b->ops->id != c) || (out && out->ops->id != c)) v = 0;
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
  if (rc == BA_OK)
    rc = allow_fast && a->group && (!b || b->group == a->group) ? op_pick(op, a, b, o)(a, b, N, &s)
                                                                 : op_bits(op, a, b, N, &s);
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
  if (a->group && b->group == a->group)
    BA_FORWARD(op_pick(op, a, b, NULL)(a, b, N, &s));
  else
    BA_FORWARD(op_bits(op, a, b, N, &s));
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

int ba_bitmap_or_many(const ba_bitmap_t *const *bms, size_t n, ba_codec_t out_codec,
                      ba_bitmap_t **out) {
  BA_RETURN_IF(!out || (n && !bms), BA_ERR_INVALID);
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
