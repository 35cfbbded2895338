/* Integer fields written by ba_if_encode (doc/format.md §7.1) checked
 * against naive references. PDICT: on skewed fields (a few frequent values, many tied
 * counts, counts of 256 and more, exceptions or none), wherever the encoder
 * chose PDICT its width and dictionary are the cheapest by the cost the
 * encoder estimates (n*b + dictionary + exceptions at the frame-of-reference
 * width), the dictionary the most frequent values (count descending, then
 * value ascending) among those seen twice or more, and the exceptions' count,
 * base and width those of the values left out; every field decodes back.
 * All of it once per encoder kernel the CPU has (portable C, AVX2, AVX-512). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "archive/intfield.h"
#include "testsupport.h"
#include "common/common.h"

typedef struct vc {
  uint64_t v, c;
} vc_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_freq(const void *a, const void *b) { /* count descending, then value ascending */
  const vc_t *x = a, *y = b;
  if (x->c != y->c) return x->c > y->c ? -1 : 1;
  return x->v < y->v ? -1 : x->v > y->v;
}
static unsigned bitlen(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }
static uint64_t gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
static uint64_t load_le(const uint8_t *p, unsigned w) {
  uint64_t x = 0;
  for (unsigned q = 0; q < w; q++) x |= (uint64_t)p[q] << (8 * q);
  return x;
}

/* Zigzag of the w-byte two's-complement difference d (masked). */
static uint64_t zz_ref(uint64_t d, unsigned w) {
  int64_t s = (int64_t)(d << (64 - 8 * w)) >> (64 - 8 * w);
  uint64_t m = w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1;
  return (((uint64_t)s << 1) ^ (uint64_t)(s >> 63)) & m;
}

/* Coverage: PDICT fields checked; of them with a dictionary smaller than the
 * candidates and tied counts at its edge; with exceptions; with a count of
 * 256 or more in the dictionary. */
static unsigned g_pdict, g_tie_cut, g_exc, g_big, g_small, g_plan, g_plan_first, g_full;

/* PDICT's least cost over code widths 1..8: a dictionary of the first
 * 2^b - 1 of d[0..nvals) (most frequent first), rows not covered as
 * exceptions at the frame-of-reference width b_for; reps_only: a value seen
 * once covers no row. */
static uint64_t pdict_cost(const vc_t *d, size_t nvals, size_t n, unsigned w, unsigned b_for, int reps_only) {
  uint64_t best = UINT64_MAX, covered = 0;
  size_t k = 0;
  for (unsigned b = 1; b <= 8; b++) {
    size_t kb = BA_MIN(((size_t)1 << b) - 1, nvals);
    for (; k < kb; k++) covered += reps_only && d[k].c < 2 ? 0 : d[k].c;
    uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * b_for;
    best = cost < best ? cost : best;
  }
  return best;
}

/* Checks one field v[0..n) of w bytes against the reference. */
static void check_field(ba_col_scratch_t *x, const uint64_t *v, size_t n, unsigned w) {
  uint64_t *enc = malloc(n * sizeof *enc), *dec = malloc(n * sizeof *dec), *s = malloc(n * sizeof *s);
  uint8_t *out = malloc(BA_COL2_FIELD_HDR + (size_t)w * n + 8 * n);
  vc_t *d = malloc(n * sizeof *d);
  memcpy(enc, v, n * sizeof *v);
  size_t len = ba_if_encode(x, enc, n, w, 0, out), used = 0;
  assert_int_equal(ba_if_decode(out, len, n, w, 0, dec, &used), BA_OK);
  assert_int_equal(used, len);
  assert_memory_equal(dec, v, n * sizeof *v);
  { /* At most 255 distinct values (counted by the dictionary pass), the
     * repeated ones all PDICT candidates: PDICT is chosen exactly when its
     * cost (exceptions at the frame-of-reference width) and the encoder's
     * first estimate of it (from the dictionary pass's counts, singletons
     * in the dictionary's size) are below FOR's, DELTA's and DICT's. */
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_u64);
    size_t nd = 0, nrep = 0;
    for (size_t i = 0; i < n; i++) {
      if (nd && d[nd - 1].v == s[i]) d[nd - 1].c++;
      else d[nd++] = (vc_t){s[i], 1};
    }
    uint64_t sc = 0, m = w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1, maxz = 0, prev = 0;
    for (size_t i = 1; i < n; i++) sc = gcd(sc, v[i] > v[0] ? v[i] - v[0] : v[0] - v[i]);
    sc = sc ? sc : 1;
    for (size_t i = 0; i < n; i++) {
      uint64_t k = (v[i] - s[0]) / sc, z = zz_ref((k - prev) & m, w);
      maxz = z > maxz ? z : maxz;
      prev = k;
    }
    unsigned b_for = bitlen((s[n - 1] - s[0]) / sc);
    qsort(d, nd, sizeof *d, cmp_freq);
    while (nrep < nd && d[nrep].c >= 2) nrep++;
    int first_distinct = 0; /* the first 256 rows all distinct */
    if (n >= 256) {
      uint64_t f[256];
      memcpy(f, v, sizeof f);
      qsort(f, 256, sizeof *f, cmp_u64);
      first_distinct = 1;
      for (size_t i = 1; i < 256; i++) first_distinct &= f[i] != f[i - 1];
    }
    if (nd > 2 && nd <= 256 && b_for >= 2) {
      uint64_t best = pdict_cost(d, nrep, n, w, b_for, 0);
      /* the encoder's first estimate: a dictionary of the most frequent of
       * all nd values (those seen once cover no row) */
      uint64_t est = pdict_cost(d, nd, n, w, b_for, 1);
      uint64_t other = BA_MIN((uint64_t)n * b_for, (uint64_t)n * bitlen(maxz));
      other = BA_MIN(other, (uint64_t)n * bitlen(nd - 1) + 8ull * w * nd);
      /* (256 values: counted again by the plan, which gives up on 256
       * distinct first rows) */
      assert_int_equal(out[0] == 3, nrep && est < other && best < other && !(nd == 256 && first_distinct));
      g_small++;
      g_full += nd == 256;
    }
    if (nd > 256 && nd <= 4096 && b_for >= 6) {
      /* More distinct values than a dictionary holds (no DICT): the
       * counting pass's plan, which gives up when the first 256 rows are
       * all distinct (times); else PDICT exactly when its cost, over the
       * 255 most frequent of the repeated values, is below FOR's and
       * DELTA's. */
      uint64_t best = pdict_cost(d, nrep, n, w, b_for, 0);
      uint64_t other = BA_MIN((uint64_t)n * b_for, (uint64_t)n * bitlen(maxz));
      assert_int_equal(out[0] == 3, !first_distinct && nrep && best < other);
      g_plan++;
      g_plan_first += (unsigned)first_distinct;
    }
  }
  if (out[0] == 3) { /* PDICT */
    g_pdict++;
    /* distinct values and counts */
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_u64);
    size_t nd = 0;
    for (size_t i = 0; i < n; i++) {
      if (nd && d[nd - 1].v == s[i]) d[nd - 1].c++;
      else d[nd++] = (vc_t){s[i], 1};
    }
    /* the frame-of-reference width: exceptions' estimated bits */
    uint64_t sc = 0;
    for (size_t i = 1; i < n; i++) sc = gcd(sc, v[i] > v[0] ? v[i] - v[0] : v[0] - v[i]);
    unsigned b_for = bitlen((s[n - 1] - s[0]) / (sc ? sc : 1));
    qsort(d, nd, sizeof *d, cmp_freq);
    size_t nrep = 0;
    while (nrep < nd && d[nrep].c >= 2) nrep++;
    if (nrep <= 255) { /* every repeated value a candidate */
      uint64_t best = UINT64_MAX, covered = 0;
      unsigned bb = 0;
      size_t kk = 0, k = 0;
      for (unsigned b = 1; b <= 8; b++) {
        size_t kb = BA_MIN(((size_t)1 << b) - 1, nrep);
        for (; k < kb; k++) covered += d[k].c;
        uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * b_for;
        if (cost < best) best = cost, bb = b, kk = kb;
      }
      assert_int_equal(out[1], bb);
      assert_int_equal(ba_load_le32(out + 4), kk);
      uint64_t dict[256];
      for (size_t j = 0; j < kk; j++) dict[j] = d[j].v;
      qsort(dict, kk, sizeof *dict, cmp_u64);
      for (size_t j = 0; j < kk; j++) assert_true(load_le(out + BA_COL2_FIELD_HDR + j * w, w) == dict[j]);
      if (kk < nrep && d[kk].c == d[kk - 1].c) g_tie_cut++;
      if (d[0].c >= 256) g_big++;
    }
    /* exceptions: the values not in the dictionary */
    size_t kd = ba_load_le32(out + 4);
    const uint8_t *dp = out + BA_COL2_FIELD_HDR;
    uint64_t ne = 0, emin = UINT64_MAX, emax = 0;
    for (size_t i = 0; i < n; i++) {
      int in = 0;
      for (size_t j = 0; j < kd && !in; j++) in = load_le(dp + j * w, w) == v[i];
      if (!in) {
        ne++;
        emin = v[i] < emin ? v[i] : emin;
        emax = v[i] > emax ? v[i] : emax;
      }
    }
    if (!ne) emin = emax = 0;
    else g_exc++;
    assert_true(ba_load_le64(out + 16) == ne);
    assert_true(ba_load_le64(out + 8) == emin);
    assert_int_equal(out[3], bitlen(emax - emin));
  }
  free(enc);
  free(dec);
  free(s);
  free(out);
  free(d);
}

/* Skewed fields: nf frequent values (some with tied counts, some taking a
 * large share of the rows), a pool of values seen a few times, and random
 * rare ones (or none), over widths 1, 2, 4 and 8 and group sizes. */
static void test_pdict_reference(void **state) {
  (void)state;
  ba_col_scratch_t *x = NULL;
  assert_int_equal(ba_col_scratch_create(&x), BA_OK);
  ba_rng_t rng;
  ba_rng_seed(&rng, 20261128);
  static const unsigned widths[] = {1, 2, 4, 8};
  static const size_t sizes[] = {300, 1000, 4000, 9000};
  uint64_t *v = malloc(9000 * sizeof *v);
  for (int rep = 0; rep < 1500; rep++) {
    unsigned w = widths[rep % 4];
    size_t n = sizes[(rep / 4) % 4];
    uint64_t m = w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1;
    uint64_t scale = rep % 7 == 0 ? 1000 : 1, base = ba_rng_next(&rng) & m;
    size_t nf = 1 + (size_t)ba_rng_below(&rng, 40), npool = (size_t)ba_rng_below(&rng, 400);
    uint64_t fr[40], pool[400];
    for (size_t j = 0; j < nf; j++) fr[j] = (base + (ba_rng_next(&rng) % 5000) * scale) & m;
    for (size_t j = 0; j < npool; j++) pool[j] = (base + (ba_rng_next(&rng) % 100000) * scale) & m;
    unsigned rare = (unsigned)ba_rng_below(&rng, 4); /* 0: no rare values */
    unsigned hot = (unsigned)ba_rng_below(&rng, 3); /* share of the first frequent value */
    for (size_t i = 0; i < n; i++) {
      uint64_t r = ba_rng_below(&rng, 100);
      if (hot && r < 30u * hot) v[i] = fr[0];
      else if (r < 70) v[i] = fr[ba_rng_below(&rng, nf)];
      else if (r < 95 - 5 * rare || (!rare && npool == 0)) v[i] = npool ? pool[ba_rng_below(&rng, npool)] : fr[0];
      else v[i] = rare ? ba_rng_next(&rng) & m : fr[0];
    }
    /* tied counts: every frequent value exactly c times, at random rows */
    if (rep % 5 == 1 && nf * 8 < n) {
      size_t c = 2 + (size_t)ba_rng_below(&rng, 6);
      for (size_t j = 0; j < nf; j++)
        for (size_t t = 0; t < c; t++) v[ba_rng_below(&rng, n)] = fr[j];
    }
    check_field(x, v, n, w);
  }
  free(v);
  ba_col_scratch_free(x);
  print_message("PDICT fields %u (dictionary cut inside tied counts %u, with exceptions %u, a count >= 256 %u); "
                "choice checked on %u fields of 3..255 distinct values, %u of 257..4096\n",
                g_pdict, g_tie_cut, g_exc, g_big, g_small, g_plan);
  assert_true(g_plan >= 100);
  assert_true(g_pdict >= 100);
  assert_true(g_tie_cut >= 10);
  assert_true(g_exc >= 50);
  assert_true(g_big >= 10);
  assert_true(g_small >= 100);
}

/* The plan's give-up rule at its edge: 300 distinct values in the first
 * rows (the first 256 all distinct, or 255 of them and one twice, or a
 * repeat at row 255), then a few frequent values over the rest, where
 * PDICT wins unless the plan gave up (check_field's reference); and fields
 * of exactly 256 distinct values (a full dictionary: the plan counts from
 * the start). */
static void test_pdict_plan_edge(void **state) {
  (void)state;
  ba_col_scratch_t *x = NULL;
  assert_int_equal(ba_col_scratch_create(&x), BA_OK);
  ba_rng_t rng;
  ba_rng_seed(&rng, 20261129);
  uint64_t *v = malloc(4000 * sizeof *v);
  unsigned before = g_plan, before_first = g_plan_first;
  for (int rep = 0; rep < 40; rep++) {
    size_t n = rep % 2 ? 4000 : 1000;
    for (size_t i = 0; i < 300; i++) v[i] = 1000000 + 7 * i; /* distinct */
    if (rep % 4 == 1) v[100] = v[40];                        /* 255 distinct in rows 0..255 */
    if (rep % 4 == 2) v[255] = v[0];                          /* the repeat at row 255 itself */
    for (size_t i = 300; i < n; i++) v[i] = 5000000 + 3 * (uint64_t)ba_rng_below(&rng, 6);
    check_field(x, v, n, 4);
    check_field(x, v, n, 8);
  }
  assert_true(g_plan - before == 80);
  assert_true(g_plan_first - before_first == 40); /* rep % 4 == 0 or 3 */
  unsigned before_full = g_full;
  for (int rep = 0; rep < 20; rep++) {
    size_t n = rep % 2 ? 4000 : 1000;
    for (size_t i = 0; i < 300; i++) v[i] = 1000000 + 7 * (i % 256);
    for (size_t i = 300; i < n; i++) v[i] = 1000000 + 7 * (uint64_t)ba_rng_below(&rng, 6);
    if (rep % 4 >= 2) { /* a repeat in the first 256 rows; row 100's value later */
      v[100] = v[40];
      v[300] = 1000000 + 7 * 100;
    }
    check_field(x, v, n, 4);
  }
  assert_true(g_full - before_full == 20);
  free(v);
  ba_col_scratch_free(x);
}

/* Fields at a common scale above 1 (times at millisecond resolution in
 * nanoseconds, multiples of 3, ...): ascending, random, and spans near and
 * past half the width's range (where zigzags wrap). Wherever FOR or DELTA
 * was chosen, its base, scale and width are the naive ones (widths from
 * every row's value and zigzag difference) and it was the cheaper of the
 * two (FOR first on a tie); some fields get a finer scale from a row past
 * the first 16 (where the scale is checked many rows at a time). */
static unsigned g_for, g_delta, g_wide, g_late;
static void test_scaled_widths(void **state) {
  (void)state;
  ba_col_scratch_t *x = NULL;
  assert_int_equal(ba_col_scratch_create(&x), BA_OK);
  ba_rng_t rng;
  ba_rng_seed(&rng, 1128);
  static const unsigned widths[] = {1, 2, 4, 8};
  size_t nmax = 4000;
  uint64_t *v = malloc(nmax * sizeof *v), *enc = malloc(nmax * sizeof *v), *dec = malloc(nmax * sizeof *v);
  uint8_t *out = malloc(BA_COL2_FIELD_HDR + 16 * nmax);
  for (int rep = 0; rep < 3000; rep++) {
    unsigned w = widths[rep % 4];
    uint64_t m = w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1;
    size_t n = 2 + (size_t)ba_rng_below(&rng, rep % 3 ? 300 : nmax - 2);
    static const uint64_t scales[] = {2, 3, 1000, 1000000, 7, 64};
    uint64_t sc = scales[ba_rng_below(&rng, 6)];
    if (sc > m / 4) sc = 2 + ba_rng_below(&rng, 3);
    uint64_t span; /* the values' span in multiples of sc */
    switch (rep % 4) {
      case 0: span = (m >> 1) / sc; break;             /* just inside the signed range */
      case 1: span = (m >> 1) / sc + 1 + ba_rng_below(&rng, 3); break; /* just past it */
      case 2: span = m / sc; break;                    /* the whole range */
      default: span = 1 + ba_rng_below(&rng, 5000); break;
    }
    if (span > m / sc) span = m / sc;
    uint64_t base = ba_rng_below(&rng, m / sc - span + 1) * sc;
    int asc = rep % 5 < 2;
    for (size_t i = 0; i < n; i++) v[i] = base + (ba_rng_next(&rng) % (span + 1)) * sc;
    if (asc) qsort(v, n, sizeof *v, cmp_u64);
    v[ba_rng_below(&rng, n)] = base; /* the span's ends present */
    v[ba_rng_below(&rng, n)] = base + span * sc;
    if (rep % 6 == 5 && n > 40) { /* a finer scale from one late row on */
      v[16 + ba_rng_below(&rng, n - 16)] = base + sc / 2;
      g_late++;
    }
    memcpy(enc, v, n * sizeof *v);
    size_t len = ba_if_encode(x, enc, n, w, 0, out), used = 0;
    assert_int_equal(ba_if_decode(out, len, n, w, 0, dec, &used), BA_OK);
    assert_memory_equal(dec, v, n * sizeof *v);
    if (out[0] > 1) continue; /* DICT or PDICT */
    uint64_t mn = UINT64_MAX, mx = 0, g = 0;
    for (size_t i = 0; i < n; i++) {
      mn = v[i] < mn ? v[i] : mn;
      mx = v[i] > mx ? v[i] : mx;
      g = gcd(g, v[i] > v[0] ? v[i] - v[0] : v[0] - v[i]);
    }
    if (mn == mx) continue;
    uint64_t maxz = 0, prev = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t k = (v[i] - mn) / g, z = zz_ref((k - prev) & m, w);
      maxz = z > maxz ? z : maxz;
      prev = k;
    }
    unsigned b_for = bitlen((mx - mn) / g), b_delta = bitlen(maxz);
    assert_true(ba_load_le64(out + 8) == mn);
    assert_true(ba_load_le64(out + 16) == g);
    if (out[0] == 0) {
      g_for++;
      assert_int_equal(out[1], b_for);
      assert_true(b_for <= b_delta);
    } else {
      g_delta++;
      assert_int_equal(out[1], b_delta);
      assert_true(b_delta < b_for);
    }
    if (mx - mn > (m >> 1)) g_wide++;
  }
  free(v);
  free(enc);
  free(dec);
  free(out);
  ba_col_scratch_free(x);
  print_message("scaled fields: FOR %u, DELTA %u, spanning more than half the range %u, a late finer scale %u\n",
                g_for, g_delta, g_wide, g_late);
  assert_true(g_for >= 100 && g_delta >= 100 && g_wide >= 100 && g_late >= 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pdict_reference), cmocka_unit_test(test_pdict_plan_edge),
                                     cmocka_unit_test(test_scaled_widths)};
  int failed = 0;
  for (int level = 2; level >= 0; level--) { /* every kernel this CPU has, the portable C one included */
    int got = ba_if_set_kernels(level);
    if (got != level) continue;
    print_message("encoder kernels of level %d (0 portable, 1 AVX2, 2 AVX-512)\n", got);
    failed += cmocka_run_group_tests(tests, NULL, NULL);
  }
  return failed;
}
