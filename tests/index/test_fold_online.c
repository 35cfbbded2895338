/* ba_idx_online_finish_fold against a naive reference: every value's bitmap
 * by ba_bitmap_set row by row, its rows counted by ba_bitmap_count, the
 * values under the threshold dropped and ORed per bin by
 * ba_bitmap_or_many. Exact and bin bitmaps must be identical word for word,
 * on the fast path (PLWAH ports, all rows in the dense builder's last batch:
 * the rare values' rows ORed straight into their bins, before the batch is
 * sorted or, with too many bins, as it is walked), on the walk of the
 * finish (several batches: rare values kept as row lists or built as
 * bitmaps) and on the others (other codecs, other domains), for thresholds
 * that fold nothing, some values or every value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitmap.h"
#include "common/common.h"
#include "index/index.h"
#include "testsupport.h"

static uint32_t bin_of_port(uint32_t v) { return v < 1024 ? 0 : 1 + (v >> 12); }
static uint32_t bin_of_small(uint32_t v) { return v / 10; }
static uint32_t bin_of_ident(uint32_t v) { return v; }

/* Reference: exact bitmaps by ba_bitmap_set; the rare ones ORed into bins. */
static void reference(ba_codec_t codec, uint32_t dom, const uint32_t *v, size_t n, uint64_t min_rows,
                      ba_idx_bin_fn bin_of, ba_idx_attr_t *exact, ba_idx_attr_t *bins) {
  ba_bitmap_t **bms = calloc(dom, sizeof *bms);
  assert_non_null(bms);
  memset(exact, 0, sizeof *exact);
  memset(bins, 0, sizeof *bins);
  for (size_t i = 0; i < n; i++) {
    if (v[i] == BA_IDX_NONE) continue;
    if (!bms[v[i]]) assert_int_equal(ba_bitmap_create(codec, &bms[v[i]]), BA_OK);
    assert_int_equal(ba_bitmap_set(bms[v[i]], i), BA_OK);
  }
  exact->values = malloc((dom + 1) * sizeof *exact->values);
  exact->bms = malloc((dom + 1) * sizeof *exact->bms);
  bins->values = malloc((dom + 1) * sizeof *bins->values);
  bins->bms = malloc((dom + 1) * sizeof *bins->bms);
  const ba_bitmap_t **ops = malloc((dom + 1) * sizeof *ops);
  ba_bitmap_t **rare = malloc((dom + 1) * sizeof *rare);
  size_t k = 0, nr = 0;
  uint32_t bin = 0;
  for (uint32_t x = 0; x <= dom; x++) {
    uint64_t c = 0;
    if (x < dom && bms[x]) {
      assert_int_equal(ba_bitmap_finish(bms[x], n), BA_OK);
      assert_int_equal(ba_bitmap_count(bms[x], &c), BA_OK);
    }
    int is_rare = x < dom && bms[x] && min_rows >= 2 && c < min_rows;
    if (k && (x == dom || (is_rare && bin_of(x) != bin))) { /* a bin ends */
      assert_int_equal(ba_bitmap_or_many(ops, k, codec, &bins->bms[bins->n]), BA_OK);
      bins->values[bins->n++] = bin;
      k = 0;
    }
    if (x == dom || !bms[x]) continue;
    if (is_rare) {
      bin = bin_of(x);
      ops[k++] = bms[x];
      rare[nr++] = bms[x];
    } else {
      exact->values[exact->n] = x;
      exact->bms[exact->n++] = bms[x];
    }
  }
  for (size_t j = 0; j < nr; j++) ba_bitmap_free(rare[j]);
  free(rare);
  free(ops);
  free(bms);
}

static void same(const ba_idx_attr_t *a, const ba_idx_attr_t *b, const char *what) {
  if (a->n != b->n) fail_msg("%s: %zu values, reference %zu", what, a->n, b->n);
  for (size_t k = 0; k < a->n; k++) {
    if (a->values[k] != b->values[k]) fail_msg("%s: value %u, reference %u", what, a->values[k], b->values[k]);
    size_t la = ba_bitmap_serialized_size(a->bms[k]), lb = ba_bitmap_serialized_size(b->bms[k]);
    uint8_t *x = malloc(la), *y = malloc(lb);
    size_t xa, xb;
    assert_int_equal(ba_bitmap_serialize(a->bms[k], x, la, &xa), BA_OK);
    assert_int_equal(ba_bitmap_serialize(b->bms[k], y, lb, &xb), BA_OK);
    if (la != lb || memcmp(x, y, la)) fail_msg("%s: value %u: bitmap differs from the reference", what, a->values[k]);
    free(x);
    free(y);
    if (a->counts) {
      uint64_t c = 0;
      assert_int_equal(ba_bitmap_count(a->bms[k], &c), BA_OK);
      if (c != a->counts[k]) fail_msg("%s: value %u: count %lu, bitmap %lu", what, a->values[k],
                                      (unsigned long)a->counts[k], (unsigned long)c);
    }
  }
}

/* Builds v[0..n) in pieces (runs without a value as absent rows), finishes
 * with the fold and compares with the reference. */
static void check(ba_codec_t codec, uint32_t dom, const uint32_t *v, size_t n, uint64_t min_rows,
                  ba_idx_bin_fn bin_of, ba_rng_t *rng, const char *what) {
  ba_idx_online_t *b;
  assert_int_equal(ba_idx_online_create(codec, dom, &b), BA_OK);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1, lim = 1 + (size_t)ba_rng_below(rng, 5000);
    while (j < n && (v[j] == BA_IDX_NONE) == (v[i] == BA_IDX_NONE) && j - i < lim) j++;
    if (v[i] == BA_IDX_NONE && ba_rng_below(rng, 2)) assert_int_equal(ba_idx_online_add_absent(b, j - i), BA_OK);
    else assert_int_equal(ba_idx_online_add(b, v + i, j - i), BA_OK);
    i = j;
  }
  ba_idx_attr_t ex, bins, rex, rbins;
  memset(&bins, 0xab, sizeof bins); /* overwritten */
  assert_int_equal(ba_idx_online_finish_fold(b, min_rows, bin_of, &ex, &bins), BA_OK);
  ba_idx_online_free(b);
  reference(codec, dom, v, n, min_rows, bin_of, &rex, &rbins);
  char w[200];
  snprintf(w, sizeof w, "%s, %s, domain %u, %zu rows, min_rows %lu, exact", what, ba_codec_name(codec), dom, n,
           (unsigned long)min_rows);
  same(&ex, &rex, w);
  snprintf(w, sizeof w, "%s, %s, domain %u, %zu rows, min_rows %lu, bins", what, ba_codec_name(codec), dom, n,
           (unsigned long)min_rows);
  same(&bins, &rbins, w);
  ba_idx_attr_clear(&ex);
  ba_idx_attr_clear(&bins);
  ba_idx_attr_clear(&rex);
  ba_idx_attr_clear(&rbins);
}

static void fill(ba_rng_t *rng, int shape, uint32_t dom, uint32_t *v, size_t n) {
  uint32_t cur = 0;
  for (size_t i = 0; i < n; i++) {
    switch (shape) {
    case 0: v[i] = (uint32_t)ba_rng_below(rng, dom); break;     /* uniform */
    case 1: v[i] = (uint32_t)ba_rng_zipf(rng, dom, 1.1); break; /* skewed: a few frequent, many rare */
    case 2:                                                     /* runs: whole groups of a rare value */
      if (ba_rng_below(rng, 150) == 0) cur = (uint32_t)ba_rng_below(rng, dom);
      v[i] = cur;
      break;
    default: /* ephemeral ports: rare values, long stretches without one */
      v[i] = (i / 3000) % 3 == 1 ? BA_IDX_NONE : (uint32_t)(dom / 2 + ba_rng_below(rng, dom / 2));
    }
    if (shape < 2 && ba_rng_below(rng, 20) == 0) v[i] = BA_IDX_NONE;
  }
}

/* The fast path: PLWAH ports, at most one batch. */
static void test_fold_fast(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 91);
  size_t cap = 300000;
  uint32_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  for (int it = 0; it < 16; it++) {
    size_t n = (size_t)ba_rng_below(&rng, it < 4 ? 100 : cap) + 1;
    if (it % 3 == 1) n = (n + 30) / 31 * 31; /* a whole last group */
    fill(&rng, it % 4, 65536, v, n);
    static const uint64_t mins[] = {0, 1, 2, 3, 0, 0, UINT64_MAX};
    uint64_t min_rows = mins[it % 7] ? mins[it % 7] : n >> (4 + it % 7);
    check(BA_CODEC_PLWAH, 65536, v, n, min_rows, bin_of_port, &rng, "fast");
  }
  /* a bin per value: few rows, the bins' tables straight from the batch;
   * many rows, tables too large, the rare values folded in the walk */
  fill(&rng, 0, 65536, v, 3000);
  check(BA_CODEC_PLWAH, 65536, v, 3000, 3, bin_of_ident, &rng, "a bin per value, tables");
  fill(&rng, 0, 65536, v, 250000);
  check(BA_CODEC_PLWAH, 65536, v, 250000, 5, bin_of_ident, &rng, "a bin per value, walk");
  free(v);
}

/* The other paths: several batches, other codecs and domains. */
static void test_fold_other(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 92);
  size_t cap = 1100000; /* past the dense builder's batch of 2^20 rows */
  uint32_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  fill(&rng, 1, 65536, v, cap);
  check(BA_CODEC_PLWAH, 65536, v, cap, cap >> 10, bin_of_port, &rng, "two batches");
  /* 4097 values: batches of 65,552 rows, values kept as row lists (under
   * 1/1024 of the rows so far) or bitmaps; thresholds under, at and over
   * the lists' (rare lists, rare bitmaps, lists that are not rare) */
  for (int it = 0; it < 6; it++) {
    size_t n = 300000 + (size_t)ba_rng_below(&rng, 100000);
    fill(&rng, it % 2, 4097, v, n);
    check(BA_CODEC_PLWAH, 4097, v, n, n >> (8 + 2 * (it % 3)), bin_of_port, &rng, "batches, lists");
  }
  fill(&rng, 1, 65536, v, 50000);
  check(BA_CODEC_WAH32, 65536, v, 50000, 50, bin_of_port, &rng, "other codec");
  fill(&rng, 0, 4096, v, 50000);
  check(BA_CODEC_PLWAH, 4096, v, 50000, 14, bin_of_port, &rng, "dense domain");
  fill(&rng, 1, 256, v, 50000);
  check(BA_CODEC_PLWAH, 256, v, 50000, 30, bin_of_small, &rng, "small domain");
  fill(&rng, 1, 70000, v, 50000);
  check(BA_CODEC_PLWAH, 70000, v, 50000, 3, bin_of_port, &rng, "large domain");
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fold_fast),
    cmocka_unit_test(test_fold_other),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
