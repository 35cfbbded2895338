/* codec/: differential tests of every built codec against the plain bitset
 * in src/codec/ref.c: encode -> decode, count, foreach, foreach_run,
 * serialization, the four ways of building (set, from_rows, append_bits,
 * append_run) giving identical words, and every boolean op for every operand
 * codec pair and every output codec (fast path == generic path == canonical
 * encoding of the reference result). Huge bitmaps (split fills) are checked
 * against a run-list reference without touching every row.
 * BA_CODEC_LONG=1 runs many more random cases. */
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
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    if (ba_codec_ops((ba_codec_t)c))
      g_codecs[g_ncodecs++] = (ba_codec_t)c;
    else
      printf("# codec %s not built: not tested\n", ba_codec_name((ba_codec_t)c));
  }
  g_long = getenv("BA_CODEC_LONG") != NULL;
  return 0;
}

/* ---- random reference bitmaps ---- */

static const uint64_t k_boundary[] = {1, 2, 30, 31, 32, 33, 61, 62, 63, 64, 65, 93, 124, 125, 126, 127, 128, 189, 192};
static const double k_density[] = {1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5, 0.8, 0.9};

static int chance(ba_rng_t *r, double p) { return (double)ba_rng_below(r, 1u << 30) < p * (double)(1u << 30); }

static void gen_ref(ba_rng_t *r, ba_ref_t *ref, uint64_t n, int mode) {
  assert_int_equal(ba_ref_init(ref, n), BA_OK);
  if (mode == 0) { /* independent rows */
    double p = k_density[ba_rng_below(r, BA_ARRAY_LEN(k_density))];
    for (uint64_t i = 0; i < n; i++)
      if (chance(r, p)) ba_ref_set(ref, i, 1);
  } else if (mode == 1) { /* runs, many ending on group/word boundaries */
    uint64_t pos = 0;
    int v = (int)ba_rng_below(r, 2);
    while (pos < n) {
      uint64_t len;
      switch (ba_rng_below(r, 4)) {
        case 0: len = k_boundary[ba_rng_below(r, BA_ARRAY_LEN(k_boundary))]; break;
        case 1: len = 1 + ba_rng_below(r, 8); break;
        case 2: len = 31 * (1 + ba_rng_below(r, 6)) - pos % 31; break; /* ends on a 31-group */
        default: len = 1 + ba_rng_below(r, 2000); break;
      }
      if (len == 0) len = 1;
      for (uint64_t i = pos; i < n && i < pos + len; i++) ba_ref_set(ref, i, v);
      pos += len;
      v = !v;
    }
  } else if (mode == 2) { /* all ones */
    for (uint64_t i = 0; i < n; i++) ba_ref_set(ref, i, 1);
  } else if (mode == 3) { /* all ones with sparse holes, and long zero stretches */
    uint64_t a = ba_rng_below(r, n + 1), b = a + ba_rng_below(r, n - a + 1);
    for (uint64_t i = 0; i < n; i++) ba_ref_set(ref, i, !(i >= a && i < b) && !chance(r, 0.002));
  } /* mode 4: empty */
}

static uint64_t pick_n(ba_rng_t *r) {
  static const uint64_t special[] = {0, 1, 30, 31, 32, 61, 62, 63, 64, 65, 93, 126, 127, 128, 186, 217, 3100};
  switch (ba_rng_below(r, 4)) {
    case 0: return special[ba_rng_below(r, BA_ARRAY_LEN(special))];
    case 1: return 1 + ba_rng_below(r, 300);
    case 2: return 1 + ba_rng_below(r, 6000);
    default: return g_long ? 1 + ba_rng_below(r, 200000) : 1 + ba_rng_below(r, 20000);
  }
}

/* ---- building ---- */

static ba_bitmap_t *build_rows(ba_codec_t c, const ba_ref_t *ref) {
  size_t k = ba_ref_rows(ref, NULL, 0);
  uint64_t *rows = (uint64_t *)malloc((k + 1) * sizeof *rows);
  ba_ref_rows(ref, rows, k);
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_from_rows(c, rows, k, ref->n, &bm), BA_OK);
  free(rows);
  return bm;
}

static ba_bitmap_t *build_set(ba_codec_t c, const ba_ref_t *ref) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (uint64_t i = 0; i < ref->n; i++)
    if (ba_ref_get(ref, i)) assert_int_equal(ba_bitmap_set(bm, i), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, ref->n), BA_OK);
  return bm;
}

static ba_bitmap_t *build_bits(ba_codec_t c, const ba_ref_t *ref, ba_rng_t *r) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  uint64_t i = 0;
  while (i < ref->n) {
    unsigned k = 1 + (unsigned)ba_rng_below(r, 64);
    if (k > ref->n - i) k = (unsigned)(ref->n - i);
    uint64_t bits = 0;
    for (unsigned j = 0; j < k; j++) bits = (bits << 1) | (uint64_t)ba_ref_get(ref, i + j);
    /* garbage above nbits must be ignored */
    if (k < 64) bits |= ba_rng_next(r) << k;
    assert_int_equal(ba_bitmap_append_bits(bm, bits, k), BA_OK);
    i += k;
  }
  assert_int_equal(ba_bitmap_finish(bm, ref->n), BA_OK);
  return bm;
}

static ba_bitmap_t *build_runs(ba_codec_t c, const ba_ref_t *ref) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  uint64_t i = 0;
  while (i < ref->n) {
    int v = ba_ref_get(ref, i);
    uint64_t j = i + 1;
    while (j < ref->n && ba_ref_get(ref, j) == v) j++;
    assert_int_equal(ba_bitmap_append_run(bm, v, j - i), BA_OK);
    i = j;
  }
  /* trailing zeros by finish */
  assert_int_equal(ba_bitmap_finish(bm, ref->n), BA_OK);
  return bm;
}

static int same_words(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na, nb;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  if (ba_bitmap_codec(a) != ba_bitmap_codec(b) || ba_bitmap_rows(a) != ba_bitmap_rows(b) || na != nb) return 0;
  return na == 0 || memcmp(wa, wb, ba_bitmap_size_bytes(a)) == 0;
}

/* ---- checking one bitmap against the reference ---- */

typedef struct {
  const ba_ref_t *ref;
  uint64_t next; /* expected next row */
  int bad;
} run_check_t;

static int check_run(void *ctx, int value, uint64_t start, uint64_t nrows) {
  run_check_t *c = (run_check_t *)ctx;
  if (start != c->next || nrows == 0) c->bad = 1;
  for (uint64_t i = start; i < start + nrows && !c->bad; i++)
    if (ba_ref_get(c->ref, i) != value) c->bad = 1;
  /* maximal: the next row differs */
  if (start + nrows < c->ref->n && ba_ref_get(c->ref, start + nrows) == value) c->bad = 1;
  c->next = start + nrows;
  return 0;
}

static void check_bm(const ba_bitmap_t *bm, const ba_ref_t *ref) {
  assert_int_equal(ba_bitmap_rows(bm), ref->n);
  uint64_t cnt;
  assert_int_equal(ba_bitmap_count(bm, &cnt), BA_OK);
  size_t k = ba_ref_rows(ref, NULL, 0);
  assert_int_equal(cnt, k);
  uint64_t *exp = (uint64_t *)malloc((k + 1) * sizeof *exp), *got = (uint64_t *)malloc((k + 1) * sizeof *got);
  ba_ref_rows(ref, exp, k);
  size_t n;
  assert_int_equal(ba_bitmap_to_rows(bm, got, k, &n), BA_OK);
  assert_int_equal(n, k);
  assert_memory_equal(exp, got, k * sizeof *exp);
  free(exp);
  free(got);
  run_check_t rc = {ref, 0, 0};
  assert_int_equal(ba_bitmap_foreach_run(bm, check_run, &rc), BA_OK);
  assert_false(rc.bad);
  assert_int_equal(rc.next, ref->n);
  /* serialization round trip */
  size_t sz = ba_bitmap_serialized_size(bm), len, used;
  uint8_t *buf = (uint8_t *)malloc(sz);
  assert_int_equal(ba_bitmap_serialize(bm, buf, sz, &len), BA_OK);
  assert_int_equal(len, sz);
  ba_bitmap_t *d;
  assert_int_equal(ba_bitmap_deserialize(buf, len, &d, &used), BA_OK);
  assert_int_equal(used, len);
  assert_true(same_words(d, bm));
  ba_bitmap_free(d);
  free(buf);
  /* words validate */
  size_t nw;
  const void *w = ba_bitmap_words(bm, &nw);
  assert_int_equal(ba_bitmap_from_words(ba_bitmap_codec(bm), w, nw, ref->n, &d), BA_OK);
  assert_int_equal(ba_bitmap_equal(d, bm), 1);
  ba_bitmap_free(d);
}

static void test_build_roundtrip(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 1);
  int cases = g_long ? 600 : 120;
  for (int t = 0; t < cases; t++) {
    ba_ref_t ref;
    uint64_t n = pick_n(&r);
    gen_ref(&r, &ref, n, (int)ba_rng_below(&r, 5));
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      ba_codec_t c = g_codecs[ci];
      ba_bitmap_t *a = build_rows(c, &ref), *b = build_set(c, &ref), *d = build_bits(c, &ref, &r),
                  *e = build_runs(c, &ref);
      assert_true(same_words(a, b));
      assert_true(same_words(a, d));
      assert_true(same_words(a, e));
      check_bm(a, &ref);
      ba_bitmap_free(a);
      ba_bitmap_free(b);
      ba_bitmap_free(d);
      ba_bitmap_free(e);
    }
    ba_ref_free(&ref);
  }
}

/* ---- operations ---- */

static void test_ops(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 2);
  int cases = g_long ? 300 : 40;
  for (int t = 0; t < cases; t++) {
    ba_ref_t ra, rb, rres[5];
    uint64_t na = pick_n(&r), nb = ba_rng_below(&r, 3) ? na : pick_n(&r); /* D-6: sometimes differ */
    gen_ref(&r, &ra, na, (int)ba_rng_below(&r, 5));
    gen_ref(&r, &rb, nb, (int)ba_rng_below(&r, 5));
    ba_bitmap_t *exp[5][BA_CODEC_MAX], *A[BA_CODEC_MAX], *B[BA_CODEC_MAX];
    for (int op = 0; op < 5; op++) {
      assert_int_equal(ba_ref_op(op, &ra, &rb, &rres[op]), BA_OK);
      for (size_t oc = 0; oc < g_ncodecs; oc++) exp[op][oc] = build_rows(g_codecs[oc], &rres[op]);
    }
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      A[ci] = build_rows(g_codecs[ci], &ra);
      B[ci] = build_rows(g_codecs[ci], &rb);
    }
    uint64_t and_ref = ba_ref_count(&rres[0]);
    int eq_ref = na == nb && ba_ref_count(&rres[2]) == 0;
    for (size_t ia = 0; ia < g_ncodecs; ia++) {
      for (size_t oc = 0; oc < g_ncodecs; oc++) {
        ba_bitmap_t *o, *g;
        assert_int_equal(ba_bitmap_not(A[ia], g_codecs[oc], &o), BA_OK);
        assert_true(same_words(o, exp[4][oc]));
        assert_int_equal(ba_bitmap_op_generic(BA_OPX_NOT, A[ia], NULL, g_codecs[oc], &g), BA_OK);
        assert_true(same_words(g, exp[4][oc]));
        ba_bitmap_free(o);
        ba_bitmap_free(g);
        assert_int_equal(ba_bitmap_convert(A[ia], g_codecs[oc], &o), BA_OK);
        assert_true(same_words(o, A[oc]));
        ba_bitmap_free(o);
      }
      for (size_t ib = 0; ib < g_ncodecs; ib++) {
        for (int op = 0; op < 4; op++) {
          for (size_t oc = 0; oc < g_ncodecs; oc++) {
            ba_bitmap_t *o, *g;
            assert_int_equal(ba_bitmap_op((ba_op_t)op, A[ia], B[ib], g_codecs[oc], &o), BA_OK);
            if (!same_words(o, exp[op][oc]))
              fail_msg("op %d %s x %s -> %s, na=%llu nb=%llu", op, ba_codec_name(g_codecs[ia]),
                       ba_codec_name(g_codecs[ib]), ba_codec_name(g_codecs[oc]), (unsigned long long)na,
                       (unsigned long long)nb);
            assert_int_equal(ba_bitmap_op_generic(op, A[ia], B[ib], g_codecs[oc], &g), BA_OK);
            assert_true(same_words(g, exp[op][oc]));
            ba_bitmap_free(o);
            ba_bitmap_free(g);
          }
        }
        uint64_t c;
        assert_int_equal(ba_bitmap_and_count(A[ia], B[ib], &c), BA_OK);
        assert_int_equal(c, and_ref);
        assert_int_equal(ba_bitmap_equal(A[ia], A[ib]), 1);
        assert_int_equal(ba_bitmap_equal(A[ia], B[ib]), eq_ref);
      }
      /* named wrappers */
      ba_bitmap_t *o;
      assert_int_equal(ba_bitmap_and(A[ia], B[ia], g_codecs[ia], &o), BA_OK);
      assert_true(same_words(o, exp[0][ia]));
      ba_bitmap_free(o);
      assert_int_equal(ba_bitmap_or(A[ia], B[ia], g_codecs[ia], &o), BA_OK);
      assert_true(same_words(o, exp[1][ia]));
      ba_bitmap_free(o);
      assert_int_equal(ba_bitmap_xor(A[ia], B[ia], g_codecs[ia], &o), BA_OK);
      assert_true(same_words(o, exp[2][ia]));
      ba_bitmap_free(o);
      assert_int_equal(ba_bitmap_andnot(A[ia], B[ia], g_codecs[ia], &o), BA_OK);
      assert_true(same_words(o, exp[3][ia]));
      ba_bitmap_free(o);
    }
    for (size_t ci = 0; ci < g_ncodecs; ci++) {
      ba_bitmap_free(A[ci]);
      ba_bitmap_free(B[ci]);
    }
    for (int op = 0; op < 5; op++) {
      for (size_t oc = 0; oc < g_ncodecs; oc++) ba_bitmap_free(exp[op][oc]);
      ba_ref_free(&rres[op]);
    }
    ba_ref_free(&ra);
    ba_ref_free(&rb);
  }
}

static void test_or_many(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 3);
  for (int t = 0; t < 30; t++) {
    size_t k = (size_t)ba_rng_below(&r, 12);
    ba_ref_t refs[12], acc, tmp;
    ba_bitmap_t *bms[12];
    assert_int_equal(ba_ref_init(&acc, 0), BA_OK);
    for (size_t i = 0; i < k; i++) {
      gen_ref(&r, &refs[i], 1 + ba_rng_below(&r, 3000), (int)ba_rng_below(&r, 5));
      bms[i] = build_rows(g_codecs[ba_rng_below(&r, g_ncodecs)], &refs[i]);
      assert_int_equal(ba_ref_op(BA_OP_OR, &acc, &refs[i], &tmp), BA_OK);
      ba_ref_free(&acc);
      acc = tmp;
    }
    ba_codec_t oc = g_codecs[ba_rng_below(&r, g_ncodecs)];
    ba_bitmap_t *o, *e = build_rows(oc, &acc);
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
}

/* ---- huge bitmaps: run-list reference ---- */

typedef struct {
  int v[64];
  uint64_t len[64];
  size_t n;
} runs_t;

static void runs_push(runs_t *r, int v, uint64_t len) {
  if (!len) return;
  if (r->n && r->v[r->n - 1] == v) {
    r->len[r->n - 1] += len;
    return;
  }
  assert_true(r->n < 64);
  r->v[r->n] = v;
  r->len[r->n++] = len;
}

static uint64_t runs_total(const runs_t *r, int v) {
  uint64_t s = 0;
  for (size_t i = 0; i < r->n; i++)
    if (v < 0 || r->v[i] == v) s += r->len[i];
  return s;
}

/* op over two run lists (the shorter zero-padded), op 4 = NOT a. */
static void runs_op(int op, const runs_t *a, const runs_t *b, runs_t *out) {
  out->n = 0;
  uint64_t na = runs_total(a, -1), nb = op == 4 ? 0 : runs_total(b, -1), N = na > nb ? na : nb;
  size_t i = 0, j = 0;
  uint64_t ra = a->n ? a->len[0] : 0, rb = op == 4 || !b->n ? 0 : b->len[0], pos = 0;
  while (pos < N) {
    int x = i < a->n ? a->v[i] : 0, y = op != 4 && j < b->n ? b->v[j] : 0;
    uint64_t k = N - pos;
    if (i < a->n && ra < k) k = ra;
    if (op != 4 && j < b->n && rb < k) k = rb;
    int v = op == 0 ? (x & y) : op == 1 ? (x | y) : op == 2 ? (x ^ y) : op == 3 ? (x & !y) : !x;
    runs_push(out, v, k);
    pos += k;
    if (i < a->n && (ra -= k) == 0 && ++i < a->n) ra = a->len[i];
    if (op != 4 && j < b->n && (rb -= k) == 0 && ++j < b->n) rb = b->len[j];
  }
}

typedef struct {
  const runs_t *exp;
  size_t i;
  uint64_t pos;
  int bad;
} runs_check_t;

static int check_runs_cb(void *ctx, int value, uint64_t start, uint64_t nrows) {
  runs_check_t *c = (runs_check_t *)ctx;
  if (c->i >= c->exp->n || c->exp->v[c->i] != value || c->exp->len[c->i] != nrows || start != c->pos) c->bad = 1;
  c->i++;
  c->pos += nrows;
  return 0;
}

static void check_runs(const ba_bitmap_t *bm, const runs_t *exp) {
  runs_check_t c = {exp, 0, 0, 0};
  assert_int_equal(ba_bitmap_foreach_run(bm, check_runs_cb, &c), BA_OK);
  assert_false(c.bad);
  assert_int_equal(c.i, exp->n);
  uint64_t cnt;
  assert_int_equal(ba_bitmap_count(bm, &cnt), BA_OK);
  assert_int_equal(cnt, runs_total(exp, 1));
  assert_int_equal(ba_bitmap_rows(bm), runs_total(exp, -1));
}

static ba_bitmap_t *build_from_runs(ba_codec_t c, const runs_t *r, uint64_t nrows) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (size_t i = 0; i < r->n; i++) assert_int_equal(ba_bitmap_append_run(bm, r->v[i], r->len[i]), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, nrows), BA_OK);
  return bm;
}

/* COMPAX has no 1-fill (§4.1): a 1-run of millions of groups is one literal
 * word per group. Such bitmaps are left out of the COMPAX combinations. */
static int compax_fits(ba_codec_t c, const runs_t *r) {
  if (c != BA_CODEC_COMPAX) return 1;
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i] && r->len[i] > (UINT64_C(1) << 22)) return 0;
  return 1;
}

/* Every codec pair, op and output codec on two run lists. */
static void huge_case(const runs_t *a, const runs_t *b) {
  for (size_t ci = 0; ci < g_ncodecs; ci++) {
    ba_codec_t c = g_codecs[ci];
    if (!compax_fits(c, a)) continue;
    ba_bitmap_t *A = build_from_runs(c, a, runs_total(a, -1));
    check_runs(A, a);
    /* few words: split fills, not one word per group (MASC runs hold at most
     * ~2^25 rows per word, §5.2) */
    size_t nw;
    const void *w = ba_bitmap_words(A, &nw);
    assert_true(nw < 64 + runs_total(a, -1) / (UINT64_C(1) << 24));
    /* words revalidate */
    ba_bitmap_t *d;
    assert_int_equal(ba_bitmap_from_words(c, w, nw, ba_bitmap_rows(A), &d), BA_OK);
    check_runs(d, a);
    ba_bitmap_free(d);
    for (size_t cj = 0; cj < g_ncodecs; cj++) {
      if (!compax_fits(g_codecs[cj], b)) continue;
      ba_bitmap_t *B = build_from_runs(g_codecs[cj], b, runs_total(b, -1));
      check_runs(B, b);
      for (int op = 0; op < 5; op++) {
        runs_t e;
        runs_op(op, a, b, &e);
        for (size_t oc = 0; oc < g_ncodecs; oc++) {
          if (!compax_fits(g_codecs[oc], &e)) continue;
          ba_bitmap_t *o;
          if (op == 4)
            assert_int_equal(ba_bitmap_not(A, g_codecs[oc], &o), BA_OK);
          else
            assert_int_equal(ba_bitmap_op((ba_op_t)op, A, B, g_codecs[oc], &o), BA_OK);
          check_runs(o, &e);
          ba_bitmap_free(o);
        }
      }
      uint64_t cnt;
      runs_t e;
      runs_op(0, a, b, &e);
      assert_int_equal(ba_bitmap_and_count(A, B, &cnt), BA_OK);
      assert_int_equal(cnt, runs_total(&e, 1));
      ba_bitmap_free(B);
    }
    ba_bitmap_free(A);
  }
}

static void test_huge(void **state) {
  (void)state;
  const uint64_t G25 = UINT64_C(1) << 25, G30 = UINT64_C(1) << 30;
  runs_t a = {{0}, {0}, 0}, b = {{0}, {0}, 0};
  /* a: PLWAH-sized 1-fill (> 2^25 groups) ending off-boundary, WAH32-sized
   * 0-fill (> 2^30 groups), MASC-sized runs (> 2^20 * 31 rows), short
   * boundary runs. */
  runs_push(&a, 0, 5);
  runs_push(&a, 1, (G25 + 3) * 31 + 7);
  runs_push(&a, 0, (G30 + 2) * 31);
  runs_push(&a, 1, 63 * 5);
  runs_push(&a, 0, 1);
  runs_push(&a, 1, 31);
  runs_push(&a, 0, (UINT64_C(1) << 33) + 1);
  runs_push(&a, 1, 40000000);
  runs_push(&a, 0, 62);
  /* b: offset boundaries, differs in length (D-6) */
  runs_push(&b, 1, (G25 + 1) * 31);
  runs_push(&b, 0, 3);
  runs_push(&b, 1, (G30 + 9) * 31 + 30);
  runs_push(&b, 0, UINT64_C(1) << 34);
  runs_push(&b, 1, 1);
  huge_case(&a, &b);
  /* the same with short 1-runs: every codec, COMPAX included */
  runs_t a0 = {{0}, {0}, 0}, b0 = {{0}, {0}, 0};
  runs_push(&a0, 0, (G30 + 2) * 31 + 4);
  runs_push(&a0, 1, 700);
  runs_push(&a0, 0, (UINT64_C(1) << 33) + 1);
  runs_push(&a0, 1, 1);
  runs_push(&a0, 0, 62);
  runs_push(&b0, 0, 40000000);
  runs_push(&b0, 1, 93);
  runs_push(&b0, 0, (G30 + 9) * 31 + 30);
  runs_push(&b0, 1, 2);
  runs_push(&b0, 0, UINT64_C(1) << 34);
  huge_case(&a0, &b0);
}

/* Split fills, word for word (layouts of spec §2.1/§3.1; split rule §2.2,
 * §3.3 step 3: only the last word of a split run takes the position). */
static void test_split_words(void **state) {
  (void)state;
  ba_bitmap_t *bm;
  size_t nw;
  const uint32_t *w;
  /* WAH32: 0-fill of 2^30 - 1 + 5 groups, then one literal with row 0 set. */
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH32, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 0, ((UINT64_C(1) << 30) + 4) * 31), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, 2), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, ba_bitmap_rows(bm) + 29), BA_OK);
  w = (const uint32_t *)ba_bitmap_words(bm, &nw);
  assert_int_equal(nw, 3);
  assert_int_equal(w[0], 0xBFFFFFFF);
  assert_int_equal(w[1], 0x80000005);
  assert_int_equal(w[2], 0x60000000);
  ba_bitmap_free(bm);
  /* PLWAH: 1-fill of 2^25 - 1 + 4 groups, then a group whose only 0 is row 0 (p = 1). */
  assert_int_equal(ba_bitmap_create(BA_CODEC_PLWAH, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, ((UINT64_C(1) << 25) + 3) * 31), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 0, 1), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, 30), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, ba_bitmap_rows(bm)), BA_OK);
  w = (const uint32_t *)ba_bitmap_words(bm, &nw);
  assert_int_equal(nw, 2);
  assert_int_equal(w[0], 0xC1FFFFFF);
  assert_int_equal(w[1], 0xC2000004);
  ba_bitmap_free(bm);
  /* WAH64: the same 1-fill is one word of 2^25 + 3 groups of 63 rows. */
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH64, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, ((UINT64_C(1) << 25) + 3) * 63), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, ba_bitmap_rows(bm)), BA_OK);
  const uint64_t *w64 = (const uint64_t *)ba_bitmap_words(bm, &nw);
  assert_int_equal(nw, 1);
  assert_int_equal(w64[0], 0xC000000000000000ull | ((UINT64_C(1) << 25) + 3));
  ba_bitmap_free(bm);
}

static void test_api_errors(void **state) {
  (void)state;
  ba_bitmap_t *bm, *o;
  assert_int_equal(ba_bitmap_create((ba_codec_t)0, &bm), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH32, &bm), BA_OK);
  assert_int_equal(ba_bitmap_set(bm, 10), BA_OK);
  assert_int_equal(ba_bitmap_set(bm, 10), BA_ERR_INVALID); /* not increasing */
  assert_int_equal(ba_bitmap_append_run(bm, 2, 1), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_append_bits(bm, 0, 0), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_append_bits(bm, 0, 65), BA_ERR_INVALID);
  assert_int_equal(ba_bitmap_finish(bm, 5), BA_ERR_INVALID); /* shorter than appended */
  assert_int_equal(ba_bitmap_and(bm, bm, BA_CODEC_WAH32, &o), BA_ERR_INVALID); /* unfinished */
  assert_int_equal(ba_bitmap_finish(bm, 11), BA_OK);
  assert_int_equal(ba_bitmap_set(bm, 20), BA_ERR_INVALID); /* finished */
  uint64_t rows[2] = {3, 3};
  assert_int_equal(ba_bitmap_from_rows(BA_CODEC_WAH32, rows, 2, 10, &o), BA_ERR_INVALID);
  rows[1] = 10;
  assert_int_equal(ba_bitmap_from_rows(BA_CODEC_WAH32, rows, 2, 10, &o), BA_ERR_INVALID);
  ba_bitmap_t *c;
  assert_int_equal(ba_bitmap_clone(bm, &c), BA_OK);
  assert_true(same_words(c, bm));
  ba_bitmap_free(c);
  ba_bitmap_free(bm);
  ba_bitmap_free(NULL);
  assert_int_equal(ba_bitmap_or_many(NULL, 0, BA_CODEC_WAH64, &o), BA_OK);
  assert_int_equal(ba_bitmap_rows(o), 0);
  ba_bitmap_free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_api_errors), cmocka_unit_test(test_split_words), cmocka_unit_test(test_build_roundtrip),
      cmocka_unit_test(test_ops),        cmocka_unit_test(test_or_many),     cmocka_unit_test(test_huge),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
