/* A journal write that fails part-way (disk full, file too large, I/O error)
 * leaves a torn row group at the end of the journal. The writer must never
 * publish that slice as a complete segment: no renamed segment may hold a
 * torn or misplaced block, and recovery must keep exactly the groups that
 * were completely written before the failure (doc/format.md §5).
 *
 * The failure is made deterministic with RLIMIT_FSIZE: a write crossing the
 * limit is cut at it, the next one fails with EFBIG (SIGXFSZ ignored). The
 * limit is lifted again before the writer is closed, as when space comes
 * back, so a writer that kept going would write after the torn group. Where
 * the groups end is read from the segment of an uninterrupted run with the
 * same records (its row-group table, doc/format.md §2.4-2.5), so the
 * expected number of recovered groups does not come from the code under
 * test's recovery. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/common.h"
#include "store_gen.h"

#define SLICE_S 3600u
#define ROWS 100u     /* block_rows */
#define NREC 2000u    /* 20 full groups, one slice */
#define FOOTER 80u    /* doc/format.md §2.5 */
#define TABLE_ENT (16u + 4u * 29u) /* 3.0: 29 columns */

static uint64_t t0(void) { return (1795000000ull / SLICE_S) * SLICE_S * 1000000000ull; }

static void opts(ba_store_opts_t *o, int threads) {
  ba_store_opts_init(o);
  o->slice_seconds = SLICE_S;
  o->block_rows = ROWS;
  o->threads = threads;
}

/* Path of the one file in dir whose name ends with suffix ("" if none). */
static void find_file(const char *dir, const char *suffix, char *out, size_t cap) {
  out[0] = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  size_t ls = strlen(suffix);
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (!strncmp(e->d_name, "seg-", 4) && l > ls && !strcmp(e->d_name + l - ls, suffix)) {
      assert_true(out[0] == 0); /* only one */
      snprintf(out, cap, "%s/%s", dir, e->d_name);
    }
  }
  closedir(d);
}

/* End offset of each row group of a complete segment, from its footer and
 * row-group table. */
static size_t group_ends(const char *path, uint64_t *ends, size_t cap) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(path, &len);
  assert_non_null(b);
  assert_true(len > 64 + FOOTER);
  const uint8_t *f = b + len - FOOTER;
  uint64_t table_off = ba_load_le64(f + 24);
  uint32_t ngroups = ba_load_le32(f + 48);
  assert_true(ngroups <= cap);
  assert_true(table_off + 32 + (uint64_t)ngroups * TABLE_ENT <= len - FOOTER);
  for (uint32_t g = 0; g < ngroups; g++) {
    const uint8_t *e = b + table_off + 32 + (size_t)g * TABLE_ENT;
    ends[g] = ba_load_le64(e) + ba_load_le32(e + 12);
    if (g) assert_true(ends[g] > ends[g - 1]);
  }
  free(b);
  return ngroups;
}

typedef struct {
  const ba_record_t *want;
  size_t n, got;
  int wrong;
} cmp_t;

static int cmp_sink(void *ctx, const ba_record_t *recs, size_t n) {
  cmp_t *c = ctx;
  for (size_t i = 0; i < n; i++, c->got++)
    if (c->got >= c->n || !rec_equal(&recs[i], &c->want[c->got], BA_COL_ALL)) c->wrong = 1;
  return 0;
}

/* Every segment of the store (there is at most one slice) scans without
 * damage and holds the first records of g in order; returns its rows. */
static uint64_t check_segments(const char *dir, const gen_t *g, const char *what) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  size_t n = ba_store_segment_count(s);
  assert_true(n <= 1);
  uint64_t rows = 0;
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *seg;
    int rc = ba_store_segment(s, i, &seg);
    if (rc != BA_OK)
      fail_msg("%s: segment %s does not open: %s (%s)", what, ba_store_segment_name(s, i), ba_strerror(rc),
               ba_store_errmsg(s));
    ba_segment_info_t in;
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    cmp_t c = {g->r, g->n, 0, 0};
    uint64_t dmg = 0;
    rc = ba_segment_scan(seg, BA_COL_ALL, cmp_sink, &c, &dmg);
    if (rc != BA_OK || dmg)
      fail_msg("%s: segment %s: scan %s, %llu damaged rows: %s", what, in.name, ba_strerror(rc),
               (unsigned long long)dmg, ba_store_errmsg(s));
    if (c.wrong || c.got != in.rows)
      fail_msg("%s: segment %s does not hold the first %llu records in order", what, in.name,
               (unsigned long long)in.rows);
    rows += in.rows;
  }
  ba_store_close(s);
  return rows;
}

static void test_write_fail(void **state) {
  (void)state;
  gen_t g;
  gen_records(&g, NREC, 4242, t0(), (uint64_t)SLICE_S * 1000000000ull / 2, 1);
  struct rlimit old;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  if (old.rlim_max != RLIM_INFINITY) {
    print_message("skipped: RLIMIT_FSIZE has a hard limit\n");
    gen_free(&g);
    return;
  }
  void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);

  for (int threads = 1; threads <= 2; threads++) {
    /* The uninterrupted run: where each group ends in the journal. */
    char *dir = ba_test_mkdtemp();
    ba_store_opts_t o;
    opts(&o, threads);
    ba_store_writer_t *w;
    assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
    assert_int_equal(ba_store_writer_append(w, g.r, g.n), BA_OK);
    assert_int_equal(ba_store_writer_close(w), BA_OK);
    char path[4200];
    find_file(dir, ".bitarc", path, sizeof path);
    assert_true(path[0] != 0);
    uint64_t ends[NREC / ROWS];
    size_t ng = group_ends(path, ends, NREC / ROWS);
    assert_int_equal(ng, NREC / ROWS);
    assert_int_equal(check_segments(dir, &g, "uninterrupted run"), NREC);
    ba_test_rmtree(dir);
    free(dir);

    /* Cuts: inside the file header, at a group boundary, one byte after
     * it, inside the GROUP block, inside column blocks, one byte before a
     * group's end, and past the last group (only the index is cut). */
    uint64_t cuts[] = {40,
                       ends[2],
                       ends[2] + 1,
                       ends[4] + 50,
                       (ends[6] + ends[7]) / 2,
                       ends[ng - 2] - 1,
                       ends[ng - 1] + 10};
    for (size_t k = 0; k < BA_ARRAY_LEN(cuts); k++) {
      char what[128];
      snprintf(what, sizeof what, "threads %d, journal cut at byte %llu", threads, (unsigned long long)cuts[k]);
      dir = ba_test_mkdtemp();
      assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
      struct rlimit lim = {cuts[k], old.rlim_max};
      assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
      int arc = BA_OK;
      for (size_t i = 0; i < g.n && arc == BA_OK; i += 50) arc = ba_store_writer_append(w, g.r + i, 50);
      if (arc == BA_OK) arc = ba_store_writer_sync(w);
      /* Space comes back before the writer is closed (past the last group:
       * only closing writes, so the limit stays and the index write fails). */
      int last = cuts[k] >= ends[ng - 1];
      if (!last) assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
      int crc = ba_store_writer_close(w);
      if (last) assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
      if (arc == BA_OK && crc == BA_OK) fail_msg("%s: the writer did not report the failed write", what);

      /* Nothing published may be torn or misplaced. */
      char seg[4200], jnl[4200];
      find_file(dir, ".bitarc", seg, sizeof seg);
      find_file(dir, ".bitarc.open", jnl, sizeof jnl);
      uint64_t published = check_segments(dir, &g, what);
      if (cuts[k] < ends[ng - 1] && published)
        fail_msg("%s: a segment of %llu rows was published although group bytes were lost", what,
                 (unsigned long long)published);

      /* Recovery keeps exactly the groups wholly below the cut. */
      size_t whole = 0;
      while (whole < ng && ends[whole] <= cuts[k]) whole++;
      assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
      uint64_t rec = ba_store_writer_recovered(w);
      assert_int_equal(ba_store_writer_close(w), BA_OK);
      uint64_t rows = check_segments(dir, &g, what);
      if (rows != (uint64_t)whole * ROWS)
        fail_msg("%s: %llu rows after recovery (%llu recovered), %zu whole groups of %u were written", what,
                 (unsigned long long)rows, (unsigned long long)rec, whole, ROWS);
      if (published == 0 && rec != rows)
        fail_msg("%s: recovery says %llu records, the store holds %llu", what, (unsigned long long)rec,
                 (unsigned long long)rows);
      find_file(dir, ".bitarc.open", jnl, sizeof jnl);
      assert_true(jnl[0] == 0); /* every journal finished or removed */
      ba_test_rmtree(dir);
      free(dir);
    }
  }
  signal(SIGXFSZ, old_xfsz);
  gen_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_write_fail)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
