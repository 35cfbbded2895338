/* Pair kernels against operands of one word per group (codec/kernel.h: an
 * all-literal bitmap, or literals and one-group fills), the index bitmap of a
 * popular address byte: skipped by position under the other operand's
 * dominating fill, combined word by word with another such operand or with a
 * token stream. Every op, WAH32, WAH64 and PLWAH, row counts equal and not,
 * against a plain bit array; the unit property itself is asserted through the
 * word count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/bitmap_internal.h"
#include "testsupport.h"

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* kind 0: dense random (all literals); 1: dense with whole all-ones and
 * all-zero groups, never two alike in a row (one-group fills: still one word
 * per group); 2: sparse (long 0-fills, a few literals); 3: long 1-fills with
 * literals; 4: runs of literals between long 0- and 1-fills. */
static void gen(uint8_t *v, uint64_t n, unsigned G, int kind, uint64_t *s) {
  for (uint64_t g = 0; g * G < n; g++) {
    uint64_t r = rng(s);
    int mode;
    switch (kind) {
      case 0: mode = 2; break;
      case 1: mode = g % 2 ? (int)(r % 3) : 2; break;
      case 2: mode = r % 40 == 0 ? 2 : 0; break;
      case 3: mode = r % 30 == 0 ? 2 : 1; break;
      default: mode = (g / 50) % 3 == 2 ? 2 : (int)((g / 150) % 2); break;
    }
    for (unsigned i = 0; i < G && g * G + i < n; i++)
      v[g * G + i] = mode == 2 ? (uint8_t)((rng(s) >> 7) & 1) : (uint8_t)mode;
  }
}

static ba_bitmap_t *build(ba_codec_t c, const uint8_t *v, uint64_t n) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (uint64_t i = 0; i < n; i++)
    if (v[i]) assert_int_equal(ba_bitmap_set(bm, i), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, n), BA_OK);
  return bm;
}

static void test_unit_ops(void **state) {
  (void)state;
  static const ba_codec_t codecs[] = {BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_PLWAH};
  uint64_t seed = 42;
  unsigned units = 0;
  for (size_t ci = 0; ci < 3; ci++) {
    ba_codec_t c = codecs[ci];
    unsigned G = c == BA_CODEC_WAH64 ? 63 : 31;
    for (int rep = 0; rep < 40; rep++) {
      uint64_t na = 1 + rng(&seed) % 40000, nb = rep % 3 ? na : 1 + rng(&seed) % 40000;
      int ka = (int)(rng(&seed) % 5), kb = rep % 2 ? (int)(rng(&seed) % 2) : (int)(rng(&seed) % 5);
      uint8_t *va = calloc(na + nb + 1, 1), *vb = calloc(na + nb + 1, 1);
      gen(va, na, G, ka, &seed);
      gen(vb, nb, G, kb, &seed);
      ba_bitmap_t *a = build(c, va, na), *b = build(c, vb, nb);
      units += (a->vec.n == (na + G - 1) / G) + (b->vec.n == (nb + G - 1) / G);
      uint64_t n = na > nb ? na : nb;
      uint64_t *rows = malloc((n + 1) * sizeof *rows);
      for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
        for (int swap = 0; swap < 2; swap++) {
          const uint8_t *x = swap ? vb : va, *y = swap ? va : vb;
          ba_bitmap_t *r = NULL;
          assert_int_equal(ba_bitmap_op((ba_op_t)op, swap ? b : a, swap ? a : b, c, &r), BA_OK);
          size_t k = 0, want = 0;
          assert_int_equal(ba_bitmap_to_rows(r, rows, n + 1, &k), BA_OK);
          for (uint64_t i = 0; i < n; i++) {
            int p = x[i], q = y[i];
            int bit = op == BA_OP_AND ? p & q : op == BA_OP_OR ? p | q : op == BA_OP_XOR ? p ^ q : p & !q;
            if (!bit) continue;
            if (want >= k || rows[want] != i)
              fail_msg("codec %d op %d swap %d kinds %d/%d rows %llu/%llu: row %llu", (int)c, op, swap, ka, kb,
                       (unsigned long long)na, (unsigned long long)nb, (unsigned long long)i);
            want++;
          }
          assert_int_equal(k, want);
          uint64_t cnt = 0;
          if (op == BA_OP_AND) {
            assert_int_equal(ba_bitmap_and_count(swap ? b : a, swap ? a : b, &cnt), BA_OK);
            assert_int_equal(cnt, want);
          }
          ba_bitmap_free(r);
        }
      }
      free(rows);
      ba_bitmap_free(a);
      ba_bitmap_free(b);
      free(va);
      free(vb);
    }
  }
  assert_true(units > 60); /* the unit paths were reached */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_unit_ops)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
