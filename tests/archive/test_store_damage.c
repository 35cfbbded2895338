/* Damaged segments: random bit flips, overwritten ranges and truncation.
 * verify must report them; readers must never crash, never read out of
 * bounds (ASan) and never return a wrong row or bitmap. Also drives the CLI
 * (stat, verify, reindex) on clean and damaged stores. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "store_gen.h"

#define SLICE_S 3600u

typedef struct check {
  const ba_record_t *want; /* expected rows of the asked group, in order */
  size_t n, got;
  int wrong;
} check_t;

static int check_sink(void *ctx, const ba_record_t *recs, size_t n) {
  check_t *c = ctx;
  for (size_t i = 0; i < n; i++) {
    if (c->got >= c->n || !rec_equal(&recs[i], &c->want[c->got], BA_COL_ALL)) c->wrong = 1;
    c->got++;
  }
  return 0;
}

static uint8_t *slurp(const char *path, size_t *len) {
  uint8_t *b = ba_test_read_file(path, len);
  assert_non_null(b);
  return b;
}

static void spit(const char *path, const uint8_t *b, size_t len) {
  assert_int_equal(ba_test_write_file(path, b, len), 0);
}

static int run(const char *fmt, const char *dir, const char *arg) {
  const char *bin = getenv("BITARC");
  if (!bin) return -1;
  char cmd[8192];
  char tail[4096];
  snprintf(tail, sizeof tail, fmt, dir, arg ? arg : "");
  snprintf(cmd, sizeof cmd, "'%s' %s", bin, tail);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_damage(void **state) {
  (void)state;
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++) {
    gen_t g;
    uint64_t t0 = (1795000000ull / SLICE_S) * SLICE_S * 1000000000ull;
    gen_records(&g, 2400, 500 + (uint64_t)codec, t0, 600ull * 1000000000ull, 1);
    char *dir = ba_test_mkdtemp();
    ba_store_opts_t o;
    ba_store_opts_init(&o);
    o.codec = (ba_codec_t)codec;
    o.compress = (ba_compress_t)(BA_COMPRESS_LZO + codec % 4);
    o.block_rows = 300;
    ba_store_writer_t *w;
    assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
    assert_int_equal(ba_store_writer_append(w, g.r, g.n), BA_OK);
    assert_int_equal(ba_store_writer_close(w), BA_OK);
    ba_store_t *s;
    assert_int_equal(ba_store_open(dir, &s), BA_OK);
    assert_int_equal(ba_store_segment_count(s), 1);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, ba_store_segment_name(s, 0));
    ba_store_close(s);
    if (codec == BA_CODEC_MIN && getenv("BITARC")) {
      assert_int_equal(run("verify --store '%s' -q%s", dir, NULL), 0);
      assert_int_equal(run("stat --store '%s' -o json > stat.json%s", dir, NULL), 0);
      size_t jl;
      uint8_t *js = slurp("stat.json", &jl);
      js[jl] = 0;
      assert_non_null(strstr((char *)js, "\"records\": 2400,"));
      free(js);
      assert_int_equal(run("reindex --store '%s' --codec plwah --device gpu 2>/dev/null%s", dir, NULL), 2);
      assert_int_equal(run("reindex --store '%s' --codec nope 2>/dev/null%s", dir, NULL), 2);
      assert_int_equal(run("verify 2>/dev/null%s%s", "", NULL), 2);
    }
    size_t len;
    uint8_t *orig = slurp(path, &len);
    ba_rng_t rng;
    ba_rng_seed(&rng, 99 + (uint64_t)codec);
    int detected = 0;
    for (int it = 0; it < 40; it++) {
      uint8_t *b = malloc(len);
      memcpy(b, orig, len);
      size_t n = len;
      int kind = (int)ba_rng_below(&rng, 3);
      if (kind == 0) {
        int flips = 1 + (int)ba_rng_below(&rng, 3);
        for (int f = 0; f < flips; f++) {
          size_t at = (size_t)ba_rng_below(&rng, len);
          b[at] ^= (uint8_t)(1u << ba_rng_below(&rng, 8));
        }
      } else if (kind == 1) {
        size_t at = (size_t)ba_rng_below(&rng, len), k = 1 + (size_t)ba_rng_below(&rng, 64);
        for (size_t i = at; i < len && i < at + k; i++) b[i] = (uint8_t)ba_rng_next(&rng);
      } else {
        n = (size_t)ba_rng_below(&rng, len);
      }
      spit(path, b, n);
      free(b);
      assert_int_equal(ba_store_open(dir, &s), BA_OK);
      ba_segment_t *seg;
      int orc = ba_store_segment(s, 0, &seg);
      if (orc < 0) {
        detected++;
        assert_true(strstr(ba_store_errmsg(s), "seg-") != NULL);
        ba_store_close(s);
        continue;
      }
      uint64_t nbad = 0;
      int vrc = ba_segment_verify(seg, &nbad);
      if (vrc < 0 || nbad) {
        detected++;
        assert_true(vrc < 0 && nbad > 0);
        assert_true(strstr(ba_store_errmsg(s), "seg-") != NULL);
      }
      /* Row groups: all right or all skipped as damaged. */
      uint64_t damaged_total = 0;
      for (size_t first = 0; first < g.n; first += o.block_rows) {
        size_t cnt = BA_MIN((size_t)o.block_rows, g.n - first);
        uint64_t *rows = malloc(cnt * sizeof *rows);
        for (size_t i = 0; i < cnt; i++) rows[i] = first + i;
        check_t c = {.want = g.r + first, .n = cnt};
        uint64_t dmg = 0;
        int rc = ba_segment_read_rows(seg, rows, cnt, BA_COL_ALL, check_sink, &c, &dmg);
        free(rows);
        if (rc < 0) { /* the block table itself is damaged */
          damaged_total += cnt;
          continue;
        }
        assert_false(c.wrong);
        assert_true((c.got == cnt && dmg == 0) || (c.got == 0 && dmg == cnt));
        damaged_total += dmg;
      }
      if (vrc == BA_OK) assert_int_equal(damaged_total, 0);
      /* Index bitmaps: an error or the right rows. */
      uint32_t *refcol = malloc(g.n * sizeof *refcol);
      for (int a = 0; a < BA_ATTR_COUNT; a += 3) {
        ref_column((ba_attr_t)a, g.r, g.n, t0, 60ull * 1000000000ull, refcol);
        for (uint32_t v = 0; v < 256; v += 17) {
          ba_bitmap_t *bm = NULL;
          if (ba_segment_index(seg, (ba_attr_t)a, v, &bm) < 0) continue;
          uint64_t cnt = 0, ref = 0;
          assert_int_equal(ba_bitmap_rows(bm), g.n);
          assert_int_equal(ba_bitmap_count(bm, &cnt), BA_OK);
          for (size_t i = 0; i < g.n; i++) ref += refcol[i] == v;
          assert_int_equal(cnt, ref);
          ba_bitmap_free(bm);
        }
      }
      free(refcol);
      ba_store_close(s);
      if (codec == BA_CODEC_MIN && it < 6 && getenv("BITARC") && (vrc < 0 || nbad))
        assert_int_equal(run("verify --store '%s' -q 2>/dev/null%s", dir, NULL), 1);
    }
    assert_true(detected > 20); /* almost every corruption lands in checked bytes */
    spit(path, orig, len);
    free(orig);
    ba_test_rmtree(dir);
    free(dir);
    gen_free(&g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_damage)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
