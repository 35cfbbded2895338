/* Reliability (issue 7): damaged segment files. A store is written, then one
 * segment file at a time gets a flipped bit or is truncated at a random
 * position. Every damage must be detected by ba_segment_verify and by
 * `bitarc verify` (exit 1, naming the segment); queries through the API and
 * `bitarc query` must not crash, must skip only what is damaged, and must
 * never return a record that was not written. Iterations: 12 by default,
 * 300 with BA_LONG_TESTS=1. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testsupport.h"
#include "bitarc/query.h"
#include "common/common.h"

#define NREC 12000
#define SLICE_S 3600u

static uint64_t t0(void) { return 1763769600ull * 1000000000ull; }

static ba_record_t *gen(size_t n, uint8_t **frames_out) {
  ba_rng_t rng;
  ba_rng_seed(&rng, 99);
  ba_record_t *r = calloc(n, sizeof *r);
  uint8_t *frames = malloc(n * 100 + 1);
  size_t fo = 0;
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &r[i];
    x->first_ns = t0() + (2ull * SLICE_S * 1000000000ull) / n * i;
    x->last_ns = x->first_ns + 1000;
    x->src_as = (uint32_t)i; /* the record's id */
    x->ipver = 4;
    ba_addr_set_v4(x->src, 0x0A000000u | (uint32_t)ba_rng_zipf(&rng, 2000, 1.1));
    ba_addr_set_v4(x->dst, 0xC0A80000u | (uint32_t)ba_rng_zipf(&rng, 200, 1.1));
    x->src_port = (uint16_t)(1024 + ba_rng_below(&rng, 60000));
    x->dst_port = (uint16_t)(ba_rng_below(&rng, 2) ? 443 : 53);
    x->proto = x->dst_port == 53 ? 17 : 6;
    x->packets = 1;
    x->bytes = 60 + ba_rng_below(&rng, 1400);
    if (i % 3 == 0) {
      x->kind = BA_REC_PACKET;
      x->caplen = (uint32_t)ba_rng_below(&rng, 100);
      x->wirelen = x->caplen;
      x->linktype = 1;
      for (uint32_t k = 0; k < x->caplen; k++) frames[fo + k] = (uint8_t)ba_rng_next(&rng);
      x->frame = x->caplen ? frames + fo : NULL;
      fo += x->caplen;
    } else {
      x->kind = BA_REC_FLOW;
    }
  }
  *frames_out = frames;
  return r;
}

static uint8_t *slurp(const char *path, size_t *len) {
  uint8_t *b = ba_test_read_file(path, len);
  assert_non_null(b);
  return b;
}

static void spit(const char *path, const uint8_t *b, size_t len) {
  assert_int_equal(ba_test_write_file(path, b, len), 0);
}

typedef struct {
  const ba_record_t *in;
  size_t n;
} check_ctx;

/* Every delivered record must be one that was written, field for field. */
static int check_sink(void *ctx, const ba_record_t *recs, size_t n) {
  check_ctx *c = ctx;
  for (size_t i = 0; i < n; i++) {
    uint32_t id = recs[i].src_as;
    if (id >= NREC) fail_msg("query returned a record with unknown id %u", id);
    ba_record_t a = recs[i], b = c->in[id];
    a.frame = b.frame = NULL;
    if (memcmp(&a, &b, sizeof a) != 0) fail_msg("query returned a wrong record (id %u)", id);
    if (b.caplen && memcmp(recs[i].frame, c->in[id].frame, b.caplen) != 0) fail_msg("wrong frame (id %u)", id);
    c->n++;
  }
  return 0;
}

/* Runs the CLI; returns its exit status (or 128 + signal), stderr into err. */
static int run_cli(char *const argv[], char *err, size_t cap) {
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(pipefd[1]);
  size_t len = 0;
  ssize_t k;
  char sink[4096];
  while ((k = read(pipefd[0], len + 1 < cap ? err + len : sink, len + 1 < cap ? cap - 1 - len : sizeof sink)) > 0)
    if (len + 1 < cap) len += (size_t)k;
  err[len] = 0;
  close(pipefd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_corruption(void **state) {
  (void)state;
  const char *bitarc = getenv("BITARC");
  int long_run = getenv("BA_LONG_TESTS") && atoi(getenv("BA_LONG_TESTS")) > 0;
  int iters = long_run ? 300 : 12;
  uint8_t *frames;
  ba_record_t *in = gen(NREC, &frames);
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 500;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, in, NREC), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);

  ba_store_t *s;
  assert_int_equal(ba_store_open(dir, &s), BA_OK);
  size_t nseg = ba_store_segment_count(s);
  assert_int_equal(nseg, 2);
  char names[2][256];
  uint64_t rows[2];
  for (size_t i = 0; i < nseg; i++) {
    ba_segment_t *seg;
    ba_segment_info_t info;
    assert_int_equal(ba_store_segment(s, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &info), BA_OK);
    snprintf(names[i], sizeof names[i], "%s", info.name);
    rows[i] = info.rows;
    uint64_t nbad = 9;
    assert_int_equal(ba_segment_verify(seg, &nbad), BA_OK);
    assert_int_equal(nbad, 0);
  }
  ba_store_close(s);

  ba_rng_t rng;
  ba_rng_seed(&rng, long_run ? (uint64_t)getpid() : 2026);
  size_t undetected = 0;
  for (int it = 0; it < iters; it++) {
    size_t victim = (size_t)ba_rng_below(&rng, nseg);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[victim]);
    size_t len;
    uint8_t *orig = slurp(path, &len);
    uint8_t *bad = malloc(len);
    memcpy(bad, orig, len);
    size_t blen = len;
    int truncate = ba_rng_below(&rng, 4) == 0;
    size_t pos = (size_t)ba_rng_below(&rng, len);
    if (truncate) blen = pos;
    else bad[pos] ^= (uint8_t)(1u << ba_rng_below(&rng, 8));
    spit(path, bad, blen);
    char what[512];
    snprintf(what, sizeof what, "%s of %s at byte %zu of %zu", truncate ? "truncation" : "bit flip",
             names[victim], pos, len);

    /* 1. the API sees it */
    int detected = 0;
    assert_int_equal(ba_store_open(dir, &s), BA_OK);
    for (size_t i = 0; i < ba_store_segment_count(s); i++) {
      ba_segment_t *seg;
      ba_segment_info_t info;
      if (ba_store_segment(s, i, &seg) < 0) {
        detected = 1;
        continue;
      }
      assert_int_equal(ba_segment_info(seg, &info), BA_OK);
      uint64_t nbad = 0;
      int rc = ba_segment_verify(seg, &nbad);
      if (rc < 0 || nbad) {
        if (strcmp(info.name, names[victim]) != 0) fail_msg("%s: verify blames %s", what, info.name);
        detected = 1;
      }
    }
    /* A truncated file may also vanish from the listing (not a segment). */
    size_t listed = ba_store_segment_count(s);
    if (listed < nseg) detected = 1;
    if (!detected) {
      print_message("UNDETECTED: %s\n", what);
      undetected++;
    }

    /* 2. queries: no crash, no wrong record, the intact segment answers */
    static const char *const filters[] = {"any", "dst port 443", "src net 10.0.0.0/24"};
    for (size_t f = 0; f < BA_ARRAY_LEN(filters); f++) {
      ba_query_t *q;
      assert_int_equal(ba_query_create(&q), BA_OK);
      assert_int_equal(ba_query_compile(q, filters[f]), BA_OK);
      ba_query_exec_opts_t eo;
      ba_query_exec_opts_init(&eo);
      eo.out_cols = BA_COL_ALL;
      ba_query_stats_t qs;
      check_ctx c = {in, 0};
      int rc = ba_query_run(q, s, &eo, check_sink, &c, &qs);
      if (f == 0 && rc == BA_OK && c.n + qs.rows_damaged < rows[1 - victim])
        fail_msg("%s: 'any' returned %zu records (+%llu damaged), the intact segment alone holds %llu", what, c.n,
                 (unsigned long long)qs.rows_damaged, (unsigned long long)rows[1 - victim]);
      if (rc < 0 && f == 0) print_message("query 'any' gave up: %s (%s)\n", ba_strerror(rc), what);
      ba_query_free(q);
    }
    ba_store_close(s);

    /* 3. the CLI: verify reports the segment, query does not crash */
    if (bitarc) {
      char err[8192];
      char *const vargs[] = {(char *)bitarc, "verify", "--store", dir, NULL};
      int st = run_cli(vargs, err, sizeof err);
      if (st != 1 && detected) fail_msg("%s: bitarc verify exit %d\n%s", what, st, err);
      if (st == 1 && !strstr(err, names[victim]) && listed >= nseg)
        fail_msg("%s: bitarc verify does not name the segment:\n%s", what, err);
      char *const qargs[] = {(char *)bitarc, "query", "--store", dir, "-o", "csv", "dst port 443", NULL};
      st = run_cli(qargs, err, sizeof err);
      if (st > 2) fail_msg("%s: bitarc query exit %d (crash?)\n%s", what, st, err);
    }
    spit(path, orig, len);
    free(orig);
    free(bad);
  }
  print_message("%d damaged files, %zu undetected\n", iters, undetected);
  assert_int_equal(undetected, 0);
  ba_test_rmtree(dir);
  free(dir);
  free(in);
  free(frames);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_corruption)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
