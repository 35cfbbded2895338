/* Clustered segments (doc/format.md §7.9, `reindex --cluster`): the rows of
 * each rewritten segment are exactly the segment's records in the order of a
 * naive model of the key (ranks by counting, Morton by a bit loop, ties by
 * first time then original row), all fields and frames intact, the segments
 * flagged and verified clean; a second run rewrites nothing; and a run
 * killed at random moments leaves
 * every segment whole (old or new) with the same records, which a next run
 * finishes. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_check.h"
#include "store_gen.h"
#include "testsupport.h"
#include "bitarc/bitarc.h"

#define HOUR_NS (3600ull * 1000000000ull)
#define T0 (1720656000ull * 1000000000ull) /* an hour boundary */

static void write_store(const char *dir, const gen_t *g, uint32_t block_rows) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = block_rows;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g->r, g->n), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

/* ---------- the naive model of the key ---------- */

static int addr_cmp(const ba_record_t *a, const ba_record_t *b, int dst) {
  int fa = a->ipver == 6, fb = b->ipver == 6;
  if (fa != fb) return fa - fb;
  return memcmp(dst ? a->dst : a->src, dst ? b->dst : b->src, 16);
}

static uint32_t model_rank(const ba_record_t *const *s, size_t n, size_t i, int dst) {
  uint64_t less = 0, same = 0;
  for (size_t j = 0; j < n; j++) {
    int c = addr_cmp(s[j], s[i], dst);
    less += c < 0;
    same += c == 0;
  }
  uint64_t r = ((2 * less + same) << 31) / n;
  return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

typedef struct mrow {
  uint64_t key, first;
  size_t row;
  const ba_record_t *rec;
} mrow_t;

static int mrow_cmp(const void *a, const void *b) {
  const mrow_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

/* The records of slice [start, start + 1 h) in the model's order. */
static mrow_t *model_order(const gen_t *g, uint64_t start, size_t *nout) {
  const ba_record_t **s = calloc(g->n, sizeof *s);
  size_t n = 0;
  for (size_t i = 0; i < g->n; i++)
    if (g->r[i].first_ns >= start && g->r[i].first_ns < start + HOUR_NS) s[n++] = &g->r[i];
  mrow_t *m = calloc(n ? n : 1, sizeof *m);
  for (size_t i = 0; i < n; i++) {
    uint32_t rs = model_rank(s, n, i, 0), rd = model_rank(s, n, i, 1);
    uint64_t key = 0;
    for (int b = 0; b < 32; b++)
      key |= (uint64_t)((rs >> b) & 1) << (2 * b + 1) | (uint64_t)((rd >> b) & 1) << (2 * b);
    m[i] = (mrow_t){key, s[i]->first_ns, i, s[i]};
  }
  qsort(m, n, sizeof *m, mrow_cmp);
  free(s);
  *nout = n;
  return m;
}

typedef struct rows {
  ba_record_t *r;
  uint8_t *frames;
  size_t n, cap, flen;
} rows_t;

static int rows_sink(void *ctx, const ba_record_t *recs, size_t n) {
  rows_t *x = ctx;
  for (size_t i = 0; i < n; i++) {
    if (x->n == x->cap) {
      x->cap = x->cap ? 2 * x->cap : 1024;
      x->r = realloc(x->r, x->cap * sizeof *x->r);
    }
    x->r[x->n] = recs[i];
    if (recs[i].caplen) {
      x->frames = realloc(x->frames, x->flen + recs[i].caplen);
      memcpy(x->frames + x->flen, recs[i].frame, recs[i].caplen);
      x->r[x->n].frame = (const uint8_t *)(uintptr_t)(x->flen + 1);
      x->flen += recs[i].caplen;
    }
    x->n++;
  }
  return 0;
}

static void rows_fix(rows_t *x) {
  for (size_t i = 0; i < x->n; i++)
    if (x->r[i].frame) x->r[i].frame = x->frames + ((uintptr_t)x->r[i].frame - 1);
}

/* Every segment's rows, in row order, equal the model's order; flagged as
 * `clustered`; verify clean. Returns the segments checked. */
static size_t expect_model_order(const char *dir, const gen_t *g, int clustered) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  size_t nseg = ba_store_segment_count(st), total = 0;
  for (size_t i = 0; i < nseg; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    assert_int_equal(in.clustered, clustered);
    uint64_t bad = 99;
    assert_int_equal(ba_segment_verify(seg, &bad), BA_OK);
    assert_int_equal(bad, 0);
    rows_t x = {0};
    uint64_t dmg = 0;
    assert_int_equal(ba_segment_scan(seg, BA_COL_ALL, rows_sink, &x, &dmg), BA_OK);
    assert_int_equal(dmg, 0);
    rows_fix(&x);
    size_t nm;
    mrow_t *m = model_order(g, in.start_ns, &nm);
    assert_int_equal(x.n, nm);
    for (size_t k = 0; k < nm; k++) {
      if (clustered && !rec_equal(&x.r[k], m[k].rec, BA_COL_ALL)) {
        fprintf(stderr, "%s row %zu: not the model's row (first %llu, model %llu)\n", in.name, k,
                (unsigned long long)x.r[k].first_ns, (unsigned long long)m[k].rec->first_ns);
        fail();
      }
    }
    total += nm;
    free(m);
    free(x.r);
    free(x.frames);
    ba_segment_release(seg);
  }
  assert_int_equal(total, g->n);
  ba_store_close(st);
  return nseg;
}

static void test_model_order(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 5000, 77, T0, 2 * HOUR_NS, 0); /* random times: rows not in time order */
  for (size_t i = 0; i < g.n; i += 50) g.r[i].first_ns = g.r[(i + 7) % g.n].first_ns; /* ties */
  for (int pass = 0; pass < 2; pass++) {
    char *dir = ba_test_mkdtemp();
    write_store(dir, &g, 100);
    expect_model_order(dir, &g, 0);
    size_t n = 99;
    char err[256] = "";
    /* pass 1: a tiny buffer, so records are fed in many scans */
    assert_int_equal(ba_store_cluster(dir, 2, pass ? 64 << 10 : 0, NULL, NULL, &n, err, sizeof err), BA_OK);
    assert_int_equal(n, 2);
    assert_int_equal(expect_model_order(dir, &g, 1), 2);
    assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
    assert_int_equal(n, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/.upgrade", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/.cluster", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    ba_test_rmtree(dir);
    free(dir);
  }
  gen_free(&g);
}

/* ---------- killed at random moments ---------- */

static void test_killed(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 60000, 5, T0, 4 * HOUR_NS, 1);
  uint64_t *want = malloc(g.n * sizeof *want);
  for (size_t i = 0; i < g.n; i++) want[i] = rec_hash(&g.r[i]);
  qsort(want, g.n, sizeof *want, cmp_u64);
  char *dir = ba_test_mkdtemp();
  write_store(dir, &g, 1000);
  /* How long a whole run takes here, to spread the kills over it. */
  char *probe = ba_test_mkdtemp();
  write_store(probe, &g, 1000);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  size_t n;
  char err[256] = "";
  assert_int_equal(ba_store_cluster(probe, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  clock_gettime(CLOCK_MONOTONIC, &b);
  long run_us = (long)((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000);
  ba_test_rmtree(probe);
  free(probe);
  ba_rng_t rng;
  ba_rng_seed(&rng, 99);
  size_t seen_partial = 0, nc = 0;
  for (int it = 0; it < 12; it++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      char e[256];
      size_t k;
      _exit(ba_store_cluster(dir, 1, 256 << 10, NULL, NULL, &k, e, sizeof e) == BA_OK ? 0 : 1);
    }
    usleep((useconds_t)ba_rng_below(&rng, (uint64_t)run_us + 1));
    kill(pid, SIGKILL);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    expect_records(dir, want, g.n, &nc);
    if (nc > 0 && nc < 4) seen_partial++;
    if (nc == 4) break; /* a run finished before its kill */
  }
  assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 4 - nc);
  expect_records(dir, want, g.n, &nc);
  assert_int_equal(nc, 4);
  char path[4096];
  snprintf(path, sizeof path, "%s/.cluster", dir);
  assert_int_not_equal(access(path, F_OK), 0);
  fprintf(stderr, "killed runs: a run takes %ld us; %zu kills left the store partly clustered\n", run_us,
          seen_partial);
  ba_test_rmtree(dir);
  free(dir);
  free(want);
  gen_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_order), cmocka_unit_test(test_killed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
