/* Candidate rows read ahead (exec.c): with two threads, the planning worker
 * and, while it waits, the caller's thread read later segments' candidates
 * into packed buffers while earlier segments are delivered. The records,
 * their order and the stats must be those of one thread: on a plain and a
 * clustered store (time order), with the worker paused so that the caller
 * reads ahead itself, with few or no rows allowed to be held read ahead, and
 * with damaged row groups (counted, skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/query.h"
#include "testsupport.h"
#include "query/query_internal.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define HOUR_NS (3600ull * 1000000000ull)
#define BASE_NS (1720656000ull * 1000000000ull) /* 2024-07-11T00:00:00Z */
#define NSLICES 6
#define NRECS 48000

static char *g_dir;

static void gen_store(void) {
  ba_rng_t r;
  ba_rng_seed(&r, 77);
  ba_record_t *g = calloc(NRECS, sizeof *g);
  assert_non_null(g);
  static const uint16_t svc[] = {80, 443, 53, 22, 445, 123};
  for (size_t i = 0; i < NRECS; i++) {
    ba_record_t *x = &g[i];
    x->kind = BA_REC_FLOW;
    x->ipver = 4;
    /* slice by slice (the writer keeps few open), out of time order inside
     * one: a plain segment's rows are not in time order, a clustered one's
     * are delivered in it */
    x->first_ns = BASE_NS + (uint64_t)(i * NSLICES / NRECS) * HOUR_NS + ba_rng_below(&r, 3600) * 1000000000ull + i;
    x->last_ns = x->first_ns + ba_rng_below(&r, 5000000000ull);
    ba_addr_set_v4(x->src, 0x0A040000u | (uint32_t)ba_rng_zipf(&r, 200, 1.1));
    ba_addr_set_v4(x->dst, 0xAC100000u | (uint32_t)ba_rng_below(&r, 1u << 16));
    x->proto = ba_rng_below(&r, 4) ? 6 : 17;
    x->src_port = (uint16_t)(1024 + ba_rng_below(&r, 60000));
    x->dst_port = svc[ba_rng_zipf(&r, NELEM(svc), 1.0)];
    x->packets = 1 + ba_rng_zipf(&r, 10000, 1.2);
    x->bytes = x->packets * (40 + ba_rng_below(&r, 1400));
    x->tcp_flags = (uint8_t)ba_rng_below(&r, 64);
  }
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 64; /* many groups: candidates spread over them */
  o.slice_seconds = 3600;
  o.time_bin_seconds = 60;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(g_dir, &o, &w), 0);
  for (size_t i = 0; i < NRECS; i += 1000) assert_int_equal(ba_store_writer_append(w, g + i, 1000), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  free(g);
}

static void run(ba_store_t *st, const char *f, int threads, ba_test_recs_t *out, ba_query_stats_t *s) {
  memset(out, 0, sizeof *out);
  ba_test_query_recs(st, f, threads, 0, out, s);
}

static const char *const filters[] = {"src ip 10.4.0.3", "src ip 10.4.0.150 or dst port 22", "proto udp",
                                      "src ip 10.4.0.7 and bytes > 3000", "dst port 443", "any"};

/* Every filter on two threads (worker paused or not) == one thread; returns
 * the damaged rows seen. */
static uint64_t check_all(const char *what) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(g_dir, &st), 0);
  uint64_t damaged = 0;
  for (size_t k = 0; k < NELEM(filters); k++) {
    ba_test_recs_t want, got;
    ba_query_stats_t ws, gs;
    run(st, filters[k], 1, &want, &ws);
    damaged += ws.rows_damaged;
    /* pause 0/1: worker running or paused (the caller reads ahead itself);
     * 2/3: few rows may be held read ahead (some segments are read when
     * delivered), none at all */
    for (int pause = 0; pause < 4; pause++) {
      query_set_par_worker_pause(pause == 1 ? 3000 : 0);
      query_set_prefetch_held_rows(pause == 2 ? 1500 : pause == 3 ? 0 : UINT64_C(1) << 19);
      run(st, filters[k], 2, &got, &gs);
      if (got.n != want.n || (got.n && memcmp(got.v, want.v, got.n * sizeof *got.v)))
        fail_msg("%s, '%s', pause %d: %zu records, one thread %zu (or other bytes, order)", what, filters[k], pause,
                 got.n, want.n);
      if (gs.rows_matched != ws.rows_matched || gs.rows_candidate != ws.rows_candidate ||
          gs.rows_damaged != ws.rows_damaged || gs.blocks_read != ws.blocks_read || gs.bytes != ws.bytes)
        fail_msg("%s, '%s', pause %d: stats differ (damaged %llu vs %llu, blocks %llu vs %llu)", what, filters[k],
                 pause, (unsigned long long)gs.rows_damaged, (unsigned long long)ws.rows_damaged,
                 (unsigned long long)gs.blocks_read, (unsigned long long)ws.blocks_read);
      free(got.v);
    }
    query_set_par_worker_pause(0);
    query_set_prefetch_held_rows(UINT64_C(1) << 19);
    assert_true(want.n > 0);
    free(want.v);
  }
  ba_store_close(st);
  return damaged;
}

/* Flips a bit every 4093 bytes of segment i's row data (its column blocks:
 * from the header to index_off, read from the footer). */
static void damage_rows(size_t i) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(g_dir, &st), 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_dir, ba_store_segment_name(st, i));
  ba_store_close(st);
  uint64_t index_off, dir_off, table_off, len;
  ba_test_seg_offsets(path, &index_off, &dir_off, &table_off, &len);
  assert_true(index_off > 4096 && index_off < len);
  ba_test_flip_bytes(path, 2048, index_off, 4093);
}

static void test_ahead(void **state) {
  (void)state;
  g_dir = ba_test_mkdtemp();
  gen_store();
  assert_int_equal(check_all("plain"), 0);
  size_t n = 0;
  char err[256] = "";
  assert_int_equal(ba_store_cluster(g_dir, 2, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  assert_true(n >= NSLICES);
  assert_int_equal(check_all("clustered"), 0);
  damage_rows(1);
  damage_rows(4);
  assert_true(check_all("clustered, damaged row groups") > 0);
  ba_test_rmtree(g_dir);
  free(g_dir);
}

int main(void) {
  query_set_par_min_rows(0); /* the worker on this small store too */
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_ahead)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
