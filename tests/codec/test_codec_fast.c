/* codec/: the specialised fast paths against the generic path and the plain
 * bitset of src/codec/ref.c:
 * - same-codec group kernels (wah32, wah64, plwah, compax) on a sparse
 *   operand against a literal-dense one: op == op_generic == reference;
 * - MASC x MASC(-QT) run-merge kernels: ba_bitmap_op == ba_bitmap_op_generic
 *   == canonical encoding of the reference result, and_count, equal; long runs
 *   split over several words (> 32,505,855 rows) against a run list;
 * - per-codec count loops == ba_bitmap_count_generic == reference;
 * - ba_bitmap_or_many: tree, bitset and automatic strategies give the same
 *   canonical words as the reference OR, for many operands of mixed codecs
 *   and row counts;
 * - ba_bitmap_foreach_range / ba_bitmap_count_range == the reference rows in
 *   [from, to) (edges at group and word boundaries, empty and clipped ranges).
 * BA_CODEC_LONG=1 runs more cases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "codec/bitmap_internal.h"
#include "codec/ref.h"
#include "common/common.h"

static ba_codec_t g_codecs[BA_CODEC_MAX];
static size_t g_ncodecs;
static int g_long;

static int setup(void **state) {
  (void)state;
  g_ncodecs = 0;
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++)
    if (ba_codec_ops((ba_codec_t)c)) g_codecs[g_ncodecs++] = (ba_codec_t)c;
  g_long = getenv("BA_CODEC_LONG") != NULL;
  return 0;
}

static int chance(ba_rng_t *r, double p) { return (double)ba_rng_below(r, 1u << 30) < p * (double)(1u << 30); }

/* Random reference: isolated rows, runs of mixed lengths (1-bit runs make
 * MASC carriers, runs near 31/63/64 make group edges), all ones, or empty. */
static void gen_ref(ba_rng_t *r, ba_ref_t *ref, uint64_t n) {
  static const double dens[] = {1e-3, 0.01, 0.1, 0.5, 0.9};
  static const uint64_t edge[] = {1, 2, 29, 30, 31, 32, 62, 63, 64, 65, 93, 127};
  assert_int_equal(ba_ref_init(ref, n), BA_OK);
  unsigned mode = (unsigned)ba_rng_below(r, 6);
  if (mode <= 1) {
    double p = dens[ba_rng_below(r, BA_ARRAY_LEN(dens))];
    for (uint64_t i = 0; i < n; i++)
      if (chance(r, p)) ba_ref_set(ref, i, 1);
  } else if (mode <= 3) {
    uint64_t pos = 0;
    int v = (int)ba_rng_below(r, 2);
    while (pos < n) {
      uint64_t len = ba_rng_below(r, 2) ? edge[ba_rng_below(r, BA_ARRAY_LEN(edge))] : 1 + ba_rng_below(r, 3000);
      for (uint64_t i = pos; i < n && i < pos + len; i++) ba_ref_set(ref, i, v);
      pos += len;
      v = !v;
    }
  } else if (mode == 4) {
    for (uint64_t i = 0; i < n; i++) ba_ref_set(ref, i, 1);
  }
}

static uint64_t pick_n(ba_rng_t *r) {
  static const uint64_t special[] = {0, 1, 31, 62, 63, 64, 65, 127, 128, 3100};
  switch (ba_rng_below(r, 3)) {
    case 0: return special[ba_rng_below(r, BA_ARRAY_LEN(special))];
    case 1: return 1 + ba_rng_below(r, 700);
    default: return 1 + ba_rng_below(r, g_long ? 100000 : 12000);
  }
}

static ba_bitmap_t *build(ba_codec_t c, const ba_ref_t *ref) {
  size_t k = ba_ref_rows(ref, NULL, 0);
  uint64_t *rows = (uint64_t *)malloc((k + 1) * sizeof *rows);
  assert_non_null(rows);
  ba_ref_rows(ref, rows, k);
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_from_rows(c, rows, k, ref->n, &bm), BA_OK);
  free(rows);
  return bm;
}

static int same_words(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na, nb;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  if (ba_bitmap_codec(a) != ba_bitmap_codec(b) || ba_bitmap_rows(a) != ba_bitmap_rows(b) || na != nb) return 0;
  return na == 0 || memcmp(wa, wb, ba_bitmap_size_bytes(a)) == 0;
}

static int is_run_codec(ba_codec_t c) { return c == BA_CODEC_MASC || c == BA_CODEC_MASC_QT; }

/* a op b into codec oc, through ba_bitmap_op (fast paths) and
 * ba_bitmap_op_generic: 1 if both give the canonical encoding of res. */
static int op_matches(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t oc, const ba_ref_t *res) {
  ba_bitmap_t *f, *g, *e = build(oc, res);
  assert_int_equal(ba_bitmap_op((ba_op_t)op, a, b, oc, &f), BA_OK);
  assert_int_equal(ba_bitmap_op_generic(op, a, b, oc, &g), BA_OK);
  int ok = same_words(f, e) && same_words(g, e);
  ba_bitmap_free(f);
  ba_bitmap_free(g);
  ba_bitmap_free(e);
  return ok;
}

/* ---- group codecs: a sparse operand against a literal-dense one ---- */

/* Same-codec pairs of WAH32, WAH64, PLWAH and COMPAX where one operand is
 * mostly long 0-fills (or 1-fills) and the other mostly literals, in both
 * orders, for every operation, with the same codec out (the specialised
 * kernels that step over runs of literal words under a dominating fill) and
 * with another codec out: ba_bitmap_op == op_generic == the reference. */
static void test_group_skip(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 21);
  const ba_codec_t gc[] = {BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_PLWAH, BA_CODEC_COMPAX};
  int cases = g_long ? 200 : 40;
  for (size_t ci = 0; ci < BA_ARRAY_LEN(gc); ci++) {
    ba_codec_t c = gc[ci];
    if (!ba_codec_ops(c)) continue;
    for (int t = 0; t < cases; t++) {
      uint64_t n = 1 + ba_rng_below(&r, 40000);
      ba_ref_t rs, rd, res;
      assert_int_equal(ba_ref_init(&rs, n), BA_OK);
      assert_int_equal(ba_ref_init(&rd, n), BA_OK);
      int ones = (int)ba_rng_below(&r, 2); /* the sparse side's background */
      uint64_t gap = 1 + ba_rng_below(&r, 3000);
      for (uint64_t i = 0; i < n; i++) {
        ba_ref_set(&rs, i, ones);
        ba_ref_set(&rd, i, (int)ba_rng_below(&r, 2));
      }
      for (uint64_t i = ba_rng_below(&r, gap); i < n; i += 1 + ba_rng_below(&r, gap)) ba_ref_set(&rs, i, !ones);
      /* a few fills inside the dense side, so literal runs have odd lengths */
      for (int f = 0; f < 6; f++) {
        uint64_t at = ba_rng_below(&r, n), len = ba_rng_below(&r, 300);
        int v = (int)ba_rng_below(&r, 2);
        for (uint64_t i = at; i < n && i < at + len; i++) ba_ref_set(&rd, i, v);
      }
      ba_bitmap_t *bs = build(c, &rs), *bd = build(c, &rd);
      for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
        for (int swap = 0; swap < 2; swap++) {
          const ba_ref_t *ra = swap ? &rd : &rs, *rb = swap ? &rs : &rd;
          const ba_bitmap_t *a = swap ? bd : bs, *b = swap ? bs : bd;
          assert_int_equal(ba_ref_op(op, ra, rb, &res), BA_OK);
          const ba_codec_t outs[2] = {c, c == BA_CODEC_WAH64 ? BA_CODEC_WAH32 : BA_CODEC_WAH64};
          for (int o = 0; o < 2; o++) {
            if (!op_matches(op, a, b, outs[o], &res))
              fail_msg("op %d %s sparse%s dense -> %s n=%llu gap=%llu", op, ba_codec_name(c),
                       swap ? " (second)" : "", ba_codec_name(outs[o]), (unsigned long long)n,
                       (unsigned long long)gap);
          }
          if (op == BA_OP_AND) {
            uint64_t cnt;
            assert_int_equal(ba_bitmap_and_count(a, b, &cnt), BA_OK);
            assert_int_equal(cnt, ba_ref_count(&res));
          }
          ba_ref_free(&res);
        }
      }
      ba_bitmap_free(bs);
      ba_bitmap_free(bd);
      ba_ref_free(&rs);
      ba_ref_free(&rd);
    }
  }
}

/* ---- MASC x MASC kernels ---- */

static void test_masc_ops(void **state) {
  (void)state;
  if (!ba_codec_ops(BA_CODEC_MASC) || !ba_codec_ops(BA_CODEC_MASC_QT)) skip();
  ba_rng_t r;
  ba_rng_seed(&r, 11);
  int cases = g_long ? 400 : 80;
  const ba_codec_t mc[2] = {BA_CODEC_MASC, BA_CODEC_MASC_QT};
  for (int t = 0; t < cases; t++) {
    uint64_t na = pick_n(&r), nb = ba_rng_below(&r, 3) ? na : pick_n(&r);
    ba_ref_t ra, rb, res;
    gen_ref(&r, &ra, na);
    gen_ref(&r, &rb, nb);
    ba_codec_t ca = mc[ba_rng_below(&r, 2)], cb = mc[ba_rng_below(&r, 2)];
    ba_bitmap_t *a = build(ca, &ra), *b = build(cb, &rb);
    for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
      assert_int_equal(ba_ref_op(op, &ra, &rb, &res), BA_OK);
      for (size_t oc = 0; oc < g_ncodecs; oc++) {
        if (!op_matches(op, a, b, g_codecs[oc], &res))
          fail_msg("op %d %s x %s -> %s na=%llu nb=%llu", op, ba_codec_name(ca), ba_codec_name(cb),
                   ba_codec_name(g_codecs[oc]), (unsigned long long)na, (unsigned long long)nb);
      }
      if (op == BA_OP_AND) {
        uint64_t c;
        assert_int_equal(ba_bitmap_and_count(a, b, &c), BA_OK);
        assert_int_equal(c, ba_ref_count(&res));
      }
      if (op == BA_OP_XOR) assert_int_equal(ba_bitmap_equal(a, b), na == nb && ba_ref_count(&res) == 0);
      ba_ref_free(&res);
    }
    ba_bitmap_t *c2 = build(cb, &ra);
    assert_int_equal(ba_bitmap_equal(a, c2), 1);
    ba_bitmap_free(c2);
    ba_bitmap_free(a);
    ba_bitmap_free(b);
    ba_ref_free(&ra);
    ba_ref_free(&rb);
  }
}

/* Long runs: split 1-fills and 0-fills (MAXRUN = 32,505,855 rows), carriers
 * at the end of split 0-runs, against a run-list reference (no bitset). */
typedef struct {
  int v[16];
  uint64_t len[16];
  int n;
} runs_t;

static ba_bitmap_t *build_runs(ba_codec_t c, const runs_t *rl) {
  ba_bitmap_t *bm;
  uint64_t tot = 0;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (int i = 0; i < rl->n; i++) {
    assert_int_equal(ba_bitmap_append_run(bm, rl->v[i], rl->len[i]), BA_OK);
    tot += rl->len[i];
  }
  assert_int_equal(ba_bitmap_finish(bm, tot), BA_OK);
  return bm;
}

static uint64_t runs_value_at(const runs_t *rl, uint64_t row, uint64_t *left) {
  for (int i = 0; i < rl->n; i++) {
    if (row < rl->len[i]) {
      *left = rl->len[i] - row;
      return (uint64_t)rl->v[i];
    }
    row -= rl->len[i];
  }
  *left = UINT64_MAX;
  return 0;
}

static void runs_op(int op, const runs_t *a, const runs_t *b, runs_t *o) {
  uint64_t N = 0, M = 0, pos = 0;
  for (int i = 0; i < a->n; i++) N += a->len[i];
  for (int i = 0; i < b->n; i++) M += b->len[i];
  N = BA_MAX(N, M);
  o->n = 0;
  while (pos < N) {
    uint64_t la, lb;
    uint64_t x = runs_value_at(a, pos, &la), y = runs_value_at(b, pos, &lb);
    uint64_t k = BA_MIN(BA_MIN(la, lb), N - pos);
    int v = (int)((op == 0 ? x & y : op == 1 ? x | y : op == 2 ? x ^ y : x & ~y) & 1);
    assert_true(o->n < 16 || o->v[o->n - 1] == v);
    if (o->n && o->v[o->n - 1] == v) {
      o->len[o->n - 1] += k;
    } else {
      o->v[o->n] = v;
      o->len[o->n++] = k;
    }
    pos += k;
  }
}

static void test_masc_long_runs(void **state) {
  (void)state;
  if (!ba_codec_ops(BA_CODEC_MASC)) skip();
  const uint64_t MAXRUN = ((UINT64_C(1) << 20) - 1) * 31 + 30;
  ba_rng_t r;
  ba_rng_seed(&r, 12);
  const uint64_t lens[] = {1, 2, 30, 31, MAXRUN - 1, MAXRUN, MAXRUN + 1, 2 * MAXRUN + 5, 1000};
  for (int t = 0; t < 40; t++) {
    runs_t ra = {{0}, {0}, 0}, rb = {{0}, {0}, 0}, ro;
    runs_t *rs[2] = {&ra, &rb};
    for (int s = 0; s < 2; s++) {
      int n = 1 + (int)ba_rng_below(&r, 6), v = (int)ba_rng_below(&r, 2);
      for (int i = 0; i < n; i++, v = !v) {
        rs[s]->v[i] = v;
        rs[s]->len[i] = lens[ba_rng_below(&r, BA_ARRAY_LEN(lens))];
      }
      rs[s]->n = n;
    }
    ba_bitmap_t *a = build_runs(BA_CODEC_MASC, &ra), *b = build_runs(BA_CODEC_MASC_QT, &rb);
    uint64_t c, cg;
    assert_int_equal(ba_bitmap_count(a, &c), BA_OK);
    assert_int_equal(ba_bitmap_count_generic(a, &cg), BA_OK);
    assert_int_equal(c, cg);
    for (int op = 0; op < 4; op++) {
      runs_op(op, &ra, &rb, &ro);
      for (int oc = 0; oc < 2; oc++) {
        ba_codec_t out = oc ? BA_CODEC_MASC_QT : BA_CODEC_MASC;
        ba_bitmap_t *f, *g, *e = build_runs(out, &ro);
        assert_int_equal(ba_bitmap_op((ba_op_t)op, a, b, out, &f), BA_OK);
        assert_int_equal(ba_bitmap_op_generic(op, a, b, out, &g), BA_OK);
        assert_true(same_words(f, e));
        assert_true(same_words(g, e));
        ba_bitmap_free(f);
        ba_bitmap_free(g);
        ba_bitmap_free(e);
      }
    }
    ba_bitmap_free(a);
    ba_bitmap_free(b);
  }
}

/* ---- count ---- */

static void test_count(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 13);
  int cases = g_long ? 500 : 150;
  for (int t = 0; t < cases; t++) {
    ba_ref_t ref;
    gen_ref(&r, &ref, pick_n(&r));
    uint64_t want = ba_ref_count(&ref);
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      ba_bitmap_t *bm = build(g_codecs[ci], &ref);
      uint64_t c, cg;
      assert_int_equal(ba_bitmap_count(bm, &c), BA_OK);
      assert_int_equal(ba_bitmap_count_generic(bm, &cg), BA_OK);
      assert_int_equal(c, want);
      assert_int_equal(cg, want);
      ba_bitmap_free(bm);
    }
    ba_ref_free(&ref);
  }
  /* Split fills: 2^25 (PLWAH) and 2^30 (WAH32) groups, MASC MAXRUN. */
  const uint64_t big[] = {(UINT64_C(1) << 25) * 31 + 77, (UINT64_C(1) << 30) * 31 + 5};
  for (size_t i = 0; i < BA_ARRAY_LEN(big); i++) {
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      /* COMPAX has no 1-fills: one literal word per group of ones, too many
       * words for these sizes (its count loop is checked above). */
      if (g_codecs[ci] == BA_CODEC_COMPAX) continue;
      ba_bitmap_t *bm;
      assert_int_equal(ba_bitmap_create(g_codecs[ci], &bm), BA_OK);
      assert_int_equal(ba_bitmap_append_run(bm, 0, 3), BA_OK);
      assert_int_equal(ba_bitmap_append_run(bm, 1, big[i]), BA_OK);
      assert_int_equal(ba_bitmap_set(bm, big[i] + 40), BA_OK);
      assert_int_equal(ba_bitmap_finish(bm, big[i] + 100), BA_OK);
      uint64_t c, cg;
      assert_int_equal(ba_bitmap_count(bm, &c), BA_OK);
      assert_int_equal(ba_bitmap_count_generic(bm, &cg), BA_OK);
      assert_int_equal(c, big[i] + 1);
      assert_int_equal(cg, big[i] + 1);
      ba_bitmap_free(bm);
    }
  }
}

/* ---- or_many strategies ---- */

static void test_or_many(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 14);
  int cases = g_long ? 120 : 30;
  enum { KMAX = 80 };
  for (int t = 0; t < cases; t++) {
    size_t k = t < 4 ? (size_t)t : (size_t)ba_rng_below(&r, KMAX + 1);
    uint64_t n0 = pick_n(&r);
    ba_ref_t refs[KMAX], acc, tmp;
    ba_bitmap_t *bms[KMAX];
    assert_int_equal(ba_ref_init(&acc, 0), BA_OK);
    for (size_t i = 0; i < k; i++) {
      uint64_t n = ba_rng_below(&r, 4) ? n0 : pick_n(&r); /* mostly equal row counts */
      gen_ref(&r, &refs[i], n);
      if (ba_rng_below(&r, 2)) { /* sparse operands, as one value of an index */
        for (uint64_t j = 0; j < n; j++)
          if (!chance(&r, 0.05)) ba_ref_set(&refs[i], j, 0);
      }
      bms[i] = build(g_codecs[t % 3 == 0 ? ba_rng_below(&r, g_ncodecs) : (size_t)t % g_ncodecs], &refs[i]);
      assert_int_equal(ba_ref_op(BA_OP_OR, &acc, &refs[i], &tmp), BA_OK);
      ba_ref_free(&acc);
      acc = tmp;
    }
    ba_codec_t oc = g_codecs[ba_rng_below(&r, g_ncodecs)];
    ba_bitmap_t *e = build(oc, &acc);
    for (int s = BA_ORMANY_AUTO; s <= BA_ORMANY_BITSET; s++) {
      ba_bitmap_t *o;
      assert_int_equal(ba_bitmap_or_many_with((const ba_bitmap_t *const *)bms, k, oc, s, &o), BA_OK);
      if (!same_words(o, e)) fail_msg("or_many strategy %d k=%zu -> %s", s, k, ba_codec_name(oc));
      ba_bitmap_free(o);
    }
    ba_bitmap_t *o;
    assert_int_equal(ba_bitmap_or_many((const ba_bitmap_t *const *)bms, k, oc, &o), BA_OK);
    assert_true(same_words(o, e));
    ba_bitmap_free(o);
    ba_bitmap_free(e);
    for (size_t i = 0; i < k; i++) {
      ba_bitmap_free(bms[i]);
      ba_ref_free(&refs[i]);
    }
    ba_ref_free(&acc);
  }
  ba_bitmap_t *o;
  assert_int_equal(ba_bitmap_or_many_with(NULL, 0, BA_CODEC_WAH32, 3, &o), BA_ERR_INVALID);
}

/* ---- range selection ---- */

typedef struct {
  uint64_t *rows;
  size_t n, cap;
  int stop_after; /* >0: return 7 after this many batches */
  int batches;
} collect_t;

static int collect(void *ctx, const uint64_t *rows, size_t n) {
  collect_t *c = (collect_t *)ctx;
  assert_true(n > 0);
  for (size_t i = 0; i < n; i++) {
    assert_true(c->n < c->cap);
    c->rows[c->n++] = rows[i];
  }
  c->batches++;
  return c->stop_after && c->batches >= c->stop_after ? 7 : 0;
}

static void test_range(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 15);
  int cases = g_long ? 300 : 80;
  for (int t = 0; t < cases; t++) {
    ba_ref_t ref;
    uint64_t n = pick_n(&r);
    if (t % 8 == 7) { /* large MASC bitmaps (>= 1024 words): the query-table path */
      n = 20000 + ba_rng_below(&r, 40000);
      assert_int_equal(ba_ref_init(&ref, n), BA_OK);
      double p = t % 16 == 7 ? 0.1 : 0.6;
      for (uint64_t i = 0; i < n; i++)
        if (chance(&r, p)) ba_ref_set(&ref, i, 1);
    } else {
      gen_ref(&r, &ref, n);
    }
    size_t all = ba_ref_rows(&ref, NULL, 0);
    uint64_t *want = (uint64_t *)malloc((all + 1) * sizeof *want);
    uint64_t *got = (uint64_t *)malloc((all + 1) * sizeof *got);
    assert_true(want && got);
    ba_ref_rows(&ref, want, all);
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      ba_bitmap_t *bm = build(g_codecs[ci], &ref);
      for (int q = 0; q < 12; q++) {
        uint64_t from, to;
        switch (q) {
          case 0: from = 0; to = n; break;
          case 1: from = 0; to = UINT64_MAX; break;
          case 2: from = n; to = n + 5; break;
          case 3: from = 5; to = 5; break;
          case 4: from = 31; to = 63; break;
          case 5: from = 62; to = 128; break;
          default:
            from = ba_rng_below(&r, n + 2);
            to = from + ba_rng_below(&r, n + 3 - BA_MIN(from, n));
            break;
        }
        size_t lo = 0, hi;
        while (lo < all && want[lo] < from) lo++;
        hi = lo;
        while (hi < all && want[hi] < to) hi++;
        collect_t c = {got, 0, all + 1, 0, 0};
        assert_int_equal(ba_bitmap_foreach_range(bm, from, to, collect, &c), BA_OK);
        if (c.n != hi - lo || (c.n && memcmp(got, want + lo, c.n * sizeof *got) != 0))
          fail_msg("%s range [%llu,%llu) n=%llu: %zu rows, want %zu", ba_codec_name(g_codecs[ci]),
                   (unsigned long long)from, (unsigned long long)to, (unsigned long long)n, c.n, hi - lo);
        uint64_t cnt;
        assert_int_equal(ba_bitmap_count_range(bm, from, to, &cnt), BA_OK);
        assert_int_equal(cnt, hi - lo);
        if (hi - lo > 256) { /* a non-zero return stops the walk and is returned */
          collect_t s = {got, 0, all + 1, 1, 0};
          assert_int_equal(ba_bitmap_foreach_range(bm, from, to, collect, &s), 7);
          assert_int_equal(s.batches, 1);
        }
      }
      if (is_run_codec(g_codecs[ci])) { /* a clone has its own (or no) table */
        ba_bitmap_t *cl;
        uint64_t c2;
        assert_int_equal(ba_bitmap_clone(bm, &cl), BA_OK);
        assert_int_equal(ba_bitmap_count_range(cl, 0, n, &c2), BA_OK);
        assert_int_equal(c2, all);
        ba_bitmap_free(cl);
        assert_int_equal(ba_bitmap_count_range(bm, n / 3, n, &c2), BA_OK);
        size_t lo = 0;
        while (lo < all && want[lo] < n / 3) lo++;
        assert_int_equal(c2, all - lo);
      }
      ba_bitmap_free(bm);
    }
    free(want);
    free(got);
    ba_ref_free(&ref);
  }
  /* errors: unfinished bitmap, NULL arguments */
  ba_bitmap_t *bm;
  uint64_t c;
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH32, &bm), BA_OK);
  assert_int_equal(ba_bitmap_count_range(bm, 0, 1, &c), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_foreach_range(bm, 0, 1, collect, NULL), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_finish(bm, 10), BA_OK);
  assert_int_equal(ba_bitmap_foreach_range(bm, 0, 1, NULL, NULL), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_count_range(bm, 0, 1, NULL), BA_ERR_INVALID);
  ba_bitmap_free(bm);
}

/* ---- ba_bitmap_and_record: a AND a serialized dense literal record ---- */

/* A record of one word per group (WAH32, PLWAH: every group a literal but
 * for isolated homogeneous groups) against operands of every shape: the
 * words of deserializing and ba_bitmap_and; other records and codecs are
 * declined (1), and so are records whose words break the rules (a two-group
 * fill, a set padding bit), which deserializing rejects. */
static void test_and_record(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 0xA4D5EC0ull);
  static const ba_codec_t cs[] = {BA_CODEC_WAH32, BA_CODEC_PLWAH, BA_CODEC_WAH64, BA_CODEC_COMPAX};
  size_t direct = 0, iters = g_long ? 2000 : 400;
  for (size_t it = 0; it < iters; it++) {
    ba_codec_t c = cs[ba_rng_below(&r, BA_ARRAY_LEN(cs))];
    uint64_t n = pick_n(&r);
    ba_ref_t ra, rb;
    gen_ref(&r, &ra, n);
    assert_int_equal(ba_ref_init(&rb, n), BA_OK);
    for (uint64_t i = 0; i < n; i++)
      if (ba_rng_below(&r, 2)) ba_ref_set(&rb, i, 1);
    if (n > 100 && ba_rng_below(&r, 2)) { /* an isolated all-zero or all-one group */
      uint64_t g0 = 31 * (1 + ba_rng_below(&r, n / 31 - 2));
      int v = (int)ba_rng_below(&r, 2);
      for (uint64_t i = g0; i < g0 + 31; i++) ba_ref_set(&rb, i, v);
    }
    ba_bitmap_t *a = build(c, &ra), *b = build(c, &rb), *want, *got = NULL;
    assert_int_equal(ba_bitmap_and(a, b, c, &want), BA_OK);
    size_t len = ba_bitmap_serialized_size(b), nw;
    uint8_t *rec = (uint8_t *)malloc(len + 1);
    assert_non_null(rec);
    assert_int_equal(ba_bitmap_serialize(b, rec, len, NULL), BA_OK);
    ba_bitmap_words(b, &nw);
    int one = (c == BA_CODEC_WAH32 || c == BA_CODEC_PLWAH) && nw == n / 31 + (n % 31 != 0);
    int rc = ba_bitmap_and_record(a, rec, len, &got);
    if (!one) {
      uint64_t cnt;
      assert_int_equal(rc, 1);
      assert_null(got);
      assert_int_equal(ba_bitmap_and_record_count(a, rec, len, &cnt), 1);
    } else {
      assert_int_equal(rc, 0);
      if (!same_words(got, want)) fail_msg("iteration %zu: %s, %llu rows: not the words of ba_bitmap_and", it,
                                           ba_codec_name(c), (unsigned long long)n);
      uint64_t cw = 0, cg = 7;
      assert_int_equal(ba_bitmap_count(want, &cw), BA_OK);
      assert_int_equal(ba_bitmap_and_record_count(a, rec, len, &cg), 0);
      assert_int_equal(cg, cw);
      direct++;
      ba_bitmap_free(got);
      got = NULL;
      /* a row count other than a's: declined */
      ba_ref_t rc2;
      gen_ref(&r, &rc2, n + 1);
      ba_bitmap_t *a2 = build(c, &rc2);
      assert_int_equal(ba_bitmap_and_record(a2, rec, len, &got), 1);
      ba_bitmap_free(a2);
      ba_ref_free(&rc2);
      /* rule breakers: a fill word of two groups; a padding bit */
      ba_bitmap_t *bad = NULL;
      if (nw == 0) goto next;
      size_t i = 20 + 4 * ba_rng_below(&r, nw);
      uint8_t keep[4];
      memcpy(keep, rec + i, 4);
      ba_store_le32(rec + i, 0x80000002u);
      assert_int_equal(ba_bitmap_and_record(a, rec, len, &got), 1);
      assert_int_equal(ba_bitmap_and_record_count(a, rec, len, &cg), 1);
      assert_int_equal(ba_bitmap_deserialize(rec, len, &bad, NULL), BA_ERR_CORRUPT);
      memcpy(rec + i, keep, 4);
      if (n % 31) {
        i = len - 4;
        uint32_t x = ba_load_le32(rec + i);
        ba_store_le32(rec + i, (x >> 31) ? 0x7FFFFFFFu : (x | 1u));
        assert_int_equal(ba_bitmap_and_record(a, rec, len, &got), 1);
        assert_int_equal(ba_bitmap_deserialize(rec, len, &bad, NULL), BA_ERR_CORRUPT);
      }
      assert_null(got);
    }
  next:
    free(rec);
    ba_bitmap_free(a);
    ba_bitmap_free(b);
    ba_bitmap_free(want);
    ba_ref_free(&ra);
    ba_ref_free(&rb);
  }
  if (direct < iters / 8) fail_msg("only %zu of %zu records went the direct way", direct, iters);
  /* several records in one pass: the count of a AND all of them */
  for (size_t it = 0; it < 200; it++) {
    ba_codec_t c = it % 2 ? BA_CODEC_PLWAH : BA_CODEC_WAH32;
    uint64_t n = 1 + ba_rng_below(&r, 5000);
    size_t k = 1 + (size_t)ba_rng_below(&r, 8);
    ba_ref_t ra;
    gen_ref(&r, &ra, n);
    ba_bitmap_t *acc = build(c, &ra), *a = NULL;
    assert_int_equal(ba_bitmap_clone(acc, &a), BA_OK);
    uint8_t *recs[8];
    size_t lens[8];
    int table = 1;
    for (size_t j = 0; j < k; j++) {
      ba_ref_t rb;
      assert_int_equal(ba_ref_init(&rb, n), BA_OK);
      for (uint64_t i = 0; i < n; i++)
        if (ba_rng_below(&r, 4)) ba_ref_set(&rb, i, 1);
      ba_bitmap_t *b = build(c, &rb), *t;
      size_t nw;
      ba_bitmap_words(b, &nw);
      table &= nw == n / 31 + (n % 31 != 0);
      lens[j] = ba_bitmap_serialized_size(b);
      recs[j] = (uint8_t *)malloc(lens[j]);
      assert_non_null(recs[j]);
      assert_int_equal(ba_bitmap_serialize(b, recs[j], lens[j], NULL), BA_OK);
      assert_int_equal(ba_bitmap_and(acc, b, c, &t), BA_OK);
      ba_bitmap_free(acc);
      acc = t;
      ba_bitmap_free(b);
      ba_ref_free(&rb);
    }
    uint64_t want = 0, got = 5;
    assert_int_equal(ba_bitmap_count(acc, &want), BA_OK);
    int rc = ba_bitmap_and_records_count(a, (const uint8_t *const *)recs, lens, k, &got);
    assert_int_equal(rc, table ? 0 : 1);
    if (table && got != want) fail_msg("%zu records, %llu rows: counted %llu, want %llu", k, (unsigned long long)n,
                                       (unsigned long long)got, (unsigned long long)want);
    for (size_t j = 0; j < k; j++) free(recs[j]);
    ba_bitmap_free(a);
    ba_bitmap_free(acc);
    ba_ref_free(&ra);
  }
  ba_bitmap_t *bm, *o = NULL;
  assert_int_equal(ba_bitmap_create(BA_CODEC_PLWAH, &bm), BA_OK);
  uint8_t rec[24] = {0};
  assert_int_equal(ba_bitmap_and_record(bm, rec, sizeof rec, &o), BA_ERR_INVALID); /* unfinished */
  assert_int_equal(ba_bitmap_and_record(NULL, rec, sizeof rec, &o), BA_ERR_INVALID);
  ba_bitmap_free(bm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_group_skip), cmocka_unit_test(test_masc_ops), cmocka_unit_test(test_masc_long_runs), cmocka_unit_test(test_count),
      cmocka_unit_test(test_or_many),  cmocka_unit_test(test_range), cmocka_unit_test(test_and_record),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
