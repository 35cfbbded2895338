/* GPU module, index creation: every device's words == the CPU codecs' online
 * builder (ba_bitmap_set per row, ba_bitmap_finish), byte for byte, and the
 * set rows == a linear scan of the input; on uniform, Zipf, sorted, blocky and
 * real data, whole batches and batches split into pieces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/gpu.h"
#include "bitarc_config.h"
#include "gpu_testdata.h"
#include "testsupport.h"

#define GT_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const ba_codec_t codecs[] = {BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_PLWAH, BA_CODEC_MASC,
                                    BA_CODEC_MASC_QT};

/* Reference: one bitmap per present value, built row by row by the codec. */
typedef struct {
  uint32_t *keys;
  size_t nkeys;
  ba_bitmap_t **bm;
  uint64_t *rows;  /* the plain reference: row ids grouped by value, ascending */
  size_t *start;   /* column k's rows are rows[start[k] .. start[k + 1]) */
} ref_t;

static void ref_build(ref_t *r, ba_codec_t c, const uint32_t *v, size_t n, uint64_t card) {
  ba_bitmap_t **by = calloc(card, sizeof *by);
  assert_non_null(by);
  for (size_t i = 0; i < n; i++) {
    if (!by[v[i]]) assert_int_equal(ba_bitmap_create(c, &by[v[i]]), 0);
    assert_int_equal(ba_bitmap_set(by[v[i]], i), 0);
  }
  r->nkeys = 0;
  size_t *cnt = calloc(card + 1, sizeof *cnt);
  assert_non_null(cnt);
  for (size_t i = 0; i < n; i++) cnt[v[i] + 1]++;
  for (uint64_t x = 0; x < card; x++) cnt[x + 1] += cnt[x];
  r->rows = malloc((n + 1) * sizeof *r->rows);
  for (size_t i = 0; i < n; i++) r->rows[cnt[v[i]]++] = i; /* linear scan, by value */
  free(cnt);
  for (uint64_t x = 0; x < card; x++) r->nkeys += by[x] != NULL;
  r->start = calloc(r->nkeys + 1, sizeof *r->start);
  r->keys = malloc((r->nkeys + 1) * sizeof *r->keys);
  r->bm = malloc((r->nkeys + 1) * sizeof *r->bm);
  size_t k = 0;
  for (uint64_t x = 0; x < card; x++)
    if (by[x]) {
      assert_int_equal(ba_bitmap_finish(by[x], n), 0);
      r->keys[k] = (uint32_t)x;
      r->bm[k++] = by[x];
      uint64_t ones = 0;
      assert_int_equal(ba_bitmap_count(by[x], &ones), 0);
      r->start[k] = r->start[k - 1] + (size_t)ones;
    }
  assert_true(r->nkeys == 0 || r->start[r->nkeys] == n);
  free(by);
}

static void ref_free(ref_t *r) {
  for (size_t i = 0; i < r->nkeys; i++) ba_bitmap_free(r->bm[i]);
  free(r->keys);
  free(r->bm);
  free(r->rows);
  free(r->start);
}

static void check_index(const ba_gpu_index_t *ix, const ref_t *r, const uint32_t *v, size_t n,
                        const char *what, size_t max_batch) {
  size_t wb = ba_codec_word_bits(ix->codec) / 8;
  if (ix->nkeys != r->nkeys)
    fail_msg("%s %s max_batch %zu: %zu columns, expected %zu", what, ba_codec_name(ix->codec), max_batch,
             ix->nkeys, r->nkeys);
  assert_true(ix->nrows == n);
  uint64_t *got = malloc((n + 1) * sizeof *got);
  assert_non_null(got);
  for (size_t i = 0; i < r->nkeys; i++) {
    assert_int_equal(ix->keys[i], r->keys[i]);
    size_t nw = 0;
    const void *w = ba_bitmap_words(r->bm[i], &nw);
    size_t gn = (size_t)(ix->offsets[i + 1] - ix->offsets[i]);
    const void *gw = (const uint8_t *)ix->words + ix->offsets[i] * wb;
    if (gn != nw || (nw && memcmp(gw, w, nw * wb) != 0)) {
      size_t j = 0;
      while (j < nw && j < gn && memcmp((const uint8_t *)gw + j * wb, (const uint8_t *)w + j * wb, wb) == 0) j++;
      fail_msg("%s %s max_batch %zu value %u: %zu words, expected %zu; first difference at word %zu "
               "(got %llx, expected %llx)",
               what, ba_codec_name(ix->codec), max_batch, r->keys[i], gn, nw, j,
               j < gn ? (unsigned long long)(wb == 8 ? ((const uint64_t *)gw)[j] : ((const uint32_t *)gw)[j]) : 0ull,
               j < nw ? (unsigned long long)(wb == 8 ? ((const uint64_t *)w)[j] : ((const uint32_t *)w)[j]) : 0ull);
    }
    ba_bitmap_t *bm = NULL;
    assert_int_equal(ba_gpu_index_bitmap(ix, i, &bm), 0);
    size_t ne = r->start[i + 1] - r->start[i], ng = 0;
    assert_int_equal(ba_bitmap_to_rows(bm, got, n + 1, &ng), 0);
    assert_true(ng == ne);
    assert_memory_equal(got, r->rows + r->start[i], ne * sizeof *got);
    size_t at = 0;
    assert_int_equal(ba_gpu_index_find(ix, r->keys[i], &at), 0);
    assert_true(at == i);
    ba_bitmap_free(bm);
  }
  free(got);
}

/* Builds on `dev` for every codec and batch limit and compares. */
static void check_data(ba_device_t dev, const uint32_t *v, size_t n, uint64_t card, const char *what,
                       const size_t *batches, size_t nb) {
  ba_gpu_t *g = NULL;
  char why[BA_GPU_ERRMSG_LEN];
  int rc = ba_gpu_open(dev, &g, why, sizeof why);
  if (rc == BA_ERR_NODEVICE) return;
  assert_int_equal(rc, 0);
  for (size_t c = 0; c < GT_LEN(codecs); c++) {
    ref_t r;
    ref_build(&r, codecs[c], v, n, card);
    for (size_t b = 0; b < nb; b++) {
      assert_int_equal(ba_gpu_set_max_batch(g, batches[b]), 0);
      ba_gpu_index_t *ix = NULL;
      rc = ba_gpu_build_index(g, codecs[c], v, n, card, &ix);
      if (rc != 0) fail_msg("%s on %s: %s (%s)", what, ba_device_name(dev), ba_strerror(rc), ba_gpu_errmsg(g));
      check_index(ix, &r, v, n, what, batches[b]);
      if (batches[b] && n > batches[b] && dev != BA_DEVICE_CPU) assert_true(ba_gpu_last_times(g)->pieces > 1);
      ba_gpu_index_free(ix);
    }
    ref_free(&r);
  }
  ba_gpu_close(g);
}

static const size_t split_batches[] = {0, 64, 31 * 63 + 5};

static void check_all_devices(const uint32_t *v, size_t n, uint64_t card, const char *what) {
  check_data(BA_DEVICE_OMP, v, n, card, what, split_batches, GT_LEN(split_batches));
  static const size_t one[] = {0};
  check_data(BA_DEVICE_CPU, v, n, card, what, one, 1);
}

static void test_uniform(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 6001);
  const uint64_t cards[] = {1, 2, 256, 4096, 65536};
  for (size_t c = 0; c < GT_LEN(cards); c++) {
    size_t n = 6000 + (size_t)ba_rng_below(&r, 200);
    uint32_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (uint32_t)ba_rng_below(&r, cards[c]);
    char what[64];
    snprintf(what, sizeof what, "uniform card %llu", (unsigned long long)cards[c]);
    check_all_devices(v, n, cards[c], what);
    free(v);
  }
}

static void test_zipf(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 6002);
  size_t n = 9000;
  uint32_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (uint32_t)ba_rng_zipf(&r, 1000, 1.2);
  check_all_devices(v, n, 1000, "zipf 1.2");
  free(v);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted values: long runs, 1-fills, MASC long 1-runs. */
static void test_sorted(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 6003);
  size_t n = 12000;
  uint32_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (uint32_t)ba_rng_below(&r, 40);
  qsort(v, n, sizeof *v, cmp_u32);
  check_all_devices(v, n, 40, "sorted");
  free(v);
}

/* Runs of random length: all-ones groups, literals with one 0 after a 1-fill
 * (PLWAH 1-fill piggyback), short 1-runs (MASC carriers), runs across pieces. */
static void test_blocky(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 6004);
  size_t n = 15000;
  uint32_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n;) {
    uint32_t x = (uint32_t)ba_rng_below(&r, 6);
    size_t len = 1 + (size_t)ba_rng_below(&r, ba_rng_below(&r, 4) == 0 ? 400 : 40);
    for (size_t k = 0; k < len && i < n; k++) v[i++] = x;
    if (i < n && ba_rng_below(&r, 3) == 0) v[i++] = 7; /* a lone other row inside */
  }
  check_all_devices(v, n, 8, "blocky");
  /* a single 1-run then a single 0 row in a group, at group-size multiples */
  for (size_t len = 29; len <= 66; len++) {
    size_t m = len + 40;
    for (size_t i = 0; i < m; i++) v[i] = i < len || (i > len && i < len + 5) ? 1 : 0;
    check_data(BA_DEVICE_OMP, v, m, 2, "one-zero", split_batches, 2);
  }
  free(v);
}

static void test_edges(void **state) {
  (void)state;
  uint32_t v[400];
  const size_t ns[] = {1, 30, 31, 32, 62, 63, 64, 126, 127, 155, 400};
  for (size_t k = 0; k < GT_LEN(ns); k++) {
    for (size_t i = 0; i < ns[k]; i++) v[i] = 0; /* one all-ones column */
    check_all_devices(v, ns[k], 3, "all same");
    for (size_t i = 0; i < ns[k]; i++) v[i] = (uint32_t)(i % 3);
    check_all_devices(v, ns[k], 3, "cyclic");
  }
  /* n = 0: no columns */
  ba_gpu_t *g;
  ba_gpu_index_t *ix;
  assert_int_equal(ba_gpu_open(BA_DEVICE_CPU, &g, NULL, 0), 0);
  assert_int_equal(ba_gpu_build_index(g, BA_CODEC_WAH32, v, 0, 10, &ix), 0);
  assert_true(ix->nkeys == 0 && ix->nwords == 0 && ix->nrows == 0);
  ba_gpu_index_free(ix);
  /* bad input is named */
  v[5] = 10;
  assert_int_equal(ba_gpu_build_index(g, BA_CODEC_WAH32, v, 10, 10, &ix), BA_ERR_INVALID);
  assert_non_null(strstr(ba_gpu_errmsg(g), "row 5"));
  assert_int_equal(ba_gpu_build_index(g, BA_CODEC_WAH32, v, 10, 0, &ix), BA_ERR_INVALID);
  assert_int_equal(ba_gpu_set_max_batch(g, 10), BA_ERR_INVALID);
  ba_gpu_close(g);
}

static void test_real(void **state) {
  (void)state;
  gt_real_t r;
  size_t n = gt_read_real(&r);
  if (n == 0) {
    print_message("shared captures absent: real-data test skipped\n");
    skip();
  }
  /* keep the ASan run short: the first 20000 packets */
  if (n > 20000) n = 20000;
  check_data(BA_DEVICE_OMP, r.dport.v, n, 65536, "real dst ports", split_batches, GT_LEN(split_batches));
  check_data(BA_DEVICE_OMP, r.proto.v, n, 256, "real protocols", split_batches, GT_LEN(split_batches));
  gt_real_free(&r);
}

static void test_devices(void **state) {
  (void)state;
  ba_gpu_t *g = NULL;
  char why[BA_GPU_ERRMSG_LEN];
  int rc = ba_gpu_open(BA_DEVICE_GPU, &g, why, sizeof why);
  /* no machine here has a GPU: the reason must say why */
  assert_int_equal(rc, BA_ERR_NODEVICE);
  assert_null(g);
#if BA_HAVE_CUDA
  assert_non_null(strstr(why, "no CUDA device: "));
#else
  assert_string_equal(why, "built without CUDA");
#endif
  rc = ba_gpu_open(BA_DEVICE_OMP, &g, why, sizeof why);
#if BA_HAVE_OMP_DEVICE
  assert_int_equal(rc, 0);
  /* compax does not fit the pipeline: said clearly */
  uint32_t v[4] = {0, 1, 0, 1};
  ba_gpu_index_t *ix;
  assert_int_equal(ba_gpu_build_index(g, BA_CODEC_COMPAX, v, 4, 2, &ix), BA_ERR_UNSUPPORTED);
  assert_non_null(strstr(ba_gpu_errmsg(g), "compax"));
  ba_gpu_close(g);
#else
  assert_int_equal(rc, BA_ERR_NODEVICE);
#endif
  ba_device_t d;
  assert_int_equal(ba_device_from_name("omp", &d), 0);
  assert_int_equal(d, BA_DEVICE_OMP);
  assert_int_equal(ba_device_from_name("tpu", &d), BA_ERR_INVALID);
  assert_string_equal(ba_device_name(BA_DEVICE_GPU), "gpu");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_devices), cmocka_unit_test(test_edges),  cmocka_unit_test(test_uniform),
      cmocka_unit_test(test_zipf),    cmocka_unit_test(test_sorted), cmocka_unit_test(test_blocky),
      cmocka_unit_test(test_real),
  };
  if (getenv("GT_FILTER")) cmocka_set_test_filter(getenv("GT_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
