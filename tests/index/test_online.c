/* The online index builder (row groups sorted by value, chunks buffered per
 * value) against a naive reference: one bitmap per value built with
 * ba_bitmap_set row by row. Words must be identical, for every codec, on
 * random (uniform, Zipf, runs, long absences, rows without a value) and real
 * data (ports and address bytes of the CTU-13 flows), whatever the sizes of
 * the added pieces, over several of the builder's batches, rows without a
 * value added as values or as absent rows. Also
 * ba_bitmap_append_groups against row-level appends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitmap.h"
#include "common/common.h"
#include "index/index.h"
#include "testsupport.h"

/* Reference: every present value's bitmap by ba_bitmap_set, ascending values. */
static void reference(ba_codec_t codec, uint32_t dom, const uint32_t *v, size_t n, ba_idx_attr_t *out) {
  ba_bitmap_t **bms = calloc(dom, sizeof *bms);
  assert_non_null(bms);
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n; i++) {
    if (v[i] == BA_IDX_NONE) continue;
    if (!bms[v[i]]) {
      assert_int_equal(ba_bitmap_create(codec, &bms[v[i]]), BA_OK);
      out->n++;
    }
    assert_int_equal(ba_bitmap_set(bms[v[i]], i), BA_OK);
  }
  out->values = malloc((out->n + 1) * sizeof *out->values);
  out->bms = malloc((out->n + 1) * sizeof *out->bms);
  size_t k = 0;
  for (uint32_t x = 0; x < dom; x++) {
    if (!bms[x]) continue;
    assert_int_equal(ba_bitmap_finish(bms[x], n), BA_OK);
    out->values[k] = x;
    out->bms[k++] = bms[x];
  }
  free(bms);
}

/* Online build, fed in pieces of random sizes up to max_piece. */
static void online(ba_codec_t codec, uint32_t dom, const uint32_t *v, size_t n, size_t max_piece, ba_rng_t *rng,
                   ba_idx_attr_t *out) {
  ba_idx_online_t *b;
  assert_int_equal(ba_idx_online_create(codec, dom, &b), BA_OK);
  for (size_t i = 0; i < n;) {
    size_t k = (size_t)ba_rng_below(rng, max_piece + 1); /* 0 too */
    if (k > n - i) k = n - i;
    assert_int_equal(ba_idx_online_add(b, v + i, k), BA_OK);
    i += k;
  }
  assert_int_equal(ba_idx_online_rows(b), n);
  assert_int_equal(ba_idx_online_finish(b, out), BA_OK);
  ba_idx_online_free(b);
}

static void same(const ba_idx_attr_t *a, const ba_idx_attr_t *b, const char *what) {
  if (a->n != b->n) fail_msg("%s: %zu values, reference %zu", what, a->n, b->n);
  for (size_t k = 0; k < a->n; k++) {
    assert_int_equal(a->values[k], b->values[k]);
    size_t la = ba_bitmap_serialized_size(a->bms[k]), lb = ba_bitmap_serialized_size(b->bms[k]);
    uint8_t *x = malloc(la), *y = malloc(lb);
    size_t xa, xb;
    assert_int_equal(ba_bitmap_serialize(a->bms[k], x, la, &xa), BA_OK);
    assert_int_equal(ba_bitmap_serialize(b->bms[k], y, lb, &xb), BA_OK);
    if (la != lb || memcmp(x, y, la)) fail_msg("%s: value %u: bitmap differs from the reference", what, a->values[k]);
    free(x);
    free(y);
  }
}

static void check(ba_codec_t codec, uint32_t dom, const uint32_t *v, size_t n, size_t max_piece, ba_rng_t *rng,
                  const char *what) {
  ba_idx_attr_t got, ref;
  online(codec, dom, v, n, max_piece, rng, &got);
  reference(codec, dom, v, n, &ref);
  char w[160];
  snprintf(w, sizeof w, "%s, %s, domain %u, %zu rows", what, ba_codec_name(codec), dom, n);
  same(&got, &ref, w);
  ba_idx_attr_clear(&got);
  ba_idx_attr_clear(&ref);
}

/* Random columns of several shapes. */
static void fill(ba_rng_t *rng, int shape, uint32_t dom, uint32_t *v, size_t n) {
  uint32_t cur = 0;
  for (size_t i = 0; i < n; i++) {
    switch (shape) {
    case 0: v[i] = (uint32_t)ba_rng_below(rng, dom); break;                  /* uniform */
    case 1: v[i] = (uint32_t)ba_rng_zipf(rng, dom, 1.1); break;              /* skewed */
    case 2:                                                                  /* runs: whole groups of 1s */
      if (ba_rng_below(rng, 150) == 0) cur = (uint32_t)ba_rng_below(rng, dom);
      v[i] = cur;
      break;
    default: /* a few values, each absent for long stretches, many rows without one */
      v[i] = ba_rng_below(rng, 3) ? BA_IDX_NONE : (uint32_t)(dom - 1 - ba_rng_below(rng, dom < 4 ? dom : 4));
      if ((i / 5000) % 3 == 1) v[i] = BA_IDX_NONE;
    }
    if (shape < 2 && ba_rng_below(rng, 20) == 0) v[i] = BA_IDX_NONE;
  }
}

static void test_random(void **state) {
  (void)state;
  static const uint32_t doms[] = {1, 3, 256, 4097, 65536, 70000, 1u << 24};
  ba_rng_t rng;
  ba_rng_seed(&rng, 14);
  size_t cap = 40000;
  uint32_t *v = malloc(cap * sizeof *v);
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++)
    for (size_t d = 0; d < sizeof doms / sizeof doms[0]; d++)
      for (int shape = 0; shape < 4; shape++) {
        if (doms[d] > 70000 && (shape == 1 || shape == 2)) continue; /* the largest domain: a few cases */
        size_t n = (size_t)ba_rng_below(&rng, cap) + 1;
        fill(&rng, shape, doms[d], v, n);
        size_t piece = shape == 3 ? 9000 : ba_rng_below(&rng, 2) ? 4000 : 70;
        check((ba_codec_t)codec, doms[d], v, n, piece, &rng, shape == 0 ? "uniform" : shape == 1 ? "zipf" : "runs");
      }
  free(v);
}

/* Rows without a value added as such (ba_idx_online_add_absent, as for the
 * IPv6 attributes of IPv4 rows) equal the same rows added as BA_IDX_NONE:
 * stretches of absent rows (some longer than a batch) between stretches of
 * values, in pieces of random sizes, for dense and sparse domains. */
static void test_absent(void **state) {
  (void)state;
  static const uint32_t doms[] = {1, 256, 65536, 70000, 1u << 24};
  ba_rng_t rng;
  ba_rng_seed(&rng, 19);
  size_t cap = 400000;
  uint32_t *v = malloc(cap * sizeof *v);
  uint8_t *none = malloc(cap);
  assert_non_null(v);
  assert_non_null(none);
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++)
    for (size_t d = 0; d < sizeof doms / sizeof doms[0]; d++) {
      size_t n = 0;
      while (n < cap) { /* alternating stretches */
        size_t len = (size_t)ba_rng_below(&rng, ba_rng_below(&rng, 4) ? 5000 : 120000) + 1;
        int absent = (int)ba_rng_below(&rng, 2);
        for (size_t i = 0; i < len && n < cap; i++, n++) {
          none[n] = (uint8_t)absent;
          v[n] = absent ? BA_IDX_NONE : (uint32_t)ba_rng_zipf(&rng, doms[d], 1.1);
        }
      }
      n = (size_t)ba_rng_below(&rng, cap) + 1;
      ba_idx_online_t *b;
      assert_int_equal(ba_idx_online_create((ba_codec_t)codec, doms[d], &b), BA_OK);
      for (size_t i = 0; i < n;) {
        size_t k = (size_t)ba_rng_below(&rng, 9000) + 1, j = i;
        while (j < n && j - i < k && none[j] == none[i]) j++;
        if (none[i]) assert_int_equal(ba_idx_online_add_absent(b, j - i), BA_OK);
        else assert_int_equal(ba_idx_online_add(b, v + i, j - i), BA_OK);
        i = j;
      }
      assert_int_equal(ba_idx_online_rows(b), n);
      ba_idx_attr_t got, ref;
      assert_int_equal(ba_idx_online_finish(b, &got), BA_OK);
      ba_idx_online_free(b);
      reference((ba_codec_t)codec, doms[d], v, n, &ref);
      char w[160];
      snprintf(w, sizeof w, "absent rows, %s, domain %u, %zu rows", ba_codec_name((ba_codec_t)codec), doms[d], n);
      same(&got, &ref, w);
      ba_idx_attr_clear(&got);
      ba_idx_attr_clear(&ref);
    }
  free(v);
  free(none);
}

/* Ports and address bytes of real flows (CTU-13 scenario 6, Argus CSV). */
/* Columns longer than the builder's batches (65,536 rows at domains up to
 * 4,096, 16 x domain rows above, 2^20 at 65,536), so that rows are applied
 * over several batches, a value's visit closes more chunks than one
 * append_groups call takes, and the last batch is partial. */
static void test_batches(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 17);
  size_t cap = ((size_t)1 << 20) + 70001;
  uint32_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++) {
    static const uint32_t doms[] = {256, 4097};
    for (size_t d = 0; d < 2; d++) {
      size_t n = 3 * 65536 + 777;
      fill(&rng, codec % 2, doms[d], v, n);
      check((ba_codec_t)codec, doms[d], v, n, 4000, &rng, "batches");
    }
  }
  /* 65,536 values: one full batch and a partial one, G = 31 and 63 */
  fill(&rng, 0, 65536, v, cap);
  check(BA_CODEC_PLWAH, 65536, v, cap, 4000, &rng, "batches");
  fill(&rng, 1, 65536, v, cap);
  check(BA_CODEC_WAH64, 65536, v, cap, 70000, &rng, "batches");
  free(v);
}

/* Builders freed unfinished (an open batch, or failed on a bad value) leave
 * their arrays to later builders of the same domain: those must still equal
 * the reference. */
static void test_reuse(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 18);
  size_t n = 100000;
  uint32_t *v = malloc(n * sizeof *v);
  assert_non_null(v);
  static const uint32_t doms[] = {256, 65536};
  for (int round = 0; round < 6; round++) {
    uint32_t dom = doms[round % 2];
    fill(&rng, round % 3, dom, v, n);
    ba_idx_online_t *b;
    assert_int_equal(ba_idx_online_create(BA_CODEC_PLWAH, dom, &b), BA_OK);
    assert_int_equal(ba_idx_online_add(b, v, n - 1000), BA_OK); /* at 256: a batch applied, one open */
    if (round >= 2) {
      uint32_t bad[3] = {1, dom, 2};
      assert_int_equal(ba_idx_online_add(b, bad, 3), BA_ERR_INVALID);
    }
    ba_idx_online_free(b);
    fill(&rng, (round + 1) % 3, dom, v, n);
    check(BA_CODEC_PLWAH, dom, v, n, 4000, &rng, "after a builder freed unfinished");
    check(BA_CODEC_WAH32, dom, v, n / 3, 9000, &rng, "after a builder freed unfinished");
  }
  free(v);
}

static void test_real(void **state) {
  (void)state;
  const char *path = ba_test_shared("flows/ctu13-s6/ctu13-s6.binetflow.xz");
  char cmd[1200];
  FILE *p = NULL;
  if (path) {
    snprintf(cmd, sizeof cmd, "xz -dc '%s' 2>/dev/null | head -n 200001", path);
    p = popen(cmd, "r");
  }
  if (!p) {
    skip();
    return;
  }
  size_t cap = 200000, n = 0;
  uint32_t *sport = malloc(cap * 4), *dport = malloc(cap * 4), *sa3 = malloc(cap * 4), *da2 = malloc(cap * 4);
  char line[1024];
  while (fgets(line, sizeof line, p) && n < cap) {
    char *f[16];
    int nf = 0;
    for (char *s = line, *t; nf < 16 && (t = strsep(&s, ",")); ) f[nf++] = t;
    if (nf < 15 || !strcmp(f[0], "StartTime")) continue;
    char *end;
    unsigned long sp = strtoul(f[4], &end, 0), dp = strtoul(f[7], NULL, 0);
    sport[n] = *f[4] && sp < 65536 ? (uint32_t)sp : BA_IDX_NONE;
    dport[n] = *f[7] && dp < 65536 ? (uint32_t)dp : BA_IDX_NONE;
    unsigned a, b, c, d;
    sa3[n] = sscanf(f[3], "%u.%u.%u.%u", &a, &b, &c, &d) == 4 && d < 256 ? d : BA_IDX_NONE;
    da2[n] = sscanf(f[6], "%u.%u.%u.%u", &a, &b, &c, &d) == 4 && c < 256 ? c : BA_IDX_NONE;
    n++;
  }
  pclose(p);
  assert_int_equal(n, cap);
  ba_rng_t rng;
  ba_rng_seed(&rng, 15);
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++) {
    check((ba_codec_t)codec, 65536, sport, n, 4000, &rng, "real src ports");
    check((ba_codec_t)codec, 65536, dport, n, 4000, &rng, "real dst ports");
    check((ba_codec_t)codec, 256, sa3, n, 4000, &rng, "real src address byte 3");
    check((ba_codec_t)codec, 256, da2, n, 4000, &rng, "real dst address byte 2");
  }
  free(sport);
  free(dport);
  free(sa3);
  free(da2);
}

static void test_bad_value(void **state) {
  (void)state;
  ba_idx_online_t *b;
  assert_int_equal(ba_idx_online_create(BA_CODEC_PLWAH, 100, &b), BA_OK);
  uint32_t v[3] = {5, 100, 7};
  assert_int_equal(ba_idx_online_add(b, v, 3), BA_ERR_INVALID);
  assert_int_equal(ba_idx_online_add(b, v, 1), BA_ERR_INVALID); /* stays failed */
  ba_idx_attr_t a;
  assert_int_equal(ba_idx_online_finish(b, &a), BA_ERR_INVALID);
  ba_idx_online_free(b);
  /* a whole chunk (online_small.c tests its values at once): one value out
   * of the domain, the others 0 (their OR is that value) */
  uint32_t w[31] = {0};
  w[17] = 100;
  assert_int_equal(ba_idx_online_create(BA_CODEC_PLWAH, 100, &b), BA_OK);
  assert_int_equal(ba_idx_online_add(b, w, 31), BA_ERR_INVALID);
  ba_idx_online_free(b);
  /* values in the domain whose OR is not (64 | 36 = 100) */
  ba_rng_t rng;
  ba_rng_seed(&rng, 23);
  uint32_t x[31 * 40];
  for (size_t i = 0; i < 31 * 40; i++) x[i] = i % 3 ? 64 : 36;
  check(BA_CODEC_PLWAH, 100, x, 31 * 40, 4000, &rng, "chunks whose values' OR is out of the domain");
  assert_int_equal(ba_idx_online_create(BA_CODEC_PLWAH, 0, &b), BA_ERR_INVALID);
  assert_int_equal(ba_idx_online_create(BA_CODEC_PLWAH, BA_IDX_MAX_DOMAIN + 1, &b), BA_ERR_INVALID);
}

/* ba_bitmap_append_groups = the same rows through append_run / append_bits,
 * starting on a group boundary or not. */
static void test_append_groups(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 16);
  for (int it = 0; it < 1200; it++) {
    ba_codec_t codec = (ba_codec_t)(BA_CODEC_MIN + it % 6);
    unsigned G = ba_codec_word_bits(codec) - 1;
    ba_bitmap_t *a, *b;
    assert_int_equal(ba_bitmap_create(codec, &a), BA_OK);
    assert_int_equal(ba_bitmap_create(codec, &b), BA_OK);
    uint64_t lead = it % 4 == 0 ? ba_rng_below(&rng, 200) : (it % 4) * G * ba_rng_below(&rng, 3);
    for (uint64_t r = 0; r < lead; r++) {
      int bit = (int)ba_rng_below(&rng, 2);
      assert_int_equal(ba_bitmap_append_run(a, bit, 1), BA_OK);
      assert_int_equal(ba_bitmap_append_run(b, bit, 1), BA_OK);
    }
    uint32_t gaps[40];
    uint64_t lits[40];
    size_t n = (size_t)ba_rng_below(&rng, 40);
    const uint64_t all = G == 63 ? ~0ull >> 1 : (1ull << G) - 1;
    for (size_t i = 0; i < n; i++) {
      gaps[i] = ba_rng_below(&rng, 3) ? 0 : (uint32_t)ba_rng_below(&rng, 5000);
      /* now and then a gap past PLWAH's fill count (2^25 - 1 groups) */
      if (it % 50 == 7 && i == 0) gaps[i] = (1u << 25) + (uint32_t)ba_rng_below(&rng, 3) - 1;
      uint64_t r = ba_rng_next(&rng);
      int k = (int)ba_rng_below(&rng, 5);
      /* zero, all ones, one 1, one 0 (piggybacked on 0- and 1-fills), random; bits above G too */
      lits[i] = k == 0   ? 0
                : k == 1 ? all | (r << G)
                : k == 2 ? 1ull << ba_rng_below(&rng, G)
                : k == 3 ? all ^ (1ull << ba_rng_below(&rng, G))
                         : r;
      assert_int_equal(ba_bitmap_append_run(a, 0, (uint64_t)gaps[i] * G), BA_OK);
      assert_int_equal(ba_bitmap_append_bits(a, lits[i] & all, G), BA_OK);
    }
    assert_int_equal(ba_bitmap_append_groups(b, gaps, lits, n), BA_OK);
    assert_int_equal(ba_bitmap_rows(a), ba_bitmap_rows(b));
    uint64_t rows = ba_bitmap_rows(a) + ba_rng_below(&rng, 100);
    assert_int_equal(ba_bitmap_finish(a, rows), BA_OK);
    assert_int_equal(ba_bitmap_finish(b, rows), BA_OK);
    size_t na, nb;
    const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
    assert_int_equal(na, nb);
    if (na) assert_memory_equal(wa, wb, na * ba_codec_word_bits(codec) / 8);
    assert_int_equal(ba_bitmap_append_groups(b, gaps, lits, n), BA_ERR_INVALID); /* finished */
    ba_bitmap_free(a);
    ba_bitmap_free(b);
  }
  assert_int_equal(ba_bitmap_append_groups(NULL, NULL, NULL, 0), BA_ERR_INVALID);
}

/* The small-domain builder (domains up to 256: chunk by chunk, PLWAH words
 * encoded as chunks close) against the reference on the shapes its
 * encoding cases come from: every row one value (full chunks: 1-fills), one
 * row per chunk (0-fills carrying a position), two rows per chunk after a
 * gap (a 0-fill and a literal), a value in every row but one of a chunk (a
 * 1-fill carrying a 0), the domain's first and last values only, runs with
 * stretches of rows without a value longer than a chunk, added as values or
 * as absent rows; row counts on, just before and just after chunk
 * boundaries, pieces of 0 to 100 rows or of a row group. */
static void test_small_chunks(void **state) {
  (void)state;
  static const uint32_t doms[] = {1, 2, 255, 256};
  ba_rng_t rng;
  ba_rng_seed(&rng, 21);
  size_t cap = 20000;
  uint32_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  for (int codec = BA_CODEC_MIN; codec <= BA_CODEC_MAX; codec++) {
    const size_t G = ba_codec_word_bits((ba_codec_t)codec) - 1;
    for (size_t d = 0; d < sizeof doms / sizeof doms[0]; d++)
      for (int shape = 0; shape < 8; shape++) {
        const uint32_t dom = doms[d], hi = dom - 1;
        size_t n = (size_t)ba_rng_below(&rng, cap / G - 2) * G + 1;
        n = n - 1 + (size_t)ba_rng_below(&rng, 3); /* on a boundary, one row before, one after */
        if (n > cap) n = cap;
        if (n == 0) n = 1;
        uint32_t cur = 0;
        for (size_t i = 0; i < n; i++) {
          size_t o = i % G, g = i / G;
          switch (shape) {
          case 0: v[i] = hi; break;                                              /* all the same */
          case 1: v[i] = o == g % G ? hi : BA_IDX_NONE; break;                   /* one row per chunk */
          case 2: v[i] = (o == 3 || o == 7) && g % 5 == 0 ? 0 : BA_IDX_NONE; break; /* two rows, gaps */
          case 3: v[i] = o == g % G && dom > 1 ? 0 : hi; break;                  /* all but one row */
          case 4: v[i] = ba_rng_below(&rng, 2) ? 0 : hi; break;                  /* the domain's edges */
          case 5:                                                                /* runs and holes */
            if (ba_rng_below(&rng, 100) == 0) cur = ba_rng_below(&rng, 4) ? (uint32_t)ba_rng_below(&rng, dom) : BA_IDX_NONE;
            v[i] = cur;
            break;
          case 6: v[i] = (uint32_t)ba_rng_zipf(&rng, dom, 1.3); break;            /* skewed */
          default: v[i] = (g / 7) % 2 ? BA_IDX_NONE : (uint32_t)ba_rng_below(&rng, dom); /* uniform, absent stretches */
          }
        }
        char w[64];
        snprintf(w, sizeof w, "small chunks, shape %d", shape);
        check((ba_codec_t)codec, dom, v, n, shape % 2 ? 100 : 4000, &rng, w);
        /* the same rows, stretches without a value added as absent rows */
        ba_idx_online_t *b;
        assert_int_equal(ba_idx_online_create((ba_codec_t)codec, dom, &b), BA_OK);
        for (size_t i = 0; i < n;) {
          size_t j = i + 1;
          while (j < n && (v[j] == BA_IDX_NONE) == (v[i] == BA_IDX_NONE) && j - i < 1000) j++;
          if (v[i] == BA_IDX_NONE) assert_int_equal(ba_idx_online_add_absent(b, j - i), BA_OK);
          else assert_int_equal(ba_idx_online_add(b, v + i, j - i), BA_OK);
          i = j;
        }
        ba_idx_attr_t got, ref;
        assert_int_equal(ba_idx_online_finish(b, &got), BA_OK);
        ba_idx_online_free(b);
        reference((ba_codec_t)codec, dom, v, n, &ref);
        snprintf(w, sizeof w, "small chunks, absent rows, shape %d", shape);
        same(&got, &ref, w);
        ba_idx_attr_clear(&got);
        ba_idx_attr_clear(&ref);
      }
  }
  free(v);
}

/* ba_idx_fold with the row counts the builder hands over (online_dense.c)
 * = the same fold counting every bitmap (counts NULL); the counts equal
 * ba_bitmap_count's; the bins (PLWAH: ORed group by group in fold.c) equal
 * ba_bitmap_or_many of each bin's rare bitmaps. Ports of skewed and uniform
 * rows, several thresholds, row counts on and off a group boundary. */
static uint32_t bin_of_port(uint32_t v) { return v < 1024 ? 0 : 1 + (v >> 12); }
static void test_fold_counts(void **state) {
  (void)state;
  ba_rng_t rng;
  ba_rng_seed(&rng, 22);
  size_t cap = 200000;
  uint32_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  for (int it = 0; it < 6; it++) {
    size_t n = (size_t)ba_rng_below(&rng, cap) + 1;
    if (it % 2) n = (n + 30) / 31 * 31; /* a whole last group */
    fill(&rng, it % 3, 65536, v, n);    /* uniform, skewed, runs (full groups of a rare value) */
    ba_idx_attr_t a, b, abins = {0}, bbins = {0};
    online(BA_CODEC_PLWAH, 65536, v, n, 4000, &rng, &a);
    online(BA_CODEC_PLWAH, 65536, v, n, 4000, &rng, &b);
    assert_non_null(a.counts);
    for (size_t k = 0; k < a.n; k++) { /* the counts are the bitmaps' */
      uint64_t c = 0;
      assert_int_equal(ba_bitmap_count(a.bms[k], &c), BA_OK);
      assert_int_equal(c, a.counts[k]);
    }
    ba_free(b.counts); /* b: the fold counts */
    b.counts = NULL;
    uint64_t min_rows = it < 2 ? 2 : n >> (4 + it);
    /* reference bins: ba_bitmap_or_many of each bin's rare bitmaps */
    ba_idx_attr_t rbins = {0};
    rbins.values = malloc(17 * sizeof *rbins.values);
    rbins.bms = malloc(17 * sizeof *rbins.bms);
    const ba_bitmap_t **ops = malloc((b.n + 1) * sizeof *ops);
    for (uint32_t bin = 0; bin < 17; bin++) {
      size_t k = 0;
      for (size_t j = 0; j < b.n; j++) {
        uint64_t c = 0;
        assert_int_equal(ba_bitmap_count(b.bms[j], &c), BA_OK);
        if (c < min_rows && bin_of_port(b.values[j]) == bin) ops[k++] = b.bms[j];
      }
      if (k == 0) continue;
      assert_int_equal(ba_bitmap_or_many(ops, k, BA_CODEC_PLWAH, &rbins.bms[rbins.n]), BA_OK);
      rbins.values[rbins.n++] = bin;
    }
    free(ops);
    assert_int_equal(ba_idx_fold(&a, &abins, min_rows, bin_of_port, BA_CODEC_PLWAH), BA_OK);
    assert_int_equal(ba_idx_fold(&b, &bbins, min_rows, bin_of_port, BA_CODEC_PLWAH), BA_OK);
    same(&a, &b, "fold with counts, exact");
    same(&abins, &bbins, "fold with counts, bins");
    same(&abins, &rbins, "fold, bins against ba_bitmap_or_many");
    ba_idx_attr_clear(&rbins);
    ba_idx_attr_clear(&a);
    ba_idx_attr_clear(&b);
    ba_idx_attr_clear(&abins);
    ba_idx_attr_clear(&bbins);
  }
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random),
    cmocka_unit_test(test_batches),
    cmocka_unit_test(test_absent),
    cmocka_unit_test(test_reuse),
    cmocka_unit_test(test_real),
    cmocka_unit_test(test_bad_value),
    cmocka_unit_test(test_append_groups),
    cmocka_unit_test(test_small_chunks),
    cmocka_unit_test(test_fold_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
