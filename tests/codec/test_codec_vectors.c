/* codec/: every test vector of ../shared/specs/codecs.md §2.7, §3.7, §4.7,
 * §5.6 (index §9), word for word. The expected words come from the spec
 * (paper figures or the spec's own model), never from this code. Codecs that
 * are not built yet (ba_codec_ops() == NULL) are skipped with a message. */
#include <stdio.h>
#include <string.h>

#include "testsupport.h"
#include "codec/bitmap_internal.h"

static int have(ba_codec_t c) {
  if (ba_codec_ops(c)) return 1;
  printf("# skipping %s vectors: codec not built\n", ba_codec_name(c));
  return 0;
}

static void expect_words(const ba_bitmap_t *bm, const uint64_t *exp, size_t n) {
  size_t nw = 0;
  const void *w = ba_bitmap_words(bm, &nw);
  unsigned bits = ba_codec_word_bits(ba_bitmap_codec(bm));
  int ok = nw == n;
  for (size_t i = 0; ok && i < n; i++) {
    uint64_t got = bits == 32 ? ((const uint32_t *)w)[i] : ((const uint64_t *)w)[i];
    ok = got == exp[i];
  }
  if (!ok) {
    printf("%s: expected", ba_codec_name(ba_bitmap_codec(bm)));
    for (size_t i = 0; i < n; i++) printf(" %llx", (unsigned long long)exp[i]);
    printf("\n got     ");
    for (size_t i = 0; i < nw; i++)
      printf(" %llx", (unsigned long long)(bits == 32 ? ((const uint32_t *)w)[i] : ((const uint64_t *)w)[i]));
    printf("\n");
  }
  assert_true(ok);
}

/* Decoding the expected words (from_words) must give the same bits as `bm`. */
static void expect_decodes(const ba_bitmap_t *bm, const uint64_t *exp, size_t n) {
  ba_codec_t c = ba_bitmap_codec(bm);
  uint32_t w32[64];
  uint64_t w64[64];
  assert_true(n <= 64);
  for (size_t i = 0; i < n; i++) {
    w32[i] = (uint32_t)exp[i];
    w64[i] = exp[i];
  }
  ba_bitmap_t *d;
  assert_int_equal(ba_bitmap_from_words(c, ba_codec_word_bits(c) == 32 ? (const void *)w32 : (const void *)w64,
                                        n, ba_bitmap_rows(bm), &d),
                   BA_OK);
  assert_int_equal(ba_bitmap_equal(d, bm), 1);
  ba_bitmap_free(d);
}

#define CHECK(bm, ...)                                       \
  do {                                                       \
    const uint64_t exp_[] = {__VA_ARGS__};                   \
    expect_words((bm), exp_, sizeof exp_ / sizeof exp_[0]);  \
    expect_decodes((bm), exp_, sizeof exp_ / sizeof exp_[0]); \
  } while (0)

/* V-W1 (ASCR Fig. A), 210 rows. */
static ba_bitmap_t *vw1(ba_codec_t c) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_bits(bm, 0x48E82C13u, 31), BA_OK); /* 1001000111010000010110000010011 */
  assert_int_equal(ba_bitmap_append_run(bm, 0, 62), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, 93), BA_OK);
  assert_int_equal(ba_bitmap_append_bits(bm, 0x121FFE, 24), BA_OK); /* 000100100001111111111110 */
  assert_int_equal(ba_bitmap_finish(bm, 210), BA_OK);
  return bm;
}

/* V-M5 (MASC Fig. 5): 7 groups of 31 rows. */
static ba_bitmap_t *vm5(ba_codec_t c) {
  static const uint32_t g[7] = {0x00000000, 0x0003FFFF, 0x7FFFF000, 0, 0, 0x0003C000, 0};
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (int i = 0; i < 7; i++) assert_int_equal(ba_bitmap_append_bits(bm, g[i], 31), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, 217), BA_OK);
  return bm;
}

static ba_bitmap_t *rows_bm(ba_codec_t c, const uint64_t *rows, size_t n, uint64_t nrows) {
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_from_rows(c, rows, n, nrows, &bm), BA_OK);
  return bm;
}

static const uint64_t va_rows[] = {5, 100, 3000};
static const uint64_t vc_rows[] = {2, 5, 154};

static ba_bitmap_t *vb(ba_codec_t c) { /* n = 62, all ones except row 40 */
  ba_bitmap_t *bm;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, 40), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 0, 1), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 1, 21), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, 62), BA_OK);
  return bm;
}

static void test_wah32(void **state) {
  (void)state;
  ba_bitmap_t *bm = vw1(BA_CODEC_WAH32);
  CHECK(bm, 0x48E82C13, 0x80000002, 0xC0000003, 0x090FFF00);
  ba_bitmap_free(bm);
  bm = vm5(BA_CODEC_WAH32);
  CHECK(bm, 0x80000001, 0x0003FFFF, 0x7FFFF000, 0x80000002, 0x0003C000, 0x80000001);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_WAH32, va_rows, 3, 3100);
  CHECK(bm, 0x02000000, 0x80000002, 0x00800000, 0x8000005C, 0x00000040, 0x80000003);
  ba_bitmap_free(bm);
  bm = vb(BA_CODEC_WAH32);
  CHECK(bm, 0xC0000001, 0x7FDFFFFF);
  ba_bitmap_free(bm);
  /* DWBOOK: 5456 rows = literal, 0-fill of 174 groups, literal. */
  uint64_t dw[] = {3, 5440};
  bm = rows_bm(BA_CODEC_WAH32, dw, 2, 5456);
  size_t nw;
  const uint32_t *w = (const uint32_t *)ba_bitmap_words(bm, &nw);
  assert_int_equal(nw, 3);
  assert_int_equal(w[1], 0x800000AE);
  ba_bitmap_free(bm);
}

/* Decoders accept FastBit's form (single homogeneous groups as literals, §2.2)
 * and the ASCR file's active word once converted (§2.3). */
static void test_wah32_fastbit_forms(void **state) {
  (void)state;
  ba_bitmap_t *ref = vm5(BA_CODEC_WAH32), *d;
  const uint32_t fb[] = {0x00000000, 0x0003FFFF, 0x7FFFF000, 0x80000002, 0x0003C000, 0x00000000};
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, fb, 6, 217, &d), BA_OK);
  assert_int_equal(ba_bitmap_equal(d, ref), 1);
  ba_bitmap_free(d);
  ba_bitmap_free(ref);
  /* ASCR file: words..., active value 0x00121FFE, nbits 24. */
  ref = vw1(BA_CODEC_WAH32);
  const uint32_t active = 0x00121FFE, nbits = 24;
  const uint32_t conv[] = {0x48E82C13, 0x80000002, 0xC0000003, active << (31 - nbits)};
  assert_int_equal(ba_bitmap_from_words(BA_CODEC_WAH32, conv, 4, 210, &d), BA_OK);
  assert_int_equal(ba_bitmap_equal(d, ref), 1);
  ba_bitmap_free(d);
  ba_bitmap_free(ref);
}

static void test_wah64(void **state) {
  (void)state;
  ba_bitmap_t *bm = vw1(BA_CODEC_WAH64);
  CHECK(bm, 0x48E82C1300000000ull, 0x00000001FFFFFFFFull, 0x7FFFFFFFFFFFFFF8ull, 0x487FF80000000000ull);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_WAH64, va_rows, 3, 3100);
  CHECK(bm, 0x0200000000000000ull, 0x0000000002000000ull, 0x800000000000002Dull, 0x0000000000800000ull,
        0x8000000000000002ull);
  ba_bitmap_free(bm);
}

static void test_plwah(void **state) {
  (void)state;
  ba_bitmap_t *bm = vm5(BA_CODEC_PLWAH); /* = MASC Fig. 12 */
  CHECK(bm, 0x80000001, 0x0003FFFF, 0x7FFFF000, 0x80000002, 0x0003C000, 0x80000001);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_PLWAH, va_rows, 3, 3100);
  CHECK(bm, 0x02000000, 0x90000002, 0xB200005C, 0x80000003);
  ba_bitmap_free(bm);
  bm = vb(BA_CODEC_PLWAH);
  CHECK(bm, 0xD4000001);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_PLWAH, vc_rows, 3, 155);
  CHECK(bm, 0x12000000, 0xBE000003);
  ba_bitmap_free(bm);
  bm = vw1(BA_CODEC_PLWAH);
  CHECK(bm, 0x48E82C13, 0x80000002, 0xC0000003, 0x090FFF00);
  ba_bitmap_free(bm);
}

static void test_compax(void **state) {
  (void)state;
  if (!have(BA_CODEC_COMPAX)) return;
  ba_bitmap_t *bm = vm5(BA_CODEC_COMPAX); /* = MASC Fig. 13 */
  CHECK(bm, 0x00000001, 0x8003FFFF, 0xFFFFF000, 0x00000002, 0x8003C000, 0x00000001);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_COMPAX, va_rows, 3, 3100);
  CHECK(bm, 0x3C020280, 0x405C4003);
  ba_bitmap_free(bm);
  bm = rows_bm(BA_CODEC_COMPAX, vc_rows, 3, 155);
  CHECK(bm, 0x38120301);
  ba_bitmap_free(bm);
  /* V-D: byte 2 of group 2 = 0xA5, n = 186 */
  assert_int_equal(ba_bitmap_create(BA_CODEC_COMPAX, &bm), BA_OK);
  assert_int_equal(ba_bitmap_append_run(bm, 0, 62), BA_OK);
  assert_int_equal(ba_bitmap_append_bits(bm, 0xA5u << 16, 31), BA_OK);
  assert_int_equal(ba_bitmap_finish(bm, 186), BA_OK);
  CHECK(bm, 0x5002A503);
  ba_bitmap_free(bm);
  bm = vw1(BA_CODEC_COMPAX);
  CHECK(bm, 0xC8E82C13, 0x00000002, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0x890FFF00);
  ba_bitmap_free(bm);
}

static ba_bitmap_t *runs_bm(ba_codec_t c, const uint64_t *runs, size_t n) {
  /* runs alternate starting with value 0 */
  ba_bitmap_t *bm;
  uint64_t total = 0;
  assert_int_equal(ba_bitmap_create(c, &bm), BA_OK);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(ba_bitmap_append_run(bm, (int)(i & 1), runs[i]), BA_OK);
    total += runs[i];
  }
  assert_int_equal(ba_bitmap_finish(bm, total), BA_OK);
  return bm;
}

static void masc_common(ba_codec_t c, uint64_t onefill) {
  ba_bitmap_t *bm = vm5(c);
  CHECK(bm, 0x0000002D, onefill | 0x26, 0x48000059, 0x0000002E); /* Fig. 11 / Fig. 15 */
  ba_bitmap_free(bm);
  bm = rows_bm(c, va_rows, 3, 3100);
  CHECK(bm, 0x42000005, 0x42000061, 0x42000BB0, 0x00000066);
  ba_bitmap_free(bm);
  bm = vb(c);
  CHECK(bm, onefill | 0x29, 0x6A000001);
  ba_bitmap_free(bm);
  const uint64_t m2[] = {191};
  bm = runs_bm(c, m2, 1);
  CHECK(bm, 0x000000C5);
  ba_bitmap_free(bm);
  const uint64_t m3[] = {0, 191};
  bm = runs_bm(c, m3, 2);
  CHECK(bm, onefill | 0xC5);
  ba_bitmap_free(bm);
  const uint64_t m4[] = {449, 18};
  bm = runs_bm(c, m4, 2);
  CHECK(bm, 0x640001CF);
  ba_bitmap_free(bm);
  const uint64_t g[] = {0, 40, 60, 5, 95};
  bm = runs_bm(c, g, 5);
  CHECK(bm, onefill | 0x29, 0x4A00003D, 0x00000062);
  ba_bitmap_free(bm);
  const uint64_t maxrun = (UINT64_C(1) << 20) * 31 - 1; /* (2^20-1)*31 + 30 */
  const uint64_t ovf[] = {maxrun + 5, 3};
  bm = runs_bm(c, ovf, 2);
  CHECK(bm, 0x01FFFFFE, 0x46000005);
  ba_bitmap_free(bm);
}

static void test_masc(void **state) {
  (void)state;
  if (have(BA_CODEC_MASC)) masc_common(BA_CODEC_MASC, 0x80000000u);
}

static void test_masc_qt(void **state) {
  (void)state;
  if (have(BA_CODEC_MASC_QT)) masc_common(BA_CODEC_MASC_QT, 0xC0000000u);
}

static void test_names(void **state) {
  (void)state;
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    ba_codec_t back;
    assert_non_null(ba_codec_name((ba_codec_t)c));
    assert_int_equal(ba_codec_from_name(ba_codec_name((ba_codec_t)c), &back), BA_OK);
    assert_int_equal(back, c);
  }
  ba_codec_t x;
  assert_int_equal(ba_codec_from_name("roaring", &x), BA_ERR_INVALID);
  assert_null(ba_codec_name((ba_codec_t)0));
  assert_int_equal(ba_codec_word_bits(BA_CODEC_WAH64), 64);
  assert_int_equal(ba_codec_word_bits(BA_CODEC_PLWAH), 32);
  assert_int_equal(ba_codec_word_bits((ba_codec_t)9), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),        cmocka_unit_test(test_wah32), cmocka_unit_test(test_wah32_fastbit_forms),
      cmocka_unit_test(test_wah64),        cmocka_unit_test(test_plwah), cmocka_unit_test(test_compax),
      cmocka_unit_test(test_masc),         cmocka_unit_test(test_masc_qt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
