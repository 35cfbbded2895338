/* common/: CRC32C against published check values and a bitwise reference
 * (short and long buffers), little-endian load/store round trips, status
 * strings, the radix sort against a naive stable sort. */
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "common/common.h"

static uint32_t crc32c_bitwise(const uint8_t *p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}

static void test_crc32c_vectors(void **state) {
  (void)state;
  assert_int_equal(ba_crc32c(0, "123456789", 9), 0xE3069283u);
  uint8_t zeros[32] = {0};
  assert_int_equal(ba_crc32c(0, zeros, 32), 0x8A9136AAu); /* RFC 3720 B.4 */
  uint8_t ones[32];
  memset(ones, 0xff, sizeof ones);
  assert_int_equal(ba_crc32c(0, ones, 32), 0x62A8AB43u);
}

static void test_crc32c_differential(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 42);
  uint8_t buf[1000];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)ba_rng_next(&r);
  for (size_t n = 0; n < sizeof buf; n += 37) {
    assert_int_equal(ba_crc32c(0, buf, n), crc32c_bitwise(buf, n));
    /* incremental == one shot */
    size_t h = n / 3;
    assert_int_equal(ba_crc32c(ba_crc32c(0, buf, h), buf + h, n - h), crc32c_bitwise(buf, n));
  }
  /* Long buffers (the three-stream path: stretches of 8192 and 256 bytes,
   * then the tail) at every alignment, whole and in two pieces. */
  size_t cap = 3 * 8192 * 2 + 3 * 256 * 3 + 100;
  uint8_t *big = malloc(cap);
  assert_non_null(big);
  for (size_t i = 0; i < cap; i++) big[i] = (uint8_t)ba_rng_next(&r);
  for (int t = 0; t < 60; t++) {
    size_t off = (size_t)ba_rng_below(&r, 8), n = (size_t)ba_rng_below(&r, cap - off);
    if (t < 8) n = cap - off - (size_t)t; /* near the largest */
    uint32_t want = crc32c_bitwise(big + off, n);
    assert_int_equal(ba_crc32c(0, big + off, n), want);
    size_t h = (size_t)ba_rng_below(&r, n + 1);
    assert_int_equal(ba_crc32c(ba_crc32c(0, big + off, h), big + off + h, n - h), want);
  }
  free(big);
}

static void test_endian(void **state) {
  (void)state;
  uint8_t b[8];
  ba_store_le64(b, 0x0102030405060708ull);
  assert_int_equal(b[0], 8);
  assert_int_equal(b[7], 1);
  assert_true(ba_load_le64(b) == 0x0102030405060708ull);
  ba_store_le32(b, 0xA1B2C3D4u);
  assert_int_equal(ba_load_le32(b), 0xA1B2C3D4u);
  assert_int_equal(ba_load_be32(b), 0xD4C3B2A1u);
  ba_store_le16(b, 0xBEEF);
  assert_int_equal(ba_load_le16(b), 0xBEEF);
  assert_int_equal(ba_load_be16(b), 0xEFBE);
}

static void test_strerror(void **state) {
  (void)state;
  for (int s = 0; s >= -15; s--) assert_non_null(ba_strerror(s));
  assert_string_equal(ba_strerror(BA_ERR_CHECKSUM), "checksum mismatch");
  assert_string_equal(ba_strerror(12345), "unknown error");
}

/* Naive reference: insertion sort by the digit bits, stable (equal keys keep
 * their order). */
static uint64_t field(const uint64_t *e, unsigned w, unsigned lo, unsigned hi) {
  uint64_t x = e[w] >> lo;
  return hi - lo == 64 ? x : x & ((1ull << (hi - lo)) - 1);
}

static void naive_sort(uint64_t *a, size_t n, unsigned words, unsigned w, unsigned lo, unsigned hi) {
  uint64_t t[4];
  for (size_t i = 1; i < n; i++) {
    memcpy(t, a + i * words, words * 8);
    size_t j = i;
    while (j > 0 && field(a + (j - 1) * words, w, lo, hi) > field(t, w, lo, hi)) {
      memcpy(a + j * words, a + (j - 1) * words, words * 8);
      j--;
    }
    memcpy(a + j * words, t, words * 8);
  }
}

static void test_radix_sort(void **state) {
  (void)state;
  ba_rng_t r;
  ba_rng_seed(&r, 77);
  static const unsigned ranges[][2] = {{0, 64}, {32, 64}, {0, 11}, {5, 27}, {60, 64}, {0, 1}};
  for (unsigned words = 1; words <= 4; words++)
    for (unsigned w = 0; w < words; w++)
      for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++)
        for (int shape = 0; shape < 3; shape++) {
          size_t n = (size_t)ba_rng_below(&r, 1500);
          uint64_t *a = malloc((n + 1) * words * 8), *b = malloc((n + 1) * words * 8);
          uint64_t *tmp = malloc((n + 1) * words * 8);
          for (size_t i = 0; i < n * words; i++) {
            uint64_t x = ba_rng_next(&r);
            if (shape == 1) x &= 0xF0F; /* few distinct digits: skipped passes */
            if (shape == 2) x = i % words == w ? 42 : x; /* every key equal */
            a[i] = x;
          }
          /* the last word of every element numbers it: equal keys must keep their order */
          if (words > 1 && w != words - 1)
            for (size_t i = 0; i < n; i++) a[i * words + words - 1] = i;
          memcpy(b, a, n * words * 8);
          ba_radix_sort(a, tmp, n, words, w, ranges[k][0], ranges[k][1]);
          naive_sort(b, n, words, w, ranges[k][0], ranges[k][1]);
          if (n) assert_memory_equal(a, b, n * words * 8);
          free(a);
          free(b);
          free(tmp);
        }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crc32c_vectors),
    cmocka_unit_test(test_crc32c_differential),
    cmocka_unit_test(test_endian),
    cmocka_unit_test(test_strerror),
    cmocka_unit_test(test_radix_sort),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
