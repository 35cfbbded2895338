/* codec/: hostile input. from_words and deserialize on hand-made invalid words
 * (spec "reject" rules), random garbage, every truncation and random bit flips
 * of valid serializations: each must return an error or a bitmap that is
 * self-consistent, never crash or read out of bounds (run under ASan); the
 * per-codec validation loops accept exactly what the generic token loop does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "codec/bitmap_internal.h"
#include "common/common.h"

static void expect_corrupt32(ba_codec_t c, const uint32_t *w, size_t n, uint64_t nrows) {
  ba_bitmap_t *bm = (ba_bitmap_t *)1;
  assert_int_equal(ba_bitmap_from_words(c, w, n, nrows, &bm), BA_ERR_CORRUPT);
  assert_null(bm);
}

static void test_reject_rules(void **state) {
  (void)state;
  ba_bitmap_t *bm;
  /* WAH32 */
  const uint32_t zero_fill[] = {0x80000000};
  expect_corrupt32(BA_CODEC_WAH32, zero_fill, 1, 31);          /* D-5: count 0 */
  const uint32_t one_group[] = {0x80000001};
  expect_corrupt32(BA_CODEC_WAH32, one_group, 1, 62);          /* too few groups */
  expect_corrupt32(BA_CODEC_WAH32, one_group, 1, 0);           /* too many */
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, one_group, 1, 31, &bm), BA_OK);
  ba_bitmap_free(bm);
  const uint32_t pad_bit[] = {0x00000001};                     /* row 30 set, n = 30 */
  expect_corrupt32(BA_CODEC_WAH32, pad_bit, 1, 30);
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, pad_bit, 1, 31, &bm), BA_OK);
  ba_bitmap_free(bm);
  const uint32_t one_fill_pad[] = {0xC0000002};                /* 1-fill into the padding */
  expect_corrupt32(BA_CODEC_WAH32, one_fill_pad, 1, 40);
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, one_fill_pad, 1, 62, &bm), BA_OK);
  ba_bitmap_free(bm);
  const uint32_t huge[] = {0xBFFFFFFF, 0xBFFFFFFF, 0xBFFFFFFF, 0xBFFFFFFF};
  expect_corrupt32(BA_CODEC_WAH32, huge, 4, 31);
  /* PLWAH */
  expect_corrupt32(BA_CODEC_PLWAH, zero_fill, 1, 31);
  const uint32_t pl_pos_count0[] = {0x92000000};               /* position but count 0 */
  expect_corrupt32(BA_CODEC_PLWAH, pl_pos_count0, 1, 62);
  const uint32_t pl_pb[] = {0x90000002};                       /* 2 zero groups + piggyback = 3 groups */
  expect_corrupt32(BA_CODEC_PLWAH, pl_pb, 1, 62);
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_PLWAH, pl_pb, 1, 93, &bm), BA_OK);
  uint64_t cnt;
  assert_int_equal(ba_bitmap_count(bm, &cnt), BA_OK);
  assert_int_equal(cnt, 1);
  ba_bitmap_free(bm);
  const uint32_t pl_last[] = {0xBE000001};                     /* piggyback row 30 of group 1 */
  expect_corrupt32(BA_CODEC_PLWAH, pl_last, 1, 61);            /* lands in the padding */
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_PLWAH, pl_last, 1, 62, &bm), BA_OK);
  ba_bitmap_free(bm);
  /* WAH64 */
  const uint64_t w64_zero[] = {0x8000000000000000ull};
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH64, w64_zero, 1, 63, &bm), BA_ERR_CORRUPT);
  const uint64_t w64_big[] = {0xBFFFFFFFFFFFFFFFull, 0xBFFFFFFFFFFFFFFFull};
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH64, w64_big, 2, 63, &bm), BA_ERR_CORRUPT);
  /* rows beyond the supported maximum */
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, NULL, 0, UINT64_MAX, &bm), BA_ERR_CORRUPT);
}

static void test_serialized_header(void **state) {
  (void)state;
  uint64_t rows[] = {1, 40, 99};
  ba_bitmap_t *bm, *d;
  assert_int_equal(ba_bitmap_from_rows(BA_CODEC_WAH32, rows, 3, 100, &bm), BA_OK);
  uint8_t buf[256];
  size_t len, used;
  assert_int_equal(ba_bitmap_serialize(bm, buf, sizeof buf, &len), BA_OK);
  assert_int_equal(ba_bitmap_serialize(bm, buf, len - 1, &used), BA_ERR_OVERFLOW);
  /* layout: [u8 codec][u8 flags][u16 reserved][u64 nrows][u64 nwords][words LE] */
  size_t nw;
  const uint32_t *w = (const uint32_t *)ba_bitmap_words(bm, &nw);
  assert_int_equal(buf[0], BA_CODEC_WAH32);
  assert_int_equal(len, 20 + 4 * nw);
  assert_int_equal(buf[4], 100);
  assert_int_equal(buf[12], nw);
  assert_int_equal(buf[20], w[0] & 0xFF);
  assert_int_equal(buf[23], w[0] >> 24);
  /* trailing bytes are not consumed */
  assert_int_equal(ba_bitmap_deserialize(buf, len + 5, &d, &used), BA_OK);
  assert_int_equal(used, len);
  ba_bitmap_free(d);
  uint8_t bad[256];
  memcpy(bad, buf, len);
  bad[1] = 1; /* flags */
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_CORRUPT);
  memcpy(bad, buf, len);
  bad[3] = 1; /* reserved */
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_CORRUPT);
  memcpy(bad, buf, len);
  bad[0] = 0; /* codec */
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_CORRUPT);
  bad[0] = 7;
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_CORRUPT);
  memcpy(bad, buf, len);
  memset(bad + 12, 0xFF, 8); /* nwords huge: no overflow, no read past the end */
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_TRUNCATED);
  memcpy(bad, buf, len);
  bad[4] = 99; /* nrows off by one */
  assert_int_equal(ba_bitmap_deserialize(bad, len, &d, &used), BA_ERR_CORRUPT);
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *p = (uint8_t *)malloc(cut ? cut : 1); /* exact size: ASan sees any over-read */
    memcpy(p, buf, cut);
    assert_true(ba_bitmap_deserialize(p, cut, &d, &used) < 0);
    free(p);
  }
  ba_bitmap_free(bm);
}

/* Whatever a decoder accepted must behave: counts agree between count,
 * to_rows, NOT and ops; serialization round-trips. */
static void self_consistent(const ba_bitmap_t *bm) {
  uint64_t cnt, cnot, cand;
  size_t n;
  assert_int_equal(ba_bitmap_count(bm, &cnt), BA_OK);
  assert_int_equal(ba_bitmap_to_rows(bm, NULL, 0, &n), BA_OK);
  assert_int_equal(n, cnt);
  ba_bitmap_t *o;
  assert_int_equal(ba_bitmap_not(bm, BA_CODEC_WAH64, &o), BA_OK);
  assert_int_equal(ba_bitmap_count(o, &cnot), BA_OK);
  assert_int_equal(cnt + cnot, ba_bitmap_rows(bm));
  ba_bitmap_free(o);
  assert_int_equal(ba_bitmap_and_count(bm, bm, &cand), BA_OK);
  assert_int_equal(cand, cnt);
  assert_int_equal(ba_bitmap_convert(bm, ba_bitmap_codec(bm), &o), BA_OK);
  assert_int_equal(ba_bitmap_equal(o, bm), 1);
  ba_bitmap_free(o);
}

/* Up to maxw random words of ops' codec, biased towards small counts so that
 * some are accepted, and a row count: random, or (half the time) one that
 * matches what the words decode to. */
static void *garbage_words(ba_rng_t *r, const ba_codec_ops_t *ops, size_t maxw, size_t *nw_out,
                           uint64_t *nrows_out) {
  size_t nw = (size_t)ba_rng_below(r, maxw);
  unsigned wb = ops->word_bytes;
  void *w = malloc(nw * wb + 1);
  for (size_t i = 0; i < nw; i++) {
    uint64_t x = ba_rng_next(r);
    if (ba_rng_below(r, 2)) x &= wb == 4 ? 0xFE00000Full : 0xFF0000000000000Full;
    if (wb == 4)
      ((uint32_t *)w)[i] = (uint32_t)x;
    else
      ((uint64_t *)w)[i] = x;
  }
  uint64_t nrows = ba_rng_below(r, 2) ? ba_rng_below(r, 1000) : ba_rng_next(r);
  if (ba_rng_below(r, 2)) {
    ba_dec_t d;
    ba_tok_t tok;
    uint64_t total = 0, G = ops->group_bits;
    ops->dec_init(&d, w, nw);
    while (ops->dec_next(&d, &tok) == 1 && total < (UINT64_C(1) << 40))
      total += tok.kind == BA_TOK_LIT ? G : (G ? tok.n * G : tok.n);
    nrows = total - (G && total ? ba_rng_below(r, G) : 0);
  }
  *nw_out = nw;
  *nrows_out = nrows;
  return w;
}

static void test_garbage(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 7);
  size_t accepted = 0, tried = 0;
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    const ba_codec_ops_t *ops = ba_codec_ops((ba_codec_t)c);
    if (!ops) {
      printf("# codec %s not built: not tested\n", ba_codec_name((ba_codec_t)c));
      continue;
    }
    for (int t = 0; t < 3000; t++) {
      size_t nw;
      uint64_t nrows;
      void *w = garbage_words(&r, ops, 8, &nw, &nrows);
      ba_bitmap_t *bm;
      tried++;
      int rc = ba_bitmap_from_words((ba_codec_t)c, w, nw, nrows, &bm);
      if (rc == BA_OK) {
        accepted++;
        if (ba_bitmap_rows(bm) < 100000) self_consistent(bm);
        ba_bitmap_free(bm);
      } else {
        assert_int_equal(rc, BA_ERR_CORRUPT);
      }
      free(w);
    }
  }
  printf("# garbage: %zu of %zu accepted\n", accepted, tried);
}

static void test_bit_flips(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 8);
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    if (!ba_codec_ops((ba_codec_t)c)) continue;
    for (int t = 0; t < 200; t++) {
      uint64_t nrows = 1 + ba_rng_below(&r, 2000), rows[64];
      size_t k = 0;
      for (uint64_t i = ba_rng_below(&r, 50); i < nrows && k < 64; i += 1 + ba_rng_below(&r, 80)) rows[k++] = i;
      ba_bitmap_t *bm, *d;
      assert_int_equal(ba_bitmap_from_rows((ba_codec_t)c, rows, k, nrows, &bm), BA_OK);
      size_t len = ba_bitmap_serialized_size(bm), used;
      uint8_t *buf = (uint8_t *)malloc(len);
      assert_int_equal(ba_bitmap_serialize(bm, buf, len, &used), BA_OK);
      for (int f = 0; f < 8; f++) {
        size_t bit = (size_t)ba_rng_below(&r, len * 8);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (ba_bitmap_deserialize(buf, len, &d, &used) == BA_OK) {
          if (ba_bitmap_rows(d) < 100000) self_consistent(d);
          ba_bitmap_free(d);
        }
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      }
      ba_bitmap_free(bm);
      free(buf);
    }
  }
}

/* The per-codec validation loops (ba_bm_validate with generic = 0, used by
 * from_words and deserialize) accept exactly what the token loop over the
 * codec's ops accepts: on garbage, on canonical words of random bitmaps with
 * the right, a short and a long row count, and on those words with bits
 * flipped. Both outcomes must occur for every codec. */
static void test_fast_validate(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 9);
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    const ba_codec_ops_t *ops = ba_codec_ops((ba_codec_t)c);
    if (!ops) continue;
    size_t ok = 0, bad = 0;
    for (int t = 0; t < 4000; t++) {
      size_t nw;
      uint64_t nrows;
      void *w = garbage_words(&r, ops, 12, &nw, &nrows);
      int fast = ba_bm_validate(ops, w, nw, nrows, 0);
      assert_int_equal(fast, ba_bm_validate(ops, w, nw, nrows, 1));
      fast == BA_OK ? ok++ : bad++;
      free(w);
    }
    for (int t = 0; t < 600; t++) {
      uint64_t nrows = 1 + ba_rng_below(&r, t % 3 ? 3000 : 200000), rows[256];
      size_t k = 0;
      uint64_t gap = 1 + ba_rng_below(&r, 4) * ba_rng_below(&r, 400);
      for (uint64_t i = ba_rng_below(&r, 70); i < nrows && k < 256; i += 1 + ba_rng_below(&r, gap)) {
        rows[k++] = i;
        if (ba_rng_below(&r, 4) == 0) /* a run of ones */
          for (uint64_t e = i + 1 + ba_rng_below(&r, 130); i + 1 < e && i + 1 < nrows && k < 256;)
            rows[k++] = ++i;
      }
      ba_bitmap_t *bm;
      assert_int_equal(ba_bitmap_from_rows((ba_codec_t)c, rows, k, nrows, &bm), BA_OK);
      size_t nw;
      const void *words = ba_bitmap_words(bm, &nw);
      unsigned wb = ops->word_bytes;
      uint8_t *w = (uint8_t *)malloc(nw * wb + 1);
      memcpy(w, words, nw * wb);
      const uint64_t counts[] = {nrows, nrows - 1, nrows + 1, nrows + 31, nrows - ba_rng_below(&r, nrows)};
      for (size_t f = 0; f < 3; f++) {
        for (size_t i = 0; i < BA_ARRAY_LEN(counts); i++) {
          int fast = ba_bm_validate(ops, w, nw, counts[i], 0);
          assert_int_equal(fast, ba_bm_validate(ops, w, nw, counts[i], 1));
          fast == BA_OK ? ok++ : bad++;
        }
        if (nw) { /* flip one bit, then check again */
          size_t bit = (size_t)ba_rng_below(&r, nw * wb * 8);
          w[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
      }
      free(w);
      ba_bitmap_free(bm);
    }
    printf("# fast validation %s: %zu accepted, %zu rejected, same as generic\n", ops->name, ok, bad);
    assert_true(ok > 100 && bad > 100);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reject_rules),
      cmocka_unit_test(test_serialized_header),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_bit_flips),
      cmocka_unit_test(test_fast_validate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
