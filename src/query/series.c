/* Time series of a filter (bitarc graph, nfsen's profile graphs): flows,
 * packets and bytes per time bin, a record counting in the bin of its start
 * time; the series is what `bitarc query -t` gives bin by bin:
 *  - flows alone: each bin is one run of the query over the bin's window
 *    (ba_query_run, count_only): in a segment with TIME_BIN bitmaps whose
 *    bins the window covers exactly, the filter's candidate rows ANDed with
 *    the window's time-bin bitmaps are counted from the index, no row is
 *    read; other segments read only the columns the residual check needs.
 *    Bins no segment's start times reach are not run. Bins are shared among
 *    threads, each with its own store handles; the compiled query is only
 *    read (as ba_query_run's own planning thread reads it).
 *  - with packets or bytes, the whole window is one run per store
 *    (query_run_bins): in a segment the index answers exactly, the matching
 *    rows' first, packets and bytes columns are summed into their bins (no
 *    record; whole groups decoded whole; two threads when asked); other
 *    segments deliver records (residual check) that are binned. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "query/query_internal.h"

void ba_query_series_opts_init(ba_query_series_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->measures = BA_SERIES_FLOWS | BA_SERIES_PACKETS | BA_SERIES_BYTES;
  o->threads = 1;
}

/* Start-time ranges of one store's segments (segments that cannot be opened
 * count as "anywhere": the run reports them). */
typedef struct span {
  uint64_t lo, hi; /* min and max first_ns */
} span_t;

typedef struct srun {
  ba_query_t *q;
  const ba_query_series_opts_t *o;
  size_t nstores;
  span_t **spans;  /* per store */
  size_t *nspans;
  ba_query_series_bin_t *bins;
  pthread_mutex_t mu; /* next, rc, warnings */
  size_t next;        /* next bin to run */
  int rc;
  char **seen;        /* warnings already passed on (each once) */
  size_t nseen;
} srun_t;

/* A warning of a bin run: passed on once (every bin meets the same damaged
 * segment again). Called with mu unlocked. */
static void series_warn(void *ctx, const char *msg) {
  srun_t *r = ctx;
  pthread_mutex_lock(&r->mu);
  int dup = 0;
  for (size_t i = 0; i < r->nseen && !dup; i++) dup = !strcmp(r->seen[i], msg);
  if (!dup && r->nseen < 256) {
    size_t n = strlen(msg) + 1;
    char *c = ba_malloc(n);
    char **grown = ba_realloc(r->seen, (r->nseen + 1) * sizeof(char *));
    if (c && grown) {
      memcpy(c, msg, n);
      r->seen = grown;
      r->seen[r->nseen++] = c;
    } else {
      ba_free(c);
      if (grown) r->seen = grown;
    }
    if (r->o->warn) r->o->warn(r->o->warn_ctx, msg);
  }
  pthread_mutex_unlock(&r->mu);
}

static int null_sink(void *ctx, const ba_record_t *recs, size_t n) {
  (void)ctx;
  (void)recs;
  (void)n;
  return 0;
}

static int spans_meet(const span_t *s, size_t n, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < n; i++)
    if (s[i].lo < hi && s[i].hi >= lo) return 1;
  return 0;
}

/* Bin k over every store it meets, on the given store handles. */
static int run_bin(srun_t *r, ba_store_t *const *stores, size_t k, ba_query_stats_t *acc) {
  const ba_query_series_opts_t *o = r->o;
  uint64_t lo = o->start_ns + (uint64_t)k * o->bin_ns, hi = lo + o->bin_ns;
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.start_ns = lo;
  eo.end_ns = hi;
  eo.threads = 1;
  eo.warn = series_warn;
  eo.warn_ctx = r;
  if (o->measures & (BA_SERIES_PACKETS | BA_SERIES_BYTES)) eo.out_cols = BA_COL_PACKETS | BA_COL_BYTES;
  else eo.count_only = 1;
  ba_query_series_bin_t b = {0, 0, 0};
  for (size_t s = 0; s < r->nstores; s++) {
    if (!spans_meet(r->spans[s], r->nspans[s], lo, hi)) continue;
    ba_query_stats_t one;
    BA_FORWARD(ba_query_run(r->q, stores[s], &eo, null_sink, NULL, &one));
    b.flows += one.rows_matched;
    b.packets += one.packets;
    b.bytes += one.bytes;
    one.segments_total = 0;  /* counted once per store by ba_query_series */
    ba_query_stats_add(acc, &one);
  }
  if (!(o->measures & BA_SERIES_FLOWS)) b.flows = 0;
  if (!(o->measures & BA_SERIES_PACKETS)) b.packets = 0;
  if (!(o->measures & BA_SERIES_BYTES)) b.bytes = 0;
  r->bins[k] = b;
  return 0;
}

typedef struct sworker {
  srun_t *r;
  ba_store_t **stores; /* this thread's handles */
  ba_query_stats_t stats;
  int rc;
} sworker_t;

static void *series_worker(void *arg) {
  sworker_t *w = arg;
  srun_t *r = w->r;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    size_t k = r->next++;
    int stop = r->rc != 0 || k >= r->o->nbins;
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    int rc = run_bin(r, w->stores, k, &w->stats);
    if (rc < 0) {
      pthread_mutex_lock(&r->mu);
      if (r->rc == 0) r->rc = rc;
      pthread_mutex_unlock(&r->mu);
      w->rc = rc;
      break;
    }
  }
  return NULL;
}

/* The start-time spans of every segment of a store. */
static int store_spans(ba_store_t *st, span_t **out, size_t *n) {
  size_t ns = ba_store_segment_count(st);
  span_t *s = ba_calloc(ns ? ns : 1, sizeof(span_t));
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  size_t k = 0;
  for (size_t i = 0; i < ns; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    if (ba_store_segment(st, i, &seg) < 0 || ba_segment_info(seg, &in) < 0) {
      s[k++] = (span_t){0, UINT64_MAX}; /* unopenable: the run reports it */
      continue;
    }
    if (in.rows) s[k++] = (span_t){in.min_first_ns, in.max_first_ns};
  }
  *out = s;
  *n = k;
  return 0;
}

static int check_opts(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_series_opts_t *o,
                      ba_query_series_bin_t *bins) {
  BA_RETURN_IF(!q || !o || (!stores && nstores) || (!bins && o->nbins), BA_ERR_INVALID);
  BA_RETURN_IF(o->bin_ns == 0 || o->nbins > SIZE_MAX / sizeof(ba_query_series_bin_t), BA_ERR_INVALID);
  BA_RETURN_IF(o->nbins && (uint64_t)o->nbins > (UINT64_MAX - o->start_ns) / o->bin_ns, BA_ERR_INVALID);
  BA_RETURN_IF(o->measures == 0 || (o->measures & ~7u), BA_ERR_INVALID);
  for (size_t i = 0; i < nstores; i++) BA_RETURN_IF(!stores[i], BA_ERR_INVALID);
  return 0;
}

/* Runs the workers: thread 0 on the caller's handles, the others on their
 * own (ba_store_reopen). */
static int run_workers(srun_t *r, ba_store_t *const *stores, int nthreads, ba_query_stats_t *stats) {
  sworker_t w[2];
  pthread_t th[2];
  int started[2] = {0, 0}, rc = 0;
  memset(w, 0, sizeof(w));
  w[0].r = r;
  w[0].stores = (ba_store_t **)stores;
  for (int t = 1; t < nthreads; t++) {
    w[t].r = r;
    w[t].stores = ba_calloc(r->nstores, sizeof(ba_store_t *));
    if (!w[t].stores) continue;
    size_t ok = 0;
    while (ok < r->nstores && ba_store_reopen(stores[ok], &w[t].stores[ok]) == 0) ok++;
    if (ok == r->nstores && pthread_create(&th[t], NULL, series_worker, &w[t]) == 0) started[t] = 1;
  }
  series_worker(&w[0]);
  for (int t = 1; t < nthreads; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    if (w[t].stores)
      for (size_t s = 0; s < r->nstores; s++) ba_store_close(w[t].stores[s]);
    ba_free(w[t].stores);
  }
  for (int t = 0; t < nthreads; t++) {
    if (w[t].rc < 0 && rc == 0) rc = w[t].rc;
    ba_query_stats_add(stats, &w[t].stats);
  }
  return rc;
}

/* Packets or bytes asked for: one run over the whole window per store
 * (query_run_bins), every matching row added to its bin from the first,
 * packets and bytes columns. */
static int series_sums(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_series_opts_t *o,
                       ba_query_series_bin_t *bins, ba_query_stats_t *stats) {
  ba_bin_sums_t b = {o->start_ns, o->bin_ns, o->nbins, NULL};
  b.sums = ba_calloc(o->nbins ? 3 * o->nbins : 1, sizeof(uint64_t));
  BA_RETURN_IF(!b.sums, BA_ERR_NOMEM);
  srun_t r; /* for series_warn: each message once */
  memset(&r, 0, sizeof(r));
  r.o = o;
  pthread_mutex_init(&r.mu, NULL);
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.threads = o->threads >= 2 ? 2 : 1;
  eo.warn = series_warn;
  eo.warn_ctx = &r;
  int rc = 0;
  for (size_t s = 0; s < nstores && rc == 0; s++) {
    ba_query_stats_t one;
    rc = query_run_bins(q, stores[s], &eo, &b, &one);
    if (rc == 0) ba_query_stats_add(stats, &one);
  }
  for (size_t k = 0; k < o->nbins && rc == 0; k++) {
    bins[k].flows = o->measures & BA_SERIES_FLOWS ? b.sums[3 * k] : 0;
    bins[k].packets = o->measures & BA_SERIES_PACKETS ? b.sums[3 * k + 1] : 0;
    bins[k].bytes = o->measures & BA_SERIES_BYTES ? b.sums[3 * k + 2] : 0;
  }
  pthread_mutex_destroy(&r.mu);
  for (size_t i = 0; i < r.nseen; i++) ba_free(r.seen[i]);
  ba_free(r.seen);
  ba_free(b.sums);
  return rc;
}

int ba_query_series(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_series_opts_t *o,
                    ba_query_series_bin_t *bins, ba_query_stats_t *stats) {
  BA_FORWARD(check_opts(q, stores, nstores, o, bins));
  BA_RETURN_IF(!q->root, BA_ERR_INVALID);
  ba_query_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof(*stats));
  if (o->nbins) memset(bins, 0, o->nbins * sizeof(*bins));
  if (o->measures & (BA_SERIES_PACKETS | BA_SERIES_BYTES)) return series_sums(q, stores, nstores, o, bins, stats);
  srun_t r;
  memset(&r, 0, sizeof(r));
  r.q = q;
  r.o = o;
  r.nstores = nstores;
  r.bins = bins;
  r.spans = ba_calloc(nstores ? nstores : 1, sizeof(span_t *));
  r.nspans = ba_calloc(nstores ? nstores : 1, sizeof(size_t));
  int rc = r.spans && r.nspans ? 0 : BA_ERR_NOMEM;
  for (size_t s = 0; s < nstores && rc == 0; s++) {
    rc = store_spans(stores[s], &r.spans[s], &r.nspans[s]);
    stats->segments_total += ba_store_segment_count(stores[s]);
  }
  if (rc == 0) {
    pthread_mutex_init(&r.mu, NULL);
    int nthreads = o->threads >= 2 && o->nbins >= 2 ? 2 : 1;
    rc = run_workers(&r, stores, nthreads, stats);
    pthread_mutex_destroy(&r.mu);
  }
  for (size_t s = 0; r.spans && s < nstores; s++) ba_free(r.spans[s]);
  ba_free(r.spans);
  ba_free(r.nspans);
  for (size_t i = 0; i < r.nseen; i++) ba_free(r.seen[i]);
  ba_free(r.seen);
  return rc;
}
