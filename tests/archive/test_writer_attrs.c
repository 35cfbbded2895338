/* The writer's one-pass helpers against their naive references:
 *  - index values (ba_writer_attr_values_fused, used by
 *    ba_writer_group_add) against ba_attr_values, attribute by attribute, on
 *    random records of every IP version (4, 6, 0: the address bytes have no
 *    value unless 4) and every length up to a few row groups' worth;
 *  - columns whose fields of one value are told by the bytewise OR and AND
 *    of the rows (ba_col3_const_fields + ba_col3_encode_fields_const, not
 *    gathered) against ba_col3_encode of the records: the same bytes, for
 *    every column, on records where each field is constant, zero or random. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "archive/col3.h"
#include "archive/writer_internal.h"
#include "testsupport.h"

#define NMAX 5000u

static void test_fused_equals_reference(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 41);
  ba_record_t *r = calloc(NMAX, sizeof *r);
  uint32_t *got = malloc((size_t)BA_ATTR_COUNT * (NMAX + 1) * sizeof *got);
  uint32_t *want = malloc(NMAX * sizeof *want);
  assert_non_null(r);
  assert_non_null(got);
  assert_non_null(want);
  static const size_t lens[] = {0, 1, 2, 7, 64, 511, 512, 4000, NMAX};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    size_t n = lens[li];
    for (size_t i = 0; i < n; i++) {
      uint8_t *p = (uint8_t *)&r[i];
      for (size_t b = 0; b < sizeof r[i]; b++) p[b] = (uint8_t)ba_rng_next(&rng);
      r[i].frame = NULL;
      uint64_t k = ba_rng_below(&rng, 8);
      r[i].ipver = k < 5 ? 4 : k < 7 ? 6 : (uint8_t)(k == 7 ? 0 : 5);
    }
    uint32_t *out[BA_ATTR_COUNT];
    memset(got, 0xA5, (size_t)BA_ATTR_COUNT * (NMAX + 1) * sizeof *got);
    for (int a = 0; a < BA_ATTR_COUNT; a++) out[a] = got + (size_t)a * (NMAX + 1);
    ba_writer_attr_values_fused(r, n, out);
    static const ba_attr_t fused[] = {BA_ATTR_SRC_IP0,  BA_ATTR_SRC_IP1,  BA_ATTR_SRC_IP2, BA_ATTR_SRC_IP3,
                                      BA_ATTR_DST_IP0,  BA_ATTR_DST_IP1,  BA_ATTR_DST_IP2, BA_ATTR_DST_IP3,
                                      BA_ATTR_SRC_PORT, BA_ATTR_DST_PORT, BA_ATTR_PROTO,   BA_ATTR_TCP_FLAGS,
                                      BA_ATTR_IPVER};
    for (size_t f = 0; f < sizeof fused / sizeof fused[0]; f++) {
      ba_attr_t a = fused[f];
      ba_attr_values(a, r, n, 0, 1, want);
      if (n) assert_memory_equal(out[a], want, n * sizeof *want);
      assert_int_equal(out[a][n], 0xA5A5A5A5u); /* nothing past n */
    }
  }
  free(r);
  free(got);
  free(want);
}

/* A field of r[0..n): constant (the same bytes in every row), zero, or random. */
static void test_const_fields(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 43);
  ba_record_t *r = calloc(NMAX, sizeof *r);
  uint64_t *fv = malloc((size_t)16 * NMAX * sizeof *fv);
  size_t cap = 1 << 20;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  ba_col_scratch_t *x;
  assert_int_equal(ba_col_scratch_create(&x), BA_OK);
  assert_non_null(r);
  assert_non_null(fv);
  for (int it = 0; it < 60; it++) {
    size_t n = it % 3 == 0 ? 1 + (size_t)ba_rng_below(&rng, 5) : 1 + (size_t)ba_rng_below(&rng, 4000);
    /* per byte of the record: 0 = zero in every row, 1 = one value, 2 = random */
    uint8_t mode[sizeof(ba_record_t)], cst[sizeof(ba_record_t)];
    for (size_t q = 0; q < sizeof mode; q++) {
      mode[q] = (uint8_t)ba_rng_below(&rng, it % 2 ? 3 : 2);
      cst[q] = (uint8_t)ba_rng_next(&rng);
    }
    for (size_t i = 0; i < n; i++) {
      uint8_t *p = (uint8_t *)&r[i];
      for (size_t q = 0; q < sizeof r[i]; q++) p[q] = mode[q] == 0 ? 0 : mode[q] == 1 ? cst[q] : (uint8_t)ba_rng_next(&rng);
      r[i].frame = NULL;
      r[i].caplen = 0;
    }
    ba_record_t any, all;
    memset(&any, 0, sizeof any);
    memset(&all, 0xff, sizeof all);
    for (size_t i = 0; i < n; i++)
      for (size_t q = 0; q < sizeof any; q++) {
        ((uint8_t *)&any)[q] |= ((const uint8_t *)&r[i])[q];
        ((uint8_t *)&all)[q] &= ((const uint8_t *)&r[i])[q];
      }
    for (int c = 0; c < BA_NCOLS3; c++) {
      size_t la = 0, lb = 0, nf = ba_col3_nfields(c);
      assert_true(nf <= 16);
      assert_int_equal(ba_col3_encode(c, r, n, NULL, 0, a, &la, x), BA_OK);
      uint64_t cval[16];
      uint32_t m = ba_col3_const_fields(c, &any, &all, cval);
      memset(fv, 0x5A, (size_t)nf * n * sizeof *fv); /* what the skipped fields hold is not read */
      ba_col3_gather_skip(&c, 1, &m, r, n, fv);
      assert_int_equal(ba_col3_encode_fields_const(c, fv, m, cval, n, NULL, 0, b, &lb, x), BA_OK);
      assert_int_equal(la, lb);
      if (la) assert_memory_equal(a, b, la);
      /* a field told constant is one in every row */
      for (size_t k = 0; k < nf; k++) {
        if (!(m >> k & 1)) continue;
        ba_col3_gather(&c, 1, r, n, fv);
        for (size_t i = 0; i < n; i++) assert_true(fv[k * n + i] == cval[k]);
      }
    }
  }
  ba_col_scratch_free(x);
  free(r);
  free(fv);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_equals_reference),
      cmocka_unit_test(test_const_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
