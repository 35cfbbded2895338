/* GPU module, range queries: OR / AND of many wah64 bitmaps on the omp device
 * with every strategy (COA, ROA, hybrid, ideal hybrid) == the CPU path
 * (folding ba_bitmap_op, and ba_bitmap_or_many) word for word, and == a plain
 * bitset computed here. */
#include <stdlib.h>
#include <string.h>

#include "bitarc/gpu.h"
#include "testsupport.h"

#define GT_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A bitmap of `rows` rows mixing long 0-runs, long 1-runs and noise; its bits
 * are also ORed/ANDed into the plain reference `ref` (rows bits, 0-padded). */
static ba_bitmap_t *make_bitmap(ba_rng_t *r, uint64_t rows, uint8_t *bits) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH64, &bm), 0);
  memset(bits, 0, rows);
  for (uint64_t i = 0; i < rows;) {
    uint64_t len = 1 + ba_rng_below(r, ba_rng_below(r, 3) == 0 ? 500 : 20);
    int kind = (int)ba_rng_below(r, 4); /* 0 zeros, 1 ones, 2-3 noise */
    for (uint64_t k = 0; k < len && i < rows; k++, i++) {
      int b = kind == 1 || (kind >= 2 && ba_rng_below(r, 8) == 0);
      bits[i] = (uint8_t)b;
      if (b) assert_int_equal(ba_bitmap_set(bm, i), 0);
    }
  }
  assert_int_equal(ba_bitmap_finish(bm, rows), 0);
  return bm;
}

static void same_words(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na = 0, nb = 0;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  assert_true(ba_bitmap_rows(a) == ba_bitmap_rows(b));
  assert_true(na == nb);
  if (na) assert_memory_equal(wa, wb, na * 8);
}

static void check_query(ba_gpu_t *omp, ba_gpu_t *cpu, const ba_bitmap_t *const *bms, size_t m, ba_op_t op,
                        const uint8_t *plain, uint64_t rows) {
  ba_bitmap_t *want = NULL;
  assert_int_equal(ba_gpu_range(cpu, op, bms, m, BA_GPU_RANGE_AUTO, &want), 0);
  if (op == BA_OP_OR) {
    ba_bitmap_t *many = NULL;
    assert_int_equal(ba_bitmap_or_many(bms, m, BA_CODEC_WAH64, &many), 0);
    same_words(many, want);
    ba_bitmap_free(many);
  }
  /* the CPU path against the plain bitset */
  uint64_t *set = malloc((rows + 1) * sizeof *set);
  size_t nset = 0, k = 0;
  assert_int_equal(ba_bitmap_to_rows(want, set, rows + 1, &nset), 0);
  for (uint64_t i = 0; i < rows; i++)
    if (plain[i]) {
      assert_true(k < nset && set[k] == i);
      k++;
    }
  assert_true(k == nset);
  free(set);
  static const ba_gpu_range_alg_t algs[] = {BA_GPU_RANGE_AUTO, BA_GPU_RANGE_COA, BA_GPU_RANGE_ROA,
                                            BA_GPU_RANGE_HYBRID, BA_GPU_RANGE_IDEAL};
  for (size_t a = 0; omp && a < GT_LEN(algs); a++) {
    ba_bitmap_t *got = NULL;
    int rc = ba_gpu_range(omp, op, bms, m, algs[a], &got);
    if (rc) fail_msg("range %s m=%zu: %s (%s)", ba_gpu_range_alg_name(algs[a]), m, ba_strerror(rc), ba_gpu_errmsg(omp));
    same_words(got, want);
    ba_bitmap_free(got);
  }
  ba_bitmap_free(want);
}

static void test_range(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 6101);
  ba_gpu_t *omp = NULL, *cpu = NULL;
  assert_int_equal(ba_gpu_open(BA_DEVICE_CPU, &cpu, NULL, 0), 0);
  if (ba_gpu_open(BA_DEVICE_OMP, &omp, NULL, 0) != 0) print_message("no omp device: CPU path only\n");
  static const size_t ms[] = {1, 2, 3, 7, 32, 33, 70};
  for (size_t t = 0; t < GT_LEN(ms); t++) {
    size_t m = ms[t];
    uint64_t rows = 3000 + ba_rng_below(&r, 3000);
    ba_bitmap_t **bms = calloc(m, sizeof *bms);
    uint8_t *bits = malloc(rows), *orb = calloc(rows, 1), *andb = malloc(rows);
    memset(andb, 1, rows);
    for (size_t i = 0; i < m; i++) {
      /* every third operand shorter: zero-padded (D-6) */
      uint64_t ri = i % 3 == 2 ? rows - ba_rng_below(&r, 200) : rows;
      bms[i] = make_bitmap(&r, ri, bits);
      for (uint64_t k = 0; k < rows; k++) {
        uint8_t b = k < ri ? bits[k] : 0;
        orb[k] |= b;
        andb[k] &= b;
      }
    }
    check_query(omp, cpu, (const ba_bitmap_t *const *)bms, m, BA_OP_OR, orb, rows);
    check_query(omp, cpu, (const ba_bitmap_t *const *)bms, m, BA_OP_AND, andb, rows);
    for (size_t i = 0; i < m; i++) ba_bitmap_free(bms[i]);
    free(bms);
    free(bits);
    free(orb);
    free(andb);
  }
  /* all-zero and all-one operands: the result is fills only */
  ba_bitmap_t *z, *o;
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH64, &z), 0);
  assert_int_equal(ba_bitmap_finish(z, 1000), 0);
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH64, &o), 0);
  assert_int_equal(ba_bitmap_append_run(o, 1, 1000), 0);
  assert_int_equal(ba_bitmap_finish(o, 1000), 0);
  const ba_bitmap_t *zo[] = {z, o, z};
  uint8_t *plain = malloc(1000);
  memset(plain, 1, 1000);
  check_query(omp, cpu, zo, 3, BA_OP_OR, plain, 1000);
  memset(plain, 0, 1000);
  check_query(omp, cpu, zo, 3, BA_OP_AND, plain, 1000);
  free(plain);
  /* wrong codec / operator are refused with a reason */
  ba_bitmap_t *w32, *out;
  assert_int_equal(ba_bitmap_create(BA_CODEC_WAH32, &w32), 0);
  assert_int_equal(ba_bitmap_finish(w32, 10), 0);
  const ba_bitmap_t *bad[] = {z, w32};
  assert_int_equal(ba_gpu_range(cpu, BA_OP_OR, bad, 2, BA_GPU_RANGE_AUTO, &out), BA_ERR_UNSUPPORTED);
  assert_non_null(strstr(ba_gpu_errmsg(cpu), "operand 1"));
  assert_int_equal(ba_gpu_range(cpu, BA_OP_XOR, zo, 2, BA_GPU_RANGE_AUTO, &out), BA_ERR_UNSUPPORTED);
  ba_bitmap_free(w32);
  ba_bitmap_free(z);
  ba_bitmap_free(o);
  ba_gpu_close(omp);
  ba_gpu_close(cpu);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_range)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
