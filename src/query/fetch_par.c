/* Materialization on two threads: the candidate rows of one segment are cut
 * into chunks of whole row groups, delivered in order by the caller's
 * thread. The caller reads the chunk it is to deliver itself unless a
 * worker (its own reader of the segment, ba_segment_clone) has claimed it;
 * the worker claims the next chunk while one of its ring buffers is free,
 * but not the one after the caller's, which stays the caller's. A caller
 * with a light sink so reads every other chunk; one busy in its sink
 * (aggregating every row of a broad -s) leaves most reading to the worker.
 * Records, their order, damage counts and messages are those of
 * fetch_rows on one thread. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "query/plan_int.h"

/* A chunk ends at a group end once it holds this many groups or rows: small
 * enough that the worker's buffer stays in cache-sized pieces, large enough
 * that the hand-off (a futex call or two) is noise. */
#define CHUNK_GROUPS 16
#define CHUNK_ROWS 8192
#define NSLOT 4 /* column vectors: chunks the worker reads ahead of the caller, at most (records: 2) */

typedef struct pslot {
  int full; /* 0: free, 1: chunk `chunk` being read, 2: read */
  int rc;
  size_t chunk;
  ba_record_t *recs;
  size_t n, cap;
  uint64_t *vec;     /* column vectors (fetch_fields): field f of row i at vec[f * stride + i] */
  size_t nf, stride;
  uint64_t damaged;
  char err[512]; /* the clone's damage message */
} pslot_t;

typedef struct pfetch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ba_segment_t *clone;
  const uint64_t *rows;
  const size_t *cut; /* chunk k = rows[cut[k], cut[k + 1]) */
  size_t nchunks;
  uint32_t cols;
  runctx_t *fields; /* set: column vectors of fields->fields into run_field_sink */
  int quit;
  uint8_t *claimed;     /* per chunk: a thread reads it (under mu) */
  size_t scan;          /* chunks below it are all claimed (under mu) */
  size_t deliv;         /* the chunk the caller delivers (under mu) */
  size_t nslot;         /* slots in use (<= NSLOT) */
  pslot_t slot[NSLOT];
} pfetch_t;

static int slot_sink(void *ctx, const ba_record_t *recs, size_t n) {
  pslot_t *s = ctx;
  if (s->n + n > s->cap) BA_FORWARD(ba_grow((void **)&s->recs, &s->cap, s->n + n, sizeof(ba_record_t)));
  memcpy(s->recs + s->n, recs, n * sizeof(ba_record_t));
  s->n += n;
  return 0;
}

static int slot_vec_sink(void *ctx, const uint64_t *const *vals, size_t n) {
  pslot_t *s = ctx;
  BA_RETURN_IF(s->n + n > s->stride, BA_ERR_INVALID); /* a chunk's rows fit (make_cuts) */
  for (size_t f = 0; f < s->nf; f++) memcpy(s->vec + f * s->stride + s->n, vals[f], n * sizeof(uint64_t));
  s->n += n;
  return 0;
}

/* Rows rows[0..n) of seg into the sink (records) or run_field_sink (fields). */
static int read_chunk(ba_segment_t *seg, const uint64_t *rows, size_t n, uint32_t cols, runctx_t *fields,
                      ba_record_sink_fn sink, void *ctx, uint64_t *damaged) {
  if (fields)
    return ba_segment_read_fields(seg, rows, n, fields->fields, fields->nfields, run_field_sink, fields, damaged);
  return ba_segment_read_rows(seg, rows, n, cols, sink, ctx, damaged);
}

/* A free slot, or NULL (under mu). */
static pslot_t *free_slot(pfetch_t *p) {
  for (size_t j = 0; j < p->nslot; j++)
    if (!p->slot[j].full) return &p->slot[j];
  return NULL;
}

static void *worker(void *arg) {
  pfetch_t *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    pslot_t *s = NULL;
    size_t k;
    for (;;) { /* the first unclaimed chunk after the caller's next one */
      while (p->scan < p->nchunks && p->claimed[p->scan]) p->scan++;
      k = BA_MAX(p->scan, p->deliv + 2);
      while (k < p->nchunks && p->claimed[k]) k++;
      if (p->quit || p->scan >= p->nchunks || (k < p->nchunks && (s = free_slot(p)))) break;
      pthread_cond_wait(&p->cv, &p->mu);
    }
    if (p->quit || !s) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    p->claimed[k] = 1;
    s->full = 1;
    s->chunk = k;
    pthread_mutex_unlock(&p->mu);
    s->n = 0;
    s->damaged = 0;
    s->err[0] = 0;
    size_t n = p->cut[k + 1] - p->cut[k];
    if (p->fields)
      s->rc = ba_segment_read_fields(p->clone, p->rows + p->cut[k], n, p->fields->fields, p->fields->nfields,
                                     slot_vec_sink, s, &s->damaged);
    else
      s->rc = ba_segment_read_rows(p->clone, p->rows + p->cut[k], n, p->cols, slot_sink, s, &s->damaged);
    if (s->damaged) snprintf(s->err, sizeof s->err, "%s", ba_segment_errmsg(p->clone));
    int rc = s->rc;
    pthread_mutex_lock(&p->mu);
    s->full = 2;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (rc < 0) break;
  }
  return NULL;
}

/* Chunk k (claimed by the worker) from its slot into the sink once read;
 * frees the slot. */
static int take_slot(pfetch_t *p, ba_segment_t *seg, size_t k, ba_record_sink_fn sink, void *ctx, uint64_t *damaged) {
  pslot_t *s = NULL;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    for (size_t j = 0; j < p->nslot && !s; j++)
      if (p->slot[j].full == 2 && p->slot[j].chunk == k) s = &p->slot[j];
    if (s) break;
    pthread_cond_wait(&p->cv, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  int rc = s->rc;
  if (rc == 0 && s->damaged) {
    *damaged += s->damaged;
    ba_segment_set_errmsg(seg, s->err);
  }
  if (rc == 0 && s->n && p->fields) {
    const uint64_t *vals[BA_FIELDS_MAX];
    for (size_t f = 0; f < s->nf; f++) vals[f] = s->vec + f * s->stride;
    rc = run_field_sink(p->fields, vals, s->n);
  } else if (rc == 0 && s->n) {
    rc = sink(ctx, s->recs, s->n);
  }
  pthread_mutex_lock(&p->mu);
  s->full = 0;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* Chunk boundaries of rows[0..n): *cut gets nchunks + 1 offsets; *groups
 * the distinct groups touched. */
static int make_cuts(const uint64_t *rows, size_t n, uint32_t block_rows, size_t **cut, size_t *nchunks,
                     uint64_t *groups) {
  size_t cap = 0, k = 0;
  size_t *c = NULL;
  BA_FORWARD(ba_grow((void **)&c, &cap, 16, sizeof *c));
  c[k++] = 0;
  uint64_t start = 0, ng = 0, cg = 0, gend = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || rows[i] >= gend) { /* a new group (rows ascending): no division per row */
      uint64_t gi = rows[i] / block_rows;
      gend = (gi + 1) * block_rows;
      if (i > 0 && (cg >= CHUNK_GROUPS || i - start >= CHUNK_ROWS)) {
        if (k + 1 >= cap && ba_grow((void **)&c, &cap, k + 2, sizeof *c) < 0) {
          ba_free(c);
          return BA_ERR_NOMEM;
        }
        c[k++] = i;
        start = i;
        cg = 0;
      }
      ng++;
      cg++;
    }
  }
  c[k] = n;
  *cut = c;
  *nchunks = k;
  *groups = ng;
  return BA_OK;
}

/* Both threads over rows[0..n) (ascending, one segment). */
static int run_two(ba_segment_t *seg, const uint64_t *rows, const size_t *cut, size_t nchunks, uint32_t cols,
                   runctx_t *fields, ba_record_sink_fn sink, void *ctx, uint64_t *damaged) {
  pfetch_t p;
  memset(&p, 0, sizeof p);
  p.fields = fields;
  p.nslot = fields ? NSLOT : 2;
  int rc = 0;
  if (fields) { /* each slot holds the vectors of the largest chunk */
    size_t most = 0;
    for (size_t k = 0; k < nchunks; k++) most = BA_MAX(most, cut[k + 1] - cut[k]);
    for (int j = 0; j < NSLOT; j++) {
      p.slot[j].nf = fields->nfields;
      p.slot[j].stride = most;
      p.slot[j].vec = ba_malloc((most ? most : 1) * fields->nfields * sizeof(uint64_t));
      if (!p.slot[j].vec) rc = BA_ERR_NOMEM;
    }
  }
  p.claimed = ba_calloc(nchunks, 1);
  if (rc == 0 && !p.claimed) rc = BA_ERR_NOMEM;
  if (rc == 0) rc = ba_segment_clone(seg, &p.clone);
  if (rc < 0) {
    for (int j = 0; j < NSLOT; j++) ba_free(p.slot[j].vec);
    ba_free(p.claimed);
    return rc;
  }
  p.rows = rows;
  p.cut = cut;
  p.nchunks = nchunks;
  p.cols = cols;
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  pthread_t th;
  int started = pthread_create(&th, NULL, worker, &p) == 0;
  for (size_t k = 0; k < nchunks && rc == 0; k++) {
    int mine = !started;
    if (started) { /* k unclaimed: the caller's; else the worker's */
      pthread_mutex_lock(&p.mu);
      p.deliv = k;
      if (!p.claimed[k]) {
        p.claimed[k] = 1;
        mine = 1;
      }
      pthread_cond_broadcast(&p.cv); /* the worker may claim one more */
      pthread_mutex_unlock(&p.mu);
    }
    if (mine) {
      uint64_t d = 0;
      rc = read_chunk(seg, rows + cut[k], cut[k + 1] - cut[k], cols, fields, sink, ctx, &d);
      *damaged += d;
    } else {
      rc = take_slot(&p, seg, k, sink, ctx, damaged);
    }
  }
  if (started) {
    pthread_mutex_lock(&p.mu);
    p.quit = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    pthread_join(th, NULL);
  }
  pthread_mutex_destroy(&p.mu);
  pthread_cond_destroy(&p.cv);
  for (int j = 0; j < NSLOT; j++) {
    ba_free(p.slot[j].recs);
    ba_free(p.slot[j].vec);
  }
  ba_segment_clone_free(p.clone);
  ba_free(p.claimed);
  return rc;
}

int fetch_rows_two(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t cols, uint32_t block_rows, runctx_t *fields,
                   ba_record_sink_fn sink, void *sink_ctx, uint64_t *blocks, uint64_t *damaged, int *done) {
  *done = 0;
  uint64_t ncand = 0;
  BA_FORWARD(ba_bitmap_count(bm, &ncand));
  if (ncand == 0 || block_rows == 0 || ncand > SIZE_MAX / sizeof(uint64_t)) return 0;
  uint64_t *rows = ba_malloc((size_t)ncand * sizeof *rows);
  BA_RETURN_IF(!rows, BA_ERR_NOMEM);
  size_t n = 0, nchunks = 0, *cut = NULL;
  uint64_t groups = 0;
  int rc = ba_bitmap_to_rows(bm, rows, (size_t)ncand, &n);
  if (rc == 0 && n != ncand) rc = BA_ERR_CORRUPT;
  if (rc == 0) rc = make_cuts(rows, n, block_rows, &cut, &nchunks, &groups);
  if (rc == 0 && groups >= FETCH_PAR_MIN_GROUPS && nchunks >= 2) {
    *done = 1;
    *blocks = groups;
    *damaged = 0;
    rc = run_two(seg, rows, cut, nchunks, cols, fields, sink, sink_ctx, damaged);
  }
  ba_free(cut);
  ba_free(rows);
  return rc;
}

/* ---------- sums per bin on two threads (sum_rows) ---------- */

/* Groups per chunk of the sums: a chunk's bitmap walk starts from the
 * bitmap's beginning (ba_bitmap_foreach_range skips to it), so chunks are
 * few (about 8 per segment) but at least CHUNK_GROUPS. */
#define SUM_CHUNKS 8

typedef struct psum {
  pthread_mutex_t mu;
  size_t next, nchunks;
  const ba_bitmap_t *bm; /* NULL: every row */
  uint32_t ngroups, per, block_rows;
} psum_t;

typedef struct psumw {
  psum_t *p;
  ba_segment_t *seg;
  ba_bin_sums_t b;
  sumfeed_t f;
  uint64_t summed, damaged, groups;
  int rc;
} psumw_t;

/* Takes chunks until none is left; damage is counted, other errors stop. */
static void *sum_worker(void *arg) {
  psumw_t *w = arg;
  psum_t *p = w->p;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t k = p->next++;
    pthread_mutex_unlock(&p->mu);
    if (k >= p->nchunks || w->rc < 0) break;
    uint32_t g0 = (uint32_t)(k * p->per), g1 = (uint32_t)BA_MIN((size_t)p->ngroups, (k + 1) * p->per);
    if (!p->bm) {
      uint64_t s = 0, d = 0;
      w->rc = ba_segment_sum_groups(w->seg, g0, g1, &w->b, &s, &d);
      w->summed += s;
      w->damaged += d;
      w->groups += g1 - g0;
      continue;
    }
    sumfeed_t *f = &w->f;
    f->gbase = f->gend = 0;
    f->k = 0;
    f->summed = f->damaged = f->groups = 0;
    w->rc = ba_bitmap_foreach_range(p->bm, (uint64_t)g0 * p->block_rows, (uint64_t)g1 * p->block_rows, sum_feed, f);
    if (w->rc == 0) w->rc = sum_flush(f);
    w->summed += f->summed;
    w->damaged += f->damaged;
    w->groups += f->groups;
  }
  return NULL;
}

int sum_rows_two(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t ngroups, uint32_t block_rows,
                 const ba_bin_sums_t *b, uint64_t *summed, uint64_t *groups, uint64_t *damaged, int *done) {
  *done = 0;
  if (ngroups < FETCH_PAR_MIN_GROUPS || block_rows == 0) return 0;
  psum_t p;
  memset(&p, 0, sizeof p);
  p.bm = bm;
  p.ngroups = ngroups;
  p.block_rows = block_rows;
  p.per = BA_MAX((uint32_t)CHUNK_GROUPS, (ngroups + SUM_CHUNKS - 1) / SUM_CHUNKS);
  p.nchunks = (ngroups + p.per - 1) / p.per;
  psumw_t w[2];
  memset(w, 0, sizeof w);
  int rc = 0;
  if (p.nchunks < 2 || ba_segment_clone(seg, &w[1].seg) < 0) return 0;
  w[0].seg = seg;
  for (int t = 0; t < 2; t++) {
    w[t].p = &p;
    w[t].b = *b;
    w[t].f.seg = w[t].seg;
    w[t].f.b = &w[t].b;
    w[t].f.br = block_rows;
    w[t].f.idx = bm ? ba_malloc((size_t)block_rows * sizeof(uint32_t)) : NULL;
    if (bm && !w[t].f.idx) rc = BA_ERR_NOMEM;
  }
  w[1].b.sums = ba_calloc(b->nbins ? 3 * b->nbins : 1, sizeof(uint64_t)); /* its own */
  if (!w[1].b.sums) rc = BA_ERR_NOMEM;
  if (rc == 0) {
    pthread_mutex_init(&p.mu, NULL);
    pthread_t th;
    int started = pthread_create(&th, NULL, sum_worker, &w[1]) == 0;
    sum_worker(&w[0]);
    if (started) pthread_join(th, NULL);
    pthread_mutex_destroy(&p.mu);
    rc = w[0].rc < 0 ? w[0].rc : w[1].rc;
    /* Also after an error: what was added is reported (the caller must not
     * read the segment again into the same bins). */
    for (size_t i = 0; i < 3 * b->nbins; i++) b->sums[i] += w[1].b.sums[i];
    *summed = w[0].summed + w[1].summed;
    *damaged = w[0].damaged + w[1].damaged;
    *groups = w[0].groups + w[1].groups;
    if (w[1].damaged && !w[0].damaged) ba_segment_set_errmsg(seg, ba_segment_errmsg(w[1].seg));
    *done = 1;
  }
  ba_free(w[0].f.idx);
  ba_free(w[1].f.idx);
  ba_free(w[1].b.sums);
  ba_segment_clone_free(w[1].seg);
  return rc;
}
