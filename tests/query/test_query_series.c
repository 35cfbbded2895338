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
#include "query/query_internal.h"

#define NSTORES 3
#define BA_TEST_MIN(a, b) ((a) < (b) ? (a) : (b))
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

/* ---------- ba_segment_sum_bins / _groups / _group beside a scan ---------- */

typedef struct recbuf {
  ba_record_t *r;
  size_t n, cap;
} recbuf_t;

static int keep_sink(void *ctx, const ba_record_t *r, size_t n) {
  recbuf_t *b = ctx;
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->r = realloc(b->r, b->cap * sizeof(*b->r));
    assert_non_null(b->r);
  }
  memcpy(b->r + b->n, r, n * sizeof(*r));
  b->n += n;
  return 0;
}

/* The naive sums of rows rows[0..n) (NULL: every row) of a scanned segment. */
static uint64_t naive_rows(const recbuf_t *all, const uint64_t *rows, size_t n, const ba_bin_sums_t *b,
                           uint64_t *want) {
  uint64_t added = 0;
  memset(want, 0, 3 * b->nbins * sizeof(*want));
  for (size_t i = 0; i < (rows ? n : all->n); i++) {
    const ba_record_t *r = &all->r[rows ? rows[i] : i];
    if (r->first_ns < b->start_ns || (r->first_ns - b->start_ns) / b->bin_ns >= b->nbins) continue;
    uint64_t *w = want + 3 * ((r->first_ns - b->start_ns) / b->bin_ns);
    w[0]++;
    w[1] += r->packets;
    w[2] += r->bytes;
    added++;
  }
  return added;
}

static void expect_sums(const char *what, const uint64_t *got, const uint64_t *want, const ba_bin_sums_t *b,
                        uint64_t got_n, uint64_t want_n) {
  for (size_t k = 0; k < 3 * b->nbins; k++)
    if (got[k] != want[k])
      fail_msg("%s: bin %zu value %zu: got %llu, want %llu", what, k / 3, k % 3, (unsigned long long)got[k],
               (unsigned long long)want[k]);
  if (got_n != want_n) fail_msg("%s: %llu rows summed, want %llu", what, (unsigned long long)got_n,
                                (unsigned long long)want_n);
}

/* Every segment of a store: the rows' sums per bin for no row list (every
 * row), every row listed, random rows, whole groups, whole groups plus some
 * rows of others, and group ranges, beside the scanned records. */
static void sums_of_store(ba_store_t *st, ba_rng_t *rng, const char *name) {
  for (size_t si = 0; si < ba_store_segment_count(st); si++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, si, &seg), 0);
    assert_int_equal(ba_segment_info(seg, &in), 0);
    recbuf_t all = {0};
    assert_int_equal(ba_segment_scan(seg, BA_COL_FIRST | BA_COL_PACKETS | BA_COL_BYTES, keep_sink, &all, NULL), 0);
    assert_int_equal(all.n, in.rows);
    uint64_t *rows = malloc((all.n + 1) * sizeof(*rows));
    assert_non_null(rows);
    for (int c = 0; c < 12; c++) {
      ba_bin_sums_t b;
      b.bin_ns = (1 + ba_rng_below(rng, 600)) * NS;
      b.start_ns = in.min_first_ns - ba_rng_below(rng, 2) * ba_rng_below(rng, 1200) * NS +
                   ba_rng_below(rng, 2) * ba_rng_below(rng, in.max_first_ns - in.min_first_ns + 1);
      b.nbins = 1 + (size_t)ba_rng_below(rng, 300);
      uint64_t *got = calloc(3 * b.nbins, sizeof(*got)), *want = calloc(3 * b.nbins, sizeof(*want));
      b.sums = got;
      size_t n = 0;
      int mode = c % 6;
      uint64_t br = in.block_rows, summed = 99, damaged = 99, wn;
      if (mode == 5) { /* a range of groups */
        uint32_t g0 = (uint32_t)ba_rng_below(rng, in.nblocks + 1);
        uint32_t g1 = g0 + (uint32_t)ba_rng_below(rng, in.nblocks - g0 + 1);
        for (uint64_t r = (uint64_t)g0 * br; r < (uint64_t)g1 * br && r < all.n; r++) rows[n++] = r;
        assert_int_equal(ba_segment_sum_groups(seg, g0, g1, &b, &summed, &damaged), 0);
        wn = naive_rows(&all, rows, n, &b, want);
      } else {
        for (size_t i = 0; i < all.n; i++) {
          uint64_t g = i / br;
          int take = mode == 1                  ? 1
                     : mode == 2                ? ba_rng_below(rng, 10) == 0
                     : mode == 3                ? (g * 7 + (uint64_t)c) % 3 == 0
                     : mode == 4                ? (g % 2 == 0 || ba_rng_below(rng, 4) == 0)
                                                : 0;
          if (take) rows[n++] = i;
        }
        if (mode == 0) {
          assert_int_equal(ba_segment_sum_bins(seg, NULL, 0, &b, &summed, &damaged), 0);
          wn = naive_rows(&all, NULL, 0, &b, want);
        } else if (n == 0) {
          free(got);
          free(want);
          continue;
        } else {
          assert_int_equal(ba_segment_sum_bins(seg, rows, n, &b, &summed, &damaged), 0);
          wn = naive_rows(&all, rows, n, &b, want);
        }
      }
      char what[160];
      snprintf(what, sizeof what, "%s segment %zu case %d (mode %d, %zu rows)", name, si, c, mode, n);
      expect_sums(what, got, want, &b, summed, wn);
      assert_int_equal(damaged, 0);
      free(got);
      free(want);
    }
    /* group by group: random offsets, every offset listed, no list */
    uint32_t *idx = malloc((in.block_rows + 1) * sizeof(*idx));
    assert_non_null(idx);
    for (int c = 0; c < 12; c++) {
      ba_bin_sums_t b = {in.min_first_ns - 60 * NS, (1 + ba_rng_below(rng, 300)) * NS, 0, NULL};
      b.nbins = (size_t)((in.max_first_ns - b.start_ns) / b.bin_ns) + 1 - (size_t)ba_rng_below(rng, 2);
      uint64_t *got = calloc(3 * b.nbins, sizeof(*got)), *want = calloc(3 * b.nbins, sizeof(*want));
      b.sums = got;
      uint32_t gi = (uint32_t)ba_rng_below(rng, in.nblocks);
      uint64_t base = (uint64_t)gi * in.block_rows, grows = BA_TEST_MIN(all.n - base, (uint64_t)in.block_rows);
      size_t k = 0, n = 0;
      for (uint64_t r = 0; r < grows; r++)
        if (c % 3 == 1 || (c % 3 == 2 && ba_rng_below(rng, 3) == 0)) idx[k++] = (uint32_t)r;
      for (size_t j = 0; j < k; j++) rows[n++] = base + idx[j];
      if (c % 3 == 0)
        for (uint64_t r = 0; r < grows; r++) rows[n++] = base + r;
      uint64_t summed = 99, damaged = 99;
      assert_int_equal(ba_segment_sum_group(seg, gi, k ? idx : NULL, k, &b, &summed, &damaged), 0);
      uint64_t wn = naive_rows(&all, rows, n, &b, want);
      char what[160];
      snprintf(what, sizeof what, "%s segment %zu group %u case %d (%zu offsets)", name, si, gi, c, k);
      expect_sums(what, got, want, &b, summed, wn);
      assert_int_equal(damaged, 0);
      free(got);
      free(want);
    }
    {
      ba_bin_sums_t b = {in.min_first_ns, NS, 1, NULL};
      uint64_t one[3];
      b.sums = one;
      uint32_t bad2[2] = {1, 1};
      assert_int_equal(ba_segment_sum_group(seg, 0, bad2, 2, &b, NULL, NULL), BA_ERR_INVALID);
      assert_int_equal(ba_segment_sum_group(seg, in.nblocks, NULL, 0, &b, NULL, NULL), BA_ERR_INVALID);
      bad2[0] = in.block_rows;
      assert_int_equal(ba_segment_sum_group(seg, 0, bad2, 1, &b, NULL, NULL), BA_ERR_INVALID);
    }
    free(idx);
    /* refused: rows out of order or past the end, groups past the end */
    ba_bin_sums_t b = {in.min_first_ns, NS, 1, NULL};
    uint64_t one[3];
    b.sums = one;
    uint64_t bad[2] = {1, 0};
    assert_int_equal(ba_segment_sum_bins(seg, bad, 2, &b, NULL, NULL), BA_ERR_INVALID);
    bad[0] = in.rows;
    assert_int_equal(ba_segment_sum_bins(seg, bad, 1, &b, NULL, NULL), BA_ERR_INVALID);
    assert_int_equal(ba_segment_sum_groups(seg, 0, in.nblocks + 1, &b, NULL, NULL), BA_ERR_INVALID);
    b.bin_ns = 0;
    assert_int_equal(ba_segment_sum_bins(seg, NULL, 0, &b, NULL, NULL), BA_ERR_INVALID);
    free(rows);
    free(all.r);
    ba_segment_release(seg);
  }
}

/* A committed segment (tests/archive/data) in a store of its own. */
static char *fixture_store(const char *rel) {
  char *dir = ba_test_fixture_store(rel);
  assert_non_null(dir);
  return dir;
}

static void test_segment_sums(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 77);
  for (int s = 0; s < NSTORES; s++) sums_of_store(g_st[s], &rng, s == 2 ? "olsh store" : "store");
  static const char *const fx[] = {"tests/archive/data/seg-v1_0.bitarc", "tests/archive/data/seg-v2_0.bitarc"};
  for (int i = 0; i < 2; i++) {
    char *dir = fixture_store(fx[i]);
    ba_store_t *st;
    assert_int_equal(ba_store_open(dir, &st), 0);
    sums_of_store(st, &rng, fx[i]);
    ba_store_close(st);
    ba_test_rmtree(dir);
    free(dir);
  }
}

/* ---------- packets and bytes on many small groups, one and two threads ---------- */
/* A bit flipped in the packets column of row group 3 of the first segment
 * (offsets from the footer and the TABLE block, doc/format.md §2.4-2.5): the
 * series skips that group's 64 rows, counts them damaged and sums the rest,
 * on one and two threads. */
static void damaged_block(const char *dir, const gen_t *g) {
  ba_store_t *st;
  char path[4096];
  assert_int_equal(ba_store_open(dir, &st), 0);
  snprintf(path, sizeof path, "%s/%s", dir, ba_store_segment_name(st, 0)); /* the file name */
  ba_store_close(st);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  uint8_t foot[80], hdr[64];
  assert_int_equal(fseek(f, -80, SEEK_END), 0);
  assert_int_equal(fread(foot, 1, 80, f), 80);
  assert_int_equal(fseek(f, 0, SEEK_SET), 0);
  assert_int_equal(fread(hdr, 1, 64, f), 64);
  uint64_t table_off = 0, goff = 0;
  memcpy(&table_off, foot + 24, 8);
  unsigned ncols = (unsigned)hdr[42] | (unsigned)hdr[43] << 8;
  assert_true(ncols > 11);
  size_t ent = 16 + 4 * (size_t)ncols;
  uint8_t e[16 + 4 * 64];
  assert_int_equal(fseek(f, (long)(table_off + 32 + 3 * ent), SEEK_SET), 0);
  assert_int_equal(fread(e, 1, ent, f), ent);
  uint32_t coff = 0;
  memcpy(&goff, e, 8);
  memcpy(&coff, e + 16 + 4 * 10, 4); /* column 10: packets */
  assert_true(coff > 0);
  long pos = (long)(goff + coff + 32 + 2); /* inside the payload: its CRC fails */
  uint8_t byte;
  assert_int_equal(fseek(f, pos, SEEK_SET), 0);
  assert_int_equal(fread(&byte, 1, 1, f), 1);
  byte ^= 0x10;
  assert_int_equal(fseek(f, pos, SEEK_SET), 0);
  assert_int_equal(fwrite(&byte, 1, 1, f), 1);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(ba_store_open(dir, &st), 0);
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, "any"), 0);
  for (int th = 1; th <= 2; th++) {
    ba_query_series_opts_t o;
    ba_query_series_opts_init(&o);
    o.start_ns = T0 / (60 * NS) * 60 * NS - 3600 * NS;
    o.bin_ns = 300 * NS;
    o.nbins = 60;
    o.threads = th;
    ba_query_series_bin_t got[60], want[60];
    memset(want, 0, sizeof want);
    for (size_t i = 0; i < g->n; i++) {
      if (i >= 3 * 64 && i < 4 * 64) continue; /* the damaged group (first segment, rows in time order) */
      const ba_record_t *r = &g->r[i];
      ba_query_series_bin_t *b = &want[(r->first_ns - o.start_ns) / o.bin_ns];
      b->flows++;
      b->packets += r->packets;
      b->bytes += r->bytes;
    }
    ba_query_stats_t qs;
    assert_int_equal(ba_query_series(q, &st, 1, &o, got, &qs), 0);
    assert_int_equal(qs.rows_damaged, 64);
    for (size_t k = 0; k < o.nbins; k++)
      if (memcmp(&got[k], &want[k], sizeof(got[k])))
        fail_msg("damaged, threads %d, bin %zu: got %llu/%llu/%llu, want %llu/%llu/%llu", th, k,
                 (unsigned long long)got[k].flows, (unsigned long long)got[k].packets,
                 (unsigned long long)got[k].bytes, (unsigned long long)want[k].flows,
                 (unsigned long long)want[k].packets, (unsigned long long)want[k].bytes);
  }
  ba_query_free(q);
  ba_store_close(st);
}


/* A store of 64-row groups whose protocol is the same in each group (tcp
 * in two of three groups, udp in the others) and whose destination port
 * varies by row: `proto tcp` selects whole groups, `dst port 443` some rows
 * of every group, `any` every row, `not any` none. Hourly slices of about
 * 100 groups: two threads share a segment's groups. */
static void test_series_groups(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 20000, 4242, T0, SPAN, 1);
  qsort(g.r, g.n, sizeof(ba_record_t), cmp_first);
  ba_rng_t rng;
  ba_rng_seed(&rng, 5);
  static const uint16_t ports[] = {443, 80, 53, 8080};
  for (size_t i = 0; i < g.n; i++) {
    ba_record_t *r = &g.r[i];
    r->kind = BA_REC_FLOW;
    r->ipver = 4;
    ba_addr_set_v4(r->src, 0x0A000001u + (uint32_t)ba_rng_below(&rng, 1000));
    ba_addr_set_v4(r->dst, 0xC0A80001u + (uint32_t)ba_rng_below(&rng, 100));
    r->proto = (i / 64) % 3 ? 6 : 17;
    r->dst_port = ports[ba_rng_below(&rng, 4)];
    r->packets = 1 + ba_rng_below(&rng, 1000);
    r->bytes = r->packets * (40 + ba_rng_below(&rng, 1460));
  }
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t so;
  ba_store_opts_init(&so);
  so.block_rows = 64;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &so, &w), 0);
  assert_int_equal(ba_store_writer_append(w, g.r, g.n), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), 0);
  static const char *const filters[] = {"not any", "dst port 443", "proto tcp", "proto udp", "any",
                                        "proto tcp and dst port 443", "bytes > 100000"};
  uint64_t m0 = T0 / (60 * NS) * 60 * NS; /* on the index's 60 s bins */
  struct { uint64_t start, bin; size_t nbins; } win[] = {
      {m0 - 3600 * NS, 300 * NS, 60},      /* every row: the window covers every segment */
      {m0 + 1800 * NS, 60 * NS, 90},       /* aligned: exact from the index */
      {m0 + 1813 * NS, 300 * NS, 20},      /* not aligned: residual check at the edges */
      {m0 + 3600 * NS, 3600 * NS, 1},      /* one segment's hour */
  };
  for (size_t f = 0; f < sizeof(filters) / sizeof(filters[0]); f++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, filters[f]), 0);
    for (size_t wi = 0; wi < sizeof(win) / sizeof(win[0]); wi++)
      for (int th = 1; th <= 2; th++) {
        ba_query_series_opts_t o;
        ba_query_series_opts_init(&o);
        o.start_ns = win[wi].start;
        o.bin_ns = win[wi].bin;
        o.nbins = win[wi].nbins;
        o.threads = th;
        ba_query_series_bin_t *got = calloc(o.nbins, sizeof(*got)), *want = calloc(o.nbins, sizeof(*want));
        ba_query_stats_t qs;
        assert_int_equal(ba_query_series(q, &st, 1, &o, got, &qs), 0);
        memset(want, 0, o.nbins * sizeof(*want));
        uint64_t total = 0;
        for (size_t i = 0; i < g.n; i++) {
          const ba_record_t *r = &g.r[i];
          if (r->first_ns < o.start_ns || (r->first_ns - o.start_ns) / o.bin_ns >= o.nbins) continue;
          if (!ba_query_match(q, r)) continue;
          ba_query_series_bin_t *b = &want[(r->first_ns - o.start_ns) / o.bin_ns];
          b->flows++;
          b->packets += r->packets;
          b->bytes += r->bytes;
          total++;
        }
        for (size_t k = 0; k < o.nbins; k++)
          if (memcmp(&got[k], &want[k], sizeof(got[k])))
            fail_msg("'%s' window %zu threads %d bin %zu: got %llu/%llu/%llu, want %llu/%llu/%llu", filters[f], wi,
                     th, k, (unsigned long long)got[k].flows, (unsigned long long)got[k].packets,
                     (unsigned long long)got[k].bytes, (unsigned long long)want[k].flows,
                     (unsigned long long)want[k].packets, (unsigned long long)want[k].bytes);
        assert_int_equal(qs.rows_matched, total);
        assert_int_equal(qs.rows_damaged, 0);
        if (f == 0) assert_int_equal(total, 0);
        if (f == 4 && wi == 0) assert_int_equal(total, g.n);
        free(got);
        free(want);
      }
    ba_query_free(q);
  }
  ba_store_close(st);
  damaged_block(dir, &g);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
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
  query_set_par_min_rows(0); /* the worker path on these small stores too */
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_series_vs_scan), cmocka_unit_test(test_series_sums_to_count),
                                     cmocka_unit_test(test_series_flows_from_index),
                                     cmocka_unit_test(test_series_refuses), cmocka_unit_test(test_segment_sums),
                                     cmocka_unit_test(test_series_groups)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
