/* ba_query_run_multi: one query over several stores (overlapping time
 * ranges, different slice widths, flows and packets) returns rows in
 * start-time order, the same rows as the query over one store holding all
 * the records, and the same rows as the naive reference (every generated
 * record through ba_query_match and the window); a limit returns the first
 * rows of the merged order. */
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
#include "test_rows.h"
#include "../archive/store_gen.h"

#define NSTORES 3
#define MASK                                                                                                  \
  (BA_COL_FIRST | BA_COL_LAST | BA_COL_SRC | BA_COL_DST | BA_COL_PORTS | BA_COL_PROTO | BA_COL_FLAGS |       \
   BA_COL_TOS | BA_COL_AS | BA_COL_IF | BA_COL_PACKETS | BA_COL_BYTES | BA_COL_EXPORTER | BA_COL_VLAN |       \
   BA_COL_ICMP | BA_COL_FRAME)

static void expect_same_set(ba_test_rows_t *a, ba_test_rows_t *b) {
  assert_int_equal(a->n, b->n);
  if (!a->n) return;
  qsort(a->r, a->n, sizeof(*a->r), ba_test_rec_cmp);
  qsort(b->r, b->n, sizeof(*b->r), ba_test_rec_cmp);
  for (size_t i = 0; i < a->n; i++)
    if (!rec_equal(&a->r[i], &b->r[i], MASK)) fail_msg("row %zu of %zu differs", i, a->n);
}

static char *g_dirs[NSTORES + 1];
static gen_t g_gen[NSTORES];
static const uint64_t T0 = 1763000000ull * 1000000000ull;

static void write_store(const char *dir, const gen_t *gs, size_t ng, uint32_t slice) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = slice;
  o.block_rows = 500;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), 0);
  for (size_t i = 0; i < ng; i++) assert_int_equal(ba_store_writer_append(w, gs[i].r, gs[i].n), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
}

static int setup(void **state) {
  (void)state;
  static const uint32_t slices[NSTORES] = {3600, 900, 3600};
  for (int s = 0; s < NSTORES; s++) {
    /* overlapping ranges: 0-3 h, 1-5 h, 0.5-2 h */
    uint64_t start = T0 + (uint64_t)(s == 1 ? 3600 : s == 2 ? 1800 : 0) * 1000000000ull;
    uint64_t span = (uint64_t)(s == 1 ? 4 * 3600 : s == 2 ? 5400 : 3 * 3600) * 1000000000ull;
    gen_records(&g_gen[s], 1500 + 500 * (size_t)s, 100 + (uint64_t)s, start, span, 1);  /* arrival order ~ time */
    g_dirs[s] = ba_test_mkdtemp();
    write_store(g_dirs[s], &g_gen[s], 1, slices[s]);
  }
  g_dirs[NSTORES] = ba_test_mkdtemp();
  write_store(g_dirs[NSTORES], g_gen, NSTORES, 3600);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int s = 0; s < NSTORES; s++) gen_free(&g_gen[s]);
  return 0;
}

static void run_case(const char *filter, uint64_t lo, uint64_t hi, uint64_t limit) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, filter), 0);
  ba_store_t *st[NSTORES + 1];
  for (int s = 0; s <= NSTORES; s++) assert_int_equal(ba_store_open(g_dirs[s], &st[s]), 0);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.out_cols = MASK;
  o.start_ns = lo;
  o.end_ns = hi;
  ba_test_rows_t multi = {0}, all = {0}, one = {0}, ref = {0};
  ba_query_stats_t ms;
  assert_int_equal(ba_query_run_multi(q, st, NSTORES, &o, ba_test_rows_keep, &multi, &ms), 0);
  assert_int_equal(ms.rows_matched, multi.n);
  for (size_t i = 1; i < multi.n; i++) assert_true(multi.r[i - 1].first_ns <= multi.r[i].first_ns);
  /* the naive reference: every generated record through the filter */
  for (int s = 0; s < NSTORES; s++)
    for (size_t i = 0; i < g_gen[s].n; i++) {
      const ba_record_t *r = &g_gen[s].r[i];
      if ((lo || hi) && (r->first_ns < lo || r->first_ns >= hi)) continue;
      if (ba_query_match(q, r)) ba_test_rows_keep(&ref, r, 1);
    }
  if (limit) {
    o.limit = limit;
    assert_int_equal(ba_query_run_multi(q, st, NSTORES, &o, ba_test_rows_keep, &all, NULL), 0);
    assert_int_equal(all.n, limit < multi.n ? limit : multi.n);
    for (size_t i = 0; i < all.n; i++) assert_int_equal(all.r[i].first_ns, multi.r[i].first_ns);
  } else {
    assert_int_equal(ba_query_run(q, st[NSTORES], &o, ba_test_rows_keep, &one, NULL), 0);
    expect_same_set(&multi, &one);
    expect_same_set(&multi, &ref);
    assert_true(multi.n > 0);
  }
  ba_test_rows_free(&multi);
  ba_test_rows_free(&all);
  ba_test_rows_free(&one);
  ba_test_rows_free(&ref);
  for (int s = 0; s <= NSTORES; s++) ba_store_close(st[s]);
  ba_query_free(q);
}

static void test_merge_equals_one_store(void **state) {
  (void)state;
  run_case("any", 0, 0, 0);
  run_case("proto tcp and dst port 443", 0, 0, 0);
  run_case("src net 10.0.0.0/20 or ipv6", 0, 0, 0);
  run_case("any", T0 + 2000ull * 1000000000ull, T0 + 9000ull * 1000000000ull, 0);
}

static void test_limit_takes_first_rows(void **state) {
  (void)state;
  run_case("any", 0, 0, 37);
  run_case("proto udp", T0 + 1000ull * 1000000000ull, 0, 500);
}

static void test_refuses(void **state) {
  (void)state;
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, "any"), 0);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.count_only = 1;
  assert_int_equal(ba_query_run_multi(q, NULL, 0, &o, ba_test_rows_keep, NULL, NULL), BA_ERR_INVALID);
  ba_test_rows_t none = {0};
  assert_int_equal(ba_query_run_multi(q, NULL, 0, NULL, ba_test_rows_keep, &none, NULL), 0);  /* no stores, no rows */
  assert_int_equal(none.n, 0);
  ba_query_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_merge_equals_one_store),
                                     cmocka_unit_test(test_limit_takes_first_rows), cmocka_unit_test(test_refuses)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
