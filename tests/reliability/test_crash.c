/* Reliability (issue 7): `bitarc ingest` killed with SIGKILL at random
 * moments. After each kill the store is reopened: every segment that was
 * complete at the kill reads back exactly as the same segment of an
 * uninterrupted run (same records, same order, frames included); segments
 * finished by recovery hold only records of that slice of the uninterrupted
 * run, and exactly its first whole blocks in order (only the unflushed tail is
 * lost); and `bitarc verify --recover` says how many records it recovered.
 * Iterations: 10 by default, 60 with BA_LONG_TESTS=1. Needs the shared
 * captures (skipped with a message when absent) and $BITARC. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testsupport.h"
#include "common/common.h"
#include "crashutil.h"

#define MAXFILES 80

static char *g_files[1024];
static size_t g_nfiles;

static void add_file(const char *path, void *ctx) {
  (void)ctx;
  size_t l = strlen(path);
  if (g_nfiles < BA_ARRAY_LEN(g_files) && l > 5 && !strcmp(path + l - 5, ".pcap")) g_files[g_nfiles++] = strdup(path);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static pid_t start_ingest(const char *bitarc, const char *store, int quiet_out) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char *argv[MAXFILES + 8];
    int k = 0;
    argv[k++] = (char *)bitarc;
    argv[k++] = "ingest";
    argv[k++] = "--quiet";
    argv[k++] = "--store";
    argv[k++] = (char *)store;
    /* Small blocks: slices span many blocks, so a kill falls between blocks. */
    argv[k++] = "--block-rows";
    argv[k++] = "100";
    for (size_t i = 0; i < g_nfiles && i < MAXFILES; i++) argv[k++] = g_files[i];
    argv[k] = NULL;
    if (quiet_out) {
      int dn = open("/dev/null", O_WRONLY);
      dup2(dn, 1);
      dup2(dn, 2);
    }
    execv(bitarc, argv);
    _exit(127);
  }
  return pid;
}

/* A segment's records as hashes of every field and the frame, in row order. */
typedef struct {
  uint64_t *h;
  size_t n, cap;
} hashes;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static int hash_sink(void *ctx, const ba_record_t *recs, size_t n) {
  hashes *hs = ctx;
  for (size_t i = 0; i < n; i++) {
    ba_record_t r = recs[i];
    r.frame = NULL;
    uint64_t h = fnv(1469598103934665603ull, &r, sizeof r);
    if (recs[i].caplen) h = fnv(h, recs[i].frame, recs[i].caplen);
    if (hs->n == hs->cap) {
      hs->cap = hs->cap ? 2 * hs->cap : 1024;
      hs->h = realloc(hs->h, hs->cap * sizeof *hs->h);
    }
    hs->h[hs->n++] = h;
  }
  return 0;
}

typedef struct {
  char name[256];
  uint32_t block_rows;
  hashes hs;
} segdump;

/* What the test knows about the store being dumped, so a failure names it. */
typedef struct {
  int it;            /* iteration */
  char (*done)[256]; /* segments complete before the kill */
  size_t ndone;
} dumpctx;

/* Which run and which kind of segment, for failure messages. */
static void describe(const dumpctx *dc, const char *name, char *out, size_t cap) {
  int done = 0;
  for (size_t k = 0; dc && k < dc->ndone; k++)
    if (!strcmp(dc->done[k], name)) done = 1;
  if (!dc) snprintf(out, cap, "uninterrupted run: segment %s", name);
  else snprintf(out, cap, "iteration %d: segment %s (%s)", dc->it, name,
                done ? "complete before the kill" : "finished by recovery");
}

/* What `bitarc verify` says of the same store. The CLI calling it clean
 * while this test's reader finds damage means the two disagree on the same
 * bytes: they were built from different sources (a stale binary). */
static const char *cli_verdict(const char *dir) {
  const char *bitarc = getenv("BITARC");
  if (!bitarc) return "";
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "'%s' verify --store '%s' -q >/dev/null 2>&1", bitarc, dir);
  int st = system(cmd);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return "; `bitarc verify` calls the same store clean: the CLI and this test disagree on the same bytes "
           "(are both from the same build?)";
  return "; `bitarc verify` finds the damage too";
}

static size_t dump_store(const char *dir, segdump **out, const dumpctx *dc) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  size_t n = ba_store_segment_count(s);
  segdump *d = calloc(n ? n : 1, sizeof *d);
  char what[512];
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *seg;
    ba_segment_info_t info;
    int rc = ba_store_segment(s, i, &seg);
    if (rc != BA_OK) {
      describe(dc, ba_store_segment_name(s, i), what, sizeof what);
      fail_msg("%s does not open: %s (%s); store kept in %s%s", what, ba_strerror(rc), ba_store_errmsg(s), dir,
               cli_verdict(dir));
    }
    assert_int_equal(ba_segment_info(seg, &info), BA_OK);
    snprintf(d[i].name, sizeof d[i].name, "%s", info.name);
    d[i].block_rows = info.block_rows;
    uint64_t dmg = 0;
    rc = ba_segment_scan(seg, BA_COL_ALL, hash_sink, &d[i].hs, &dmg);
    if (rc != BA_OK || dmg != 0) {
      describe(dc, info.name, what, sizeof what);
      fail_msg("%s, %llu rows in %u blocks of %u: scan %s, %llu damaged rows: %s; store kept in %s%s", what,
               (unsigned long long)info.rows, info.nblocks, info.block_rows, ba_strerror(rc),
               (unsigned long long)dmg, ba_store_errmsg(s), dir, cli_verdict(dir));
    }
    assert_int_equal(d[i].hs.n, info.rows);
  }
  ba_store_close(s);
  *out = d;
  return n;
}

static void free_dump(segdump *d, size_t n) {
  for (size_t i = 0; i < n; i++) free(d[i].hs.h);
  free(d);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Multiset inclusion of a in b. */
static int subset(const hashes *a, const hashes *b) {
  uint64_t *x = malloc((a->n + 1) * sizeof *x), *y = malloc((b->n + 1) * sizeof *y);
  memcpy(x, a->h, a->n * sizeof *x);
  memcpy(y, b->h, b->n * sizeof *y);
  qsort(x, a->n, sizeof *x, cmp_u64);
  qsort(y, b->n, sizeof *y, cmp_u64);
  size_t j = 0, ok = 1;
  for (size_t i = 0; i < a->n && ok; i++) {
    while (j < b->n && y[j] < x[i]) j++;
    if (j == b->n || y[j] != x[i]) ok = 0;
    else j++;
  }
  free(x);
  free(y);
  return (int)ok;
}

static void test_kill9(void **state) {
  (void)state;
  const char *bitarc = getenv("BITARC");
  const char *traces = ba_test_shared("traces/ntop__nDPI");
  if (!bitarc || !traces) {
    print_message("skipped: %s\n", !bitarc ? "BITARC not set" : "shared captures not found");
    return;
  }
  static const char *const exts[] = {"pcap", NULL};
  ba_test_walk(traces, exts, add_file, NULL);
  if (g_nfiles < 10) {
    print_message("skipped: too few captures under %s\n", traces);
    return;
  }
  qsort(g_files, g_nfiles, sizeof *g_files, cmp_str);
  int long_run = getenv("BA_LONG_TESTS") && atoi(getenv("BA_LONG_TESTS")) > 0;
  int iters = long_run ? 60 : 10;
  char *dir = ba_test_mkdtemp();
  char ref[4096], st[4096];
  snprintf(ref, sizeof ref, "%s/ref", dir);
  snprintf(st, sizeof st, "%s/crash", dir);

  uint64_t t0 = ba_now_ns();
  pid_t pid = start_ingest(bitarc, ref, 1);
  int status;
  waitpid(pid, &status, 0);
  uint64_t dur = ba_now_ns() - t0;
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1); /* 1: some capture was damaged */
  segdump *rd;
  size_t nref = dump_store(ref, &rd, NULL);
  assert_true(nref > 10);

  ba_rng_t rng;
  ba_rng_seed(&rng, long_run ? (uint64_t)time(NULL) : 7);
  uint64_t recovered_total = 0, complete_total = 0, partial_total = 0, lost_total = 0, lost_max = 0;
  for (int it = 0; it < iters; it++) {
    ba_test_rmtree(st);
    pid = start_ingest(bitarc, st, 1);
    uint64_t wait_ns = ba_rng_below(&rng, dur);
    struct timespec ts = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    static char done[4096][256];
    size_t ndone = ba_crash_complete_names(st, done, 4096);

    /* Recovery through the CLI: it must say what it recovered. */
    struct stat sb;
    if (stat(st, &sb) != 0) continue; /* killed before the store existed */
    unsigned long long rec = ba_crash_recover(bitarc, st, it);
    recovered_total += rec;

    segdump *cd;
    dumpctx dc = {.it = it, .done = done, .ndone = ndone};
    size_t nc = dump_store(st, &cd, &dc);
    for (size_t i = 0; i < nc; i++) {
      size_t r = 0;
      while (r < nref && strcmp(rd[r].name, cd[i].name) != 0) r++;
      int was_done = 0;
      for (size_t k = 0; k < ndone; k++) was_done |= !strcmp(done[k], cd[i].name);
      if (was_done) {
        if (r == nref) fail_msg("iteration %d: complete segment %s is not in the uninterrupted run", it, cd[i].name);
        if (cd[i].hs.n != rd[r].hs.n || memcmp(cd[i].hs.h, rd[r].hs.h, cd[i].hs.n * sizeof(uint64_t)) != 0)
          fail_msg("iteration %d: complete segment %s differs from the uninterrupted run (%zu vs %zu records)", it,
                   cd[i].name, cd[i].hs.n, rd[r].hs.n);
        complete_total++;
      } else {
        /* Finished by recovery: a part of that slice's records. The name may
         * differ (a slice reopened later gets a suffix), so look in every
         * reference segment of the same slice. */
        hashes all = {0};
        const char *z = strchr(cd[i].name, 'Z');
        size_t base = z ? (size_t)(z - cd[i].name) + 1 : strlen(cd[i].name);
        for (size_t k = 0; k < nref; k++) {
          if (strncmp(rd[k].name, cd[i].name, base) != 0) continue;
          for (size_t j = 0; j < rd[k].hs.n; j++) {
            if (all.n == all.cap) {
              all.cap = all.cap ? 2 * all.cap : 1024;
              all.h = realloc(all.h, all.cap * sizeof *all.h);
            }
            all.h[all.n++] = rd[k].hs.h[j];
          }
        }
        if (!subset(&cd[i].hs, &all))
          fail_msg("iteration %d: recovered segment %s holds records the uninterrupted run does not have", it,
                   cd[i].name);
        free(all.h);
        /* Only unflushed blocks may be lost: what recovery kept is the first
         * whole blocks of the slice's segment in the uninterrupted run, in
         * order, with no hole; the loss is the tail the writer had not yet
         * handed to the journal. */
        size_t best = nref;
        for (size_t k = 0; k < nref && best == nref; k++)
          if (!strncmp(rd[k].name, cd[i].name, base) && cd[i].hs.n <= rd[k].hs.n &&
              !memcmp(cd[i].hs.h, rd[k].hs.h, cd[i].hs.n * sizeof(uint64_t)))
            best = k;
        if (best == nref)
          fail_msg("iteration %d: recovered segment %s (%zu records) is not a prefix of its slice in the "
                   "uninterrupted run: records were lost from the middle",
                   it, cd[i].name, cd[i].hs.n);
        /* A short last block is written only when the slice closes. */
        if (cd[i].hs.n % cd[i].block_rows != 0 && cd[i].hs.n != rd[best].hs.n)
          fail_msg("iteration %d: recovered segment %s holds %zu of %zu records, not whole blocks of %u", it,
                   cd[i].name, cd[i].hs.n, rd[best].hs.n, cd[i].block_rows);
        uint64_t lost = rd[best].hs.n - cd[i].hs.n;
        lost_total += lost;
        if (lost > lost_max) lost_max = lost;
        partial_total++;
      }
    }
    free_dump(cd, nc);
  }
  print_message("%d kills: %llu complete segments identical, %llu recovered segments (%llu records recovered, "
                "each a whole-block prefix of its slice; %llu unflushed records lost, at most %llu in one slice)\n",
                iters, (unsigned long long)complete_total, (unsigned long long)partial_total,
                (unsigned long long)recovered_total, (unsigned long long)lost_total,
                (unsigned long long)lost_max);
  free_dump(rd, nref);
  ba_test_rmtree(dir);
  free(dir);
  for (size_t i = 0; i < g_nfiles; i++) free(g_files[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill9)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
