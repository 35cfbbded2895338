/* Clustering beside a writer and beside expire (doc/format.md §7.9,
 * `reindex --cluster` while `bitarc collect` writes): the writer's open
 * slices (journals) are never touched and everything it appends before and
 * after is there; one clustering at a time, and none while an upgrade or a
 * reindex holds the store; a segment deleted (expired) or replaced while it
 * is being clustered is never brought back nor overwritten, whether the
 * expire happens at a chosen moment or from another process racing it; one
 * segment alone (ba_store_cluster_segment). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_check.h"
#include "store_gen.h"
#include "testsupport.h"
#include "bitarc/bitarc.h"

#define HOUR_NS (3600ull * 1000000000ull)
#define T0 (1720656000ull * 1000000000ull) /* an hour boundary: 2024-07-11T00:00:00Z */

/* Sorted hashes of the records of g whose first time lies in one of the
 * hours [T0 + h, T0 + h + 1) with keep[h] set (keep NULL: all). */
static uint64_t *want_hashes(const gen_t *const *gs, size_t ng, const int *keep, size_t *n) {
  size_t cap = 0;
  for (size_t k = 0; k < ng; k++) cap += gs[k]->n;
  uint64_t *w = malloc((cap ? cap : 1) * sizeof *w);
  *n = 0;
  for (size_t k = 0; k < ng; k++)
    for (size_t i = 0; i < gs[k]->n; i++) {
      uint64_t h = (gs[k]->r[i].first_ns - T0) / HOUR_NS;
      if (!keep || keep[h]) w[(*n)++] = rec_hash(&gs[k]->r[i]);
    }
  qsort(w, *n, sizeof *w, cmp_u64);
  return w;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long k = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)k + 1);
  assert_int_equal(fread(b, 1, (size_t)k, f), (size_t)k);
  fclose(f);
  *len = (size_t)k;
  return b;
}

static int exists(const char *dir, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

/* ---------- beside a writer with open slices ---------- */

static void test_beside_writer(void **state) {
  (void)state;
  gen_t g1, g2, g3;
  gen_records(&g1, 6000, 11, T0, 3 * HOUR_NS, 1);            /* hours 0-2: closed segments */
  gen_records(&g2, 3000, 12, T0 + 3 * HOUR_NS, HOUR_NS, 1);  /* hour 3: the writer's open slice */
  gen_records(&g3, 2000, 13, T0 + HOUR_NS, 3 * HOUR_NS, 0);  /* after: hours 1-3, late rows too */
  char *dir = ba_test_mkdtemp();
  ba_test_write_store(dir, g1.r, g1.n, 250);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 250;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g2.r, g2.n), BA_OK);
  assert_int_equal(ba_store_writer_flush(w, 0), BA_OK); /* the journal holds rows now */
  char jpath[4096];
  snprintf(jpath, sizeof jpath, "%s/seg-20240711T030000Z.bitarc.open", dir);
  size_t jlen0, jlen1;
  char *j0 = slurp(jpath, &jlen0);
  assert_true(jlen0 > 4096);
  size_t n = 99, nc;
  char err[256] = "";
  /* The writer holds DIR/.lock: clustering goes on beside it. */
  assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 3);
  char *j1 = slurp(jpath, &jlen1);
  assert_int_equal(jlen1, jlen0);
  assert_memory_equal(j1, j0, jlen0); /* the open slice untouched */
  assert_false(exists(dir, "seg-20240711T030000Z.bitarc"));
  /* The writer goes on: more rows of the open slice and of closed ones. */
  assert_int_equal(ba_store_writer_append(w, g3.r, g3.n), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  const gen_t *all[3] = {&g1, &g2, &g3};
  size_t nw;
  uint64_t *want = want_hashes(all, 3, NULL, &nw);
  assert_int_equal(nw, 11000);
  expect_records(dir, want, nw, &nc);
  assert_int_equal(nc, 3); /* the ones written since are not clustered yet */
  assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  assert_true(n >= 2);
  expect_records(dir, want, nw, &nc);
  assert_int_equal(nc, 3 + n);
  assert_false(exists(dir, ".cluster"));
  free(want);
  free(j0);
  free(j1);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g1);
  gen_free(&g2);
  gen_free(&g3);
}

/* ---------- locks ---------- */

static int hold(const char *dir, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_RDWR | O_CREAT, 0600);
  assert_true(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
  return fd;
}

static void test_locks(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 3000, 21, T0, 2 * HOUR_NS, 1);
  char *dir = ba_test_mkdtemp();
  ba_test_write_store(dir, g.r, g.n, 250);
  size_t n = 99;
  char err[256] = "";
  int fd = hold(dir, ".cluster.lock"); /* another clustering */
  assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_ERR_BUSY);
  assert_non_null(strstr(err, "clustering"));
  assert_int_equal(ba_store_upgrade(dir, 1, &n, err, sizeof err), BA_ERR_BUSY);
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH32, "cpu", 1, &n, err, sizeof err), BA_ERR_BUSY);
  close(fd);
  fd = hold(dir, ".lock"); /* a writer (or an upgrade, a reindex) */
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH32, "cpu", 1, &n, err, sizeof err), BA_ERR_BUSY);
  assert_int_equal(ba_store_cluster(dir, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 2);
  close(fd);
  /* An expire holding its lock for a while: the swap waits for it. */
  gen_t g2;
  gen_records(&g2, 1000, 22, T0 + 2 * HOUR_NS, HOUR_NS, 1);
  ba_test_write_store(dir, g2.r, g2.n, 250);
  fd = hold(dir, ".expire.lock");
  pid_t cl = fork();
  assert_true(cl >= 0);
  if (cl == 0) {
    close(fd); /* the parent's lock is its own (flock: per open file) */
    size_t k;
    char e[256];
    int rc = ba_store_cluster(dir, 1, 0, NULL, NULL, &k, e, sizeof e);
    _exit(rc == BA_OK && k == 1 ? 0 : 1);
  }
  usleep(1000000);
  assert_int_equal(waitpid(cl, NULL, WNOHANG), 0); /* rewritten by now, waiting to swap */
  close(fd);
  int ws;
  assert_int_equal(waitpid(cl, &ws, 0), cl);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  const gen_t *all[2] = {&g, &g2};
  size_t nw, nc;
  uint64_t *want = want_hashes(all, 2, NULL, &nw);
  expect_records(dir, want, nw, &nc);
  assert_int_equal(nc, 3);
  free(want);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
  gen_free(&g2);
}

/* ---------- a segment expired or replaced while it is clustered ---------- */

typedef struct hook {
  const char *dir, *victim;
  const char *replacement; /* NULL: the victim is deleted, else this file is renamed over it */
  int fired;
} hook_t;

/* Progress lines come after a segment's rows are ordered and before it is
 * written: the moment to expire it under the clustering's feet. */
static void hook_note(void *ctx, const char *msg) {
  hook_t *h = ctx;
  if (h->fired || strncmp(msg, h->victim, strlen(h->victim))) return;
  h->fired = 1;
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", h->dir, h->victim);
  if (!h->replacement) assert_int_equal(unlink(p), 0);
  else assert_int_equal(rename(h->replacement, p), 0);
}

static void test_swap_guard(void **state) {
  (void)state;
  gen_t g, alt;
  gen_records(&g, 6000, 31, T0, 3 * HOUR_NS, 1);
  gen_records(&alt, 500, 32, T0 + HOUR_NS, HOUR_NS, 1); /* another segment of hour 1 */
  for (int replace = 0; replace < 2; replace++) {
    char *dir = ba_test_mkdtemp(), *other = ba_test_mkdtemp();
    ba_test_write_store(dir, g.r, g.n, 250);
    ba_test_write_store(other, alt.r, alt.n, 250);
    char rp[4096];
    snprintf(rp, sizeof rp, "%s/seg-20240711T010000Z.bitarc", other);
    hook_t h = {dir, "seg-20240711T010000Z.bitarc", replace ? rp : NULL, 0};
    size_t n = 99, nc;
    char err[256] = "";
    assert_int_equal(ba_store_cluster(dir, 1, 0, hook_note, &h, &n, err, sizeof err), BA_OK);
    assert_true(h.fired);
    assert_int_equal(n, 2); /* hours 0 and 2; hour 1 left alone */
    assert_false(exists(dir, ".cluster"));
    int keep[3] = {1, 0, 1};
    const gen_t *gs[2] = {&g, &alt};
    size_t nw;
    /* deleted: not brought back; replaced: the replacement stays, unclustered */
    uint64_t *want = replace ? want_hashes(gs, 2, keep, &nw) : want_hashes(gs, 1, keep, &nw);
    if (replace) { /* alt's rows all lie in hour 1, which keep[] drops: add them */
      const gen_t *only_alt[1] = {&alt};
      size_t na;
      uint64_t *wa = want_hashes(only_alt, 1, NULL, &na);
      want = realloc(want, (nw + na) * sizeof *want);
      memcpy(want + nw, wa, na * sizeof *wa);
      nw += na;
      qsort(want, nw, sizeof *want, cmp_u64);
      free(wa);
    }
    assert_int_equal(exists(dir, h.victim), replace);
    expect_records(dir, want, nw, &nc);
    assert_int_equal(nc, 2);
    free(want);
    ba_test_rmtree(dir);
    ba_test_rmtree(other);
    free(dir);
    free(other);
  }
  gen_free(&g);
  gen_free(&alt);
}

/* ---------- expire racing clustering from another process ---------- */

typedef struct gone {
  char names[64][64];
  size_t n;
} gone_t;

static void on_expired(void *ctx, const ba_expire_item_t *it) {
  gone_t *g = ctx;
  if (g->n < 64) snprintf(g->names[g->n++], sizeof g->names[0], "%s", it->name);
}

static uint64_t store_bytes(const char *dir, size_t *nseg) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  uint64_t b = 0;
  *nseg = ba_store_segment_count(st);
  for (size_t i = 0; i < *nseg; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    b += in.bytes_file;
  }
  ba_store_close(st);
  return b;
}

static void count_meanwhile(void *ctx, const char *msg) {
  if (strstr(msg, "meanwhile")) ++*(int *)ctx;
}

static long elapsed_us(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (long)((b.tv_sec - a->tv_sec) * 1000000L + (b.tv_nsec - a->tv_nsec) / 1000);
}

static void test_expire_race(void **state) {
  (void)state;
  enum { HOURS = 12 };
  gen_t g;
  gen_records(&g, 24000, 41, T0, HOURS * HOUR_NS, 1);
  /* How long one clustering of the store takes here. */
  char *probe = ba_test_mkdtemp();
  ba_test_write_store(probe, g.r, g.n, 250);
  struct timespec a;
  clock_gettime(CLOCK_MONOTONIC, &a);
  size_t n, nc, hits = 0;
  char err[256] = "";
  assert_int_equal(ba_store_cluster(probe, 1, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
  long run_us = elapsed_us(&a);
  ba_test_rmtree(probe);
  free(probe);
  for (int round = 0; round < 4; round++) {
    char *dir = ba_test_mkdtemp();
    ba_test_write_store(dir, g.r, g.n, 250);
    size_t nseg;
    uint64_t total = store_bytes(dir, &nseg), per = total / nseg;
    assert_int_equal(nseg, HOURS);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* exit 2: it met a segment expired under its feet */
      size_t k;
      char e[256];
      int met = 0;
      int rc = ba_store_cluster(dir, 1, 0, count_meanwhile, &met, &k, e, sizeof e);
      _exit(rc != BA_OK ? 1 : met ? 2 : 0);
    }
    /* Expire the oldest segment at about the pace the clustering goes, so
     * that it deletes segments being clustered (round r starts later). */
    gone_t gone = {0};
    usleep((useconds_t)(run_us / HOURS * round / 4));
    for (int k = 1; k < HOURS; k++) {
      usleep((useconds_t)(run_us / HOURS));
      ba_expire_opts_t o;
      ba_expire_opts_init(&o);
      o.max_bytes = total - (uint64_t)k * per;
      o.report = on_expired;
      o.report_ctx = &gone;
      ba_expire_stats_t es;
      assert_int_equal(ba_store_expire(dir, &o, &es, err, sizeof err), BA_OK);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && (WEXITSTATUS(ws) == 0 || WEXITSTATUS(ws) == 2));
    hits += WEXITSTATUS(ws) == 2;
    /* Nothing expired came back; what is left is whole, with its rows. */
    assert_true(gone.n > 0);
    int keep[HOURS];
    for (int h = 0; h < HOURS; h++) keep[h] = 1;
    for (size_t i = 0; i < gone.n; i++) {
      if (exists(dir, gone.names[i])) {
        fprintf(stderr, "round %d: %s expired, then brought back by the clustering\n", round, gone.names[i]);
        fail();
      }
      unsigned hh = (unsigned)atoi(gone.names[i] + strlen("seg-20240711T")) / 10000; /* HHMMSS */
      assert_true(hh < HOURS);
      keep[hh] = 0;
    }
    const gen_t *gs[1] = {&g};
    size_t nw;
    uint64_t *want = want_hashes(gs, 1, keep, &nw);
    expect_records(dir, want, nw, &nc);
    free(want);
    ba_test_rmtree(dir);
    free(dir);
  }
  fprintf(stderr, "expire race: a clustering takes %ld us; in %zu of 4 rounds it met a segment expired meanwhile\n",
          run_us, hits);
  gen_free(&g);
}

/* ---------- one segment ---------- */

static void test_one_segment(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, 3000, 51, T0, 3 * HOUR_NS, 1);
  char *dir = ba_test_mkdtemp();
  ba_test_write_store(dir, g.r, g.n, 250);
  char err[256] = "";
  const char *name = "seg-20240711T010000Z.bitarc";
  assert_int_equal(ba_store_cluster_segment(dir, name, 1, 0, NULL, NULL, err, sizeof err), BA_OK);
  assert_int_equal(ba_store_cluster_segment(dir, name, 1, 0, NULL, NULL, err, sizeof err), 1);
  assert_int_equal(ba_store_cluster_segment(dir, "seg-20240711T090000Z.bitarc", 1, 0, NULL, NULL, err, sizeof err),
                   BA_ERR_NOT_FOUND);
  const gen_t *gs[1] = {&g};
  size_t nw, nc;
  uint64_t *want = want_hashes(gs, 1, NULL, &nw);
  expect_records(dir, want, nw, &nc);
  assert_int_equal(nc, 1);
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  for (size_t i = 0; i < ba_store_segment_count(st); i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    assert_int_equal(in.clustered, !strcmp(in.name, name));
  }
  ba_store_close(st);
  /* A killed clustering's scratch is cleared, not while one runs. */
  char p[4096];
  snprintf(p, sizeof p, "%s/.cluster", dir);
  assert_int_equal(mkdir(p, 0700), 0);
  snprintf(p, sizeof p, "%s/.cluster/seg-20240711T010000Z.bitarc.open", dir);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
  int fd = hold(dir, ".cluster.lock");
  assert_int_equal(ba_store_cluster_scratch_clear(dir), BA_ERR_BUSY);
  assert_true(exists(dir, ".cluster"));
  close(fd);
  assert_int_equal(ba_store_cluster_scratch_clear(dir), BA_OK);
  assert_false(exists(dir, ".cluster"));
  /* A damaged segment elsewhere does not stop the one asked for. */
  snprintf(p, sizeof p, "%s/seg-20240711T000000Z.bitarc", dir);
  assert_int_equal(truncate(p, 100), 0);
  assert_int_equal(ba_store_cluster_segment(dir, "seg-20240711T020000Z.bitarc", 1, 0, NULL, NULL, err, sizeof err),
                   BA_OK);
  assert_true(ba_store_cluster_segment(dir, "seg-20240711T000000Z.bitarc", 1, 0, NULL, NULL, err, sizeof err) < 0);
  free(want);
  ba_test_rmtree(dir);
  free(dir);
  gen_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_beside_writer), cmocka_unit_test(test_locks),
                                     cmocka_unit_test(test_swap_guard), cmocka_unit_test(test_expire_race),
                                     cmocka_unit_test(test_one_segment)};
  if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER")); /* one test while debugging */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
