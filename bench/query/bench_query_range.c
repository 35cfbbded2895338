/* Range queries = OR of k bins (k = 4..1024): bitarc's iterative and reduction
 * strategies with 1 and 2 threads, on WAH64 (the range-query paper's codec)
 * and the store's other codecs, beside CRoaring's roaring_bitmap_or_many.
 * Data: one column of `rows` values, Zipf-skewed over `card` bins (like a
 * port or time-bin attribute), one bitmap per value; a query ORs k bins
 * picked at random (same picks for every method).
 *
 *   bench_query_range [--rows N] [--card C] [--reps R] [--codec NAME]... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "bitarc/bitarc.h"
#include "bitarc/query.h"
#if BENCH_HAVE_ROARING
#include <roaring/roaring.h>
#endif

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int main(int argc, char **argv) {
  uint64_t rows = 20000000;
  uint32_t card = 4096;
  int reps = 5;
  const char *codecs[8];
  int ncodecs = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--card") && i + 1 < argc) card = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--codec") && i + 1 < argc && ncodecs < 8) codecs[ncodecs++] = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--rows N] [--card C] [--reps R] [--codec NAME]...\n", argv[0]);
      return 2;
    }
  }
  if (!ncodecs) codecs[ncodecs++] = "wah64";
  printf("command:");
  for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
  printf("\nrows %llu, %u bins (Zipf s=0.8), %d reps, median ms\n", (unsigned long long)rows, card, reps);
  /* column values: Zipf by inverse CDF over card bins, then a random bin order */
  uint32_t *col = malloc(rows * sizeof(uint32_t));
  double *cdf = malloc(card * sizeof(double));
  uint32_t *perm = malloc(card * sizeof(uint32_t));
  uint64_t *cnt = calloc(card, sizeof(uint64_t));
  if (!col || !cdf || !perm || !cnt) return 1;
  double tot = 0;
  for (uint32_t v = 0; v < card; v++) tot += 1.0 / pow(v + 1.0, 0.8), cdf[v] = tot;
  for (uint32_t v = 0; v < card; v++) perm[v] = v;
  for (uint32_t v = card - 1; v > 0; v--) {
    uint32_t j = (uint32_t)(rnd() % (v + 1)), t = perm[v];
    perm[v] = perm[j];
    perm[j] = t;
  }
  for (uint64_t r = 0; r < rows; r++) {
    double u = (double)(rnd() >> 11) / 9007199254740992.0 * tot;
    uint32_t lo = 0, hi = card - 1;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    col[r] = perm[lo];
    cnt[col[r]]++;
  }
  /* row lists per value */
  uint64_t **ids = malloc(card * sizeof(uint64_t *));
  uint64_t *fill = calloc(card, sizeof(uint64_t));
  for (uint32_t v = 0; v < card; v++) ids[v] = malloc((cnt[v] ? cnt[v] : 1) * sizeof(uint64_t));
  for (uint64_t r = 0; r < rows; r++) ids[col[r]][fill[col[r]]++] = r;
  static const size_t ks[] = {4, 16, 64, 256, 1024};
  size_t nk = sizeof(ks) / sizeof(ks[0]);
  /* the same random bin picks for every method */
  uint32_t **picks = malloc(nk * reps * sizeof(uint32_t *));
  for (size_t i = 0; i < nk * (size_t)reps; i++) {
    size_t k = ks[i / reps];
    picks[i] = malloc(k * sizeof(uint32_t));
    for (size_t j = 0; j < k; j++) picks[i][j] = (uint32_t)(rnd() % card);
  }
#if BENCH_HAVE_ROARING
  roaring_bitmap_t **rb = malloc(card * sizeof(*rb));
  uint32_t *tmp32 = malloc((rows ? rows : 1) * sizeof(uint32_t));
  size_t rbytes = 0;
  for (uint32_t v = 0; v < card; v++) {
    for (uint64_t j = 0; j < cnt[v]; j++) tmp32[j] = (uint32_t)ids[v][j];
    rb[v] = roaring_bitmap_of_ptr(cnt[v], tmp32);
    roaring_bitmap_run_optimize(rb[v]);
    rbytes += roaring_bitmap_portable_size_in_bytes(rb[v]);
  }
  free(tmp32);
#endif
  for (int ci = 0; ci < ncodecs; ci++) {
    ba_codec_t codec;
    if (ba_codec_from_name(codecs[ci], &codec) < 0) {
      fprintf(stderr, "unknown codec %s\n", codecs[ci]);
      return 2;
    }
    ba_bitmap_t **bm = malloc(card * sizeof(*bm));
    size_t bytes = 0;
    for (uint32_t v = 0; v < card; v++) {
      if (ba_bitmap_from_rows(codec, ids[v], cnt[v], rows, &bm[v]) < 0) return 1;
      bytes += ba_bitmap_size_bytes(bm[v]);
    }
    printf("\n%s index: %.1f MB", codecs[ci], bytes / 1e6);
#if BENCH_HAVE_ROARING
    printf(" (CRoaring %.1f MB)", rbytes / 1e6);
#endif
    printf("\n%6s %9s %9s %9s %9s %9s %9s %9s %10s %9s\n", "bins", "it/1t", "it/2t", "red/1t", "red/2t", "bset/1t",
           "bset/2t", "roaring", "best/roar", "red1/it1");
    for (size_t ki = 0; ki < nk; ki++) {
      size_t k = ks[ki];
      double med[7];
      uint64_t check[7] = {0};
      for (int m = 0; m < 7; m++) {
        double *t = malloc(reps * sizeof(double));
        for (int rep = 0; rep < reps; rep++) {
          uint32_t *p = picks[ki * reps + rep];
          uint64_t t0, t1, c = 0;
          if (m < 6) {
            const ba_bitmap_t **in = malloc(k * sizeof(*in));
            for (size_t j = 0; j < k; j++) in[j] = bm[p[j]];
            ba_bitmap_t *out;
            t0 = now_ns();
            static const ba_range_strategy_t strat[3] = {BA_RANGE_ITERATIVE, BA_RANGE_REDUCTION,
                                                         BA_RANGE_BITSET};
            if (ba_query_or_many(in, k, rows, codec, strat[m / 2], (m & 1) ? 2 : 1, &out) < 0)
              return 1;
            t1 = now_ns();
            ba_bitmap_count(out, &c);
            ba_bitmap_free(out);
            free(in);
          } else {
#if BENCH_HAVE_ROARING
            const roaring_bitmap_t **in = malloc(k * sizeof(*in));
            for (size_t j = 0; j < k; j++) in[j] = rb[p[j]];
            t0 = now_ns();
            roaring_bitmap_t *out = roaring_bitmap_or_many(k, in);
            t1 = now_ns();
            c = roaring_bitmap_get_cardinality(out);
            roaring_bitmap_free(out);
            free(in);
#else
            t0 = t1 = 0;
#endif
          }
          t[rep] = (double)(t1 - t0) / 1e6;
          check[m] += c;
        }
        for (int a = 0; a < reps; a++)
          for (int b = a + 1; b < reps; b++)
            if (t[b] < t[a]) {
              double x = t[a];
              t[a] = t[b];
              t[b] = x;
            }
        med[m] = t[reps / 2];
        free(t);
      }
      for (int m = 1; m < 6; m++)
        if (check[m] != check[0]) {
          fprintf(stderr, "result mismatch between strategies at k=%zu\n", k);
          return 1;
        }
#if BENCH_HAVE_ROARING
      if (check[6] != check[0]) {
        fprintf(stderr, "result mismatch with CRoaring at k=%zu\n", k);
        return 1;
      }
#endif
      double best = med[0];
      for (int m = 1; m < 6; m++)
        if (med[m] < best) best = med[m];
      printf("%6zu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %10.2f %9.2f\n", k, med[0], med[1], med[2], med[3],
             med[4], med[5], med[6], med[6] > 0 ? best / med[6] : 0.0, med[0] > 0 ? med[2] / med[0] : 0.0);
    }
    for (uint32_t v = 0; v < card; v++) ba_bitmap_free(bm[v]);
    free(bm);
  }
  return 0;
}
