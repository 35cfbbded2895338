/* bench_codec_fast: the codec fast paths against the generic paths they
 * replace, in one process on the same bitmaps (a before/after in one run).
 *
 * Data: one column of `rows` values indexed as one bitmap per value, values
 * ranked by frequency (rank 0 = most frequent): uniform, zipf, clustered
 * (uniform values in runs of 1..256 rows), and real (dst port of the IPv4
 * packets of ../shared/data/traces, sorted file order; column 2 = last byte of
 * the dst IP for AND).
 * Per data set and codec:
 *   AND/OR   64 pairs (AND: col 1 rank k & col 2 rank k; OR: col 1 ranks 2k,
 *            2k+1), ba_bitmap_op (fast) vs ba_bitmap_op_generic, ops/s
 *   count    every bitmap of col 1: ba_bitmap_count vs ba_bitmap_count_generic
 *   ORk      union of the k most frequent col 1 values for k = 4..1024: tree of
 *            two-way ORs vs one plain bitset vs the automatic choice, unions/s
 *   range    rows of rank-0 bitmap in 16 windows [i*N/16, (i+1)*N/16):
 *            foreach_range vs foreach with a filter (the whole bitmap), walks/s
 * Every fast result is checked against the generic one (words or counts). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitmap.h"
#include "codec/bitmap_internal.h"
#include "../codec/trace_fields.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *m) {
  fprintf(stderr, "bench_codec_fast: %s\n", m);
  exit(1);
}

static uint64_t g_rng = 42;
static uint64_t rnd(void) {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef struct {
  uint64_t n;
  uint32_t *c1, *c2;
  uint32_t v1, v2;
} data_t;

/* Bitmaps of one column, most frequent value first. */
static ba_bitmap_t **index_col(const uint32_t *vals, uint64_t n, uint32_t nv, ba_codec_t c, uint32_t *nout) {
  uint64_t *cnt = calloc(nv + 1, sizeof *cnt), *off = calloc(nv + 1, sizeof *off);
  uint32_t *ord = malloc(nv * sizeof *ord);
  uint64_t *rows = malloc((n + 1) * sizeof *rows);
  if (!cnt || !off || !ord || !rows) die("out of memory");
  for (uint64_t r = 0; r < n; r++) cnt[vals[r]]++;
  for (uint32_t v = 0; v < nv; v++) off[v + 1] = off[v] + cnt[v];
  uint64_t *fill = malloc((nv + 1) * sizeof *fill);
  memcpy(fill, off, (nv + 1) * sizeof *fill);
  for (uint64_t r = 0; r < n; r++) rows[fill[vals[r]]++] = r;
  uint32_t m = 0;
  for (uint32_t v = 0; v < nv; v++)
    if (cnt[v]) ord[m++] = v;
  for (uint32_t i = 1; i < m; i++) { /* insertion sort by count, descending */
    uint32_t x = ord[i], j = i;
    while (j && cnt[ord[j - 1]] < cnt[x]) {
      ord[j] = ord[j - 1];
      j--;
    }
    ord[j] = x;
  }
  ba_bitmap_t **b = malloc(m * sizeof *b);
  for (uint32_t i = 0; i < m; i++)
    if (ba_bitmap_from_rows(c, rows + off[ord[i]], cnt[ord[i]], n, &b[i]) < 0) die("from_rows");
  free(cnt);
  free(off);
  free(ord);
  free(rows);
  free(fill);
  *nout = m;
  return b;
}

static int same(const ba_bitmap_t *a, const ba_bitmap_t *b) {
  size_t na, nb;
  const void *wa = ba_bitmap_words(a, &na), *wb = ba_bitmap_words(b, &nb);
  return ba_bitmap_rows(a) == ba_bitmap_rows(b) && na == nb && (!na || !memcmp(wa, wb, ba_bitmap_size_bytes(a)));
}

#define TIMED(rate, count, ...)                   \
  do {                                           \
    double t0_ = now_s(), el_;                   \
    uint64_t n_ = 0;                             \
    do {                                         \
      __VA_ARGS__;                               \
      n_ += (count);                             \
      el_ = now_s() - t0_;                       \
    } while (el_ < g_min_s);                     \
    (rate) = (double)n_ / el_;                   \
  } while (0)

static double g_min_s = 0.1;
static volatile uint64_t g_sink;

static void fmt(double v, char *buf) {
  if (v >= 1e6) snprintf(buf, 16, "%.2fM", v / 1e6);
  else if (v >= 1e3) snprintf(buf, 16, "%.1fk", v / 1e3);
  else snprintf(buf, 16, "%.1f", v);
}

typedef struct {
  uint64_t lo, hi, n;
} win_t;

static int win_cb(void *ctx, const uint64_t *rows, size_t n) {
  win_t *w = ctx;
  for (size_t i = 0; i < n; i++) w->n += rows[i] >= w->lo && rows[i] < w->hi;
  return 0;
}
static int cnt_cb(void *ctx, const uint64_t *rows, size_t n) {
  (void)rows;
  ((win_t *)ctx)->n += n;
  return 0;
}

static void run(const char *name, const data_t *d, const ba_codec_t *codecs, size_t nc) {
  static const uint32_t ks[] = {4, 8, 16, 32, 64, 256, 1024};
  printf("\n%s: %" PRIu64 " rows, %u / %u values\n", name, d->n, d->v1, d->v2);
  printf("%-8s %9s %9s %6s %9s %9s %6s %9s %9s %6s %9s %9s %6s\n", "codec", "AND", "ANDgen", "x", "OR",
         "ORgen", "x", "count", "countgen", "x", "range", "rangeall", "x");
  for (size_t ci = 0; ci < nc; ci++) {
    ba_codec_t c = codecs[ci];
    uint32_t m1, m2;
    ba_bitmap_t **b1 = index_col(d->c1, d->n, d->v1, c, &m1), **b2 = index_col(d->c2, d->n, d->v2, c, &m2);
    uint32_t np = m1 / 2 < 64 ? m1 / 2 : 64;
    if (m2 < np) np = m2;
    double r[8];
    for (int gen = 0; gen < 2; gen++) {
      for (int op = 0; op < 2; op++) {
        TIMED(r[op * 2 + gen], np, {
          for (uint32_t k = 0; k < np; k++) {
            const ba_bitmap_t *a = b1[op ? 2 * k : k], *b = op ? b1[2 * k + 1] : b2[k];
            ba_bitmap_t *o;
            int rc = gen ? ba_bitmap_op_generic(op ? BA_OP_OR : BA_OP_AND, a, b, c, &o)
                         : ba_bitmap_op(op ? BA_OP_OR : BA_OP_AND, a, b, c, &o);
            if (rc < 0) die("op");
            g_sink += ba_bitmap_size_bytes(o);
            ba_bitmap_free(o);
          }
        });
      }
    }
    for (uint32_t k = 0; k < np; k++) { /* check */
      ba_bitmap_t *o, *g;
      if (ba_bitmap_and(b1[k], b2[k], c, &o) < 0 || ba_bitmap_op_generic(BA_OP_AND, b1[k], b2[k], c, &g) < 0)
        die("op");
      if (!same(o, g)) die("AND fast != generic");
      ba_bitmap_free(o);
      ba_bitmap_free(g);
    }
    TIMED(r[4], m1, {
      for (uint32_t k = 0; k < m1; k++) {
        uint64_t x;
        ba_bitmap_count(b1[k], &x);
        g_sink += x;
      }
    });
    TIMED(r[5], m1, {
      for (uint32_t k = 0; k < m1; k++) {
        uint64_t x;
        ba_bitmap_count_generic(b1[k], &x);
        g_sink += x;
      }
    });
    for (uint32_t k = 0; k < m1; k++) {
      uint64_t x, y;
      ba_bitmap_count(b1[k], &x);
      ba_bitmap_count_generic(b1[k], &y);
      if (x != y) die("count fast != generic");
    }
    /* range: 16 windows over the rank-0 bitmap */
    TIMED(r[6], 16, {
      for (uint64_t i = 0; i < 16; i++) {
        win_t w = {i * d->n / 16, (i + 1) * d->n / 16, 0};
        ba_bitmap_foreach_range(b1[0], w.lo, w.hi, cnt_cb, &w);
        g_sink += w.n;
      }
    });
    TIMED(r[7], 16, {
      for (uint64_t i = 0; i < 16; i++) {
        win_t w = {i * d->n / 16, (i + 1) * d->n / 16, 0};
        ba_bitmap_foreach(b1[0], win_cb, &w);
        g_sink += w.n;
      }
    });
    for (uint64_t i = 0; i < 16; i++) {
      win_t w = {i * d->n / 16, (i + 1) * d->n / 16, 0}, v = w;
      ba_bitmap_foreach_range(b1[0], w.lo, w.hi, cnt_cb, &w);
      ba_bitmap_foreach(b1[0], win_cb, &v);
      if (w.n != v.n) die("range != filtered foreach");
    }
    char s[8][16];
    for (int i = 0; i < 8; i++) fmt(r[i], s[i]);
    printf("%-8s %9s %9s %6.2f %9s %9s %6.2f %9s %9s %6.2f %9s %9s %6.2f\n", ba_codec_name(c), s[0], s[1],
           r[0] / r[1], s[2], s[3], r[2] / r[3], s[4], s[5], r[4] / r[5], s[6], s[7], r[6] / r[7]);
    /* or_many: tree vs bitset vs auto, unions/s */
    printf("  ORk unions/s (tree / bitset / auto):");
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
      uint32_t k = ks[i] < m1 ? ks[i] : m1;
      double t[3];
      ba_bitmap_t *ref = NULL;
      for (int st = 0; st < 3; st++) {
        int strat = st == 0 ? BA_ORMANY_TREE : st == 1 ? BA_ORMANY_BITSET : BA_ORMANY_AUTO;
        TIMED(t[st], 1, {
          ba_bitmap_t *o;
          if (ba_bitmap_or_many_with((const ba_bitmap_t *const *)b1, k, c, strat, &o) < 0) die("or_many");
          g_sink += ba_bitmap_size_bytes(o);
          if (!ref) ref = o;
          else {
            if (!same(o, ref)) die("or_many strategies differ");
            ba_bitmap_free(o);
          }
        });
      }
      ba_bitmap_free(ref);
      char x[3][16];
      for (int st = 0; st < 3; st++) fmt(t[st], x[st]);
      printf(" k=%u %s/%s/%s", k, x[0], x[1], x[2]);
      if (k == m1) break;
    }
    printf("\n");
    for (uint32_t k = 0; k < m1; k++) ba_bitmap_free(b1[k]);
    for (uint32_t k = 0; k < m2; k++) ba_bitmap_free(b2[k]);
    free(b1);
    free(b2);
  }
}

typedef struct {
  data_t *d;
  uint64_t cap;
} real_t;

static void real_cb(void *ctx, const tf_pkt_t *p) {
  real_t *a = ctx;
  if (a->d->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 65536;
    a->d->c1 = realloc(a->d->c1, a->cap * sizeof *a->d->c1);
    a->d->c2 = realloc(a->d->c2, a->cap * sizeof *a->d->c2);
    if (!a->d->c1 || !a->d->c2) die("out of memory");
  }
  a->d->c1[a->d->n] = p->dport;
  a->d->c2[a->d->n] = p->dst[3];
  a->d->n++;
}

int main(int argc, char **argv) {
  uint64_t rows = 1u << 22;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--time-ms") && i + 1 < argc) g_min_s = atof(argv[++i]) / 1000.0;
    else if (!strcmp(argv[i], "--data") && i + 1 < argc) only = argv[++i];
    else {
      printf("usage: bench_codec_fast [--rows N] [--time-ms T] [--data uniform|zipf|clustered|real]\n"
             "example: bench_codec_fast --data real --time-ms 50\n");
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\ntiming: process CPU time, min %.0f ms per figure; x = fast / generic\n", g_min_s * 1000);
  static const ba_codec_t all[] = {BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_PLWAH, BA_CODEC_COMPAX, BA_CODEC_MASC,
                                   BA_CODEC_MASC_QT};
  const char *sets[] = {"uniform", "zipf", "clustered", "real"};
  for (int s = 0; s < 4; s++) {
    if (only && strcmp(only, sets[s])) continue;
    data_t d = {0, NULL, NULL, 1024, 1024};
    if (s == 3) {
      real_t a = {&d, 0};
      if (tf_walk(BENCH_TRACES, 0, real_cb, &a) <= 0) {
        printf("\nreal: no captures under %s, skipped\n", BENCH_TRACES);
        continue;
      }
      d.v1 = 65536;
      d.v2 = 256;
    } else {
      d.n = rows;
      d.c1 = malloc(rows * sizeof *d.c1);
      d.c2 = malloc(rows * sizeof *d.c2);
      if (!d.c1 || !d.c2) die("out of memory");
      for (int col = 0; col < 2; col++) {
        uint32_t *c = col ? d.c2 : d.c1;
        for (uint64_t r = 0; r < rows;) {
          uint32_t v;
          if (s == 1) { /* Zipf(1.2) by inversion over 1024 values */
            static double cdf[1024];
            if (cdf[1023] == 0) {
              double acc = 0;
              for (int i = 0; i < 1024; i++) cdf[i] = acc += 1.0 / pow(i + 1, 1.2);
              for (int i = 0; i < 1024; i++) cdf[i] /= acc;
            }
            double u = (double)(rnd() >> 11) / 9007199254740992.0;
            uint32_t lo = 0, hi = 1023;
            while (lo < hi) {
              uint32_t mid = (lo + hi) / 2;
              if (cdf[mid] < u) lo = mid + 1;
              else hi = mid;
            }
            v = lo;
          } else {
            v = (uint32_t)(rnd() % 1024);
          }
          uint64_t len = s == 2 ? 1 + rnd() % 256 : 1;
          for (uint64_t j = 0; j < len && r < rows; j++) c[r++] = v;
        }
      }
    }
    run(sets[s], &d, all, sizeof all / sizeof all[0]);
    free(d.c1);
    free(d.c2);
  }
  return 0;
}
