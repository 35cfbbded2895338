/* Execution of a query over a store: each segment in the time window is
 * planned (plan.c) and its candidates counted or fetched (fetch.c), in
 * segment order; a second thread plans (and reads) segments ahead. A damaged
 * segment is skipped or answered by a linear scan, with a warning. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/live.h"
#include "query/plan_int.h"

void ba_query_exec_opts_init(ba_query_exec_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->threads = 1;
  o->strategy = BA_RANGE_AUTO;
}

static void explain_line(const ba_query_exec_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void explain_line(const ba_query_exec_opts_t *o, const char *fmt, ...) {
  if (!o->explain) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  o->explain(o->explain_ctx, buf);
}

/* Errors that mean "this segment's bytes are bad", as opposed to a bad call
 * or no memory: a query survives them by skipping or scanning the segment. */
static int is_damage(int rc) {
  return rc == BA_ERR_CORRUPT || rc == BA_ERR_CHECKSUM || rc == BA_ERR_TRUNCATED ||
         rc == BA_ERR_NOT_OURS || rc == BA_ERR_VERSION || rc == BA_ERR_IO;
}

static void warn_line(const ba_query_exec_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_line(const ba_query_exec_opts_t *o, const char *fmt, ...) {
  if (!o->warn) return;
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  o->warn(o->warn_ctx, buf);
}

/* Counts or reads the candidates of a planned segment (takes res->r). */
/* The explain lines of segment c: its rows, bitmaps, candidates and (for
 * --explain alone) the blocks a run would read. */
static void explain_segment(const segctx_t *c, const segres_t *res, const char *extext, uint32_t cols) {
  const ba_query_exec_opts_t *o = c->opts;
  const pres_t *r = &res->r;
  explain_line(o, "segment %s: %" PRIu64 " rows, %u blocks", c->info.name, c->info.rows, c->info.nblocks);
  explain_line(o, "  bitmaps: %s", extext ? extext : "");
  explain_line(o, "  candidates: %" PRIu64 " rows (%" PRIu64 " certain, %s), columns 0x%04x", res->ncand,
               res->nsure, res->exact ? "exact: no residual check" : "residual check on the rest", cols);
  if (!o->explain_only) return;
  uint64_t nb = r->hi.kind == PB_ALL ? c->info.nblocks : 0;
  if (r->hi.kind == PB_BM) {
    blkcount_t bc = {c->info.block_rows, UINT64_MAX, 0};
    ba_bitmap_foreach(r->hi.o->bm, count_blocks, &bc);
    nb = bc.n;
  }
  explain_line(o, "  blocks to read: %" PRIu64 " of %u", nb, c->info.nblocks);
}

/* --count when the rows of r.lo match for sure (the index, zones that every
 * row of a group satisfies): they are counted; only the others are read and
 * checked. Consumes r. */
static int count_rest(ba_query_t *q, segctx_t *c, runctx_t *run, pres_t r, uint64_t nsure, uint64_t nblocks) {
  ba_query_stats_t *st = c->stats;
  ba_bitmap_t *rest = NULL;
  int rc = r.hi.kind == PB_ALL ? ba_bitmap_not(r.lo.o->bm, c->codec, &rest)
                               : ba_bitmap_andnot(r.hi.o->bm, r.lo.o->bm, c->codec, &rest);
  pres_drop(r);
  if (rc < 0) return rc;
  st->bitmap_ops++;
  st->rows_matched += nsure;
  run->check = 1;
  uint64_t dmg = 0;
  rc = fetch_rows(c->seg, rest, q->cols | BA_COL_FIRST, c->info.block_rows, run_sink, run, c->fetch_threads,
                  &nblocks, &dmg);
  ba_bitmap_free(rest);
  st->rows_damaged += dmg;
  st->blocks_read += nblocks;
  return rc == QUERY_STOP ? 0 : rc;
}

/* Records of a clustered segment come out in time order (§7.9); counts and
 * aggregates over column vectors do not need it. */
static int time_ordered(const segctx_t *c) {
  return c->info.clustered && !c->opts->count_only && !c->opts->field_fn;
}

static int deliver_segment(ba_query_t *q, segctx_t *c, runctx_t *run, segres_t *res, const char *extext,
                           int *stop) {
  const ba_query_exec_opts_t *o = c->opts;
  ba_query_stats_t *st = c->stats;
  pres_t r = res->r;
  int rc, exact = res->exact;
  uint64_t ncand = res->ncand;
  uint32_t cols = o->out_cols;
  st->rows_candidate += ncand;
  if (!exact) cols |= q->cols | BA_COL_FIRST;
  uint64_t nblocks = r.hi.kind == PB_ALL ? c->info.nblocks : 0;
  if (o->explain) explain_segment(c, res, extext, cols);
  if (o->explain_only || ncand == 0) {
    pres_drop(r);
    return 0;
  }
  if (!exact && !res->have_rows && residual_pays(o, run->root, run->bins != NULL)) {
    int rr = residual_settle(c, run->root, res); /* then only the matching rows are materialized */
    if (rr < 0) {
      segres_drop(res);
      return rr;
    }
    if (rr == 0) {
      r = res->r;
      exact = 1;
      cols = o->out_cols;
    }
  }
  st->blocks_read += res->blocks_check;
  if (o->count_only && exact) {
    st->rows_matched += ncand;
    pres_drop(r);
    return 0;
  }
  if (o->count_only && !run->bins && !res->have_rows && res->nsure && r.hi.kind != PB_NONE)
    return count_rest(q, c, run, r, res->nsure, nblocks);
  if (run->bins && exact && !res->have_rows) {
    /* Sums per bin from the three columns, no record (sum_rows). */
    uint64_t summed = 0, dmg = 0, groups = 0;
    rc = sum_rows(c->seg, r.hi.kind == PB_ALL ? NULL : r.hi.o->bm, c->info.block_rows, c->info.nblocks, run->bins,
                  c->fetch_threads, &summed, &groups, &dmg);
    st->rows_matched += summed;
    st->rows_damaged += dmg;
    st->blocks_read += groups;
    pres_drop(r);
    return rc;
  }
  if (run->field_fn && exact && !res->have_rows) {
    /* Column vectors of the fields asked for, no record (aggregates). */
    uint64_t dmg = 0;
    rc = fetch_fields(c->seg, r.hi.kind == PB_ALL ? NULL : r.hi.o->bm, c->info.block_rows, run, c->fetch_threads,
                      &nblocks, &dmg);
    st->rows_damaged += dmg;
    st->blocks_read += nblocks;
    pres_drop(r);
    return rc;
  }
  run->check = !exact;
  int timed = time_ordered(c);
  if (res->have_rows) {
    /* Read ahead: the same records in the same order. */
    rc = timed ? tbuf_deliver(&res->tb, run) : tbuf_deliver_as_read(&res->tb, run);
    st->blocks_read += res->blocks;
    st->rows_damaged += res->damaged;
    segres_drop(res);
    if (rc == QUERY_STOP) {
      *stop = 1;
      return 0;
    }
    return rc;
  }
  uint64_t dmg = 0;
  if (timed)
    rc = deliver_clustered(c->seg, r.hi.kind == PB_ALL ? NULL : r.hi.o->bm, r.hi.kind == PB_ALL ? c->info.rows : ncand,
                           cols, c->info.block_rows, c->fetch_threads, run, &nblocks, &dmg);
  else if (r.hi.kind == PB_ALL)
    rc = ba_segment_scan(c->seg, cols, run_sink, run, &dmg);
  else
    rc = fetch_rows(c->seg, r.hi.o->bm, cols, c->info.block_rows, run_sink, run, c->fetch_threads, &nblocks, &dmg);
  st->rows_damaged += dmg;
  st->blocks_read += nblocks;
  pres_drop(r);
  if (rc == QUERY_STOP) {
    *stop = 1;
    return 0;
  }
  return rc;
}

static int run_segment(ba_query_t *q, const qnode_t *root, segctx_t *c, runctx_t *run, int *stop) {
  const ba_query_exec_opts_t *o = c->opts;
  ba_query_stats_t *st = c->stats;
  if (o->force_scan) {
    explain_line(o, "segment %s: %" PRIu64 " rows, linear scan", c->info.name, c->info.rows);
    if (o->explain_only) return 0;
    run->check = 1;
    uint64_t dmg = 0;
    st->rows_candidate += c->info.rows;
    st->blocks_read += c->info.nblocks;
    uint64_t nb = 0;
    uint32_t cols = o->out_cols | q->cols | BA_COL_FIRST;
    int timed = time_ordered(c);
    int rc = timed ? deliver_clustered(c->seg, NULL, c->info.rows, cols, c->info.block_rows, 1, run, &nb, &dmg)
                   : ba_segment_scan(c->seg, cols, run_sink, run, &dmg);
    st->rows_damaged += dmg;
    if (rc == QUERY_STOP) *stop = 1;
    return rc == QUERY_STOP ? 0 : rc;
  }
  sbuf_t ex = {0};
  segres_t res = {0};
  int rc = plan_segment(root, c, o->explain ? &ex : NULL, &res);
  if (rc == 0) rc = deliver_segment(q, c, run, &res, ex.s, stop);
  ba_free(ex.s);
  return rc;
}

/* ---------- two threads: segments planned ahead ---------- */

/* With two threads, a worker plans segments (bitmap algebra) on its own
 * store handle while the caller's thread plans others and delivers every
 * segment in order (reads rows, calls fn): the result and its order are
 * those of one thread. A segment the worker fails on is planned again by the
 * caller's thread, which reports damage as usual. */
typedef struct pslot {
  int state; /* 0 = free, 1 = being planned, 2 = planned */
  int rc;
  segres_t res;
} pslot_t;

typedef struct par {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t next, nseg;
  int quit;
  pslot_t *slots;
  ba_store_t *ms;    /* the caller's store: segment names */
  const qnode_t *root;
  ba_query_exec_opts_t wo;
  uint64_t ws, we;   /* time window */
  uint32_t cols, qcols; /* columns delivered records need; the filter's (prefetch) */
  int prefetch;      /* the worker also reads candidate rows (not for counts or frames) */
  size_t delivered;  /* segments the caller's thread is done with */
  int rows_ahead;    /* candidate rows are read ahead (prefetch, no limit) */
  uint64_t held;     /* candidate rows read ahead (or being read) and not delivered yet */
  int fetch_threads; /* of one segment's rows (fetch_rows) */
} par_t;

/* Most candidate rows read ahead for one segment and for all segments held
 * read ahead (bounds memory: packed records, about 130 bytes a flow), and
 * how many segments the worker plans ahead of delivery when it reads
 * ahead. A selective query (a few thousand rows a segment) so has later
 * segments read ahead while the caller's thread formats, and the worker
 * does not wait for a count of held segments (it did with 2: about 0.5 ms
 * idle every third segment of 100 M flows' `src ip` csv). */
#define PREFETCH_MAX_ROWS (1u << 18)
#define PLAN_AHEAD 8 /* 2 under a limit (-c N), which may stop the query early */
static uint64_t g_held_rows = UINT64_C(1) << 19;

void query_set_prefetch_held_rows(uint64_t rows) { g_held_rows = rows; }

/* 1 if the segment cannot hold rows of the window. */
static int seg_pruned(const ba_segment_info_t *in, uint64_t ws, uint64_t we) {
  return in->rows == 0 || in->end_ns <= ws || in->start_ns >= we || in->max_first_ns < ws || in->min_first_ns >= we;
}

/* Plans segment i of the caller's store on store st (the caller's or the
 * worker's handle); ahead: its candidate rows may be read into res too (not
 * the segment the caller delivers next). A pruned segment gets an empty
 * plan. */
static int par_plan(par_t *p, ba_store_t *st, size_t i, int ahead, segctx_t *c, segres_t *res) {
  ba_segment_t *seg = NULL;
  if (st == p->ms) {
    BA_FORWARD(ba_store_segment(st, i, &seg));
  } else {
    const char *name = ba_store_segment_name(p->ms, i);
    size_t n = ba_store_segment_count(st);
    for (size_t k = 0; k < n && name; k++) {
      size_t j = (i + k) % n; /* usually j == i */
      const char *nj = ba_store_segment_name(st, j);
      if (nj && !strcmp(nj, name)) {
        BA_FORWARD(ba_store_segment(st, j, &seg));
        break;
      }
    }
    BA_RETURN_IF(!seg, BA_ERR_NOT_FOUND);
  }
  BA_FORWARD(ba_segment_info(seg, &c->info));
  if (seg_pruned(&c->info, p->ws, p->we)) {
    res->r = pres_exact(pb_none());
    return 0;
  }
  c->seg = seg;
  c->codec = c->info.codec;
  int rc = plan_segment(p->root, c, NULL, res);
  if (rc == 0 && !res->exact && res->ncand > 0 && p->prefetch && residual_pays(&p->wo, p->root, 0) &&
      !p->wo.explain_only) {
    rc = residual_settle(c, p->root, res); /* the worker's share: the residual check */
    if (rc == 1) rc = 0;
    if (rc < 0) segres_drop(res); /* the caller's thread plans it again */
  }
  /* Candidates of a selective segment are read here, on one thread, while
   * the caller's thread delivers (formats) earlier segments'. */
  int held = 0;
  if (rc == 0 && ahead && p->rows_ahead && res->r.hi.kind == PB_BM && res->ncand > 0 &&
      res->ncand <= PREFETCH_MAX_ROWS && !(p->wo.count_only && (res->exact || res->nsure))) {
    pthread_mutex_lock(&p->mu); /* the rows are counted held while they are read */
    held = p->held + res->ncand <= g_held_rows;
    if (held) p->held += res->ncand;
    pthread_mutex_unlock(&p->mu);
  }
  if (held) {
    /* Read the candidates here too (the caller's thread only delivers). */
    uint32_t cols = p->cols | (res->exact ? 0 : p->qcols | BA_COL_FIRST);
    uint64_t ncand = res->ncand;
    /* Held packed, as deliver_clustered holds them. */
    rc = tbuf_reserve(&res->tb, res->ncand);
    if (rc == 0)
      rc = fetch_rows(seg, res->r.hi.o->bm, cols, c->info.block_rows, tbuf_sink, &res->tb, 1, &res->blocks,
                      &res->damaged);
    if (rc == 0 && time_ordered(c)) rc = tbuf_sort(&res->tb); /* here, not on the delivering thread */
    if (rc == 0) {
      res->have_rows = 1;
    } else {
      segres_drop(res);
      pthread_mutex_lock(&p->mu);
      p->held -= ncand;
      pthread_cond_broadcast(&p->cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
  ba_segment_release(seg);
  return rc;
}

static unsigned g_worker_pause_us; /* < 1 s */

void query_set_par_worker_pause(unsigned us) { g_worker_pause_us = us; }

static void *par_worker(void *arg) {
  par_t *p = arg;
  ba_store_t *st = NULL;
  int open_rc = ba_store_reopen(p->ms, &st);
  segctx_t c = {0};
  ba_query_stats_t wst = {0};
  c.opts = &p->wo;
  c.stats = &wst;
  c.fetch_threads = p->fetch_threads;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->prefetch && !p->quit && p->next < p->nseg &&
           (p->held >= g_held_rows || p->next > p->delivered + (p->rows_ahead ? PLAN_AHEAD : 2)))
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->quit || p->next >= p->nseg) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    size_t i = p->next++;
    p->slots[i].state = 1;
    pthread_mutex_unlock(&p->mu);
    if (g_worker_pause_us) {
      struct timespec ts = {0, (long)g_worker_pause_us * 1000};
      nanosleep(&ts, NULL);
    }
    segres_t res = {0};
    int rc = open_rc < 0 ? open_rc : par_plan(p, st, i, 1, &c, &res);
    pthread_mutex_lock(&p->mu);
    p->slots[i].rc = rc;
    p->slots[i].res = res;
    p->slots[i].state = 2;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  segctx_free(&c);
  ba_store_close(st);
  return NULL;
}

/* Waits until segment i is planned, planning others (or i) meanwhile: a
 * later one also read ahead as the worker does, while fewer than
 * g_held_rows rows are held read ahead. */
static void par_wait(par_t *p, size_t i, segctx_t *c) {
  pthread_mutex_lock(&p->mu);
  p->delivered = i; /* segments before i are done: the worker may read ahead */
  pthread_cond_broadcast(&p->cv);
  while (p->slots[i].state != 2) {
    if (p->next < p->nseg && !(p->prefetch && p->next != i && p->held >= g_held_rows)) {
      size_t j = p->next++;
      p->slots[j].state = 1;
      pthread_mutex_unlock(&p->mu);
      segres_t res = {0};
      ba_query_stats_t *keep = c->stats, scratch = {0};
      c->stats = &scratch; /* the plan's operations are counted at delivery (res.ops) */
      int rc = par_plan(p, p->ms, j, j != i, c, &res);
      c->stats = keep;
      pthread_mutex_lock(&p->mu);
      p->slots[j].rc = rc;
      p->slots[j].res = res;
      p->slots[j].state = 2;
      continue;
    }
    pthread_cond_wait(&p->cv, &p->mu);
  }
  /* Segment i's records (if read ahead) are the caller's now: another
   * segment may be read ahead while they are delivered. */
  if (p->slots[i].rc == 0 && p->slots[i].res.have_rows) {
    p->held -= p->slots[i].res.ncand;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
}

void ba_query_stats_add(ba_query_stats_t *a, const ba_query_stats_t *b) {
  if (!a || !b) return;
  if (b->rows_matched && (!a->rows_matched || b->first_ns < a->first_ns)) a->first_ns = b->first_ns;
  if (b->rows_matched && b->last_ns > a->last_ns) a->last_ns = b->last_ns;
  a->segments_total += b->segments_total;
  a->segments_used += b->segments_used;
  a->rows_total += b->rows_total;
  a->rows_candidate += b->rows_candidate;
  a->rows_matched += b->rows_matched;
  a->blocks_read += b->blocks_read;
  a->rows_damaged += b->rows_damaged;
  a->bitmap_ops += b->bitmap_ops;
  a->packets += b->packets;
  a->bytes += b->bytes;
  a->segments_damaged += b->segments_damaged;
  a->out_packets += b->out_packets;
  a->out_bytes += b->out_bytes;
}

/* A worker pays when at least two segments of the window have many rows:
 * it overlaps one segment's plan with another's, and costs a thread, a
 * second store handle and a wait for the other CPU (which on a busy machine
 * is longer than a small segment's plan). Below: one thread. */
static uint64_t g_par_min_rows = UINT64_C(1) << 20;

void query_set_par_min_rows(uint64_t rows) { g_par_min_rows = rows; }

static int par_pays(ba_store_t *s, size_t nseg, uint64_t ws, uint64_t we) {
  size_t big = 0;
  for (size_t i = 0; i < nseg && big < 2; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    if (ba_store_segment(s, i, &seg) < 0) continue;
    if (ba_segment_info(seg, &in) == 0 && !seg_pruned(&in, ws, we) && in.rows >= g_par_min_rows) big++;
  }
  return big >= 2;
}

/* Starts the worker thread that plans segments ahead (par_worker); 1 when
 * it runs, 0 when it could not start (the caller plans alone), or an error. */
static int par_start(par_t *par, pthread_t *worker, ba_store_t *s, size_t nseg, const qnode_t *root,
                     const ba_query_exec_opts_t *o, uint32_t qcols, uint64_t ws, uint64_t we, int prefetch) {
  memset(par, 0, sizeof(*par));
  par->nseg = nseg;
  par->ms = s;
  par->root = root;
  par->wo = *o;
  par->wo.threads = 1;
  par->fetch_threads = o->threads;
  par->ws = ws;
  par->we = we;
  par->cols = o->out_cols;
  par->qcols = qcols;
  par->prefetch = prefetch;
  /* Not under a limit (-c N): whole segments read ahead would outlast it
   * (par_stop waits for the worker). */
  par->rows_ahead = prefetch && !(o->limit && !o->count_only);
  par->slots = ba_calloc(nseg, sizeof(pslot_t));
  if (!par->slots) return BA_ERR_NOMEM;
  pthread_mutex_init(&par->mu, NULL);
  pthread_cond_init(&par->cv, NULL);
  if (pthread_create(worker, NULL, par_worker, par) == 0) return 1;
  pthread_mutex_destroy(&par->mu);
  pthread_cond_destroy(&par->cv);
  ba_free(par->slots);
  return 0;
}

/* Stops the worker and drops the plans of segments not delivered (stopped
 * early, or pruned). */
static void par_stop(par_t *par, pthread_t worker) {
  pthread_mutex_lock(&par->mu);
  par->quit = 1;
  pthread_cond_broadcast(&par->cv);
  pthread_mutex_unlock(&par->mu);
  pthread_join(worker, NULL);
  for (size_t i = 0; i < par->nseg; i++)
    if (par->slots[i].state == 2 && par->slots[i].rc == 0) segres_drop(&par->slots[i].res);
  pthread_mutex_destroy(&par->mu);
  pthread_cond_destroy(&par->cv);
  ba_free(par->slots);
}

/* Segment c's run failed with damage rc: when nothing of it was delivered
 * yet, it is answered by a linear scan of its blocks (which skips damaged
 * blocks and counts their rows); otherwise the rest of it is skipped. Either
 * way a warning names it; returns the error that stops the query, or 0. */
static int segment_damaged(ba_query_t *q, const qnode_t *root, segctx_t *c, runctx_t *run,
                           const ba_query_exec_opts_t *o, const ba_query_exec_opts_t *po, ba_store_t *s,
                           uint64_t matched_before, int rc, int *stop) {
  ba_query_stats_t *stats = run->stats;
  stats->segments_damaged++;
  if (o->force_scan || stats->rows_matched != matched_before) {
    warn_line(o, "segment %s: %s (%s); the rest of this segment is skipped", c->info.name, ba_strerror(rc),
              ba_store_errmsg(s));
    return 0;
  }
  warn_line(o, "segment %s: %s (%s); answered by a linear scan", c->info.name, ba_strerror(rc),
            ba_store_errmsg(s));
  ba_query_exec_opts_t so = *o;
  so.force_scan = 1;
  so.explain = NULL;
  c->opts = &so;
  rc = run_segment(q, root, c, run, stop);
  c->opts = po;
  cache_clear(c);
  if (rc < 0 && is_damage(rc)) {
    warn_line(o, "segment %s: the linear scan failed too (%s); segment skipped", c->info.name, ba_strerror(rc));
    rc = 0;
  }
  return rc;
}

static int run_impl(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts, ba_record_sink_fn fn,
                    void *ctx, const ba_bin_sums_t *bins, ba_query_stats_t *stats) {
  BA_RETURN_IF(!q || !q->root || !s || !fn, BA_ERR_INVALID);
  ba_query_exec_opts_t o;
  if (opts) o = *opts;
  else ba_query_exec_opts_init(&o);
  ba_query_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof(*stats));
  uint64_t ws = o.start_ns, we = o.end_ns ? o.end_ns : UINT64_MAX;
  /* The window is part of the tree: first_ns >= ws and first_ns < we. */
  qnode_t wge = {0}, wlt = {0}, a1 = {0}, a2 = {0};
  const qnode_t *root = q->root;
  if (ws > 0 || we != UINT64_MAX) {
    wge.kind = QN_TIME; wge.field = QF_FIRST; wge.cmp = QC_GE; wge.value = ws;
    wlt.kind = QN_TIME; wlt.field = QF_FIRST; wlt.cmp = QC_LT; wlt.value = we;
    a1.kind = QN_AND; a1.kid[0] = &wge; a1.kid[1] = &wlt;
    a2.kind = QN_AND; a2.kid[0] = &a1; a2.kid[1] = q->root;
    root = &a2;
  }
  runctx_t run = {0};
  run.root = root;
  run.fn = fn;
  run.ctx = ctx;
  run.stats = stats;
  run.limit = o.count_only ? 0 : o.limit;
  run.bins = bins;
  run_fields_init(&run, &o);
  segctx_t c = {0};
  c.opts = &o;
  c.stats = stats;
  c.fetch_threads = o.threads;
  int rc = 0, stop = 0;
  size_t nseg = ba_store_segment_count(s);
  stats->segments_total = nseg;
  /* Two threads plan segments ahead when the plan is not printed (explain
   * lines come in segment order) and no range-OR device is plugged in. */
  par_t par;
  pthread_t worker;
  int parallel = o.threads >= 2 && nseg >= 2 && !o.force_scan && !o.explain && !o.range_or &&
                 par_pays(s, nseg, ws, we);
  if (parallel) {
    /* With bins, exact segments are summed by the caller's thread (sum_rows);
     * with column vectors they are read by the caller's thread (fetch_fields). */
    int prefetch = !bins && !run.field_fn && !(o.out_cols & BA_COL_FRAME) && !(q->cols & BA_COL_FRAME);
    parallel = par_start(&par, &worker, s, nseg, root, &o, q->cols, ws, we, prefetch);
    if (parallel < 0) return parallel;
  }
  /* The caller's thread plans with threads = 1 too when the worker runs. */
  ba_query_exec_opts_t po = o;
  if (parallel) po.threads = 1;
  c.opts = &po;
  live_t *lv = NULL; /* journals (live.c), delivered in order with the segments */
  rc = live_open(q, s, ws, we, &lv);
  for (size_t i = 0; i < nseg && !stop && rc == 0; i++) {
    if (parallel) par_wait(&par, i, &c);
    rc = ba_store_segment(s, i, &c.seg);
    if (rc < 0 && is_damage(rc)) {
      /* A segment that cannot be opened: say so, answer from the others. */
      stats->segments_damaged++;
      warn_line(&o, "segment %zu of %zu skipped: %s: %s", i + 1, nseg, ba_strerror(rc), ba_store_errmsg(s));
      rc = 0;
      continue;
    }
    if (rc < 0) break;
    if ((rc = ba_segment_info(c.seg, &c.info)) < 0) break;
    if ((rc = live_before(lv, c.info.start_ns, ba_store_segment_name(s, i), &run, &o, q, &stop)) != 0 || stop) break;
    /* Segment pruning by slice and by the first-seen range inside it. */
    if (seg_pruned(&c.info, ws, we)) continue;
    c.codec = c.info.codec;
    stats->segments_used++;
    stats->rows_total += c.info.rows;
    uint64_t matched_before = stats->rows_matched;
    if (parallel && par.slots[i].rc == 0) {
      /* Planned ahead: deliver (the plan is ours now). */
      pslot_t *sl = &par.slots[i];
      stats->bitmap_ops += sl->res.ops;
      sl->state = 0;
      rc = deliver_segment(q, &c, &run, &sl->res, NULL, &stop);
    } else {
      if (parallel) par.slots[i].state = 0;
      rc = run_segment(q, root, &c, &run, &stop);
    }
    cache_clear(&c);
    if (rc < 0 && is_damage(rc)) rc = segment_damaged(q, root, &c, &run, &o, &po, s, matched_before, rc, &stop);
    ba_segment_release(c.seg); /* its directory and buffers: the next segment reuses the memory */
    if (rc != 0) break;
  }
  if (rc == 0 && !stop) rc = live_before(lv, 0, NULL, &run, &o, q, &stop);
  live_free(lv);
  if (parallel) par_stop(&par, worker);
  segctx_free(&c);
  ba_free(run.batch);
  return rc;
}

int ba_query_run(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts, ba_record_sink_fn fn,
                 void *ctx, ba_query_stats_t *stats) {
  return run_impl(q, s, opts, fn, ctx, NULL, stats);
}

/* Records (residual checks, damaged segments' scans, journals) into bins. */
static int bin_sink(void *ctx, const ba_record_t *recs, size_t n) {
  const ba_bin_sums_t *b = ctx;
  uint64_t span = (uint64_t)b->nbins * b->bin_ns;
  for (size_t i = 0; i < n; i++) {
    uint64_t off = recs[i].first_ns - b->start_ns;
    if (recs[i].first_ns < b->start_ns || off >= span) continue; /* outside the window: not delivered */
    uint64_t *x = b->sums + 3 * (size_t)(off / b->bin_ns);
    x[0]++;
    x[1] += recs[i].packets;
    x[2] += recs[i].bytes;
  }
  return 0;
}

int query_run_bins(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts, const ba_bin_sums_t *b,
                   ba_query_stats_t *stats) {
  BA_RETURN_IF(!q || !q->root || !s || !opts || !b || b->bin_ns == 0 || (b->nbins && !b->sums), BA_ERR_INVALID);
  BA_RETURN_IF(b->nbins > SIZE_MAX / 3 || (uint64_t)b->nbins > (UINT64_MAX - b->start_ns) / b->bin_ns,
               BA_ERR_INVALID);
  ba_query_exec_opts_t o = *opts;
  o.start_ns = b->start_ns;
  o.end_ns = b->start_ns + (uint64_t)b->nbins * b->bin_ns;
  o.out_cols = BA_COL_FIRST | BA_COL_PACKETS | BA_COL_BYTES;
  o.count_only = 0;
  o.limit = 0;
  o.explain_only = 0;
  uint64_t before[2] = {0, 0}, after[2] = {0, 0};
  for (size_t k = 0; k < b->nbins; k++) before[0] += b->sums[3 * k + 1], before[1] += b->sums[3 * k + 2];
  ba_query_stats_t local;
  if (!stats) stats = &local;
  int rc = run_impl(q, s, &o, bin_sink, (void *)b, b, stats);
  /* Totals from the bins: summed segments add no record to the stats. */
  for (size_t k = 0; k < b->nbins; k++) after[0] += b->sums[3 * k + 1], after[1] += b->sums[3 * k + 2];
  stats->packets = after[0] - before[0];
  stats->bytes = after[1] - before[1];
  return rc;
}
