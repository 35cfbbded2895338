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
 * with zeros (D-6); the result is cut at N rows, so NOT re-masks its tail.
 * Faster kernels for same-codec pairs (group codecs) and bit-run pairs
 * (MASC) live in the codec files and are picked once per call through
 * ops->kernels. Also here: OR of many (tree or one plain bitset). */
#include "codec/kernel.h"

/* ---- group-wise path ---- */

/* The generic group kernels (decoders and encoders through the ops
 * tables), for operands of one group size but different codecs; a codec's
 * own kernels (ops->kernels, instantiated in its file over its inline coder)
 * take same-codec pairs. */
#define OP_ANY_KERNEL(name, op)                                                                  \
  static int name##_any(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, NULL, NULL, OPK_NONE);                                     \
  }
OP_ANY_KERNEL(op_and, BA_OP_AND)
OP_ANY_KERNEL(op_or, BA_OP_OR)
OP_ANY_KERNEL(op_xor, BA_OP_XOR)
OP_ANY_KERNEL(op_andnot, BA_OP_ANDNOT)
OP_ANY_KERNEL(op_not, BA_OPX_NOT)
OP_ANY_KERNEL(op_copy, BA_OPX_COPY)

static const op_fn op_groups_any[6] = {op_and_any, op_or_any, op_xor_any, op_andnot_any, op_not_any, op_copy_any};

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

/* The kernel of a fast-path pair, or NULL for the bit-granular loop. */
static op_fn op_pick_fast(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, const ba_bitmap_t *out) {
  const ba_codec_ops_t *o = a->ops;
  if (a->group && (!b || b->group == a->group)) {
    /* A codec's own kernels when every operand and the output (if any) share it. */
    if (o->kernels && (!b || b->ops == o) && (!out || out->ops == o)) return o->kernels[op];
    return op_groups_any[op];
  }
  if (b && a->group == 0 && b->group == 0 && op <= BA_OP_ANDNOT && o->kernels) return o->kernels[op];
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


/* ORs one finished bitmap into bs: the codec's inline decoder
 * (ops->bitset_or) or the token loop through its ops. */
static int bs_or_bitmap(uint64_t *bs, const ba_bitmap_t *bm) {
  return bm->ops->bitset_or ? bm->ops->bitset_or(bs, bm) : bs_or(bs, bm, NULL);
}

/* Encodes rows [0, N) of bs (N / 64 + 2 words) into a new bitmap of
 * out_codec: group codecs take group tokens cut from the bitset; bit-run
 * codecs take homogeneous words as runs (merged by the generic layer) and
 * mixed words as 64 MSB-first rows. */
static int bs_encode(const uint64_t *bs, uint64_t N, ba_codec_t out_codec, ba_bitmap_t **out) {
  ba_bitmap_t *o;
  BA_FORWARD(ba_bitmap_create(out_codec, &o));
  int rc = BA_OK;
  if (o->group) {
    rc = o->ops->bitset_put ? o->ops->bitset_put(bs, N, o) : bs_put_groups(bs, N, o, NULL);
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

/* ---- AND with a serialized record of one group per word ---- */

/* A dense literal bitmap of WAH32 or PLWAH has as many words as groups:
 * every word is then a literal (MSB 0) or a fill of exactly one group
 * (count 1; PLWAH: no piggybacked position), (x & 0x3FFFFFFF) == 1 in
 * both codecs. Such words are a table of groups: word g is group g. */
#define REC_HDR 20u
#define REC_BATCH 256

static inline uint64_t rec_group(const uint8_t *w, uint64_t g) {
  uint32_t x = ba_load_le32(w + 4 * g);
  return !(x >> 31) ? x : (x & 0x40000000u) ? 0x7FFFFFFFu : 0;
}

/* 1 when the n words at w are one group each and the last group's pad
 * rows (past nrows) are 0: exactly the valid bitmaps of n groups. */
static int rec_one_group_words(const uint8_t *w, size_t n, uint64_t nrows) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = ba_load_le32(w + 4 * i);
    bad |= (x >> 31) & ((x & 0x3FFFFFFFu) != 1u);
  }
  if (bad) return 0;
  unsigned r = (unsigned)(nrows % 31);
  return n == 0 || r == 0 || !(rec_group(w, n - 1) & ((UINT32_C(1) << (31 - r)) - 1));
}

typedef struct {
  ba_bitmap_t *o;
  uint32_t gaps[REC_BATCH];
  uint64_t lits[REC_BATCH];
  size_t k;
  uint64_t next; /* first group not yet appended */
  uint64_t *count; /* counting only: the result's rows, no bitmap */
} rec_out_t;

static int rec_flush(rec_out_t *q) {
  int rc = ba_bitmap_append_groups(q->o, q->gaps, q->lits, q->k);
  q->k = 0;
  return rc;
}

/* Group g (>= q->next) of the result is lit; zero groups skipped are gaps. */
static int rec_put(rec_out_t *q, uint64_t g, uint64_t lit) {
  if (!lit) return BA_OK;
  uint64_t gap = g - q->next;
  while (gap > UINT32_MAX) { /* a gap wider than a u32: a zero group, then the rest */
    q->gaps[q->k] = UINT32_MAX - 1;
    q->lits[q->k++] = 0;
    gap -= UINT32_MAX;
    if (q->k == REC_BATCH) BA_FORWARD(rec_flush(q));
  }
  q->gaps[q->k] = (uint32_t)gap;
  q->lits[q->k++] = lit;
  q->next = g + 1;
  return q->k == REC_BATCH ? rec_flush(q) : BA_OK;
}

/* Group g of the result is lit: the last group (partial: whole groups would
 * run past the rows) is kept aside, the others batched. */
static inline int rec_emit(rec_out_t *q, uint64_t g, uint64_t lit, uint64_t whole, uint64_t *last) {
  if (q->count) {
    *q->count += ba_popcount64(lit); /* padding rows are 0 in both */
    return BA_OK;
  }
  if (g < whole) return rec_put(q, g, lit);
  *last = lit;
  return BA_OK;
}

/* The words of record rec (len bytes) when it is a valid one-word-per-group
 * bitmap of a's codec and rows, else NULL. */
static const uint8_t *rec_table(const ba_bitmap_t *a, const uint8_t *rec, size_t len) {
  ba_codec_t id = a->ops->id;
  if ((id != BA_CODEC_WAH32 && id != BA_CODEC_PLWAH) || !rec || len < REC_HDR || rec[0] != (uint8_t)id ||
      rec[1] != 0 || ba_load_le16(rec + 2) != 0)
    return NULL;
  const uint64_t nrows = ba_load_le64(rec + 4), nwords = ba_load_le64(rec + 12);
  const uint64_t ngroups = nrows / 31 + (nrows % 31 != 0);
  if (nrows != a->rows || nwords != ngroups || nwords > (len - REC_HDR) / 4 || len != REC_HDR + 4 * nwords)
    return NULL;
  return rec_one_group_words(rec + REC_HDR, (size_t)nwords, nrows) ? rec + REC_HDR : NULL;
}

#define REC_MAX 8 /* records one pass combines */

/* Group g of the AND of the n tables. */
static inline uint64_t rec_groups(const uint8_t *const *w, size_t n, uint64_t g) {
  uint64_t x = rec_group(w[0], g);
  for (size_t i = 1; i < n; i++) x &= rec_group(w[i], g);
  return x;
}

static int and_record(const ba_bitmap_t *a, const uint8_t *const *recs, const size_t *lens, size_t nrec,
                      ba_bitmap_t **out, uint64_t *count) {
  BA_RETURN_IF(!a || !recs || !lens || nrec == 0 || nrec > REC_MAX || !(out || count) || !a->finished,
               BA_ERR_INVALID);
  if (out) *out = NULL;
  const uint8_t *tw[REC_MAX];
  for (size_t i = 0; i < nrec; i++)
    if (!(tw[i] = rec_table(a, recs[i], lens[i]))) return 1; /* other records, invalid ones: decoding says why */
  ba_codec_t id = a->ops->id;
  const uint64_t G = 31, nrows = a->rows, ngroups = nrows / G + (nrows % G != 0), whole = nrows / G;
  const uint8_t *const *w = tw;
  rec_out_t *q = ba_malloc(sizeof *q);
  BA_RETURN_IF(!q, BA_ERR_NOMEM);
  q->k = 0;
  q->next = 0;
  q->count = out ? NULL : count;
  q->o = NULL;
  int rc = out ? ba_bm_new(a->ops, &q->o) : BA_OK;
  if (rc < 0) {
    ba_free(q);
    return rc;
  }
  if (!out) *count = 0;
  /* a's words (validated) decoded here: literal 0|31 bits; fill 1|value|
   * count, PLWAH's count 25 bits after a 5-bit position, WAH32's 30 bits */
  const int pl = id == BA_CODEC_PLWAH;
  const uint32_t cmask = pl ? 0x01FFFFFFu : 0x3FFFFFFFu, *aw = (const uint32_t *)a->vec.w;
  uint64_t g = 0, last = 0;
  for (size_t i = 0; i < a->vec.n && rc == BA_OK; i++) {
    uint32_t x = aw[i];
    if (!(x >> 31)) {
      if (g >= ngroups) rc = BA_ERR_CORRUPT;
      else if (x) rc = rec_emit(q, g, x & rec_groups(w, nrec, g), whole, &last);
      g++;
      continue;
    }
    uint64_t n = x & cmask;
    unsigned pos = pl ? (x >> 25) & 31u : 0;
    if (n > ngroups - g || (pos && n == ngroups - g)) {
      rc = BA_ERR_CORRUPT;
      break;
    }
    if (x & 0x40000000u) {
      for (uint64_t e = g + n; g < e && rc == BA_OK; g++) rc = rec_emit(q, g, rec_groups(w, nrec, g), whole, &last);
    } else {
      g += n;
    }
    if (pos && rc == BA_OK) { /* the piggybacked literal: the fill's value but bit 31 - pos */
      uint32_t bit = UINT32_C(1) << (31 - pos), lit = (x & 0x40000000u) ? 0x7FFFFFFFu ^ bit : bit;
      rc = rec_emit(q, g, lit & rec_groups(w, nrec, g), whole, &last);
      g++;
    }
  }
  if (!out) {
    ba_free(q);
    return rc;
  }
  if (rc == 0 && q->k) rc = rec_flush(q);
  if (rc == 0 && last) {
    rc = ba_bitmap_append_run(q->o, 0, whole * G - q->o->rows);
    if (rc == 0) rc = ba_bitmap_append_bits(q->o, last >> (G - nrows % G), (unsigned)(nrows % G));
  }
  if (rc == 0) rc = ba_bitmap_finish(q->o, nrows);
  ba_bitmap_t *o = q->o;
  ba_free(q);
  if (rc < 0) {
    ba_bitmap_free(o);
    return rc;
  }
  *out = o;
  return BA_OK;
}

int ba_bitmap_and_record(const ba_bitmap_t *a, const uint8_t *rec, size_t len, ba_bitmap_t **out) {
  BA_RETURN_IF(!out || !rec, BA_ERR_INVALID);
  return and_record(a, &rec, &len, 1, out, NULL);
}

int ba_bitmap_and_record_count(const ba_bitmap_t *a, const uint8_t *rec, size_t len, uint64_t *count) {
  BA_RETURN_IF(!count || !rec, BA_ERR_INVALID);
  return and_record(a, &rec, &len, 1, NULL, count);
}

int ba_bitmap_and_records_count(const ba_bitmap_t *a, const uint8_t *const *recs, const size_t *lens, size_t n,
                                uint64_t *count) {
  BA_RETURN_IF(!count, BA_ERR_INVALID);
  return and_record(a, recs, lens, n, NULL, count);
}

/* ---- AND with words read in place ---- */

int ba_bitmap_and_words(const ba_bitmap_t *a, ba_codec_t codec, const void *words, size_t nwords, uint64_t nrows,
                        ba_codec_t c, ba_bitmap_t **out, uint64_t *count) {
  BA_RETURN_IF(!a || !(out || count) || (nwords && !words), BA_ERR_INVALID);
  if (out) *out = NULL;
  BA_RETURN_IF(codec < BA_CODEC_MIN || codec > BA_CODEC_MAX, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = ba_codec_ops(codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  BA_RETURN_IF((uintptr_t)words % ops->word_bytes, BA_ERR_INVALID);
  BA_RETURN_IF(nrows > BA_BITMAP_MAX_ROWS, BA_ERR_CORRUPT);
  BA_FORWARD(ba_bm_validate(ops, words, nwords, nrows, 0)); /* as ba_bitmap_from_words */
  ba_bitmap_t *b;
  BA_FORWARD(ba_bm_new(ops, &b));
  b->vec.w = (void *)(uintptr_t)words; /* borrowed: never written, taken back before the free */
  b->vec.n = b->vec.cap = nwords;
  b->rows = nrows;
  b->finished = 1;
  int rc = out ? ba_bitmap_and(a, b, c, out) : ba_bitmap_and_count(a, b, count);
  b->vec.w = NULL;
  b->vec.n = b->vec.cap = 0;
  ba_bitmap_free(b);
  return rc;
}
