/* MASC x MASC(-QT) pair kernels: merge the two operands' run sequences.
 * Reached through ops->kernels of both MASC codecs (ops.c picks them for
 * any two bit-run operands). */
#include "codec/kernel.h"
#include "codec/masc_impl.h"

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

const ba_pair_kernel_fn ba_masc_kernels[4] = {op_and_ms, op_or_ms, op_xor_ms, op_andnot_ms};
