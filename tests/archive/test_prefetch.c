/* ba_store_prefetch_index (src/archive/reader_prefetch.c): a segment whose
 * index pages are not in the page cache is hinted, one whose pages are is
 * not, nor one outside the time window; a query's answers are the same
 * after it, and after a store opened from a cold cache (whose segments'
 * header and footer pages are asked for first); a segment of at most 1 MB
 * is asked for whole (every page comes in).
 * ba_segment_index_prefetch: the byte ranges it hints are exactly the
 * records ba_segment_index reads (each decodes to the same bitmap), absent
 * values and cached records are not hinted. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitarc/bitarc.h"
#include "fixture_gen.h"
#include "index/index.h"
#include "testsupport.h"

#define SEG "seg-20251122T000000Z.bitarc"

/* The fixture's records `copies` times, each copy 20 s after the one before
 * (one segment). */
static void write_store_n(const char *dir, int copies) {
  static ba_record_t recs[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(recs, frames);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 100;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  for (int c = 0; c < copies; c++) {
    if (c)
      for (size_t i = 0; i < FX_N; i++) recs[i].first_ns += 20000000000ull, recs[i].last_ns += 20000000000ull;
    assert_int_equal(ba_store_writer_append(w, recs, FX_N), BA_OK);
  }
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

static void write_store(const char *dir) { write_store_n(dir, 1); }

/* Drops the segment's pages from the page cache; 1 if they went (not on
 * every file system: tmpfs keeps them). */
static int drop_pages(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" SEG, dir);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(fdatasync(fd), 0);
  off_t end = lseek(fd, 0, SEEK_END);
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  uint8_t b;
  struct iovec v = {&b, 1};
  int gone = end > 1 && preadv2(fd, &v, 1, end - 2, RWF_NOWAIT) < 0;
  close(fd);
  return gone;
}

static int no_rows(void *ctx, const ba_record_t *r, size_t n) {
  (void)ctx;
  (void)r;
  (void)n;
  return 0;
}

static uint64_t count(ba_store_t *s, const char *filter) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), BA_OK);
  assert_int_equal(ba_query_compile(q, filter), BA_OK);
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.count_only = 1;
  ba_query_stats_t st;
  assert_int_equal(ba_query_run(q, s, &eo, no_rows, NULL, &st), BA_OK);
  ba_query_free(q);
  return st.rows_matched;
}

static void test_prefetch(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  write_store(dir);
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 1);
  uint64_t any = count(s, "any"), tcp = count(s, "proto tcp");
  assert_int_equal(any, FX_N);
  assert_int_equal(ba_store_prefetch_index(NULL, 0, UINT64_MAX, 1), 0);
  /* read by the queries: in the page cache, nothing to hint */
  assert_int_equal(ba_store_prefetch_index(s, 0, UINT64_MAX, 1), 0);
  ba_segment_t *g;
  assert_int_equal(ba_store_segment(s, 0, &g), BA_OK);
  ba_segment_info_t in;
  assert_int_equal(ba_segment_info(g, &in), BA_OK);
  ba_store_close(s);
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  int cold = drop_pages(dir); /* after the open, whose footer read brings the small file's tail in */
  /* outside the window: never hinted */
  assert_int_equal(ba_store_prefetch_index(s, in.max_first_ns + 1, UINT64_MAX, 1), 0);
  assert_int_equal(ba_store_prefetch_index(s, 0, in.min_first_ns, 0), 0);
  if (cold) assert_int_equal(ba_store_prefetch_index(s, 0, UINT64_MAX, 0), 1);
  else fprintf(stderr, "(the file system keeps dropped pages: the cold case is not checked)\n");
  (void)ba_store_prefetch_index(s, in.min_first_ns, in.min_first_ns + 1, 1);
  assert_int_equal(count(s, "any"), any);
  assert_int_equal(count(s, "proto tcp"), tcp);
  ba_store_close(s);
  /* an open from a cold cache (header and footer pages asked for first) */
  (void)drop_pages(dir);
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 1);
  assert_int_equal(count(s, "any"), any);
  assert_int_equal(count(s, "proto tcp"), tcp);
  ba_store_close(s);
  ba_test_rmtree(dir);
  free(dir);
}

/* Pages of bytes [lo, hi) of the segment (hi 0: to its end) in the page
 * cache, as mincore tells (no read: a RWF_NOWAIT read that misses starts
 * the kernel's read-ahead); *npages gets how many pages that is. */
static size_t range_in(const char *dir, uint64_t lo, uint64_t hi, size_t *npages) {
  char path[4096];
  snprintf(path, sizeof path, "%s/" SEG, dir);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  off_t end = lseek(fd, 0, SEEK_END);
  if (!hi) hi = (uint64_t)end;
  void *m = mmap(NULL, (size_t)end, PROT_READ, MAP_SHARED, fd, 0);
  assert_true(m != MAP_FAILED);
  size_t n = ((size_t)end + 4095) / 4096, in = 0, p0 = (size_t)(lo / 4096), p1 = (size_t)((hi + 4095) / 4096);
  unsigned char *vec = malloc(n);
  assert_non_null(vec);
  assert_int_equal(mincore(m, (size_t)end, vec), 0);
  for (size_t i = p0; i < p1; i++) in += vec[i] & 1;
  free(vec);
  munmap(m, (size_t)end);
  close(fd);
  *npages = p1 - p0;
  return in;
}

/* 1 once every page of [lo, hi) is in (within 2 s). */
static int comes_in(const char *dir, uint64_t lo, uint64_t hi) {
  size_t n = 0, in = 0;
  for (int i = 0; i < 200 && (in = range_in(dir, lo, hi, &n)) < n; i++) usleep(10000);
  if (in < n) fprintf(stderr, "(%zu of %zu pages of [%llu, %llu) in)\n", in, n, (unsigned long long)lo,
                      (unsigned long long)hi);
  return in == n;
}

/* A segment of at most 1 MB in the window is asked for whole. */
static void test_small_segment_whole(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  write_store_n(dir, 45); /* 0.78 MB: more than the kernel's read-ahead around one read */
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  if (!drop_pages(dir)) {
    fprintf(stderr, "(the file system keeps dropped pages: not checked)\n");
  } else {
    assert_int_equal(ba_store_prefetch_index(s, 0, UINT64_MAX, 0), 1);
    assert_true(comes_in(dir, 0, 0));
  }
  ba_store_close(s);
  ba_test_rmtree(dir);
  free(dir);
}

static void test_index_prefetch(void **state) {
  (void)state;
  static ba_record_t recs[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(recs, frames);
  size_t r4 = 0;
  while (recs[r4].ipver != 4) r4++;
  const uint8_t *a = recs[r4].src + 12; /* ::ffff:a.b.c.d */
  char *dir = ba_test_mkdtemp();
  write_store(dir);
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  ba_segment_t *g;
  assert_int_equal(ba_store_segment(s, 0, &g), BA_OK);
  ba_segment_info_t in;
  assert_int_equal(ba_segment_info(g, &in), BA_OK);
  /* a host's four octets and its protocol (present), then an absent octet */
  const ba_attr_t attrs[] = {BA_ATTR_SRC_IP0, BA_ATTR_SRC_IP1, BA_ATTR_SRC_IP2, BA_ATTR_SRC_IP3, BA_ATTR_PROTO,
                             BA_ATTR_SRC_IP0};
  const uint32_t vals[] = {a[0], a[1], a[2], a[3], recs[r4].proto, 11};
  enum { N = 6, PRESENT = 5 };
  uint64_t rg[N][2];
  assert_int_equal(ba_segment_index_prefetch(NULL, attrs, vals, N, UINT64_MAX, rg), BA_ERR_INVALID);
  assert_int_equal(ba_segment_index_prefetch(g, NULL, vals, N, UINT64_MAX, rg), BA_ERR_INVALID);
  assert_int_equal(ba_segment_index_prefetch(g, attrs, vals, 0, UINT64_MAX, rg), 0);
  if (!drop_pages(dir)) {
    fprintf(stderr, "(the file system keeps dropped pages: the hinted ranges are not checked)\n");
  } else {
    assert_int_equal(ba_segment_index_prefetch(g, attrs, vals, N, 0, rg), 0); /* larger than max_bytes */
    assert_int_equal(ba_segment_index_prefetch(g, attrs, vals, N, UINT64_MAX, rg), PRESENT);
    char path[4096];
    snprintf(path, sizeof path, "%s/" SEG, dir);
    int sf = open(path, O_RDONLY);
    assert_true(sf >= 0);
    for (size_t k = 0; k < PRESENT; k++) assert_true(comes_in(dir, rg[k][0], rg[k][1])); /* with no read */
    for (size_t k = 0; k < PRESENT; k++) {
      /* the plain path's bitmap, and the hinted bytes decoded: the same */
      ba_bitmap_t *want, *got = NULL;
      assert_int_equal(ba_segment_index(g, attrs[k], vals[k], &want), BA_OK);
      size_t len = (size_t)(rg[k][1] - rg[k][0]);
      uint8_t *p = malloc(len);
      assert_non_null(p);
      assert_int_equal(pread(sf, p, len, (off_t)rg[k][0]), (ssize_t)len);
      assert_int_equal(p[1], 0); /* raw record (no zstd in so small a segment) */
      assert_int_equal(ba_idx_bitmap_decode(p, len, in.codec, in.rows, &got), BA_OK);
      assert_int_equal(ba_bitmap_equal(want, got), 1);
      ba_bitmap_free(want);
      ba_bitmap_free(got);
      free(p);
    }
    close(sf);
    /* read now: in the page cache, nothing to hint */
    assert_int_equal(ba_segment_index_prefetch(g, attrs, vals, N, UINT64_MAX, rg), 0);
  }
  ba_store_close(s);
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_prefetch), cmocka_unit_test(test_small_segment_whole),
                                     cmocka_unit_test(test_index_prefetch)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
