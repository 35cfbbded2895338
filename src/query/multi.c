/* One query over several stores (one per exporter or site, as nfdump -M),
 * rows merged in start-time order. The time axis is cut at every segment's
 * first and last start time across all stores; each piece is answered by
 * ba_query_run on every store with the piece as its window, the rows of the
 * piece are sorted by (first_ns, store, row order) and delivered. Pieces do
 * not overlap, so the whole output is in time order while memory holds only
 * one piece's matches (about one slice of every store). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/query.h"
#include "common/common.h"
#include "query/plan_int.h"

typedef struct mrow {
  ba_record_t r;
  uint32_t store;
  uint64_t seq;
  size_t frame_off;  /* packets: offset of the copied frame in frames */
} mrow_t;

typedef struct mbuf {
  mrow_t *rows;
  size_t n, cap;
  uint8_t *frames;
  size_t nframes, capframes;
  uint32_t store;
  uint64_t seq;
  size_t *order;        /* delivery: row indices sorted (rows are large) */
  ba_record_t *batch;   /* and the records handed to fn together */
  size_t ordcap;
} mbuf_t;

#define MULTI_BATCH 512

static int mbuf_sink(void *ctx, const ba_record_t *recs, size_t n) {
  mbuf_t *b = ctx;
  if (b->n + n > b->cap) {
    size_t nc = BA_MAX(b->cap * 2, b->n + n + 1024);
    mrow_t *nr = ba_realloc(b->rows, nc * sizeof(*nr));
    if (!nr) return BA_ERR_NOMEM;
    b->rows = nr;
    b->cap = nc;
  }
  for (size_t i = 0; i < n; i++) {
    mrow_t *m = &b->rows[b->n++];
    m->r = recs[i];
    m->store = b->store;
    m->seq = b->seq++;
    m->frame_off = 0;
    if (recs[i].frame && recs[i].caplen) {  /* borrowed for the call only: copy */
      if (b->nframes + recs[i].caplen > b->capframes) {
        size_t nc = BA_MAX(b->capframes * 2, b->nframes + recs[i].caplen + 65536);
        uint8_t *nf = ba_realloc(b->frames, nc);
        if (!nf) return BA_ERR_NOMEM;
        b->frames = nf;
        b->capframes = nc;
      }
      memcpy(b->frames + b->nframes, recs[i].frame, recs[i].caplen);
      m->frame_off = b->nframes;
      b->nframes += recs[i].caplen;
    }
  }
  return 0;
}

static int cmp_row(const void *pa, const void *pb, void *vrows) {
  const mrow_t *rows = vrows;
  const mrow_t *x = &rows[*(const size_t *)pa], *y = &rows[*(const size_t *)pb];
  if (x->r.first_ns != y->r.first_ns) return x->r.first_ns < y->r.first_ns ? -1 : 1;
  if (x->store != y->store) return x->store < y->store ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Cut points: every segment's min and max first time + 1, inside the window. */
static int cut_points(ba_store_t *const *stores, size_t n, uint64_t lo, uint64_t hi, uint64_t **out, size_t *nout) {
  size_t cap = 2, k = 0;
  for (size_t s = 0; s < n; s++) cap += 2 * ba_store_segment_count(stores[s]);
  uint64_t *t = ba_malloc(cap * sizeof(*t));
  if (!t) return BA_ERR_NOMEM;
  t[k++] = lo;
  t[k++] = hi;
  for (size_t s = 0; s < n; s++) {
    for (size_t i = 0; i < ba_store_segment_count(stores[s]); i++) {
      ba_segment_t *seg;
      ba_segment_info_t info;
      if (ba_store_segment(stores[s], i, &seg) || ba_segment_info(seg, &info)) continue;  /* the run reports it */
      uint64_t a = info.min_first_ns, b = info.max_first_ns + 1;
      if (a > lo && a < hi) t[k++] = a;
      if (b > lo && b < hi) t[k++] = b;
    }
  }
  qsort(t, k, sizeof(*t), cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (!u || t[i] != t[u - 1]) t[u++] = t[i];
  *out = t;
  *nout = u;
  return BA_OK;
}

/* Delivers the sorted rows of one piece; counts them into st. */
static int deliver(mbuf_t *b, uint64_t limit, ba_record_sink_fn fn, void *ctx, ba_query_stats_t *st, int *done) {
  if (b->n > b->ordcap) {
    size_t *no = ba_realloc(b->order, b->n * sizeof(*no));
    if (!no) return BA_ERR_NOMEM;
    b->order = no;
    b->ordcap = b->n;
  }
  if (!b->batch && !(b->batch = ba_malloc(MULTI_BATCH * sizeof(*b->batch)))) return BA_ERR_NOMEM;
  for (size_t i = 0; i < b->n; i++) b->order[i] = i;
  if (b->n > 1) qsort_r(b->order, b->n, sizeof(*b->order), cmp_row, b->rows);
  size_t k = 0;
  int rc = 0;
  for (size_t i = 0; i < b->n && !rc; i++) {
    if (limit && st->rows_matched >= limit) { *done = 1; break; }
    const mrow_t *m = &b->rows[b->order[i]];
    ba_record_t *r = &b->batch[k++];
    *r = m->r;
    if (r->frame && r->caplen) r->frame = b->frames + m->frame_off;
    stats_add_records(st, r, 1);
    if (k == MULTI_BATCH) {
      rc = fn ? fn(ctx, b->batch, k) : 0;
      k = 0;
    }
  }
  if (!rc && k) rc = fn ? fn(ctx, b->batch, k) : 0;
  if (rc) return rc;
  b->n = 0;
  b->nframes = 0;
  return 0;
}

/* The caller's warn callback, told which store a message is about, and
 * each message once (a damaged segment spanning k pieces is met k times). */
typedef struct mwarn {
  void (*warn)(void *ctx, const char *msg);
  void *ctx;
  size_t store;
  char **seen;
  size_t nseen, capseen;
} mwarn_t;

static void multi_warn(void *vctx, const char *msg) {
  mwarn_t *w = vctx;
  char buf[600];
  snprintf(buf, sizeof buf, "store %zu: %s", w->store + 1, msg);
  for (size_t i = 0; i < w->nseen; i++)
    if (!strcmp(w->seen[i], buf)) return;
  if (w->nseen == w->capseen) {
    size_t nc = w->capseen ? 2 * w->capseen : 8;
    char **ns = ba_realloc(w->seen, nc * sizeof(*ns));
    if (ns) {
      w->seen = ns;
      w->capseen = nc;
    }
  }
  size_t l = strlen(buf) + 1;
  char *c = w->nseen < w->capseen ? ba_malloc(l) : NULL;
  if (c) {
    memcpy(c, buf, l);
    w->seen[w->nseen++] = c;
  }
  w->warn(w->ctx, buf);
}

int ba_query_run_multi(ba_query_t *q, ba_store_t *const *stores, size_t nstores, const ba_query_exec_opts_t *opts,
                       ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats) {
  if (!q || (!stores && nstores)) return BA_ERR_INVALID;
  ba_query_exec_opts_t o;
  if (opts) o = *opts;
  else ba_query_exec_opts_init(&o);
  if (o.explain_only || o.count_only) return BA_ERR_INVALID;  /* one store at a time: ba_query_run */
  o.field_fn = NULL; /* the pieces' records are merged in time order */
  ba_query_stats_t st;
  memset(&st, 0, sizeof st);
  uint64_t lo = o.start_ns, hi = o.end_ns ? o.end_ns : UINT64_MAX;
  uint64_t *t = NULL;
  size_t nt = 0;
  int rc = cut_points(stores, nstores, lo, hi, &t, &nt);
  mbuf_t b;
  memset(&b, 0, sizeof b);
  mwarn_t mw = {o.warn, o.warn_ctx, 0, NULL, 0, 0};
  if (o.warn) {
    o.warn = multi_warn;
    o.warn_ctx = &mw;
  }
  uint64_t limit = o.limit;
  o.limit = 0;  /* a store's first rows need not be the merged first rows */
  int done = 0;
  for (size_t i = 0; !rc && !done && i + 1 < nt; i++) {
    o.start_ns = t[i];
    o.end_ns = t[i + 1];
    for (size_t s = 0; !rc && s < nstores; s++) {
      ba_query_stats_t one;
      b.store = (uint32_t)s;
      b.seq = 0;
      mw.store = s;
      rc = ba_query_run(q, stores[s], &o, mbuf_sink, &b, &one);
      if (!rc && i == 0) {  /* segment totals once, from the first piece */
        st.segments_total += one.segments_total;
      }
      /* Rows, sums and times count what deliver() hands on, not what a piece
       * found (the limit applies after the merge). */
      one.segments_total = one.rows_matched = one.packets = one.bytes = 0;
      one.out_packets = one.out_bytes = 0;
      ba_query_stats_add(&st, &one);
    }
    if (!rc) rc = deliver(&b, limit, fn, ctx, &st, &done);
  }
  for (size_t i = 0; i < mw.nseen; i++) ba_free(mw.seen[i]);
  ba_free(mw.seen);
  ba_free(t);
  ba_free(b.rows);
  ba_free(b.frames);
  ba_free(b.order);
  ba_free(b.batch);
  if (stats) *stats = st;
  return rc;
}
