/* Materialization: the candidate rows of a planned segment become records.
 * fetch_rows walks the candidate bitmap and reads those rows' blocks, only
 * the needed columns (ba_segment_read_rows); run_sink applies the residual
 * check, the limit and the totals before the caller's sink. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

/* The run's totals over n delivered records. */
void stats_add_records(ba_query_stats_t *s, const ba_record_t *recs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *x = &recs[i];
    if (s->rows_matched + i == 0 || x->first_ns < s->first_ns) s->first_ns = x->first_ns;
    if (x->last_ns > s->last_ns) s->last_ns = x->last_ns;
    s->packets += x->packets;
    s->bytes += x->bytes;
    s->out_packets += x->out_packets;
    s->out_bytes += x->out_bytes;
  }
  s->rows_matched += n;
}

int run_sink(void *vctx, const ba_record_t *recs, size_t n) {
  runctx_t *r = vctx;
  if (r->stopped) return QUERY_STOP;
  if (!r->check && (!r->limit || r->stats->rows_matched + n < r->limit)) {
    /* every record passes: no copy */
    stats_add_records(r->stats, recs, n);
    return n ? r->fn(r->ctx, recs, n) : 0;
  }
  if (n > r->batch_cap) BA_FORWARD(ba_grow((void **)&r->batch, &r->batch_cap, n, sizeof(ba_record_t)));
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (r->check && !qnode_eval(r->root, &recs[i])) continue;
    if (r->limit && r->stats->rows_matched + k >= r->limit) {
      r->stopped = 1;
      break;
    }
    r->batch[k++] = recs[i];
  }
  stats_add_records(r->stats, r->batch, k);
  if (k) {
    int rc = r->fn(r->ctx, r->batch, k);
    if (rc) return rc;
  }
  return r->stopped ? QUERY_STOP : 0;
}

int run_fields_init(runctx_t *run, const ba_query_exec_opts_t *o) {
  run->field_fn = NULL;
  if (!o->field_fn || run->limit || o->count_only || run->bins || o->nfields > BA_FIELDS_MAX - 8 ||
      (o->nfields && !o->fields))
    return 0;
  static const size_t st[6] = {offsetof(ba_record_t, first_ns), offsetof(ba_record_t, last_ns),
                               offsetof(ba_record_t, packets),  offsetof(ba_record_t, bytes),
                               offsetof(ba_record_t, out_packets), offsetof(ba_record_t, out_bytes)};
  size_t n = 0;
  for (size_t i = 0; i < o->nfields; i++) {
    if (!ba_record_field_ok(o->fields[i])) return 0;
    run->fields[n++] = o->fields[i];
  }
  for (int k = 0; k < 6; k++) {
    run->ist[k] = -1;
    for (size_t i = 0; i < n && run->ist[k] < 0; i++)
      if (run->fields[i] == st[k]) run->ist[k] = (int)i;
    if (run->ist[k] < 0) {
      run->ist[k] = (int)n;
      run->fields[n++] = (uint16_t)st[k];
    }
  }
  run->nfields = n;
  run->field_fn = o->field_fn;
  run->field_ctx = o->field_ctx;
  return 1;
}

int run_field_sink(void *vctx, const uint64_t *const *vals, size_t n) {
  runctx_t *r = vctx;
  ba_query_stats_t *s = r->stats;
  const uint64_t *fi = vals[r->ist[0]], *la = vals[r->ist[1]], *pk = vals[r->ist[2]], *by = vals[r->ist[3]];
  const uint64_t *op = vals[r->ist[4]], *ob = vals[r->ist[5]];
  if (n == 0) return 0;
  uint64_t f0 = s->rows_matched ? s->first_ns : fi[0], l0 = s->last_ns, p = 0, b = 0, p2 = 0, b2 = 0;
  for (size_t i = 0; i < n; i++) {
    f0 = fi[i] < f0 ? fi[i] : f0;
    l0 = la[i] > l0 ? la[i] : l0;
    p += pk[i];
    b += by[i];
    p2 += op[i];
    b2 += ob[i];
  }
  s->first_ns = f0;
  s->last_ns = l0;
  s->packets += p;
  s->bytes += b;
  s->out_packets += p2;
  s->out_bytes += b2;
  s->rows_matched += n;
  return r->field_fn(r->field_ctx, vals, n);
}

/* Batches candidate rows and reads them, cutting batches at block ends. */
typedef struct rowfeed {
  ba_segment_t *seg;
  uint32_t cols, block_rows;
  ba_record_sink_fn sink; /* run_sink with a runctx_t, or a buffer */
  void *sink_ctx;
  runctx_t *fields;       /* set: column vectors into run_field_sink instead */
  uint64_t *rows;
  size_t n, cap;
  uint64_t last_block, blocks, damaged;
  int rc;
} rowfeed_t;

#define FEED_BATCH 65536

static int feed_flush(rowfeed_t *f, size_t upto) {
  if (upto == 0) return 0;
  uint64_t dmg = 0;
  int rc = f->fields ? ba_segment_read_fields(f->seg, f->rows, upto, f->fields->fields, f->fields->nfields,
                                               run_field_sink, f->fields, &dmg)
                     : ba_segment_read_rows(f->seg, f->rows, upto, f->cols, f->sink, f->sink_ctx, &dmg);
  f->damaged += dmg;
  memmove(f->rows, f->rows + upto, (f->n - upto) * sizeof(uint64_t));
  f->n -= upto;
  return rc;
}

static int feed_rows(void *vctx, const uint64_t *rows, size_t n) {
  rowfeed_t *f = vctx;
  for (size_t i = 0; i < n; i++) {
    uint64_t blk = f->block_rows ? rows[i] / f->block_rows : 0;
    if (f->blocks == 0 || blk != f->last_block) {
      /* A new block starts: flush whole blocks once the batch is large. */
      if (f->n >= FEED_BATCH) {
        int rc = feed_flush(f, f->n);
        if (rc) return rc;
      }
      f->blocks++;
      f->last_block = blk;
    }
    if (f->n == f->cap) BA_FORWARD(ba_grow((void **)&f->rows, &f->cap, f->n + 1, sizeof(uint64_t)));
    f->rows[f->n++] = rows[i];
  }
  return 0;
}

int count_blocks(void *vctx, const uint64_t *rows, size_t n) {
  blkcount_t *b = vctx;
  for (size_t i = 0; i < n; i++) {
    uint64_t blk = b->block_rows ? rows[i] / b->block_rows : 0;
    if (blk != b->last) {
      b->n++;
      b->last = blk;
    }
  }
  return 0;
}

/* The rows of bm through f (records to a sink, or field vectors) on the
 * calling thread, batched and cut at block ends. */
static int feed_one_thread(rowfeed_t *f, const ba_bitmap_t *bm, uint64_t *blocks, uint64_t *damaged) {
  int rc = ba_bitmap_foreach(bm, feed_rows, f);
  if (rc == 0) rc = feed_flush(f, f->n);
  ba_free(f->rows);
  *blocks = f->blocks;
  *damaged = f->damaged;
  return rc;
}

/* Reads the rows of bm (candidate rows of one segment) with columns cols
 * into sink, batched and cut at block ends. blocks: blocks touched. */
int fetch_rows(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t cols, uint32_t block_rows, ba_record_sink_fn sink,
               void *sink_ctx, int threads, uint64_t *blocks, uint64_t *damaged) {
  if (threads >= 2 && !(cols & BA_COL_FRAME)) { /* frames point into a reader's buffers */
    int done = 0;
    int rc = fetch_rows_two(seg, bm, cols, block_rows, NULL, sink, sink_ctx, blocks, damaged, &done);
    if (rc != 0 || done) return rc;
  }
  rowfeed_t f = {.seg = seg, .cols = cols, .block_rows = block_rows, .sink = sink, .sink_ctx = sink_ctx};
  return feed_one_thread(&f, bm, blocks, damaged);
}

int fetch_fields(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t block_rows, runctx_t *run, int threads,
                 uint64_t *blocks, uint64_t *damaged) {
  if (!bm) return ba_segment_read_fields(seg, NULL, 0, run->fields, run->nfields, run_field_sink, run, damaged);
  if (threads >= 2) {
    int done = 0;
    int rc = fetch_rows_two(seg, bm, 0, block_rows, run, NULL, NULL, blocks, damaged, &done);
    if (rc != 0 || done) return rc;
  }
  rowfeed_t f = {.seg = seg, .block_rows = block_rows, .fields = run};
  return feed_one_thread(&f, bm, blocks, damaged);
}

int sum_flush(sumfeed_t *f) {
  if (f->k == 0) return 0;
  uint64_t s = 0, d = 0;
  int rc = ba_segment_sum_group(f->seg, (uint32_t)f->gi, f->idx, f->k, f->b, &s, &d);
  f->summed += s;
  f->damaged += d;
  f->groups++;
  f->k = 0;
  return rc;
}

int sum_feed(void *ctx, const uint64_t *rows, size_t n) {
  sumfeed_t *f = ctx;
  for (size_t i = 0; i < n; i++) {
    if (rows[i] >= f->gend || rows[i] < f->gbase) { /* a new group: no division per row */
      BA_FORWARD(sum_flush(f));
      f->gi = rows[i] / f->br;
      f->gbase = f->gi * f->br;
      f->gend = f->gbase + f->br;
    }
    f->idx[f->k++] = (uint32_t)(rows[i] - f->gbase);
  }
  return 0;
}

int sum_rows(ba_segment_t *seg, const ba_bitmap_t *bm, uint32_t block_rows, uint32_t ngroups, const ba_bin_sums_t *b,
             int threads, uint64_t *summed, uint64_t *groups, uint64_t *damaged) {
  *summed = *damaged = *groups = 0;
  if (!bm) { /* every row: whole groups, no row list */
    int done = 0;
    if (threads >= 2) BA_FORWARD(sum_rows_two(seg, NULL, ngroups, block_rows, b, summed, groups, damaged, &done));
    *groups = ngroups;
    return done ? 0 : ba_segment_sum_bins(seg, NULL, 0, b, summed, damaged);
  }
  BA_RETURN_IF(block_rows == 0, BA_ERR_CORRUPT);
  if (threads >= 2) {
    int done = 0;
    BA_FORWARD(sum_rows_two(seg, bm, ngroups, block_rows, b, summed, groups, damaged, &done));
    if (done) return 0;
  }
  sumfeed_t f = {0};
  f.seg = seg;
  f.b = b;
  f.br = block_rows;
  f.idx = ba_malloc((size_t)block_rows * sizeof *f.idx);
  BA_RETURN_IF(!f.idx, BA_ERR_NOMEM);
  int rc = ba_bitmap_foreach(bm, sum_feed, &f);
  if (rc == 0) rc = sum_flush(&f);
  ba_free(f.idx);
  *summed = f.summed;
  *damaged = f.damaged;
  *groups = f.groups;
  return rc;
}
