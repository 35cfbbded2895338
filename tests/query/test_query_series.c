/* ba_query_series (bitarc graph): every bin of the series (flows, packets,
 * bytes) equals a naive linear scan of the generated records (filter by
 * ba_query_match, bin by first_ns), on random windows, bin widths (aligned
 * with the stores' start-time index bins or not), filters, measures, thread
 * counts and store sets; the stores hold records exactly on and 1 ns before
 * whole seconds, so every bin edge has records on both sides. Stores: hourly
 * slices with 60 s index bins in arrival order, 15-minute slices with 7 s
 * bins with start times out of order inside
 * slices, and an oLSH-reordered store (no TIME_BIN index). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bitarc/query.h"
#include "bitarc/store.h"
#include "testsupport.h"
#include "../archive/store_gen.h"

#define NSTORES 3
#define NS 1000000000ull
static const uint64_t T0 = 1763000000ull * NS; /* 20 s after a whole minute */
static const uint64_t SPAN = 3 * 3600 * NS;

static char *g_dirs[NSTORES];
static gen_t g_gen[NSTORES];
static ba_store_t *g_st[NSTORES];

/* Records on bin edges: first_ns on a whole second and 1 ns before one. */
static void add_edges(gen_t *g, uint64_t seed) {
  ba_rng_t rng;
  ba_rng_seed(&rng, seed);
  size_t extra = 1500, n0 = g->n;
  g->r = realloc(g->r, (n0 + extra) * sizeof(*g->r));
  assert_non_null(g->r);
  for (size_t i = 0; i < extra; i++) {
    ba_record_t *r = &g->r[n0 + i];
    *r = g->r[ba_rng_below(&rng, n0)]; /* fields of a random record */
    uint64_t sec = ba_rng_below(&rng, SPAN / NS);
    sec -= sec % (1 + ba_rng_below(&rng, 4) * 29); /* often a multiple of 30 s, 60 s, 90 s */
    r->first_ns = T0 + sec * NS - (i & 1);
    r->last_ns = r->first_ns + ba_rng_below(&rng, 3 * NS);
  }
  g->n = n0 + extra;
}

static int cmp_first(const void *a, const void *b) {
  const ba_record_t *x = a, *y = b;
  return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

/* Shuffles each run of k records (start times out of order within a few
 * minutes, as late exporters; a slice never reopens). */
static void shuffle_runs(gen_t *g, size_t k, uint64_t seed) {
  ba_rng_t rng;
  ba_rng_seed(&rng, seed);
  for (size_t a = 0; a < g->n; a += k) {
    size_t m = g->n - a < k ? g->n - a : k;
    for (size_t i = m; i > 1; i--) {
      size_t j = (size_t)ba_rng_below(&rng, i);
      ba_record_t t = g->r[a + i - 1];
      g->r[a + i - 1] = g->r[a + j];
      g->r[a + j] = t;
    }
  }
}

static void write_store(const char *dir, const gen_t *g, uint32_t slice, uint32_t bin, ba_reorder_t reorder) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = slice;
  o.time_bin_seconds = bin;
  o.block_rows = 700;
  o.reorder = reorder;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), 0);
  assert_int_equal(ba_store_writer_append(w, g->r, g->n), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
}

static int setup(void **state) {
  (void)state;
  static const uint32_t slices[NSTORES] = {3600, 900, 3600}, bins[NSTORES] = {60, 7, 60};
  for (int s = 0; s < NSTORES; s++) {
    gen_records(&g_gen[s], 9000 + 3000 * (size_t)s, 700 + (uint64_t)s, T0, SPAN, 1);
    add_edges(&g_gen[s], 900 + (uint64_t)s);
    qsort(g_gen[s].r, g_gen[s].n, sizeof(ba_record_t), cmp_first); /* arrival order */
    if (s == 1) shuffle_runs(&g_gen[s], 1000, 31);                  /* out of order inside slices */
    g_dirs[s] = ba_test_mkdtemp();
    write_store(g_dirs[s], &g_gen[s], slices[s], bins[s], s == 2 ? BA_REORDER_OLSH : BA_REORDER_NONE);
    assert_int_equal(ba_store_open(g_dirs[s], &g_st[s]), 0);
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int s = 0; s < NSTORES; s++) {
    ba_store_close(g_st[s]);
    ba_test_rmtree(g_dirs[s]);
    free(g_dirs[s]);
    gen_free(&g_gen[s]);
  }
  return 0;
}

/* The naive series: every generated record of the chosen stores. */
static void naive(const ba_query_t *q, const int *use, const ba_query_series_opts_t *o, ba_query_series_bin_t *out) {
  memset(out, 0, o->nbins * sizeof(*out));
  for (int s = 0; s < NSTORES; s++) {
    if (!use[s]) continue;
    for (size_t i = 0; i < g_gen[s].n; i++) {
      const ba_record_t *r = &g_gen[s].r[i];
      if (r->first_ns < o->start_ns || (r->first_ns - o->start_ns) / o->bin_ns >= o->nbins) continue;
      if (!ba_query_match(q, r)) continue;
      ba_query_series_bin_t *b = &out[(r->first_ns - o->start_ns) / o->bin_ns];
      if (o->measures & BA_SERIES_FLOWS) b->flows++;
      if (o->measures & BA_SERIES_PACKETS) b->packets += r->packets;
      if (o->measures & BA_SERIES_BYTES) b->bytes += r->bytes;
    }
  }
}

static const char *const g_filters[] = {
  "any", "proto tcp", "dst port 443", "src net 10.0.0.0/22 and not proto udp", "port in [53 80 443]",
  "ipv6", "bytes > 5000", "proto tcp and flags S", "dst port > 1023 or proto icmp", "not any",
};

static void one_case(ba_rng_t *rng, int c) {
  static const uint64_t widths[] = {1, 7, 30, 60, 90, 300, 420, 600, 3600};
  ba_query_series_opts_t o;
  ba_query_series_opts_init(&o);
  o.bin_ns = widths[ba_rng_below(rng, sizeof(widths) / sizeof(widths[0]))] * NS;
  /* start before, inside or after the data, on a whole second; aligned to the bin or not */
  uint64_t sec = ba_rng_below(rng, (SPAN + 1200 * NS) / NS);
  if (ba_rng_below(rng, 2)) sec -= sec % (o.bin_ns / NS);
  o.start_ns = T0 - 600 * NS + sec * NS;
  o.nbins = (size_t)(1 + ba_rng_below(rng, o.bin_ns <= 7 * NS ? 400 : 120));
  o.measures = (unsigned)(1 + ba_rng_below(rng, 7));
  o.threads = (int)(1 + ba_rng_below(rng, 2));
  int use[NSTORES], n = 0;
  ba_store_t *st[NSTORES];
  for (int s = 0; s < NSTORES; s++)
    if ((use[s] = ba_rng_below(rng, 3) != 0)) st[n++] = g_st[s];
  const char *f = g_filters[ba_rng_below(rng, sizeof(g_filters) / sizeof(g_filters[0]))];
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, f), 0);
  ba_query_series_bin_t *got = calloc(o.nbins, sizeof(*got)), *want = calloc(o.nbins, sizeof(*want));
  ba_query_stats_t qs;
  assert_int_equal(ba_query_series(q, st, (size_t)n, &o, got, &qs), 0);
  naive(q, use, &o, want);
  uint64_t total = 0;
  for (size_t k = 0; k < o.nbins; k++) {
    total += want[k].flows;
    if (got[k].flows != want[k].flows || got[k].packets != want[k].packets || got[k].bytes != want[k].bytes)
      fail_msg("case %d '%s' bin %zu of %zu (start %llu s, width %llu s, measures %u): got %llu/%llu/%llu, "
               "want %llu/%llu/%llu",
               c, f, k, o.nbins, (unsigned long long)(o.start_ns / NS), (unsigned long long)(o.bin_ns / NS),
               o.measures, (unsigned long long)got[k].flows, (unsigned long long)got[k].packets,
               (unsigned long long)got[k].bytes, (unsigned long long)want[k].flows,
               (unsigned long long)want[k].packets, (unsigned long long)want[k].bytes);
  }
  if (o.measures & BA_SERIES_FLOWS) assert_int_equal(qs.rows_matched, total);
  free(got);
  free(want);
  ba_query_free(q);
}

static void test_series_vs_scan(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 2026);
  for (int c = 0; c < 80; c++) one_case(&rng, c);
}

static int count_sink(void *ctx, const ba_record_t *r, size_t n) {
  (void)ctx;
  (void)r;
  (void)n;
  return 0;
}

/* The whole data range in 60 s bins aligned with the index bins, every
 * store, each filter: answered from the index for flows, and the bins add
 * up to ba_query_run's count. */
static void test_series_sums_to_count(void **state) {
  (void)state;
  for (size_t f = 0; f < sizeof(g_filters) / sizeof(g_filters[0]); f++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, g_filters[f]), 0);
    ba_query_series_opts_t o;
    ba_query_series_opts_init(&o);
    o.start_ns = (T0 / (60 * NS) - 1) * 60 * NS;
    o.bin_ns = 60 * NS;
    o.nbins = SPAN / o.bin_ns + 3;
    o.measures = BA_SERIES_FLOWS;
    ba_query_series_bin_t *b = calloc(o.nbins, sizeof(*b));
    assert_int_equal(ba_query_series(q, g_st, NSTORES, &o, b, NULL), 0);
    uint64_t sum = 0, want = 0;
    for (size_t k = 0; k < o.nbins; k++) sum += b[k].flows;
    for (int s = 0; s < NSTORES; s++) {
      ba_query_exec_opts_t eo;
      ba_query_exec_opts_init(&eo);
      eo.count_only = 1;
      ba_query_stats_t qs;
      assert_int_equal(ba_query_run(q, g_st[s], &eo, count_sink, NULL, &qs), 0);
      want += qs.rows_matched;
    }
    assert_int_equal(sum, want);
    free(b);
    ba_query_free(q);
  }
}

/* Flows of index-answerable filters in bins aligned with the store's 60 s
 * TIME_BIN bitmaps come from the index alone: no block is read. */
static void test_series_flows_from_index(void **state) {
  (void)state;
  static const char *const exact[] = {"any", "proto tcp", "dst port 443", "proto udp and not dst port 53"};
  for (size_t f = 0; f < sizeof(exact) / sizeof(exact[0]); f++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, exact[f]), 0);
    ba_query_series_opts_t o;
    ba_query_series_opts_init(&o);
    o.start_ns = (T0 / (60 * NS) + 2) * 60 * NS; /* on the index bins of the hourly slices */
    o.bin_ns = 300 * NS;
    o.nbins = 30;
    o.measures = BA_SERIES_FLOWS;
    ba_query_series_bin_t b[30];
    ba_query_stats_t qs;
    assert_int_equal(ba_query_series(q, g_st, 1, &o, b, &qs), 0);
    assert_true(qs.rows_matched > 0);
    if (qs.blocks_read != 0) fail_msg("'%s': %llu blocks read", exact[f], (unsigned long long)qs.blocks_read);
    o.measures = BA_SERIES_BYTES; /* bytes read their column */
    assert_int_equal(ba_query_series(q, g_st, 1, &o, b, &qs), 0);
    assert_true(qs.blocks_read > 0);
    ba_query_free(q);
  }
}

static void test_series_refuses(void **state) {
  (void)state;
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, "any"), 0);
  ba_query_series_opts_t o;
  ba_query_series_opts_init(&o);
  ba_query_series_bin_t b[4];
  o.nbins = 4;
  o.start_ns = T0;
  assert_int_equal(ba_query_series(q, g_st, 1, &o, b, NULL), BA_ERR_INVALID); /* bin width 0 */
  o.bin_ns = 60 * NS;
  o.measures = 0;
  assert_int_equal(ba_query_series(q, g_st, 1, &o, b, NULL), BA_ERR_INVALID);
  o.measures = 8;
  assert_int_equal(ba_query_series(q, g_st, 1, &o, b, NULL), BA_ERR_INVALID);
  o.measures = BA_SERIES_FLOWS;
  o.start_ns = UINT64_MAX - 100 * NS; /* bins past 2^64 ns */
  assert_int_equal(ba_query_series(q, g_st, 1, &o, b, NULL), BA_ERR_INVALID);
  o.start_ns = T0;
  assert_int_equal(ba_query_series(NULL, g_st, 1, &o, b, NULL), BA_ERR_INVALID);
  assert_int_equal(ba_query_series(q, g_st, 1, &o, NULL, NULL), BA_ERR_INVALID);
  assert_int_equal(ba_query_series(q, NULL, 1, &o, b, NULL), BA_ERR_INVALID);
  /* no stores: every bin is zero */
  memset(b, 0xff, sizeof(b));
  assert_int_equal(ba_query_series(q, NULL, 0, &o, b, NULL), 0);
  for (int k = 0; k < 4; k++) assert_int_equal(b[k].flows, 0);
  ba_query_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_series_vs_scan), cmocka_unit_test(test_series_sums_to_count),
                                     cmocka_unit_test(test_series_flows_from_index),
                                     cmocka_unit_test(test_series_refuses)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
