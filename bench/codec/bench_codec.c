/* bench_codec: bitarc's codecs side by side with CRoaring on the same bitmaps.
 *
 * A data set is two columns of `rows` values (one value per row). Every distinct
 * value of a column gets one bitmap (a bitmap index), in every codec and in
 * Roaring. Reported per data set and library:
 *   B/bit    bytes per set bit of column 1's index (Roaring: portable
 *            serialization after run_optimize; bitarc: encoded words)
 *   build    rows indexed per second (column 1, from sorted row lists)
 *   AND      AND of 64 pairs (column 1 rank k, column 2 rank k), ops/s
 *   OR       OR of 64 pairs (column 1 ranks 2k, 2k+1), ops/s
 *   count    count of each bitmap of column 1, bitmaps/s
 *   OR64     union of column 1's 64 most frequent values, unions/s
 *   OR1024   union of its 1024 most frequent values (all if fewer), unions/s
 * Every result's count is checked against a naive reference (merge of sorted
 * row lists) and against Roaring's; a mismatch stops the run with exit 1.
 * bitarc ANDs and ORs produce a new bitmap in the operands' codec; multi-way
 * unions use ba_bitmap_or_many, Roaring's roaring_bitmap_or_many. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitarc/bitmap.h"
#include "trace_fields.h"

#if BENCH_HAVE_ROARING
#include <roaring/roaring.h>
#endif

#define NPAIRS 64
#define BA_MIN_U32(a, b) ((uint32_t)(a) < (uint32_t)(b) ? (uint32_t)(a) : (uint32_t)(b))

/* CPU time of this (single-threaded) process by default: the machines these
 * runs share are loaded, and wall time then mostly measures the neighbours.
 * --wall switches to CLOCK_MONOTONIC. */
static clockid_t g_clock = CLOCK_PROCESS_CPUTIME_ID;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(g_clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench_codec: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}

/* --- data sets --------------------------------------------------------- */

typedef struct { uint64_t s; } rng_t;
static uint64_t rng_next(rng_t *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) / 9007199254740992.0; }

/* One column as an index: values renumbered by decreasing frequency (rank 0 =
 * most frequent), rows of rank k in rows[off[k] .. off[k+1]). */
typedef struct {
  uint32_t nvals;
  uint64_t *off;
  uint32_t *rows;
  uint32_t *orig; /* original value of each rank */
} column_t;

typedef struct {
  char name[32];
  uint64_t nrows;
  column_t col[2];
  char desc[160];
} dataset_t;

static uint32_t *g_cnt_for_sort;
static int by_count_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (g_cnt_for_sort[x] != g_cnt_for_sort[y]) return g_cnt_for_sort[x] > g_cnt_for_sort[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static void column_build(column_t *c, const uint32_t *vals, uint64_t nrows, uint32_t vmax) {
  uint32_t *cnt = calloc((size_t)vmax + 1, sizeof *cnt);
  uint32_t *order = xmalloc(((size_t)vmax + 1) * sizeof *order);
  uint32_t *rank = xmalloc(((size_t)vmax + 1) * sizeof *rank);
  if (!cnt) die("out of memory");
  for (uint64_t r = 0; r < nrows; r++) cnt[vals[r]]++;
  uint32_t n = 0;
  for (uint32_t v = 0; v <= vmax; v++)
    if (cnt[v]) order[n++] = v;
  g_cnt_for_sort = cnt;
  qsort(order, n, sizeof *order, by_count_desc);
  c->nvals = n;
  c->off = xmalloc(((size_t)n + 1) * sizeof *c->off);
  c->orig = xmalloc((size_t)n * sizeof *c->orig);
  c->rows = xmalloc((size_t)nrows * sizeof *c->rows);
  c->off[0] = 0;
  for (uint32_t k = 0; k < n; k++) {
    rank[order[k]] = k;
    c->orig[k] = order[k];
    c->off[k + 1] = c->off[k] + cnt[order[k]];
  }
  uint64_t *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
  memcpy(fill, c->off, ((size_t)n + 1) * sizeof *fill);
  for (uint64_t r = 0; r < nrows; r++) c->rows[fill[rank[vals[r]]]++] = (uint32_t)r;
  free(fill);
  free(cnt);
  free(order);
  free(rank);
}

static void column_free(column_t *c) {
  free(c->off);
  free(c->rows);
  free(c->orig);
}

static uint32_t zipf_draw(const double *cdf, uint32_t n, rng_t *r) {
  double u = rng_unit(r) * cdf[n - 1];
  uint32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (cdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void make_synthetic(dataset_t *d, const char *kind, uint64_t nrows, uint32_t nvals,
                           double zipf_s, uint32_t max_run, uint64_t seed) {
  uint32_t *vals = xmalloc((size_t)nrows * sizeof *vals);
  double *cdf = xmalloc((size_t)nvals * sizeof *cdf);
  double acc = 0;
  for (uint32_t i = 0; i < nvals; i++) cdf[i] = (acc += 1.0 / pow((double)(i + 1), zipf_s));
  snprintf(d->name, sizeof d->name, "%s", kind);
  d->nrows = nrows;
  for (int c = 0; c < 2; c++) {
    rng_t r = {seed * 2 + (uint64_t)c};
    /* Zipf ranks are scattered over the value space so that rank != value. */
    uint32_t mul = 2654435761u % nvals | 1;
    for (uint64_t i = 0; i < nrows;) {
      if (!strcmp(kind, "uniform")) {
        vals[i++] = (uint32_t)(rng_next(&r) % nvals);
      } else if (!strcmp(kind, "zipf")) {
        vals[i++] = (uint32_t)(((uint64_t)zipf_draw(cdf, nvals, &r) * mul) % nvals);
      } else { /* clustered: runs of 1..max_run rows with one uniform value */
        uint32_t v = (uint32_t)(rng_next(&r) % nvals);
        uint64_t len = 1 + rng_next(&r) % max_run;
        for (uint64_t k = 0; k < len && i < nrows; k++) vals[i++] = v;
      }
    }
    column_build(&d->col[c], vals, nrows, nvals - 1);
  }
  if (!strcmp(kind, "uniform"))
    snprintf(d->desc, sizeof d->desc, "%" PRIu64 " rows, 2 columns of %u uniform values", nrows, nvals);
  else if (!strcmp(kind, "zipf"))
    snprintf(d->desc, sizeof d->desc, "%" PRIu64 " rows, 2 columns of %u Zipf(s=%.2f) values",
             nrows, nvals, zipf_s);
  else
    snprintf(d->desc, sizeof d->desc,
             "%" PRIu64 " rows, 2 columns of %u uniform values in runs of 1..%u rows", nrows, nvals,
             max_run);
  free(vals);
  free(cdf);
}

typedef struct {
  uint32_t *c1, *c2;
  uint64_t n, cap;
} real_acc_t;

static void real_cb(void *ctx, const tf_pkt_t *p) {
  real_acc_t *a = ctx;
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 65536;
    a->c1 = realloc(a->c1, a->cap * sizeof *a->c1);
    a->c2 = realloc(a->c2, a->cap * sizeof *a->c2);
    if (!a->c1 || !a->c2) die("out of memory");
  }
  a->c1[a->n] = p->dport;
  a->c2[a->n] = p->dst[3];
  a->n++;
}

static int make_real(dataset_t *d, const char *dir) {
  real_acc_t a = {0};
  long n = tf_walk(dir, 0, real_cb, &a);
  if (n <= 0) {
    free(a.c1);
    free(a.c2);
    return -1;
  }
  snprintf(d->name, sizeof d->name, "real");
  d->nrows = a.n;
  column_build(&d->col[0], a.c1, a.n, 65535);
  column_build(&d->col[1], a.c2, a.n, 255);
  snprintf(d->desc, sizeof d->desc,
           "%" PRIu64 " IPv4 packets of the shared traces (sorted file order); column 1 = dst "
           "port (%u values), column 2 = last byte of dst IP (%u values)",
           a.n, d->col[0].nvals, d->col[1].nvals);
  free(a.c1);
  free(a.c2);
  return 0;
}

/* --- naive reference counts -------------------------------------------- */

typedef struct {
  uint32_t npairs_and, npairs_or, k64, k1024;
  uint64_t and_cnt[NPAIRS], or_cnt[NPAIRS], or64_cnt, or1024_cnt;
} expect_t;

static uint64_t merge_and(const uint32_t *a, uint64_t na, const uint32_t *b, uint64_t nb) {
  uint64_t i = 0, j = 0, n = 0;
  while (i < na && j < nb) {
    if (a[i] < b[j]) i++;
    else if (a[i] > b[j]) j++;
    else { n++; i++; j++; }
  }
  return n;
}

static void expect_build(const dataset_t *d, expect_t *e) {
  const column_t *c1 = &d->col[0], *c2 = &d->col[1];
  e->npairs_and = BA_MIN_U32(NPAIRS, BA_MIN_U32(c1->nvals, c2->nvals));
  e->npairs_or = BA_MIN_U32(NPAIRS, c1->nvals / 2);
  for (uint32_t k = 0; k < e->npairs_and; k++)
    e->and_cnt[k] = merge_and(c1->rows + c1->off[k], c1->off[k + 1] - c1->off[k],
                              c2->rows + c2->off[k], c2->off[k + 1] - c2->off[k]);
  /* Bitmaps of one column are disjoint: a union's count is the sum. */
  for (uint32_t k = 0; k < e->npairs_or; k++) e->or_cnt[k] = c1->off[2 * k + 2] - c1->off[2 * k];
  e->k64 = BA_MIN_U32(64, c1->nvals);
  e->k1024 = BA_MIN_U32(1024, c1->nvals);
  e->or64_cnt = c1->off[e->k64];
  e->or1024_cnt = c1->off[e->k1024];
}

/* --- results ------------------------------------------------------------ */

typedef struct {
  const char *lib;
  double bytes_per_bit, build, and_ops, or_ops, count_ops, or64_ops, or1024_ops;
} result_t;

static void check(uint64_t got, uint64_t want, const char *lib, const char *what, const dataset_t *d,
                  uint32_t k) {
  if (got != want)
    die("%s on %s: %s #%u has count %" PRIu64 ", the reference says %" PRIu64, lib, d->name, what,
        k, got, want);
}

/* Runs `body` (which does `unit` operations) until `min_s` has elapsed, at least once. */
#define TIMED(min_s, out_rate, unit, body)                    \
  do {                                                        \
    double t0_ = now_s(), el_;                                \
    uint64_t n_ = 0;                                          \
    do {                                                      \
      body;                                                   \
      n_ += (unit);                                           \
      el_ = now_s() - t0_;                                    \
    } while (el_ < (min_s));                                  \
    (out_rate) = (double)n_ / el_;                            \
  } while (0)

static ba_bitmap_t *bm_union(ba_bitmap_t *const *in, uint32_t k, ba_codec_t codec) {
  ba_bitmap_t *res;
  int rc = ba_bitmap_or_many((const ba_bitmap_t *const *)in, k, codec, &res);
  if (rc < 0) die("ba_bitmap_or_many failed: %s", ba_strerror(rc));
  return res;
}

static uint64_t bm_count(const ba_bitmap_t *b) {
  uint64_t n;
  int rc = ba_bitmap_count(b, &n);
  if (rc < 0) die("ba_bitmap_count failed: %s", ba_strerror(rc));
  return n;
}

static ba_bitmap_t **bm_index(const dataset_t *d, int col, ba_codec_t codec, double *seconds) {
  const column_t *c = &d->col[col];
  ba_bitmap_t **bms = xmalloc((size_t)c->nvals * sizeof *bms);
  uint64_t *tmp = xmalloc((size_t)d->nrows * sizeof *tmp);
  for (uint64_t i = 0; i < d->nrows; i++) tmp[i] = c->rows[i];
  double t0 = now_s();
  for (uint32_t k = 0; k < c->nvals; k++) {
    int rc = ba_bitmap_from_rows(codec, tmp + c->off[k], (size_t)(c->off[k + 1] - c->off[k]),
                                 d->nrows, &bms[k]);
    if (rc < 0) die("ba_bitmap_from_rows(%s) failed: %s", ba_codec_name(codec), ba_strerror(rc));
  }
  *seconds = now_s() - t0;
  free(tmp);
  return bms;
}

static void bench_bitarc(const dataset_t *d, const expect_t *e, ba_codec_t codec, double min_s,
                         result_t *res) {
  const char *lib = ba_codec_name(codec);
  const column_t *c1 = &d->col[0];
  double t1, t2;
  ba_bitmap_t **b1 = bm_index(d, 0, codec, &t1), **b2 = bm_index(d, 1, codec, &t2);
  res->lib = lib;
  res->build = (double)d->nrows / t1;
  size_t bytes = 0;
  for (uint32_t k = 0; k < c1->nvals; k++) bytes += ba_bitmap_size_bytes(b1[k]);
  res->bytes_per_bit = (double)bytes / (double)d->nrows;
  /* Correctness first, untimed. */
  for (uint32_t k = 0; k < e->npairs_and; k++) {
    ba_bitmap_t *r;
    if (ba_bitmap_and(b1[k], b2[k], codec, &r) < 0) die("%s AND failed", lib);
    check(bm_count(r), e->and_cnt[k], lib, "AND", d, k);
    ba_bitmap_free(r);
  }
  for (uint32_t k = 0; k < e->npairs_or; k++) {
    ba_bitmap_t *r;
    if (ba_bitmap_or(b1[2 * k], b1[2 * k + 1], codec, &r) < 0) die("%s OR failed", lib);
    check(bm_count(r), e->or_cnt[k], lib, "OR", d, k);
    ba_bitmap_free(r);
  }
  for (uint32_t k = 0; k < c1->nvals; k++)
    check(bm_count(b1[k]), c1->off[k + 1] - c1->off[k], lib, "count", d, k);
  ba_bitmap_t *u = bm_union(b1, e->k64, codec);
  check(bm_count(u), e->or64_cnt, lib, "OR64", d, 0);
  ba_bitmap_free(u);
  u = bm_union(b1, e->k1024, codec);
  check(bm_count(u), e->or1024_cnt, lib, "OR1024", d, 0);
  ba_bitmap_free(u);
  /* Timed. */
  volatile uint64_t sink = 0;
  TIMED(min_s, res->and_ops, e->npairs_and, {
    for (uint32_t k = 0; k < e->npairs_and; k++) {
      ba_bitmap_t *r;
      if (ba_bitmap_and(b1[k], b2[k], codec, &r) < 0) die("AND failed");
      sink += ba_bitmap_size_bytes(r);
      ba_bitmap_free(r);
    }
  });
  TIMED(min_s, res->or_ops, e->npairs_or, {
    for (uint32_t k = 0; k < e->npairs_or; k++) {
      ba_bitmap_t *r;
      if (ba_bitmap_or(b1[2 * k], b1[2 * k + 1], codec, &r) < 0) die("OR failed");
      sink += ba_bitmap_size_bytes(r);
      ba_bitmap_free(r);
    }
  });
  TIMED(min_s, res->count_ops, c1->nvals, {
    for (uint32_t k = 0; k < c1->nvals; k++) sink += bm_count(b1[k]);
  });
  TIMED(min_s, res->or64_ops, 1, {
    u = bm_union(b1, e->k64, codec);
    sink += ba_bitmap_size_bytes(u);
    ba_bitmap_free(u);
  });
  TIMED(min_s, res->or1024_ops, 1, {
    u = bm_union(b1, e->k1024, codec);
    sink += ba_bitmap_size_bytes(u);
    ba_bitmap_free(u);
  });
  (void)sink;
  for (uint32_t k = 0; k < c1->nvals; k++) ba_bitmap_free(b1[k]);
  for (uint32_t k = 0; k < d->col[1].nvals; k++) ba_bitmap_free(b2[k]);
  free(b1);
  free(b2);
}

#if BENCH_HAVE_ROARING
static roaring_bitmap_t **rb_index(const dataset_t *d, int col, double *seconds) {
  const column_t *c = &d->col[col];
  roaring_bitmap_t **bms = xmalloc((size_t)c->nvals * sizeof *bms);
  double t0 = now_s();
  for (uint32_t k = 0; k < c->nvals; k++) {
    bms[k] = roaring_bitmap_create();
    if (!bms[k]) die("roaring_bitmap_create failed");
    roaring_bitmap_add_many(bms[k], (size_t)(c->off[k + 1] - c->off[k]), c->rows + c->off[k]);
    roaring_bitmap_run_optimize(bms[k]);
    roaring_bitmap_shrink_to_fit(bms[k]);
  }
  *seconds = now_s() - t0;
  return bms;
}

static void bench_roaring(const dataset_t *d, const expect_t *e, double min_s, result_t *res) {
  const char *lib = "roaring";
  const column_t *c1 = &d->col[0];
  double t1, t2;
  roaring_bitmap_t **b1 = rb_index(d, 0, &t1), **b2 = rb_index(d, 1, &t2);
  res->lib = lib;
  res->build = (double)d->nrows / t1;
  size_t bytes = 0;
  for (uint32_t k = 0; k < c1->nvals; k++) bytes += roaring_bitmap_portable_size_in_bytes(b1[k]);
  res->bytes_per_bit = (double)bytes / (double)d->nrows;
  for (uint32_t k = 0; k < e->npairs_and; k++) {
    roaring_bitmap_t *r = roaring_bitmap_and(b1[k], b2[k]);
    check(roaring_bitmap_get_cardinality(r), e->and_cnt[k], lib, "AND", d, k);
    roaring_bitmap_free(r);
  }
  for (uint32_t k = 0; k < e->npairs_or; k++) {
    roaring_bitmap_t *r = roaring_bitmap_or(b1[2 * k], b1[2 * k + 1]);
    check(roaring_bitmap_get_cardinality(r), e->or_cnt[k], lib, "OR", d, k);
    roaring_bitmap_free(r);
  }
  const roaring_bitmap_t **cb1 = (const roaring_bitmap_t **)b1;
  roaring_bitmap_t *u = roaring_bitmap_or_many(e->k64, cb1);
  check(roaring_bitmap_get_cardinality(u), e->or64_cnt, lib, "OR64", d, 0);
  roaring_bitmap_free(u);
  u = roaring_bitmap_or_many(e->k1024, cb1);
  check(roaring_bitmap_get_cardinality(u), e->or1024_cnt, lib, "OR1024", d, 0);
  roaring_bitmap_free(u);
  volatile uint64_t sink = 0;
  TIMED(min_s, res->and_ops, e->npairs_and, {
    for (uint32_t k = 0; k < e->npairs_and; k++) {
      roaring_bitmap_t *r = roaring_bitmap_and(b1[k], b2[k]);
      sink += (uintptr_t)r & 1;
      roaring_bitmap_free(r);
    }
  });
  TIMED(min_s, res->or_ops, e->npairs_or, {
    for (uint32_t k = 0; k < e->npairs_or; k++) {
      roaring_bitmap_t *r = roaring_bitmap_or(b1[2 * k], b1[2 * k + 1]);
      sink += (uintptr_t)r & 1;
      roaring_bitmap_free(r);
    }
  });
  TIMED(min_s, res->count_ops, c1->nvals, {
    for (uint32_t k = 0; k < c1->nvals; k++) sink += roaring_bitmap_get_cardinality(b1[k]);
  });
  TIMED(min_s, res->or64_ops, 1, {
    u = roaring_bitmap_or_many(e->k64, cb1);
    sink += (uintptr_t)u & 1;
    roaring_bitmap_free(u);
  });
  TIMED(min_s, res->or1024_ops, 1, {
    u = roaring_bitmap_or_many(e->k1024, cb1);
    sink += (uintptr_t)u & 1;
    roaring_bitmap_free(u);
  });
  (void)sink;
  for (uint32_t k = 0; k < c1->nvals; k++) roaring_bitmap_free(b1[k]);
  for (uint32_t k = 0; k < d->col[1].nvals; k++) roaring_bitmap_free(b2[k]);
  free(b1);
  free(b2);
}
#endif

/* --- main --------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
    "usage: bench_codec [--rows N] [--values V] [--zipf S] [--run R] [--time-ms T]\n"
    "                   [--data uniform,zipf,clustered,real] [--traces DIR] [--seed X] [--wall]\n"
    "\n"
    "Compares bitarc's codecs (wah32 wah64 plwah compax masc masc-qt) and CRoaring\n"
    "on the same bitmap indexes; prints bytes per set bit and operations per second\n"
    "(AND, OR, count, OR of 64 and of 1024 bitmaps), and checks every result's\n"
    "count against a naive reference and Roaring.\n"
    "  --rows N       rows of the synthetic data sets (default 4194304)\n"
    "  --values V     distinct values per synthetic column (default 1024)\n"
    "  --zipf S       Zipf exponent (default 1.2)\n"
    "  --run R        clustered: runs of 1..R rows (default 256)\n"
    "  --time-ms T    minimum time per measurement (default 100)\n"
    "  --data LIST    data sets to run (default uniform,zipf,clustered,real)\n"
    "  --traces DIR   captures for the real data set (default: the shared traces)\n"
    "  --wall         time with the wall clock instead of process CPU time\n"
    "example: bench_codec --rows 1000000 --data zipf,real --time-ms 50\n");
}

static void fmt_rate(char *buf, size_t cap, double v) {
  if (v >= 1e9) snprintf(buf, cap, "%.2fG", v / 1e9);
  else if (v >= 1e6) snprintf(buf, cap, "%.2fM", v / 1e6);
  else if (v >= 1e3) snprintf(buf, cap, "%.1fk", v / 1e3);
  else snprintf(buf, cap, "%.1f", v);
}

int main(int argc, char **argv) {
  static const struct option lo[] = {
    {"rows", required_argument, NULL, 'r'}, {"values", required_argument, NULL, 'v'},
    {"zipf", required_argument, NULL, 'z'}, {"run", required_argument, NULL, 'R'},
    {"time-ms", required_argument, NULL, 't'}, {"data", required_argument, NULL, 'd'},
    {"traces", required_argument, NULL, 'T'}, {"seed", required_argument, NULL, 's'},
    {"wall", no_argument, NULL, 'W'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  uint64_t rows = 1u << 22, seed = 42;
  uint32_t nvals = 1024, max_run = 256;
  double zipf_s = 1.2, min_s = 0.1;
  const char *data = "uniform,zipf,clustered,real";
#ifdef BENCH_TRACES
  const char *traces = BENCH_TRACES;
#else
  const char *traces = NULL;
#endif
  int c;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (c) {
      case 'r': rows = strtoull(optarg, NULL, 10); break;
      case 'v': nvals = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 'z': zipf_s = strtod(optarg, NULL); break;
      case 'R': max_run = (uint32_t)strtoul(optarg, NULL, 10); break;
      case 't': min_s = strtod(optarg, NULL) / 1000.0; break;
      case 'd': data = optarg; break;
      case 'T': traces = optarg; break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'W': g_clock = CLOCK_MONOTONIC; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (rows == 0 || rows > UINT32_MAX || nvals < 2 || max_run < 1) {
    fprintf(stderr, "bench_codec: --rows must be 1..2^32-1, --values >= 2, --run >= 1\n");
    return 2;
  }
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\nsettings: --rows %" PRIu64 " --values %u --zipf %.2f --run %u --time-ms %.0f --data %s"
         " --seed %" PRIu64 "%s\n", rows, nvals, zipf_s, max_run, min_s * 1000, data, seed,
         g_clock == CLOCK_MONOTONIC ? " --wall" : "");
  printf("timing: %s\n", g_clock == CLOCK_MONOTONIC ? "wall clock" : "process CPU time");
#if BENCH_HAVE_ROARING
  printf("roaring: CRoaring (system library), run_optimize + shrink_to_fit, size = portable serialization\n");
#else
  printf("roaring: not built in (libroaring-dev missing); checks use the naive reference only\n");
#endif
  printf("\n%-9s %-8s %8s %9s %9s %9s %9s %9s %9s\n", "data", "lib", "B/bit", "build/s",
         "AND/s", "OR/s", "count/s", "OR64/s", "OR1024/s");
  result_t all[4][8];
  char names[4][32];
  int nsets = 0, nlibs = 0;
  char *list = strdup(data);
  for (char *tok = strtok(list, ","); tok && nsets < 4; tok = strtok(NULL, ",")) {
    dataset_t d;
    memset(&d, 0, sizeof d);
    if (!strcmp(tok, "real")) {
      if (!traces || make_real(&d, traces) < 0) {
        printf("(real: no captures found%s%s; skipped)\n", traces ? " in " : "", traces ? traces : "");
        continue;
      }
    } else if (!strcmp(tok, "uniform") || !strcmp(tok, "zipf") || !strcmp(tok, "clustered")) {
      make_synthetic(&d, tok, rows, nvals, zipf_s, max_run, seed);
    } else {
      fprintf(stderr, "bench_codec: unknown data set '%s'\n", tok);
      return 2;
    }
    expect_t e;
    expect_build(&d, &e);
    fprintf(stderr, "%s: %s\n", d.name, d.desc);
    nlibs = 0;
    for (int cc = BA_CODEC_MIN; cc <= BA_CODEC_MAX; cc++) {
      ba_bitmap_t *probe;
      if (ba_bitmap_create((ba_codec_t)cc, &probe) < 0) continue; /* not in this build */
      ba_bitmap_free(probe);
      bench_bitarc(&d, &e, (ba_codec_t)cc, min_s, &all[nsets][nlibs++]);
    }
#if BENCH_HAVE_ROARING
    bench_roaring(&d, &e, min_s, &all[nsets][nlibs++]);
#endif
    for (int l = 0; l < nlibs; l++) {
      result_t *r = &all[nsets][l];
      char b[6][16];
      fmt_rate(b[0], 16, r->build);
      fmt_rate(b[1], 16, r->and_ops);
      fmt_rate(b[2], 16, r->or_ops);
      fmt_rate(b[3], 16, r->count_ops);
      fmt_rate(b[4], 16, r->or64_ops);
      fmt_rate(b[5], 16, r->or1024_ops);
      printf("%-9s %-8s %8.3f %9s %9s %9s %9s %9s %9s\n", d.name, r->lib, r->bytes_per_bit, b[0],
             b[1], b[2], b[3], b[4], b[5]);
    }
    printf("%-9s (%s; AND pairs %u, OR pairs %u, OR64 over %u, OR1024 over %u bitmaps; all counts"
           " verified)\n", "", d.desc, e.npairs_and, e.npairs_or, e.k64, e.k1024);
    fflush(stdout);
    snprintf(names[nsets], sizeof names[nsets], "%s", d.name);
    nsets++;
    column_free(&d.col[0]);
    column_free(&d.col[1]);
  }
  free(list);
#if BENCH_HAVE_ROARING
  printf("\nratios vs roaring (size: codec/roaring, lower is smaller; speed: codec/roaring, higher is faster)\n");
  printf("%-9s %-8s %8s %9s %9s %9s %9s %9s %9s\n", "data", "lib", "size", "build", "AND", "OR",
         "count", "OR64", "OR1024");
  for (int s = 0; s < nsets; s++) {
    const result_t *rr = &all[s][nlibs - 1];
    for (int l = 0; l + 1 < nlibs; l++) {
      const result_t *r = &all[s][l];
      printf("%-9s %-8s %8.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", names[s], r->lib,
             r->bytes_per_bit / rr->bytes_per_bit, r->build / rr->build, r->and_ops / rr->and_ops,
             r->or_ops / rr->or_ops, r->count_ops / rr->count_ops, r->or64_ops / rr->or64_ops,
             r->or1024_ops / rr->or1024_ops);
    }
  }
#endif
  return 0;
}
