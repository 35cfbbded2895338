/* Live query: ba_query_run reads the journals of open slices (doc/format.md
 * §5). Checked against the naive reference (every appended record through
 * ba_query_match):
 *  - after each ba_store_writer_flush the query sees exactly the records
 *    appended so far (small row groups, so most flushes write LIVE blocks;
 *    with and without writer threads; two slices open at once);
 *  - a journal with LIVE blocks between its groups and at its end, left by a
 *    writer that died, is read whole by a live query, and recovery keeps
 *    every row: the groups (also after LIVE blocks) and the trailing LIVE
 *    rows as the last group; the recovered segment reads the same (frames
 *    of packet records included);
 *  - a journal finished during the run (store handle opened before the
 *    finish; finish from inside the sink while the journal is being read;
 *    finish between listing and opening; journal and segment both present):
 *    every row once, none missing;
 *  - a torn last group is silent, a damaged group is reported;
 *  - a time window, and ba_query_run_multi over a live and a finished store. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "bitarc/query.h"
#include "bitarc/store.h"
#include "testsupport.h"
#include "test_rows.h"
#include "../archive/store_gen.h"
#include "query/query_internal.h"

#define BR 64
#define SLICE_S 3600ull
#define T0 (1700000000ull / SLICE_S * SLICE_S * 1000000000ull)
#define MASK                                                                                                  \
  (BA_COL_FIRST | BA_COL_LAST | BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO | BA_COL_FLAGS |       \
   BA_COL_TOS | BA_COL_AS | BA_COL_IF | BA_COL_PACKETS | BA_COL_BYTES | BA_COL_EXPORTER | BA_COL_VLAN |       \
   BA_COL_ICMP | BA_COL_FRAME)

static const char *const g_filters[] = {"any", "proto tcp", "dst port 53 or dst port 443", "src net 10.0.0.0/28",
                                        "not proto udp and bytes > 5000", "ip 192.168.0.1 and flags S"};
#define NFILTERS (sizeof g_filters / sizeof g_filters[0])

/* A sink's first batch closes the writer (the query then meets its journals
 * finished into segments). */
static void close_once(void *ctx) {
  ba_store_writer_t **w = ctx;
  if (*w) {
    assert_int_equal(ba_store_writer_close(*w), BA_OK);
    *w = NULL;
  }
}

/* got == the records of ref for which pick[i] and the filter hold, as sets. */
static void expect_rows(ba_test_rows_t *got, const gen_t *g, const unsigned char *pick, const char *filter) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), BA_OK);
  assert_int_equal(ba_query_compile(q, filter), BA_OK);
  ba_test_rows_t ref = {0};
  for (size_t i = 0; i < g->n; i++)
    if (pick[i] && ba_query_match(q, &g->r[i])) ba_test_rows_keep(&ref, &g->r[i], 1);
  ba_query_free(q);
  if (got->n != ref.n) fail_msg("filter '%s': %zu rows, the reference has %zu", filter, got->n, ref.n);
  if (ref.n) {
    qsort(got->r, got->n, sizeof *got->r, ba_test_rec_cmp);
    qsort(ref.r, ref.n, sizeof *ref.r, ba_test_rec_cmp);
    for (size_t i = 0; i < ref.n; i++)
      if (!rec_equal(&got->r[i], &ref.r[i], MASK)) fail_msg("filter '%s': row %zu of %zu differs", filter, i, ref.n);
  }
  ba_test_rows_free(&ref);
}

typedef struct warns {
  int n;
  char last[512];
} warns_t;

static void on_warn(void *ctx, const char *msg) {
  warns_t *w = ctx;
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", msg);
}

/* The query over s (opened by the caller, or here when s is NULL). */
static void run_on(ba_store_t *s, const char *dir, const char *filter, int live, ba_test_rows_t *out, ba_query_stats_t *st,
                   warns_t *w) {
  ba_store_t *own = NULL;
  if (!s) {
    assert_int_equal(ba_store_open(dir, &own), BA_OK);
    s = own;
  }
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), BA_OK);
  ba_query_set_live(q, live);
  assert_int_equal(ba_query_compile(q, filter), BA_OK);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.out_cols = BA_COL_ALL;
  if (w) {
    o.warn = on_warn;
    o.warn_ctx = w;
  }
  assert_int_equal(ba_query_run(q, s, &o, ba_test_rows_keep, out, st), BA_OK);
  assert_int_equal(st->rows_matched, out->n);
  ba_query_free(q);
  ba_store_close(own);
}

static ba_store_writer_t *writer(const char *dir, int threads) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = BR;
  o.slice_seconds = (uint32_t)SLICE_S;
  o.threads = threads;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  return w;
}

/* Records in two slices, in time order (both slices stay open). */
static void two_slices(gen_t *g, size_t n, uint64_t seed) {
  gen_records(g, n, seed, T0 + 1800ull * 1000000000ull, 3600ull * 1000000000ull, 1);
}

static void flushed_rows_visible(int threads) {
  char *dir = ba_test_mkdtemp();
  gen_t g;
  two_slices(&g, 3000, 11 + (uint64_t)threads);
  unsigned char *pick = calloc(g.n, 1);
  ba_store_writer_t *w = writer(dir, threads);
  ba_rng_t rng;
  ba_rng_seed(&rng, 5);
  size_t at = 0, checks = 0;
  while (at < g.n) {
    size_t k = 1 + ba_rng_below(&rng, 150);
    if (k > g.n - at) k = g.n - at;
    assert_int_equal(ba_store_writer_append(w, g.r + at, k), BA_OK);
    memset(pick + at, 1, k);
    at += k;
    if (ba_rng_below(&rng, 3) && at < g.n) continue;
    assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
    for (size_t f = 0; f < NFILTERS; f++) {
      ba_test_rows_t got = {0};
      ba_query_stats_t st;
      warns_t wn = {0};
      run_on(NULL, dir, g_filters[f], 1, &got, &st, &wn);
      expect_rows(&got, &g, pick, g_filters[f]);
      assert_int_equal(wn.n, 0);
      ba_test_rows_free(&got);
    }
    {
      /* a window: rows of both slices around the boundary */
      uint64_t ws = T0 + 2400ull * 1000000000ull, we = T0 + 4000ull * 1000000000ull;
      ba_test_rows_t got = {0};
      ba_store_t *s;
      assert_int_equal(ba_store_open(dir, &s), BA_OK);
      ba_query_t *q;
      assert_int_equal(ba_query_create(&q), BA_OK);
      assert_int_equal(ba_query_compile(q, "proto tcp"), BA_OK);
      ba_query_exec_opts_t o;
      ba_query_exec_opts_init(&o);
      o.out_cols = BA_COL_ALL;
      o.start_ns = ws;
      o.end_ns = we;
      ba_query_stats_t wst;
      assert_int_equal(ba_query_run(q, s, &o, ba_test_rows_keep, &got, &wst), BA_OK);
      unsigned char *inw = malloc(g.n);
      for (size_t i = 0; i < g.n; i++) inw[i] = pick[i] && g.r[i].first_ns >= ws && g.r[i].first_ns < we;
      expect_rows(&got, &g, inw, "proto tcp");
      free(inw);
      ba_test_rows_free(&got);
      ba_query_free(q);
      ba_store_close(s);
    }
    ba_test_rows_t none = {0};
    ba_query_stats_t st;
    run_on(NULL, dir, "any", 0, &none, &st, NULL);
    assert_int_equal(none.n, 0); /* no slice finished yet: only live rows exist */
    ba_test_rows_free(&none);
    checks++;
  }
  assert_true(checks > 5);
  uint64_t blocks = 0, bytes = 0;
  ba_store_writer_live_stats(w, &blocks, &bytes);
  assert_true(blocks > 0 && bytes > 0);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  /* Finished: the segments (dead LIVE bytes inside) read as before, live or not. */
  for (int live = 0; live < 2; live++)
    for (size_t f = 0; f < NFILTERS; f++) {
      ba_test_rows_t got = {0};
      ba_query_stats_t st;
      run_on(NULL, dir, g_filters[f], live, &got, &st, NULL);
      expect_rows(&got, &g, pick, g_filters[f]);
      ba_test_rows_free(&got);
    }
  free(pick);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

static void test_flushed_rows_visible_threads(void **state) {
  (void)state;
  flushed_rows_visible(2);
}

static void test_flushed_rows_visible_caller(void **state) {
  (void)state;
  flushed_rows_visible(1);
}

/* A flush only writes what waited age_ns: a fresh group stays in memory. */
static void test_flush_age(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  two_slices(&g, 10, 3);
  ba_store_writer_t *w = writer(dir, 2);
  assert_int_equal(ba_store_writer_append(w, g.r, 10), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 3600ull * 1000000000ull), BA_OK);
  ba_test_rows_t got = {0};
  ba_query_stats_t st;
  run_on(NULL, dir, "any", 1, &got, &st, NULL);
  assert_int_equal(got.n, 0);
  ba_test_rows_free(&got);
  usleep(20000);
  assert_int_equal(ba_store_writer_flush(w, 10000000ull), BA_OK); /* 10 ms */
  run_on(NULL, dir, "any", 1, &got, &st, NULL);
  assert_int_equal(got.n, 10);
  ba_test_rows_free(&got);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

static void test_crashed_writer_journal(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  two_slices(&g, 1500, 21);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ba_store_writer_t *w = NULL;
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    o.block_rows = BR;
    o.slice_seconds = (uint32_t)SLICE_S;
    if (ba_store_writer_open(dir, &o, &w) != BA_OK) _exit(3);
    for (size_t at = 0; at < g.n; at += 37) {
      size_t k = g.n - at < 37 ? g.n - at : 37;
      if (ba_store_writer_append(w, g.r + at, k) != BA_OK || ba_store_writer_flush(w, 0) != BA_OK) _exit(4);
    }
    _exit(0); /* dies with both slices open: journals with LIVE blocks */
  }
  int wst = 0;
  assert_int_equal(waitpid(pid, &wst, 0), pid);
  assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  unsigned char *all = malloc(g.n);
  memset(all, 1, g.n);
  for (size_t f = 0; f < NFILTERS; f++) {
    ba_test_rows_t got = {0};
    ba_query_stats_t st;
    warns_t wn = {0};
    run_on(NULL, dir, g_filters[f], 1, &got, &st, &wn);
    expect_rows(&got, &g, all, g_filters[f]);
    assert_int_equal(wn.n, 0);
    ba_test_rows_free(&got);
  }
  /* Recovery: every complete group, also those after LIVE blocks, and the
   * trailing LIVE rows as each slice's last group: every flushed row. */
  ba_store_writer_t *w = writer(dir, 2);
  assert_int_equal(ba_store_writer_recovered(w), g.n);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  for (size_t f = 0; f < NFILTERS; f++) {
    ba_test_rows_t got = {0};
    ba_query_stats_t st;
    run_on(NULL, dir, g_filters[f], 0, &got, &st, NULL);
    expect_rows(&got, &g, all, g_filters[f]);
    ba_test_rows_free(&got);
  }
  free(all);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

/* Store handle opened while the slices were journals; finished before the
 * run: the run finds the new segments (no journals any more). */
static void test_finished_after_open(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  two_slices(&g, 900, 31);
  ba_store_writer_t *w = writer(dir, 2);
  assert_int_equal(ba_store_writer_append(w, g.r, g.n), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  assert_int_equal(ba_store_segment_count(s), 0);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  unsigned char *all = malloc(g.n);
  memset(all, 1, g.n);
  for (size_t f = 0; f < NFILTERS; f++) {
    ba_test_rows_t got = {0};
    ba_query_stats_t st;
    warns_t wn = {0};
    run_on(s, dir, g_filters[f], 1, &got, &st, &wn);
    expect_rows(&got, &g, all, g_filters[f]);
    assert_int_equal(wn.n, 0);
    ba_test_rows_free(&got);
  }
  ba_store_close(s);
  free(all);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

/* The writer finishes both slices from inside the sink, while the first
 * journal is being read: the first slice is read from the journal as it was
 * when opened (its flushed rows: the rows appended after the flush went in
 * with the final group, beyond what the reader saw); the second journal is
 * gone when the run comes to it, so its segment is read (all its rows). */
static void test_finished_during_read(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  two_slices(&g, 1200, 41);
  size_t first = 0; /* records of the first slice */
  while (first < g.n && g.r[first].first_ns < T0 + SLICE_S * 1000000000ull) first++;
  assert_true(first > 3 * BR && first < g.n - 3 * BR);
  ba_store_writer_t *w = writer(dir, 2);
  size_t flushed = g.n - 20; /* the last 20 records (second slice) are not flushed */
  assert_int_equal(ba_store_writer_append(w, g.r, flushed), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g.r + flushed, g.n - flushed), BA_OK);
  unsigned char *pick = malloc(g.n);
  memset(pick, 1, g.n);
  ba_test_rows_t got = {0};
  got.before = close_once;
  got.before_ctx = &w;
  ba_query_stats_t st;
  warns_t wn = {0};
  run_on(NULL, dir, "any", 1, &got, &st, &wn);
  assert_null(w); /* closed by the sink */
  expect_rows(&got, &g, pick, "any");
  assert_int_equal(wn.n, 0);
  ba_test_rows_free(&got);
  /* And with the unflushed rows in the first slice instead: not seen. */
  ba_test_rmtree(dir);
  w = writer(dir, 2);
  /* the unflushed rows of the first slice stay in its open group */
  size_t q = first % BR;
  assert_true(q >= 2);
  size_t split = first - q / 2;
  assert_int_equal(ba_store_writer_append(w, g.r, split), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g.r + split, g.n - split), BA_OK);
  /* the second slice's rows: flushed at the finish, read from its segment */
  memset(pick + split, 0, first - split);
  got.before = close_once;
  got.before_ctx = &w;
  run_on(NULL, dir, "any", 1, &got, &st, &wn);
  assert_null(w);
  expect_rows(&got, &g, pick, "any");
  assert_int_equal(wn.n, 0);
  ba_test_rows_free(&got);
  free(pick);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

/* "seg-YYYYMMDDTHHMMSSZ.bitarc" (doc/format.md §1). */
static int seg_name(uint64_t start_ns, char *out, size_t cap) {
  time_t t = (time_t)(start_ns / 1000000000ull);
  struct tm tm;
  if (!gmtime_r(&t, &tm)) return -1;
  snprintf(out, cap, "seg-%04d%02d%02dT%02d%02d%02dZ.bitarc", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec);
  return 0;
}

/* Offsets of the row groups of a journal with GROUP blocks only (§2.3). */
static size_t group_offsets(const uint8_t *b, size_t len, size_t *offs, size_t cap) {
  size_t off = 64, k = 0;
  while (off + 32 + 24 + 4 * 29 <= len && k < cap) {
    const uint8_t *p = b + off + 32;
    size_t total = 32 + 24 + 4 * 29;
    for (int c = 0; c < 29; c++)
      total += (size_t)p[24 + 4 * c] | (size_t)p[25 + 4 * c] << 8 | (size_t)p[26 + 4 * c] << 16 |
               (size_t)p[27 + 4 * c] << 24;
    offs[k++] = off;
    off += total;
  }
  return k;
}

static void copy_file(const char *from, const char *to) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(from, &len);
  assert_non_null(b);
  assert_int_equal(ba_test_write_file(to, b, len), 0);
  free(b);
}

/* A listing that saw the journal and the segment it became (readdir during
 * the rename): read once. */
static void test_journal_and_segment(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp(), *copy = ba_test_mkdtemp();
  gen_t g;
  gen_records(&g, 500, 51, T0 + 10ull * 1000000000ull, 600ull * 1000000000ull, 1);
  ba_store_writer_t *w = writer(dir, 2);
  assert_int_equal(ba_store_writer_append(w, g.r, g.n), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
  char name[256], path[512], cpath[512];
  assert_int_equal(seg_name(T0, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s.open", dir, name);
  snprintf(cpath, sizeof cpath, "%s/%s.open", copy, name);
  copy_file(path, cpath);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  ba_store_t *s;
  assert_int_equal(ba_store_open(copy, &s), BA_OK); /* no segment yet */
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(cpath, sizeof cpath, "%s/%s", copy, name);
  copy_file(path, cpath); /* now both the journal and its segment */
  unsigned char *all = malloc(g.n);
  memset(all, 1, g.n);
  ba_test_rows_t got = {0};
  ba_query_stats_t st;
  warns_t wn = {0};
  run_on(s, copy, "any", 1, &got, &st, &wn);
  expect_rows(&got, &g, all, "any");
  assert_int_equal(wn.n, 0);
  ba_test_rows_free(&got);
  ba_store_close(s);
  free(all);
  gen_free(&g);
  ba_test_rmtree(dir);
  ba_test_rmtree(copy);
  free(dir);
  free(copy);
}

/* Torn last group: silent. A damaged complete group: reported, the rows
 * before it delivered. */
static void test_torn_and_damaged(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp(), *copy = ba_test_mkdtemp();
  gen_t g;
  gen_records(&g, 5 * BR, 61, T0 + 10ull * 1000000000ull, 600ull * 1000000000ull, 1);
  ba_store_writer_t *w = writer(dir, 1);
  assert_int_equal(ba_store_writer_append(w, g.r, g.n), BA_OK); /* 5 full groups */
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK);
  char name[256], path[512], cpath[512];
  assert_int_equal(seg_name(T0, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s.open", dir, name);
  snprintf(cpath, sizeof cpath, "%s/%s.open", copy, name);
  size_t len = 0;
  uint8_t *b = ba_test_read_file(path, &len);
  assert_non_null(b);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  unsigned char *pick = malloc(g.n);
  /* torn: the last group cut in its middle */
  size_t offs[8];
  assert_int_equal(group_offsets(b, len, offs, 8), 5);
  assert_int_equal(ba_test_write_file(cpath, b, offs[4] + (len - offs[4]) / 2), 0);
  memset(pick, 1, g.n);
  memset(pick + 4 * BR, 0, BR);
  ba_test_rows_t got = {0};
  ba_query_stats_t st;
  warns_t wn = {0};
  run_on(NULL, copy, "any", 1, &got, &st, &wn);
  expect_rows(&got, &g, pick, "any");
  assert_int_equal(wn.n, 0);
  assert_int_equal(st.segments_damaged, 0);
  ba_test_rows_free(&got);
  /* damaged: a byte inside the second group (complete) */
  b[offs[1] + (offs[2] - offs[1]) / 2] ^= 0x5A;
  assert_int_equal(ba_test_write_file(cpath, b, len), 0);
  memset(pick + BR, 0, g.n - BR);
  run_on(NULL, copy, "any", 1, &got, &st, &wn);
  expect_rows(&got, &g, pick, "any");
  assert_int_equal(wn.n, 1);
  assert_non_null(strstr(wn.last, name));
  assert_non_null(strstr(wn.last, "row group 1"));
  assert_int_equal(st.segments_damaged, 1);
  ba_test_rows_free(&got);
  free(b);
  free(pick);
  gen_free(&g);
  ba_test_rmtree(dir);
  ba_test_rmtree(copy);
  free(dir);
  free(copy);
}

/* ba_query_run_multi over a store with open journals and one without: the
 * merged rows are the reference's, in start-time order. */
static void test_multi_store_live(void **state) {
  (void)state;
  char *da = ba_test_mkdtemp(), *db = ba_test_mkdtemp();
  gen_t ga, gb;
  two_slices(&ga, 700, 71);
  two_slices(&gb, 500, 72);
  ba_store_writer_t *wa = writer(da, 2), *wb = writer(db, 1);
  assert_int_equal(ba_store_writer_append(wa, ga.r, ga.n), BA_OK);
  assert_int_equal(ba_store_writer_flush(wa, 0), BA_OK);
  assert_int_equal(ba_store_writer_append(wb, gb.r, gb.n), BA_OK);
  assert_int_equal(ba_store_writer_close(wb), BA_OK);
  gen_t all = {0};
  all.n = ga.n + gb.n;
  all.r = calloc(all.n, sizeof *all.r);
  memcpy(all.r, ga.r, ga.n * sizeof *all.r);
  memcpy(all.r + ga.n, gb.r, gb.n * sizeof *all.r);
  unsigned char *pick = malloc(all.n);
  memset(pick, 1, all.n);
  ba_store_t *st[2];
  assert_int_equal(ba_store_open(da, &st[0]), BA_OK);
  assert_int_equal(ba_store_open(db, &st[1]), BA_OK);
  for (size_t f = 0; f < NFILTERS; f++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), BA_OK);
    assert_int_equal(ba_query_compile(q, g_filters[f]), BA_OK);
    ba_query_exec_opts_t o;
    ba_query_exec_opts_init(&o);
    o.out_cols = BA_COL_ALL;
    ba_test_rows_t got = {0};
    ba_query_stats_t qs;
    assert_int_equal(ba_query_run_multi(q, st, 2, &o, ba_test_rows_keep, &got, &qs), BA_OK);
    for (size_t i = 1; i < got.n; i++) assert_true(got.r[i - 1].first_ns <= got.r[i].first_ns);
    expect_rows(&got, &all, pick, g_filters[f]);
    ba_test_rows_free(&got);
    ba_query_free(q);
  }
  ba_store_close(st[0]);
  ba_store_close(st[1]);
  assert_int_equal(ba_store_writer_close(wa), BA_OK);
  free(pick);
  free(all.r);
  gen_free(&ga);
  gen_free(&gb);
  ba_test_rmtree(da);
  ba_test_rmtree(db);
  free(da);
  free(db);
}

int main(void) {
  query_set_par_min_rows(0); /* the worker path on these small stores too */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flushed_rows_visible_threads), cmocka_unit_test(test_flushed_rows_visible_caller),
      cmocka_unit_test(test_flush_age),                    cmocka_unit_test(test_crashed_writer_journal),
      cmocka_unit_test(test_finished_after_open),          cmocka_unit_test(test_finished_during_read),
      cmocka_unit_test(test_journal_and_segment),          cmocka_unit_test(test_torn_and_damaged),
      cmocka_unit_test(test_multi_store_live),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
