/* Retention (ba_store_expire): random stores and limits against a naive
 * reference built from the reader's segment list and stat(); the open slice
 * (journal) is never touched; dry run; other files untouched; bad arguments. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_gen.h"
#include "testsupport.h"

#define HOUR 3600000000000ull
#define T0 (1763600000ull / 3600 * 3600 * 1000000000ull)

typedef struct ref_seg {
  char name[128];
  uint64_t start, end, bytes;
  int gone;
} ref_seg_t;

typedef struct seen {
  char names[256][128];
  int reasons[256];
  size_t n;
} seen_t;

static void on_item(void *ctx, const ba_expire_item_t *it) {
  seen_t *s = ctx;
  assert_true(s->n < 256);
  snprintf(s->names[s->n], 128, "%s", it->name);
  s->reasons[s->n++] = (int)it->reason;
}

static uint64_t file_size(const char *dir, const char *name) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%.2000s/%.2000s", dir, name) >= (int)sizeof p) return UINT64_MAX;
  return stat(p, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* The reader's view: segments in start order with their slice and size. */
static size_t list_ref(const char *dir, ref_seg_t *out, size_t cap) {
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), 0);
  size_t n = ba_store_segment_count(s);
  assert_true(n <= cap);
  for (size_t i = 0; i < n; i++) {
    ba_segment_t *g;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(s, i, &g), 0);
    assert_int_equal(ba_segment_info(g, &in), 0);
    snprintf(out[i].name, sizeof out[i].name, "%s", in.name);
    out[i].start = in.start_ns;
    out[i].end = in.end_ns;
    out[i].bytes = file_size(dir, in.name);
    out[i].gone = 0;
  }
  ba_store_close(s);
  return n;
}

/* Writes `nslices` hourly slices starting at T0 (some twice, so -1 names
 * exist), with random row counts. */
static void make_store(const char *dir, ba_rng_t *rng, unsigned nslices) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 500;
  for (int pass = 0; pass < 2; pass++) {
    ba_store_writer_t *w;
    assert_int_equal(ba_store_writer_open(dir, &o, &w), 0);
    for (unsigned k = 0; k < nslices; k++) {
      if (pass && ba_rng_below(rng, 3)) continue;
      gen_t g;
      gen_records(&g, 50 + (size_t)ba_rng_below(rng, 3000), ba_rng_next(rng), T0 + k * HOUR, HOUR, 1);
      assert_int_equal(ba_store_writer_append(w, g.r, g.n), 0);
      gen_free(&g);
    }
    assert_int_equal(ba_store_writer_close(w), 0);
  }
}

static void random_limits(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 1717);
  for (int iter = 0; iter < 12; iter++) {
    char *dir = ba_test_mkdtemp();
    unsigned nslices = 2 + (unsigned)ba_rng_below(&rng, 10);
    make_store(dir, &rng, nslices);
    ref_seg_t ref[64];
    size_t n = list_ref(dir, ref, 64);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += ref[i].bytes;
    ba_expire_opts_t o;
    ba_expire_opts_init(&o);
    o.now_ns = T0 + (uint64_t)(nslices + 1) * HOUR;
    if (iter % 3 != 1) o.max_age_ns = (1 + ba_rng_below(&rng, nslices + 1)) * HOUR;
    if (iter % 3 != 0) o.max_bytes = 1 + ba_rng_below(&rng, total + total / 4);
    o.dry_run = iter % 4 == 3;
    /* reference: age first, then oldest until the size fits */
    uint64_t left = total;
    for (size_t i = 0; i < n; i++)
      if (o.max_age_ns && ref[i].end <= o.now_ns - o.max_age_ns) ref[i].gone = BA_EXPIRE_AGE, left -= ref[i].bytes;
    for (size_t i = 0; i < n && o.max_bytes && left > o.max_bytes; i++)
      if (!ref[i].gone) ref[i].gone = BA_EXPIRE_SIZE, left -= ref[i].bytes;
    seen_t seen = {0};
    o.report = on_item;
    o.report_ctx = &seen;
    ba_expire_stats_t st;
    char err[256];
    assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), 0);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (!ref[i].gone) {
        assert_int_equal(file_size(dir, ref[i].name), ref[i].bytes);
        continue;
      }
      assert_true(k < seen.n);
      assert_string_equal(seen.names[k], ref[i].name); /* oldest first */
      assert_int_equal(seen.reasons[k], ref[i].gone);
      k++;
      assert_true(o.dry_run ? file_size(dir, ref[i].name) == ref[i].bytes
                            : file_size(dir, ref[i].name) == UINT64_MAX);
    }
    assert_int_equal(k, seen.n);
    assert_int_equal(st.segments, n);
    assert_int_equal(st.bytes, total);
    assert_int_equal(st.segments_deleted, seen.n);
    assert_int_equal(st.bytes_after, left);
    assert_int_equal(st.size_unmet, o.max_bytes && left > o.max_bytes);
    if (o.max_bytes) assert_true(left <= o.max_bytes); /* no journals here */
    if (!o.dry_run) { /* what is left still reads */
      ref_seg_t after[64];
      assert_int_equal(list_ref(dir, after, 64), n - seen.n);
    }
    ba_test_rmtree(dir);
    free(dir);
  }
}

/* A writer is filling a slice: the journal survives even a 1-byte limit,
 * and the writer finishes its segment afterwards with every record. */
static void open_slice_untouched(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 99);
  char *dir = ba_test_mkdtemp();
  make_store(dir, &rng, 4);
  ba_store_opts_t so;
  ba_store_opts_init(&so);
  so.block_rows = 100;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &so, &w), 0);
  gen_t g;
  gen_records(&g, 1000, 5, T0 + 10 * HOUR, HOUR / 2, 1);
  assert_int_equal(ba_store_writer_append(w, g.r, g.n), 0);
  assert_int_equal(ba_store_writer_sync(w), 0);
  char jname[300];
  int found = 0;
  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), 0);
  size_t before = ba_store_segment_count(s);
  ba_store_close(s);
  /* the journal of the open slice */
  DIR *d = opendir(dir);
  struct dirent *e;
  uint64_t jbytes = 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".bitarc.open")) {
      found++;
      jbytes += file_size(dir, e->d_name);
      snprintf(jname, sizeof jname, "%s", e->d_name);
    }
  closedir(d);
  assert_int_equal(found, 1);
  assert_true(jbytes > 0);
  ba_expire_opts_t o;
  ba_expire_opts_init(&o);
  o.max_bytes = 1;
  o.max_age_ns = 1; /* everything is old, the open slice too */
  o.now_ns = T0 + 100 * HOUR;
  ba_expire_stats_t st;
  char err[256];
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), 0);
  assert_int_equal(st.segments_deleted, before);
  assert_int_equal(st.journals, 1);
  assert_int_equal(st.journal_bytes, jbytes);
  assert_int_equal(st.bytes_after, jbytes);
  assert_int_equal(st.size_unmet, 1);
  assert_int_equal(file_size(dir, jname), jbytes);
  assert_int_equal(ba_store_writer_close(w), 0);
  ref_seg_t after[8];
  assert_int_equal(list_ref(dir, after, 8), 1);
  ba_store_open(dir, &s);
  ba_segment_t *seg;
  ba_segment_info_t in;
  assert_int_equal(ba_store_segment(s, 0, &seg), 0);
  assert_int_equal(ba_segment_info(seg, &in), 0);
  assert_int_equal(in.rows, 1000);
  ba_store_close(s);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

/* Files that are not segments are never deleted: lock, temp, other names,
 * a symlink named like a segment. A second expire is refused while one runs. */
static void others_untouched_and_busy(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 7);
  char *dir = ba_test_mkdtemp();
  make_store(dir, &rng, 3);
  ref_seg_t real[16];
  size_t nreal = list_ref(dir, real, 16);
  assert_true(nreal >= 3);
  const char *keep[] = {"notes.txt", "seg-garbage.bitarc", "seg-20251120T030000Z.bitarc.tmp",
                        "seg-20251120T030000Z-0.bitarc"};
  char p[600], target[600];
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, keep[i]);
    assert_int_equal(ba_test_write_file(p, (const uint8_t *)"x", 1), 0);
  }
  snprintf(target, sizeof target, "%s/notes.txt", dir);
  snprintf(p, sizeof p, "%s/seg-20000101T000000Z.bitarc", dir);
  assert_int_equal(symlink(target, p), 0);
  /* busy */
  snprintf(p, sizeof p, "%s/.expire.lock", dir);
  int lfd = open(p, O_RDWR | O_CREAT, 0600);
  assert_true(lfd >= 0 && flock(lfd, LOCK_EX) == 0);
  ba_expire_opts_t o;
  ba_expire_opts_init(&o);
  o.max_bytes = 1;
  ba_expire_stats_t st;
  char err[256];
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), BA_ERR_BUSY);
  assert_non_null(strstr(err, dir));
  o.dry_run = 1; /* a dry run does not need the lock */
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), 0);
  assert_int_equal(st.segments_deleted, st.segments);
  close(lfd);
  o.dry_run = 0;
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), 0);
  for (size_t i = 0; i < 4; i++) assert_int_equal(file_size(dir, keep[i]), 1);
  struct stat sb;
  snprintf(p, sizeof p, "%s/seg-20000101T000000Z.bitarc", dir);
  assert_int_equal(lstat(p, &sb), 0);
  assert_true(file_size(dir, ".lock") != UINT64_MAX);
  for (size_t i = 0; i < nreal; i++) assert_int_equal(file_size(dir, real[i].name), UINT64_MAX);
  assert_int_equal(st.segments_deleted, nreal);
  ba_test_rmtree(dir);
  free(dir);
}

static void bad_arguments(void **state) {
  (void)state;
  ba_expire_opts_t o;
  ba_expire_opts_init(&o);
  ba_expire_stats_t st;
  char err[256];
  char *dir = ba_test_mkdtemp();
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), BA_ERR_INVALID); /* no limit */
  assert_non_null(strstr(err, "limit"));
  o.max_age_ns = HOUR;
  char missing[600];
  snprintf(missing, sizeof missing, "%s/no-such-store", dir);
  assert_int_equal(ba_store_expire(missing, &o, &st, err, sizeof err), BA_ERR_NOT_FOUND);
  assert_non_null(strstr(err, "no-such-store"));
  assert_int_equal(ba_store_expire(NULL, &o, &st, err, sizeof err), BA_ERR_INVALID);
  assert_int_equal(ba_store_expire(dir, &o, &st, err, sizeof err), 0); /* empty store: nothing to do */
  assert_int_equal(st.segments, 0);
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(random_limits),
    cmocka_unit_test(open_slice_untouched),
    cmocka_unit_test(others_untouched_and_busy),
    cmocka_unit_test(bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
