/* Range queries: the OR of many bins (gpu-range-queries-wah64, "Multi-core
 * CPU methods"). Iterative: R <- R | A_j; with t threads each thread folds a
 * contiguous share of the bins and the t partial results are ORed at the end.
 * Reduction: a pairwise tree of log2(n) levels; the pairs of each level are
 * split among the threads. Both work in the compressed domain. */
#include <pthread.h>

#include "common/common.h"
#include "query/query_internal.h"

#define MAX_THREADS 2

/* Folds bms[lo, hi) into *out (NULL if the share is empty). */
static int fold(const ba_bitmap_t *const *bms, size_t lo, size_t hi, ba_codec_t c, ba_bitmap_t **out) {
  *out = NULL;
  if (lo >= hi) return 0;
  if (hi - lo == 1) return ba_bitmap_clone(bms[lo], out);
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_or(bms[lo], bms[lo + 1], c, &r));
  for (size_t j = lo + 2; j < hi; j++) {
    ba_bitmap_t *t;
    int rc = ba_bitmap_or(r, bms[j], c, &t);
    ba_bitmap_free(r);
    if (rc < 0) return rc;
    r = t;
  }
  *out = r;
  return 0;
}

typedef struct fold_job {
  const ba_bitmap_t *const *bms;
  size_t lo, hi;
  ba_codec_t codec;
  ba_bitmap_t *out;
  int rc;
} fold_job_t;

static void *fold_main(void *arg) {
  fold_job_t *j = arg;
  j->rc = fold(j->bms, j->lo, j->hi, j->codec, &j->out);
  return NULL;
}

static int run_iterative(const ba_bitmap_t *const *bms, size_t n, ba_codec_t c, int threads,
                         ba_bitmap_t **out) {
  if (threads < 2 || n < 4) return fold(bms, 0, n, c, out);
  fold_job_t jobs[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  size_t share = (n + (size_t)threads - 1) / (size_t)threads;
  for (int t = 0; t < threads; t++) {
    size_t lo = (size_t)t * share, hi = BA_MIN(n, lo + share);
    jobs[t] = (fold_job_t){bms, lo, hi, c, NULL, 0};
    if (t > 0 && pthread_create(&tid[t], NULL, fold_main, &jobs[t]) == 0) started[t] = 1;
    else if (t > 0) fold_main(&jobs[t]);
  }
  fold_main(&jobs[0]);
  int rc = 0;
  for (int t = 1; t < threads; t++)
    if (started[t]) pthread_join(tid[t], NULL);
  for (int t = 0; t < threads; t++)
    if (jobs[t].rc < 0) rc = jobs[t].rc;
  ba_bitmap_t *r = NULL;
  for (int t = 0; t < threads && rc == 0; t++) {
    if (!jobs[t].out) continue;
    if (!r) {
      r = jobs[t].out;
      jobs[t].out = NULL;
      continue;
    }
    ba_bitmap_t *x;
    rc = ba_bitmap_or(r, jobs[t].out, c, &x);
    ba_bitmap_free(r);
    r = rc == 0 ? x : NULL;
  }
  for (int t = 0; t < threads; t++) ba_bitmap_free(jobs[t].out);
  if (rc < 0) {
    ba_bitmap_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

typedef struct level_job {
  const ba_bitmap_t *const *in;
  ba_bitmap_t **outv;
  size_t npairs, first, step;
  ba_codec_t codec;
  int rc;
} level_job_t;

static void *level_main(void *arg) {
  level_job_t *j = arg;
  for (size_t k = j->first; k < j->npairs && j->rc == 0; k += j->step)
    j->rc = ba_bitmap_or(j->in[2 * k], j->in[2 * k + 1], j->codec, &j->outv[k]);
  return NULL;
}

static int run_reduction(const ba_bitmap_t *const *bms, size_t n, ba_codec_t c, int threads,
                         ba_bitmap_t **out) {
  if (n == 1) return ba_bitmap_clone(bms[0], out);
  /* cur: the current level; owned[] says which entries we allocated. */
  const ba_bitmap_t **cur = ba_malloc(n * sizeof(*cur));
  ba_bitmap_t **next = ba_calloc(n, sizeof(*next));
  int *owned = ba_calloc(n, sizeof(int));
  int rc = 0;
  if (!cur || !next || !owned) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  for (size_t i = 0; i < n; i++) cur[i] = bms[i];
  size_t m = n;
  while (m > 1) {
    size_t npairs = m / 2;
    for (size_t k = 0; k < npairs; k++) next[k] = NULL;
    level_job_t jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    int t_use = threads >= 2 && npairs >= 2 ? 2 : 1;
    for (int t = 0; t < t_use; t++) jobs[t] = (level_job_t){cur, next, npairs, (size_t)t, (size_t)t_use, c, 0};
    for (int t = 1; t < t_use; t++)
      if (pthread_create(&tid[t], NULL, level_main, &jobs[t]) == 0) started[t] = 1;
      else level_main(&jobs[t]);
    level_main(&jobs[0]);
    for (int t = 1; t < t_use; t++)
      if (started[t]) pthread_join(tid[t], NULL);
    for (int t = 0; t < t_use; t++)
      if (jobs[t].rc < 0) rc = jobs[t].rc;
    /* Free the inputs of this level that we own. */
    for (size_t i = 0; i < 2 * npairs; i++)
      if (owned[i]) ba_bitmap_free((ba_bitmap_t *)cur[i]);
    int odd_owned = (m & 1) ? owned[m - 1] : 0;
    const ba_bitmap_t *odd = (m & 1) ? cur[m - 1] : NULL;
    for (size_t k = 0; k < npairs; k++) {
      cur[k] = next[k];
      owned[k] = 1;
    }
    m = npairs;
    if (odd) {
      cur[m] = odd;
      owned[m] = odd_owned;
      m++;
    }
    if (rc < 0) break;
  }
  if (rc == 0) {
    if (owned[0]) *out = (ba_bitmap_t *)cur[0];
    else rc = ba_bitmap_clone(cur[0], out);
    owned[0] = 0;
  }
  for (size_t i = 0; i < m; i++)
    if (owned[i]) ba_bitmap_free((ba_bitmap_t *)cur[i]);
done:
  ba_free(cur);
  ba_free(next);
  ba_free(owned);
  return rc;
}

/* ---------- decompression strategy ---------- */

typedef struct bitset_job {
  const ba_bitmap_t *const *bms;
  size_t lo, hi;
  uint64_t *words; /* row r is bit 63 - r % 64 of word r / 64 (MSB first) */
  uint64_t nwords;
  int rc;
} bitset_job_t;

static int set_run(void *ctx, int value, uint64_t start, uint64_t nrows) {
  bitset_job_t *j = ctx;
  if (!value || nrows == 0) return 0;
  uint64_t end = start + nrows; /* exclusive; within nwords * 64 */
  uint64_t w0 = start / 64, w1 = (end - 1) / 64;
  uint64_t m0 = ~0ull >> (start % 64);
  uint64_t m1 = ~0ull << (63 - (end - 1) % 64);
  if (w0 == w1) {
    j->words[w0] |= m0 & m1;
    return 0;
  }
  j->words[w0] |= m0;
  for (uint64_t w = w0 + 1; w < w1; w++) j->words[w] = ~0ull;
  j->words[w1] |= m1;
  return 0;
}

static void *bitset_main(void *arg) {
  bitset_job_t *j = arg;
  for (size_t i = j->lo; i < j->hi && j->rc == 0; i++) j->rc = ba_bitmap_foreach_run(j->bms[i], set_run, j);
  return NULL;
}

static int encode_words(const uint64_t *w, uint64_t nwords, uint64_t rows, ba_codec_t c, ba_bitmap_t **out) {
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bitmap_create(c, &bm));
  int rc = 0;
  uint64_t i = 0;
  while (i < nwords && rc == 0) {
    uint64_t x = w[i];
    if (x == 0 || x == ~0ull) {
      uint64_t k = i + 1;
      while (k < nwords && w[k] == x) k++;
      uint64_t n = (k - i) * 64;
      if (k == nwords && n > rows - i * 64) n = rows - i * 64;
      rc = ba_bitmap_append_run(bm, x != 0, n);
      i = k;
    } else {
      unsigned nb = i + 1 == nwords && rows % 64 ? (unsigned)(rows % 64) : 64;
      rc = ba_bitmap_append_bits(bm, nb == 64 ? x : x >> (64 - nb), nb);
      i++;
    }
  }
  if (rc == 0) rc = ba_bitmap_finish(bm, rows);
  if (rc < 0) {
    ba_bitmap_free(bm);
    return rc;
  }
  *out = bm;
  return 0;
}

static int run_bitset(const ba_bitmap_t *const *bms, size_t n, uint64_t rows, ba_codec_t c, int threads,
                      ba_bitmap_t **out) {
  for (size_t i = 0; i < n; i++)
    if (ba_bitmap_rows(bms[i]) > rows) rows = ba_bitmap_rows(bms[i]);
  uint64_t nwords = (rows + 63) / 64;
  int t_use = threads >= 2 && n >= 8 ? 2 : 1;
  bitset_job_t jobs[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  int rc = 0;
  size_t share = (n + (size_t)t_use - 1) / (size_t)t_use;
  for (int t = 0; t < t_use; t++) {
    jobs[t] = (bitset_job_t){bms, (size_t)t * share, BA_MIN(n, (size_t)(t + 1) * share), NULL, nwords, 0};
    jobs[t].words = ba_calloc(nwords ? nwords : 1, sizeof(uint64_t));
    if (!jobs[t].words) rc = BA_ERR_NOMEM;
  }
  if (rc == 0) {
    for (int t = 1; t < t_use; t++)
      if (pthread_create(&tid[t], NULL, bitset_main, &jobs[t]) == 0) started[t] = 1;
      else bitset_main(&jobs[t]);
    bitset_main(&jobs[0]);
    for (int t = 1; t < t_use; t++)
      if (started[t]) pthread_join(tid[t], NULL);
    for (int t = 0; t < t_use; t++)
      if (jobs[t].rc < 0) rc = jobs[t].rc;
  }
  if (rc == 0) {
    for (int t = 1; t < t_use; t++)
      for (uint64_t w = 0; w < nwords; w++) jobs[0].words[w] |= jobs[t].words[w];
    rc = encode_words(jobs[0].words, nwords, rows, c, out);
  }
  for (int t = 0; t < t_use; t++) ba_free(jobs[t].words);
  return rc;
}

int ba_query_or_many(const ba_bitmap_t *const *bms, size_t n, uint64_t rows, ba_codec_t out_codec,
                     ba_range_strategy_t strategy, int threads, ba_bitmap_t **out) {
  BA_RETURN_IF(!out || (n && !bms), BA_ERR_INVALID);
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  if (threads < 1) threads = 1;
  if (n == 0) {
    ba_bitmap_t *e;
    BA_FORWARD(ba_bitmap_create(out_codec, &e));
    int rc = ba_bitmap_finish(e, rows);
    if (rc < 0) {
      ba_bitmap_free(e);
      return rc;
    }
    *out = e;
    return 0;
  }
  if (strategy == BA_RANGE_AUTO) {
    /* The codec's own choice; its bitset path decodes words straight into the
     * bitset (no run callbacks), much faster on dense operands. */
    if (n == 1) return ba_bitmap_convert(bms[0], out_codec, out);
    return ba_bitmap_or_many(bms, n, out_codec, out);
  }
  if (strategy == BA_RANGE_BITSET && n >= 2) return run_bitset(bms, n, rows, out_codec, threads, out);
  if (strategy == BA_RANGE_REDUCTION) return run_reduction(bms, n, out_codec, threads, out);
  return run_iterative(bms, n, out_codec, threads, out);
}
