/* codec/: bitmap indexes of real captures in every codec, against plain bitsets.
 *
 * Rows are the IPv4 packets of ../shared/data/traces (files in sorted order);
 * columns are protocol, dst port, the four src IPv4 bytes and the last dst IPv4
 * byte; one bitmap per (column, value). Each index is built twice per codec:
 * online (ba_bitmap_set in row order, as the ingest path does) and in batch
 * (ba_bitmap_from_rows); both must give the same words. Every bitmap's count,
 * rows (foreach, to_rows) and runs are compared with a linear scan of the
 * column, equal() holds across codecs, and AND/OR/XOR/ANDNOT/NOT of many value
 * pairs (across columns and codecs, result in a third codec) are compared with
 * the same operation on plain bitsets built from the columns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "codec/bitmap_internal.h"
#include "../../bench/codec/trace_fields.h"

#define NCOL 7
#define NCODEC (BA_CODEC_MAX - BA_CODEC_MIN + 1)
static const char *const g_colname[NCOL] = {"proto", "dport", "src0", "src1", "src2", "src3", "dst3"};
static const uint32_t g_colmax[NCOL] = {255, 65535, 255, 255, 255, 255, 255};

typedef struct {
  uint32_t *v[NCOL]; /* per row */
  uint64_t n, cap;
} table_t;

typedef struct {
  uint32_t nvals;      /* distinct values */
  uint32_t *val;       /* value of slot k (increasing) */
  uint32_t *slot;      /* slot of value v (or UINT32_MAX) */
  uint64_t *off;       /* rows of slot k: rows[off[k] .. off[k+1]) */
  uint64_t *rows;
  ba_bitmap_t **bm[NCODEC]; /* online-built bitmap per slot, per codec */
} index_t;

static table_t g_t;
static index_t g_ix[NCOL];
static int g_ready;

static void add_pkt(void *ctx, const tf_pkt_t *p) {
  table_t *t = ctx;
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4096;
    for (int c = 0; c < NCOL; c++) {
      t->v[c] = realloc(t->v[c], t->cap * sizeof(uint32_t));
      assert_non_null(t->v[c]);
    }
  }
  uint32_t vals[NCOL] = {p->proto, p->dport, p->src[0], p->src[1], p->src[2], p->src[3], p->dst[3]};
  for (int c = 0; c < NCOL; c++) t->v[c][t->n] = vals[c];
  t->n++;
}

/* Counting sort: the rows of each value in increasing order. */
static void index_build_lists(index_t *ix, const uint32_t *col, uint64_t n, uint32_t vmax) {
  uint64_t *cnt = calloc((size_t)vmax + 2, sizeof *cnt);
  assert_non_null(cnt);
  for (uint64_t r = 0; r < n; r++) cnt[col[r]]++;
  ix->slot = malloc(((size_t)vmax + 1) * sizeof *ix->slot);
  ix->val = malloc(((size_t)vmax + 1) * sizeof *ix->val);
  ix->off = malloc(((size_t)vmax + 2) * sizeof *ix->off);
  ix->rows = malloc((size_t)(n ? n : 1) * sizeof *ix->rows);
  assert_true(ix->slot && ix->val && ix->off && ix->rows);
  ix->nvals = 0;
  ix->off[0] = 0;
  for (uint32_t v = 0; v <= vmax; v++) {
    ix->slot[v] = UINT32_MAX;
    if (!cnt[v]) continue;
    ix->slot[v] = ix->nvals;
    ix->val[ix->nvals] = v;
    ix->off[ix->nvals + 1] = ix->off[ix->nvals] + cnt[v];
    ix->nvals++;
  }
  uint64_t *fill = malloc(((size_t)ix->nvals + 1) * sizeof *fill);
  assert_non_null(fill);
  memcpy(fill, ix->off, ((size_t)ix->nvals + 1) * sizeof *fill);
  for (uint64_t r = 0; r < n; r++) ix->rows[fill[ix->slot[col[r]]]++] = r;
  free(fill);
  free(cnt);
}

static int setup(void **state) {
  (void)state;
  const char *dir = ba_test_shared("traces");
  if (!dir) return 0;
  long n = tf_walk(dir, 0, add_pkt, &g_t);
  if (n <= 0) return 0;
  for (int c = 0; c < NCOL; c++) index_build_lists(&g_ix[c], g_t.v[c], g_t.n, g_colmax[c]);
  /* Online construction: one pass over the rows, every column and codec. */
  for (int k = 0; k < NCODEC; k++)
    for (int c = 0; c < NCOL; c++) {
      g_ix[c].bm[k] = calloc(g_ix[c].nvals, sizeof(ba_bitmap_t *));
      assert_non_null(g_ix[c].bm[k]);
      for (uint32_t s = 0; s < g_ix[c].nvals; s++)
        assert_int_equal(ba_bitmap_create((ba_codec_t)(BA_CODEC_MIN + k), &g_ix[c].bm[k][s]), 0);
    }
  for (uint64_t r = 0; r < g_t.n; r++)
    for (int c = 0; c < NCOL; c++) {
      uint32_t s = g_ix[c].slot[g_t.v[c][r]];
      for (int k = 0; k < NCODEC; k++) assert_int_equal(ba_bitmap_set(g_ix[c].bm[k][s], r), 0);
    }
  for (int k = 0; k < NCODEC; k++)
    for (int c = 0; c < NCOL; c++)
      for (uint32_t s = 0; s < g_ix[c].nvals; s++)
        assert_int_equal(ba_bitmap_finish(g_ix[c].bm[k][s], g_t.n), 0);
  print_message("%" PRIu64 " IPv4 packets; values per column:", g_t.n);
  for (int c = 0; c < NCOL; c++) print_message(" %s %u", g_colname[c], g_ix[c].nvals);
  print_message("\n");
  g_ready = 1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int c = 0; c < NCOL; c++) {
    for (int k = 0; k < NCODEC; k++) {
      if (!g_ix[c].bm[k]) continue;
      for (uint32_t s = 0; s < g_ix[c].nvals; s++) ba_bitmap_free(g_ix[c].bm[k][s]);
      free(g_ix[c].bm[k]);
    }
    free(g_ix[c].val);
    free(g_ix[c].slot);
    free(g_ix[c].off);
    free(g_ix[c].rows);
    free(g_t.v[c]);
  }
  return 0;
}

#define SKIP_IF_NO_DATA()                                                     \
  do {                                                                        \
    if (!g_ready) {                                                           \
      print_message("skipping: no IPv4 captures under BA_SHARED_DATA/traces\n"); \
      skip();                                                                 \
    }                                                                         \
  } while (0)

typedef struct {
  const uint64_t *want;
  size_t n, pos;
} rows_walk_t;

static int rows_cb(void *ctx, const uint64_t *rows, size_t n) {
  rows_walk_t *w = ctx;
  for (size_t i = 0; i < n; i++) {
    if (w->pos >= w->n || rows[i] != w->want[w->pos]) return -1000;
    w->pos++;
  }
  return 0;
}

typedef struct {
  const uint64_t *want;
  size_t n, pos;
  uint64_t next;
} runs_walk_t;

/* Runs must tile [0, nrows), alternate, and their 1-runs hold exactly the rows. */
static int runs_cb(void *ctx, int value, uint64_t start, uint64_t len) {
  runs_walk_t *w = ctx;
  if (start != w->next || len == 0) return -1000;
  w->next = start + len;
  if (value)
    for (uint64_t r = start; r < start + len; r++) {
      if (w->pos >= w->n || w->want[w->pos] != r) return -1001;
      w->pos++;
    }
  else if (w->pos < w->n && w->want[w->pos] < start + len)
    return -1002;
  return 0;
}

/* Every bitmap: count, foreach, to_rows and runs equal the column's rows. */
static void test_queries(void **state) {
  (void)state;
  SKIP_IF_NO_DATA();
  uint64_t buf[8];
  for (int k = 0; k < NCODEC; k++)
    for (int c = 0; c < NCOL; c++)
      for (uint32_t s = 0; s < g_ix[c].nvals; s++) {
        const ba_bitmap_t *bm = g_ix[c].bm[k][s];
        const uint64_t *want = g_ix[c].rows + g_ix[c].off[s];
        size_t n = (size_t)(g_ix[c].off[s + 1] - g_ix[c].off[s]);
        uint64_t cnt = 0;
        assert_true(ba_bitmap_rows(bm) == g_t.n);
        assert_int_equal(ba_bitmap_count(bm, &cnt), 0);
        if (cnt != n)
          fail_msg("%s %s=%u: count %" PRIu64 ", scan %zu", ba_codec_name(ba_bitmap_codec(bm)),
                   g_colname[c], g_ix[c].val[s], cnt, n);
        rows_walk_t w = {want, n, 0};
        assert_int_equal(ba_bitmap_foreach(bm, rows_cb, &w), 0);
        assert_true(w.pos == n);
        size_t total = 0, m = n < 8 ? n : 8;
        assert_int_equal(ba_bitmap_to_rows(bm, buf, 8, &total), 0);
        assert_true(total == n);
        assert_memory_equal(buf, want, m * sizeof *buf);
        runs_walk_t rw = {want, n, 0, 0};
        assert_int_equal(ba_bitmap_foreach_run(bm, runs_cb, &rw), 0);
        assert_true(rw.pos == n && rw.next == g_t.n);
      }
}

/* Online == batch (word for word), and equal() across codecs. */
static void test_online_batch_equal(void **state) {
  (void)state;
  SKIP_IF_NO_DATA();
  for (int k = 0; k < NCODEC; k++)
    for (int c = 0; c < NCOL; c++)
      for (uint32_t s = 0; s < g_ix[c].nvals; s++) {
        const ba_bitmap_t *on = g_ix[c].bm[k][s];
        ba_bitmap_t *batch = NULL;
        assert_int_equal(ba_bitmap_from_rows(ba_bitmap_codec(on), g_ix[c].rows + g_ix[c].off[s],
                                             (size_t)(g_ix[c].off[s + 1] - g_ix[c].off[s]), g_t.n,
                                             &batch),
                         0);
        size_t na, nb;
        const void *wa = ba_bitmap_words(on, &na), *wb = ba_bitmap_words(batch, &nb);
        unsigned bytes = ba_codec_word_bits(ba_bitmap_codec(on)) / 8;
        if (na != nb || memcmp(wa, wb, na * bytes))
          fail_msg("%s %s=%u: online words (%zu) != batch words (%zu)",
                   ba_codec_name(ba_bitmap_codec(on)), g_colname[c], g_ix[c].val[s], na, nb);
        assert_int_equal(ba_bitmap_size_bytes(on), na * bytes);
        ba_bitmap_free(batch);
        const ba_bitmap_t *other = g_ix[c].bm[(k + 1) % NCODEC][s];
        assert_int_equal(ba_bitmap_equal(on, other), 1);
        /* A different value of the same column is a different bitmap. */
        if (g_ix[c].nvals > 1)
          assert_int_equal(ba_bitmap_equal(on, g_ix[c].bm[(k + 2) % NCODEC][(s + 1) % g_ix[c].nvals]), 0);
      }
}

/* Plain bitset of (col == v), from the column itself. */
static void plain(uint64_t *bits, int c, uint32_t v) {
  memset(bits, 0, (size_t)(g_t.n / 64 + 1) * 8);
  for (uint64_t r = 0; r < g_t.n; r++)
    if (g_t.v[c][r] == v) bits[r / 64] |= 1ull << (r % 64);
}

typedef struct {
  uint64_t *bits;
  uint64_t n;
} collect_t;

static int collect_cb(void *ctx, const uint64_t *rows, size_t n) {
  collect_t *cl = ctx;
  for (size_t i = 0; i < n; i++) {
    cl->bits[rows[i] / 64] |= 1ull << (rows[i] % 64);
    cl->n++;
  }
  return 0;
}

static void check_result(const ba_bitmap_t *res, const uint64_t *want, const char *what) {
  size_t nw = (size_t)(g_t.n / 64 + 1);
  uint64_t *got = calloc(nw, 8), wantcnt = 0, cnt = 0;
  assert_non_null(got);
  collect_t cl = {got, 0};
  assert_true(ba_bitmap_rows(res) == g_t.n);
  assert_int_equal(ba_bitmap_foreach(res, collect_cb, &cl), 0);
  assert_int_equal(ba_bitmap_count(res, &cnt), 0);
  for (size_t i = 0; i < nw; i++) wantcnt += (uint64_t)__builtin_popcountll(want[i]);
  if (memcmp(got, want, nw * 8) || cnt != wantcnt || cl.n != wantcnt)
    fail_msg("%s: %" PRIu64 " rows (count %" PRIu64 "), plain bitsets say %" PRIu64, what, cl.n,
             cnt, wantcnt);
  free(got);
}

/* Slots to combine: the most frequent values plus a few picked at random. */
static void pick_slots(int c, ba_rng_t *rng, uint32_t *out, int n) {
  const index_t *ix = &g_ix[c];
  for (int i = 0; i < n; i++) {
    if (i < n / 2) {
      uint32_t best = 0; /* i-th most frequent, by a simple selection */
      uint64_t bestn = 0;
      for (uint32_t s = 0; s < ix->nvals; s++) {
        uint64_t len = ix->off[s + 1] - ix->off[s];
        int used = 0;
        for (int j = 0; j < i; j++) used |= out[j] == s;
        if (!used && len > bestn) {
          bestn = len;
          best = s;
        }
      }
      out[i] = best;
    } else {
      out[i] = (uint32_t)ba_rng_below(rng, ix->nvals);
    }
  }
}

static void test_ops(void **state) {
  (void)state;
  SKIP_IF_NO_DATA();
  static const char *const opn[] = {"AND", "OR", "XOR", "ANDNOT"};
  /* Column pairs: same column (disjoint values), and across columns. */
  static const int pairs[][2] = {{1, 1}, {1, 0}, {1, 6}, {2, 5}, {0, 3}, {6, 4}};
  size_t nw = (size_t)(g_t.n / 64 + 1);
  uint64_t *pa = malloc(nw * 8), *pb = malloc(nw * 8), *want = malloc(nw * 8);
  assert_true(pa && pb && want);
  ba_rng_t rng;
  ba_rng_seed(&rng, 2026);
  size_t checks = 0;
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    int ca = pairs[p][0], cb = pairs[p][1];
    uint32_t sa[6], sb[6];
    pick_slots(ca, &rng, sa, 6);
    pick_slots(cb, &rng, sb, 6);
    for (int i = 0; i < 6; i++) {
      uint32_t va = g_ix[ca].val[sa[i]], vb = g_ix[cb].val[sb[(i + 1) % 6]];
      plain(pa, ca, va);
      plain(pb, cb, vb);
      for (int k = 0; k < NCODEC; k++) {
        const ba_bitmap_t *a = g_ix[ca].bm[k][sa[i]];
        const ba_bitmap_t *b = g_ix[cb].bm[(k + (int)p + 1) % NCODEC][sb[(i + 1) % 6]];
        ba_codec_t out = (ba_codec_t)(BA_CODEC_MIN + (k + i + 2) % NCODEC);
        char what[128];
        for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
          for (size_t w = 0; w < nw; w++) {
            uint64_t x = pa[w], y = pb[w];
            want[w] = op == BA_OP_AND ? x & y : op == BA_OP_OR ? x | y : op == BA_OP_XOR ? x ^ y : x & ~y;
          }
          ba_bitmap_t *res = NULL;
          assert_int_equal(ba_bitmap_op((ba_op_t)op, a, b, out, &res), 0);
          snprintf(what, sizeof what, "%s=%u %s %s=%u (%s, %s -> %s)", g_colname[ca], va, opn[op],
                   g_colname[cb], vb, ba_codec_name(ba_bitmap_codec(a)),
                   ba_codec_name(ba_bitmap_codec(b)), ba_codec_name(out));
          check_result(res, want, what);
          ba_bitmap_free(res);
          checks++;
          if (op == BA_OP_AND) {
            uint64_t ac = 0, wc = 0;
            assert_int_equal(ba_bitmap_and_count(a, b, &ac), 0);
            for (size_t w = 0; w < nw; w++) wc += (uint64_t)__builtin_popcountll(want[w]);
            assert_true(ac == wc);
          }
        }
        /* NOT: complement within n rows (the padding stays clear). */
        for (size_t w = 0; w < nw; w++) want[w] = ~pa[w];
        want[nw - 1] &= g_t.n % 64 ? (1ull << (g_t.n % 64)) - 1 : 0;
        ba_bitmap_t *res = NULL;
        assert_int_equal(ba_bitmap_not(a, out, &res), 0);
        snprintf(what, sizeof what, "NOT %s=%u (%s -> %s)", g_colname[ca], va,
                 ba_codec_name(ba_bitmap_codec(a)), ba_codec_name(out));
        check_result(res, want, what);
        ba_bitmap_free(res);
        checks++;
      }
    }
  }
  print_message("%zu operation results checked against plain bitsets\n", checks);
  free(pa);
  free(pb);
  free(want);
}

/* The fast paths on real bitmaps: count loops, MASC kernels, or_many
 * strategies and range selection, against the generic path and the columns. */
static int window_cb(void *ctx, const uint64_t *rows, size_t n) { return rows_cb(ctx, rows, n); }

static int same_words(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na, nb;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  return ba_bitmap_codec(a) == ba_bitmap_codec(b) && ba_bitmap_rows(a) == ba_bitmap_rows(b) && na == nb &&
         (na == 0 || memcmp(wa, wb, ba_bitmap_size_bytes(a)) == 0);
}

static void test_fast_paths(void **state) {
  (void)state;
  SKIP_IF_NO_DATA();
  const index_t *dp = &g_ix[1], *d3 = &g_ix[6];
  /* dport slots by decreasing frequency */
  uint32_t *ord = malloc(dp->nvals * sizeof *ord);
  uint8_t *mark = calloc((size_t)g_t.n + 1, 1);
  uint64_t *want = malloc((size_t)(g_t.n + 1) * sizeof *want);
  assert_true(ord && mark && want);
  for (uint32_t i = 0; i < dp->nvals; i++) ord[i] = i;
  for (uint32_t i = 1; i < dp->nvals; i++) {
    uint32_t x = ord[i], j = i;
    while (j && dp->off[ord[j - 1] + 1] - dp->off[ord[j - 1]] < dp->off[x + 1] - dp->off[x]) {
      ord[j] = ord[j - 1];
      j--;
    }
    ord[j] = x;
  }
  for (int k = 0; k < NCODEC; k++) {
    for (uint32_t s = 0; s < dp->nvals; s++) {
      uint64_t c, cg;
      assert_int_equal(ba_bitmap_count(dp->bm[k][s], &c), 0);
      assert_int_equal(ba_bitmap_count_generic(dp->bm[k][s], &cg), 0);
      assert_true(c == cg && c == dp->off[s + 1] - dp->off[s]);
    }
    /* range selection: 8 windows of the 16 most frequent ports */
    for (uint32_t i = 0; i < 16 && i < dp->nvals; i++) {
      uint32_t s = ord[i];
      const uint64_t *rows = dp->rows + dp->off[s];
      size_t nr = (size_t)(dp->off[s + 1] - dp->off[s]);
      for (uint64_t w = 0; w < 8; w++) {
        uint64_t lo = w * g_t.n / 8 + w, hi = (w + 1) * g_t.n / 8 + 3 * w;
        size_t a = 0, b;
        while (a < nr && rows[a] < lo) a++;
        b = a;
        while (b < nr && rows[b] < hi) b++;
        rows_walk_t rw = {rows + a, b - a, 0};
        assert_int_equal(ba_bitmap_foreach_range(dp->bm[k][s], lo, hi, window_cb, &rw), 0);
        assert_true(rw.pos == b - a);
        uint64_t c;
        assert_int_equal(ba_bitmap_count_range(dp->bm[k][s], lo, hi, &c), 0);
        assert_true(c == b - a);
      }
    }
    /* or_many over the 8, 64 and all most frequent ports: every strategy */
    const uint32_t ks[3] = {8, 64, dp->nvals};
    for (int q = 0; q < 3; q++) {
      uint32_t kk = ks[q] < dp->nvals ? ks[q] : dp->nvals;
      const ba_bitmap_t **in = malloc(kk * sizeof *in);
      assert_non_null(in);
      memset(mark, 0, (size_t)g_t.n);
      for (uint32_t i = 0; i < kk; i++) {
        in[i] = dp->bm[k][ord[i]];
        for (uint64_t j = dp->off[ord[i]]; j < dp->off[ord[i] + 1]; j++) mark[dp->rows[j]] = 1;
      }
      size_t nw = 0;
      for (uint64_t r = 0; r < g_t.n; r++)
        if (mark[r]) want[nw++] = r;
      ba_bitmap_t *res[3];
      ba_codec_t oc = (ba_codec_t)(BA_CODEC_MIN + (k + q) % NCODEC);
      for (int st = 0; st < 3; st++) {
        assert_int_equal(ba_bitmap_or_many_with(in, kk, oc, st, &res[st]), 0);
        rows_walk_t rw = {want, nw, 0};
        assert_int_equal(ba_bitmap_foreach(res[st], rows_cb, &rw), 0);
        assert_true(rw.pos == nw);
      }
      assert_true(same_words(res[0], res[1]) && same_words(res[1], res[2]));
      for (int st = 0; st < 3; st++) ba_bitmap_free(res[st]);
      free(in);
    }
  }
  /* MASC x MASC(-QT) kernels == generic path, into every output codec */
  for (int ka = BA_CODEC_MASC; ka <= BA_CODEC_MASC_QT; ka++) {
    for (uint32_t i = 0; i < 24 && i < dp->nvals && i < d3->nvals; i++) {
      const ba_bitmap_t *a = dp->bm[ka - BA_CODEC_MIN][ord[i]];
      const ba_bitmap_t *b = d3->bm[BA_CODEC_MASC_QT + BA_CODEC_MASC - ka - BA_CODEC_MIN][i];
      for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
        for (int oc = BA_CODEC_MIN; oc <= BA_CODEC_MAX; oc++) {
          ba_bitmap_t *f, *g;
          assert_int_equal(ba_bitmap_op((ba_op_t)op, a, b, (ba_codec_t)oc, &f), 0);
          assert_int_equal(ba_bitmap_op_generic(op, a, b, (ba_codec_t)oc, &g), 0);
          assert_true(same_words(f, g));
          ba_bitmap_free(f);
          ba_bitmap_free(g);
        }
      }
    }
  }
  free(ord);
  free(mark);
  free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_queries),
    cmocka_unit_test(test_online_batch_equal),
    cmocka_unit_test(test_ops),
    cmocka_unit_test(test_fast_paths),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
