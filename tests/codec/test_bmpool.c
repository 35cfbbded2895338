/* Bitmap pools (src/codec/bmpool.c): a bitmap made in a pool is the same
 * bitmap as one made by ba_bitmap_create, for every codec, whether its words
 * fit the pool's room or outgrow it (moved to the heap mid-append), and
 * through clone, the operations and free (ASan: no free of pool memory, no
 * leak of words that moved). Checked against a plain bit array. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/bmpool.h"
#include "testsupport.h"

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The rows of v[0..n) appended to bm in runs and single rows, then finished. */
static void fill(ba_bitmap_t *bm, const uint8_t *v, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (v[i]) assert_int_equal(ba_bitmap_set(bm, i), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, n), BA_OK);
}

static void same_words(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na, nb;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  assert_int_equal(na, nb);
  assert_int_equal(ba_bitmap_rows(a), ba_bitmap_rows(b));
  if (na) assert_memory_equal(wa, wb, na * (ba_codec_word_bits(ba_bitmap_codec(a)) / 8));
}

static void test_pool_vs_heap(void **state) {
  (void)state;
  uint64_t s = 7;
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    ba_bmpool_t *pool;
    assert_int_equal(ba_bmpool_create(&pool), BA_OK);
    /* sizes: empty, a few words (within the room), many (moved to the heap);
     * enough bitmaps to take several slabs */
    enum { NBM = 3000 };
    ba_bitmap_t *pb[NBM], *hb[NBM];
    uint8_t *ref[NBM];
    uint64_t rows[NBM];
    for (int i = 0; i < NBM; i++) {
      uint64_t n = i % 3 == 0 ? 1 + rng(&s) % 200 : i % 3 == 1 ? 1 + rng(&s) % 4000 : 20000 + rng(&s) % 20000;
      unsigned density = i % 3 == 2 ? 3 : 200; /* 1 in density rows set */
      uint8_t *v = calloc(n, 1);
      for (uint64_t r = 0; r < n; r++) v[r] = rng(&s) % density == 0;
      assert_int_equal(ba_bmpool_bitmap(pool, (ba_codec_t)c, &pb[i]), BA_OK);
      assert_int_equal(ba_bitmap_create((ba_codec_t)c, &hb[i]), BA_OK);
      fill(pb[i], v, n);
      fill(hb[i], v, n);
      ref[i] = v;
      rows[i] = n;
    }
    assert_true(ba_bmpool_bytes(pool) > 0);
    for (int i = 0; i < NBM; i++) {
      same_words(pb[i], hb[i]);
      uint64_t cnt = 0, want = 0;
      for (uint64_t r = 0; r < rows[i]; r++) want += ref[i][r];
      assert_int_equal(ba_bitmap_count(pb[i], &cnt), BA_OK);
      assert_int_equal(cnt, want);
    }
    /* a clone of a pooled bitmap and an OR of a pooled and a heap one
     * outlive the pool */
    ba_bitmap_t *cl, *o;
    assert_int_equal(ba_bitmap_clone(pb[2], &cl), BA_OK);
    assert_int_equal(ba_bitmap_or(pb[2], hb[2], (ba_codec_t)c, &o), BA_OK);
    uint64_t want = 0;
    for (uint64_t r = 0; r < rows[2]; r++) want += ref[2][r];
    /* every other pooled bitmap freed one by one (as the index's fold
     * does), the rest left to the pool */
    for (int i = 0; i < NBM; i++) {
      if (i % 2) ba_bitmap_free(pb[i]);
      ba_bitmap_free(hb[i]);
      free(ref[i]);
    }
    for (int i = 0; i < NBM; i += 2) ba_bitmap_free(pb[i]);
    ba_bmpool_free(pool);
    uint64_t cc = 0, co = 0;
    assert_int_equal(ba_bitmap_count(cl, &cc), BA_OK);
    assert_int_equal(ba_bitmap_count(o, &co), BA_OK);
    assert_int_equal(cc, want);
    assert_int_equal(co, want);
    ba_bitmap_free(cl);
    ba_bitmap_free(o);
  }
  ba_bmpool_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool_vs_heap)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
