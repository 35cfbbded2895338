/* Segments finished in the background (src/archive/writer_finish.c):
 *  - while a closed segment waits to be finished, appending goes on and a
 *    live query sees every row (the finishing journal's and the open one's);
 *    afterwards the store holds every row;
 *  - the store is byte for byte the one written with the finish in the
 *    caller (threads 0);
 *  - a writer that dies with a segment handed over but not finished leaves
 *    journals that recovery turns into the same rows. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "archive/writer_internal.h"
#include "bitarc/query.h"
#include "bitarc/store.h"
#include "store_gen.h"

#define SLICE_S 3600u
#define T0 (1700000000ull / SLICE_S * SLICE_S * 1000000000ull)
#define NREC 6000u
#define SEG_ROWS 2000u
#define FIRST 2500u /* appended while the first segment is held */

typedef struct sum {
  uint64_t n, bytes, first;
} sum_t;

static int add_sum(void *ctx, const ba_record_t *r, size_t n) {
  sum_t *s = ctx;
  for (size_t i = 0; i < n; i++) {
    s->n++;
    s->bytes += r[i].bytes;
    s->first ^= r[i].first_ns * 0x9E3779B97F4A7C15ull;
  }
  return 0;
}

static sum_t ref_sum(const gen_t *g, size_t n) {
  sum_t s = {0};
  add_sum(&s, g->r, n);
  return s;
}

/* Every row of the store (live: journals too), as a sum. */
static sum_t query_sum(const char *dir, int live) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), BA_OK);
  ba_query_set_live(q, live);
  assert_int_equal(ba_query_compile(q, "any"), BA_OK);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.out_cols = BA_COL_ALL;
  sum_t got = {0};
  ba_query_stats_t st;
  assert_int_equal(ba_query_run(q, s, &o, add_sum, &got, &st), BA_OK);
  ba_query_free(q);
  ba_store_close(s);
  return got;
}

static size_t count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0, sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) n++;
  }
  closedir(d);
  return n;
}

static size_t segments(const char *dir) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  size_t n = ba_store_segment_count(s);
  ba_store_close(s);
  return n;
}

static ba_store_writer_t *open_writer(const char *dir, int threads) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 100;
  o.slice_seconds = SLICE_S;
  o.max_segment_rows = SEG_ROWS;
  o.threads = threads;
  ba_store_writer_t *w = NULL;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  return w;
}

static void append_range(ba_store_writer_t *w, const gen_t *g, size_t from, size_t to) {
  for (size_t at = from; at < to; at += 37) {
    size_t k = to - at < 37 ? to - at : 37;
    assert_int_equal(ba_store_writer_append(w, g->r + at, k), BA_OK);
  }
}

static void same_files(const char *a, const char *b) {
  DIR *d = opendir(a);
  assert_non_null(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, "seg-", 4) != 0) continue;
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
    snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
    size_t la = 0, lb = 0;
    uint8_t *x = ba_test_read_file(pa, &la), *y = ba_test_read_file(pb, &lb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(la, lb);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
    n++;
  }
  closedir(d);
  assert_int_equal(n, count_files(b, ".bitarc"));
}

static void test_query_during_finish(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, NREC, 5, T0, (uint64_t)SLICE_S * 1000000000ull / 2, 1); /* one slice */
  char *dir = ba_test_mkdtemp();
  ba_store_writer_t *w = open_writer(dir, 2);
  ba_writer_finish_hold(w, 1);
  append_range(w, &g, 0, FIRST); /* the first SEG_ROWS close a segment: handed over, held */
  assert_true(ba_writer_finish_pending(w));
  assert_int_equal(ba_writer_finish_rows(w), SEG_ROWS);
  assert_int_equal(count_files(dir, ".open"), 2); /* the held one and the next */
  assert_int_equal(segments(dir), 0);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK); /* the open slice's rows as LIVE blocks */
  sum_t want = ref_sum(&g, FIRST), got = query_sum(dir, 1);
  assert_int_equal(got.n, want.n);
  assert_int_equal(got.bytes, want.bytes);
  assert_int_equal(got.first, want.first);
  ba_writer_finish_hold(w, 0);
  for (int i = 0; i < 1000 && ba_writer_finish_pending(w); i++) usleep(10000);
  assert_false(ba_writer_finish_pending(w));
  assert_int_equal(segments(dir), 1);
  got = query_sum(dir, 1); /* one segment and one journal */
  assert_int_equal(got.n, want.n);
  assert_int_equal(got.first, want.first);
  append_range(w, &g, FIRST, NREC);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  assert_int_equal(segments(dir), NREC / SEG_ROWS);
  assert_int_equal(count_files(dir, ".open"), 0);
  want = ref_sum(&g, NREC);
  got = query_sum(dir, 0);
  assert_int_equal(got.n, want.n);
  assert_int_equal(got.bytes, want.bytes);
  assert_int_equal(got.first, want.first);
  /* The finish in the caller (no worker threads) writes the same bytes. */
  char *dir0 = ba_test_mkdtemp();
  w = open_writer(dir0, 0);
  append_range(w, &g, 0, NREC);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  same_files(dir, dir0);
  same_files(dir0, dir);
  ba_test_rmtree(dir0);
  free(dir0);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

/* The writer dies while the finisher holds a closed segment (kill -9 in the
 * middle of a background finish): recovery finishes both journals. */
static void test_crash_during_finish(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, NREC, 9, T0, (uint64_t)SLICE_S * 1000000000ull / 2, 1);
  char *dir = ba_test_mkdtemp();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    o.block_rows = 100;
    o.slice_seconds = SLICE_S;
    o.max_segment_rows = SEG_ROWS;
    ba_store_writer_t *w = NULL;
    if (ba_store_writer_open(dir, &o, &w) != BA_OK) _exit(3);
    ba_writer_finish_hold(w, 1);
    for (size_t at = 0; at < FIRST; at += 37)
      if (ba_store_writer_append(w, g.r + at, FIRST - at < 37 ? FIRST - at : 37) != BA_OK) _exit(4);
    if (!ba_writer_finish_pending(w) || ba_store_writer_flush(w, 0) != BA_OK) _exit(5);
    /* sync returns while the finish is held (it does not wait for it) */
    if (ba_store_writer_sync(w) != BA_OK || !ba_writer_finish_pending(w)) _exit(6);
    _exit(0);
  }
  int wst = 0;
  assert_int_equal(waitpid(pid, &wst, 0), pid);
  assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  assert_int_equal(count_files(dir, ".open"), 2);
  sum_t want = ref_sum(&g, FIRST), got = query_sum(dir, 1);
  assert_int_equal(got.n, want.n);
  assert_int_equal(got.first, want.first);
  ba_store_writer_t *w = open_writer(dir, 2);
  assert_int_equal(ba_store_writer_recovered(w), FIRST);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  assert_int_equal(count_files(dir, ".open"), 0);
  assert_int_equal(segments(dir), 2);
  got = query_sum(dir, 0);
  assert_int_equal(got.n, want.n);
  assert_int_equal(got.bytes, want.bytes);
  assert_int_equal(got.first, want.first);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_query_during_finish),
                                     cmocka_unit_test(test_crash_during_finish)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
