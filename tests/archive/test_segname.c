/* Segment file names: ba_segment_name_parse inverts ba_seg_name on random
 * slice starts and sequence numbers; on random mutations of names it agrees
 * with a naive reference (sscanf, timegm, and the name ba_seg_name makes of
 * the result must be the input); named near misses (journals, temp files,
 * bad dates, leading zeros, signs, spaces, junk after the name) are refused;
 * ba_segment_name_cmp sorts names as a naive key (start, sequence) does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "archive/archive.h"
#include "testsupport.h"

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

#define NSEC 1000000000ull

static void round_trip(void **state) {
  (void)state;
  uint64_t s = 88172645463325252ull;
  for (int i = 0; i < 20000; i++) {
    uint64_t start = (rnd(&s) % 4102444800ull) * NSEC; /* 1970 .. 2100 */
    unsigned seq = i % 3 ? (unsigned)(rnd(&s) % 1000000 + 1) : (unsigned)(i % 7 ? 0 : 1);
    char name[64];
    assert_int_equal(ba_seg_name(start, seq, name, sizeof name), BA_OK);
    uint64_t got = 1;
    unsigned gseq = 99;
    assert_int_equal(ba_segment_name_parse(name, &got, &gseq), 1);
    assert_true(got == start);
    assert_int_equal(gseq, seq);
    assert_int_equal(ba_segment_name_parse(name, NULL, NULL), 1);
  }
}

/* The reference: what ba_seg_name makes, and nothing else. */
static int naive_parse(const char *n, uint64_t *start, unsigned *seq) {
  unsigned y, mo, d, h, mi, s;
  int used = 0;
  if (sscanf(n, "seg-%4u%2u%2uT%2u%2u%2uZ%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 || used != 20) return 0;
  unsigned long q = 0;
  if (n[used] == '-') {
    char *end;
    q = strtoul(n + used + 1, &end, 10);
    if (q == 0 || q > 1000000) return 0;
  }
  if (y < 1970) return 0;
  struct tm tm = {.tm_year = (int)y - 1900, .tm_mon = (int)mo - 1, .tm_mday = (int)d,
                  .tm_hour = (int)h, .tm_min = (int)mi, .tm_sec = (int)s};
  time_t t = timegm(&tm);
  char again[64];
  if (t < 0 || ba_seg_name((uint64_t)t * NSEC, (unsigned)q, again, sizeof again) || strcmp(again, n)) return 0;
  *start = (uint64_t)t * NSEC;
  *seq = (unsigned)q;
  return 1;
}

static void mutations(void **state) {
  (void)state;
  static const char alpha[] = "0123456789012345678901234567890123456789-TZ.+ xb";
  uint64_t s = 0x2545F4914F6CDD1Dull;
  long accepted = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t start = (rnd(&s) % 4102444800ull) * NSEC;
    unsigned seq = i % 2 ? (unsigned)(rnd(&s) % 1000000 + 1) : 0;
    char name[80];
    assert_int_equal(ba_seg_name(start, seq, name, sizeof name), BA_OK);
    size_t len = strlen(name);
    for (int k = (int)(rnd(&s) % 3); k >= 0; k--) {
      size_t at = (size_t)(rnd(&s) % len);
      switch (rnd(&s) % 4) {
        case 0: /* delete */
          memmove(name + at, name + at + 1, len - at), len--;
          break;
        case 1: /* insert */
          if (len + 2 < sizeof name) memmove(name + at + 1, name + at, len - at + 1), len++;
          /* fall through */
        default: name[at] = alpha[rnd(&s) % (sizeof alpha - 1)];
      }
    }
    uint64_t a = 1, b = 2;
    unsigned qa = 3, qb = 4;
    int got = ba_segment_name_parse(name, &a, &qa), want = naive_parse(name, &b, &qb);
    if (got != want) fail_msg("'%s': parse %d, reference %d", name, got, want);
    if (got) {
      assert_true(a == b);
      assert_int_equal(qa, qb);
      accepted++;
    }
  }
  assert_true(accepted > 1000); /* the mutations leave some names valid (digit for digit) */
}

static void near_misses(void **state) {
  (void)state;
  static const char *const bad[] = {
      "seg-20240711T000000Z.bitarc.open", "seg-20240711T000000Z.bitarc.tmp", "seg-20240711T000000Z.bitar",
      "seg-20240711T000000.bitarc", "seg-2024071T000000Z.bitarc", "seg-20240711T0000000Z.bitarc",
      "seg-20241311T000000Z.bitarc", "seg-20240732T000000Z.bitarc", "seg-20240711T240000Z.bitarc",
      "seg-20240711T006000Z.bitarc", "seg-20240231T000000Z.bitarc", "seg-20240711T000060Z.bitarc",
      "seg-19690711T000000Z.bitarc", "seg-20240711T000000Z-0.bitarc",
      "seg-20240711T000000Z-01.bitarc", "seg-20240711T000000Z-+1.bitarc", "seg-20240711T000000Z- 1.bitarc",
      "seg-20240711T000000Z-.bitarc", "seg-20240711T000000Z-1000001.bitarc", "seg-20240711T000000Z-1x.bitarc",
      "seg-20240711T000000Zx.bitarc", "seg-garbage.bitarc", "seg-.bitarc", "seg-x.bitarc", ".bitarc",
      "xseg-20240711T000000Z.bitarc", "SEG-20240711T000000Z.bitarc", "seg-+2024711T000000Z.bitarc",
      "seg- 20240711T000000Z.bitarc", "", "collector.json"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t st = 7;
    unsigned q = 7;
    if (ba_segment_name_parse(bad[i], &st, &q)) fail_msg("'%s' taken for a segment name", bad[i]);
    assert_true(st == 7 && q == 7); /* untouched */
  }
  uint64_t st;
  unsigned q;
  assert_int_equal(ba_segment_name_parse("seg-20240711T000000Z-1000000.bitarc", &st, &q), 1);
  assert_int_equal(q, 1000000);
  assert_true(st == 1720656000ull * NSEC);
}

typedef struct key {
  uint64_t start;
  unsigned seq;
  char name[64];
} skey_t;

static int key_cmp(const void *a, const void *b) {
  const skey_t *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int name_cmp(const void *a, const void *b) {
  return ba_segment_name_cmp(((const skey_t *)a)->name, ((const skey_t *)b)->name);
}

static void order(void **state) {
  (void)state;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  enum { N = 3000 };
  skey_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  for (int i = 0; i < N; i++) {
    a[i].start = (1720656000ull + rnd(&s) % 40 * 3600) * NSEC; /* few slices: many ties */
    unsigned r = (unsigned)(rnd(&s) % 4);
    a[i].seq = r == 0 ? 0 : r == 1 ? (unsigned)(rnd(&s) % 12) : (unsigned)(rnd(&s) % 1000000 + 1);
    assert_int_equal(ba_seg_name(a[i].start, a[i].seq, a[i].name, sizeof a[i].name), BA_OK);
  }
  memcpy(b, a, N * sizeof *a);
  qsort(a, N, sizeof *a, key_cmp);
  qsort(b, N, sizeof *b, name_cmp);
  for (int i = 0; i < N; i++) assert_true(key_cmp(&a[i], &b[i]) == 0);
  /* the lengths rule: seg-X-9 before seg-X-10 */
  assert_true(ba_segment_name_cmp("seg-20240711T000000Z-9.bitarc", "seg-20240711T000000Z-10.bitarc") < 0);
  assert_true(ba_segment_name_cmp("seg-20240711T000000Z.bitarc", "seg-20240711T000000Z-1.bitarc") < 0);
  assert_true(ba_segment_name_cmp("seg-20240711T010000Z.bitarc", "seg-20240711T000000Z-5.bitarc") > 0);
  assert_int_equal(ba_segment_name_cmp("seg-20240711T000000Z.bitarc", "seg-20240711T000000Z.bitarc"), 0);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip),
      cmocka_unit_test(mutations),
      cmocka_unit_test(near_misses),
      cmocka_unit_test(order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
