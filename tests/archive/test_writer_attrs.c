/* The writer's one-pass index values (ba_writer_attr_values_fused, used by
 * ba_writer_group_add) against ba_attr_values, attribute by attribute, on
 * random records of every IP version (4, 6, 0: the address bytes have no
 * value unless 4) and every length up to a few row groups' worth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_equals_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
