/* The residual check before materialization (format.md §7, rule 5): the
 * candidate rows an inexact plan leaves (hi outside lo) are read with the
 * filter's columns only and evaluated; the rows that match, with lo's, form
 * an exact bitmap whose rows alone are then read with the output's columns.
 * A selective range predicate (`bytes > 100000000`) thus reads one or two
 * columns of the candidate groups instead of every output column. */
#include <string.h>

#include "query/plan_int.h"

#define RESID_BATCH 65536
/* The first batch: if more than half of its rows match, reading the
 * candidates twice (filter columns, then the output's) costs more than
 * once with every column: declined. */
#define RESID_PROBE 4096

typedef struct resid {
  const qnode_t *root;
  const uint64_t *rows; /* the batch read */
  size_t pos;           /* records of the batch delivered so far */
  uint64_t next_row;    /* scan (rows NULL): the row of the next record */
  uint64_t *hit;
  size_t nhit, cap;
  int rc;
} resid_t;

static int resid_sink(void *ctx, const ba_record_t *recs, size_t n) {
  resid_t *r = ctx;
  for (size_t i = 0; i < n; i++, r->pos++) {
    if (!qnode_eval(r->root, &recs[i])) continue;
    if (r->nhit == r->cap) BA_FORWARD(ba_grow((void **)&r->hit, &r->cap, r->nhit + 1, sizeof(uint64_t)));
    r->hit[r->nhit++] = r->rows ? r->rows[r->pos] : r->next_row + r->pos;
  }
  /* scan: the same probe as rfeed_flush */
  if (!r->rows && r->pos >= RESID_PROBE && r->pos - n < RESID_PROBE && 2 * r->nhit > r->pos) return 1;
  return 0;
}

typedef struct rfeed {
  ba_segment_t *seg;
  uint32_t cols;
  uint64_t block_rows, last_block, blocks, damaged, checked;
  uint64_t *rows;
  size_t n, cap;
  resid_t *r;
} rfeed_t;


static int rfeed_flush(rfeed_t *f) {
  if (f->n == 0) return 0;
  uint64_t dmg = 0;
  f->r->rows = f->rows;
  f->r->pos = 0;
  int rc = ba_segment_read_rows(f->seg, f->rows, f->n, f->cols, resid_sink, f->r, &dmg);
  f->damaged += dmg;
  f->checked += f->n;
  f->n = 0;
  if (rc == 0 && f->checked <= 2 * RESID_BATCH && 2 * f->r->nhit > f->checked) return 1; /* mostly matches */
  return rc;
}

static int rfeed_rows(void *ctx, const uint64_t *rows, size_t n) {
  rfeed_t *f = ctx;
  for (size_t i = 0; i < n; i++) {
    uint64_t blk = rows[i] / f->block_rows;
    if (f->blocks == 0 || blk != f->last_block) {
      if (f->n >= (f->checked ? RESID_BATCH : RESID_PROBE)) BA_FORWARD(rfeed_flush(f));
      if (f->damaged) return 1; /* row positions no longer known: give up */
      f->blocks++;
      f->last_block = blk;
    }
    if (f->n == f->cap) BA_FORWARD(ba_grow((void **)&f->rows, &f->cap, f->n + 1, sizeof(uint64_t)));
    f->rows[f->n++] = rows[i];
  }
  return 0;
}

int residual_exact(segctx_t *c, const qnode_t *root, uint32_t qcols, pres_t r, ba_bitmap_t **out, uint64_t *blocks) {
  *out = NULL;
  *blocks = 0;
  BA_RETURN_IF(c->info.block_rows == 0, BA_ERR_CORRUPT);
  ba_bitmap_t *rest = NULL;
  const ba_bitmap_t *cand = NULL; /* NULL: every row */
  int rc = 0;
  if (r.lo.kind == PB_BM) {
    rc = r.hi.kind == PB_ALL ? ba_bitmap_not(r.lo.o->bm, c->codec, &rest)
                             : ba_bitmap_andnot(r.hi.o->bm, r.lo.o->bm, c->codec, &rest);
    if (rc < 0) return rc;
    c->stats->bitmap_ops++;
    cand = rest;
  } else if (r.hi.kind == PB_BM) {
    cand = r.hi.o->bm;
  }
  resid_t res = {.root = root};
  rfeed_t f = {.seg = c->seg, .cols = qcols, .block_rows = c->info.block_rows, .r = &res};
  if (cand) {
    rc = ba_bitmap_foreach(cand, rfeed_rows, &f);
    if (rc == 0) rc = rfeed_flush(&f);
  } else {
    rc = ba_segment_scan(c->seg, qcols, resid_sink, &res, &f.damaged);
    f.blocks = c->info.nblocks;
  }
  ba_free(f.rows);
  ba_bitmap_free(rest);
  if (rc == 0 && f.damaged) rc = 1; /* the caller reads as before, reporting the damage */
  ba_bitmap_t *hits = NULL;
  if (rc == 0) rc = ba_bitmap_from_rows(c->codec, res.hit, res.nhit, c->info.rows, &hits);
  ba_free(res.hit);
  if (rc != 0) return rc;
  *blocks = f.blocks;
  if (r.lo.kind != PB_BM) {
    *out = hits;
    return 0;
  }
  rc = ba_bitmap_or(hits, r.lo.o->bm, c->codec, out);
  ba_bitmap_free(hits);
  c->stats->bitmap_ops++;
  return rc;
}

int residual_pays(const ba_query_exec_opts_t *o, const qnode_t *root, int bins) {
  uint32_t qc = qnode_columns(root) | BA_COL_FIRST;
  return !o->count_only && !bins && !o->limit && !o->force_scan && (o->out_cols & ~qc) != 0;
}

int residual_settle(segctx_t *c, const qnode_t *root, segres_t *res) {
  ba_bitmap_t *bm = NULL;
  uint64_t blocks = 0;
  if (res->resid_declined) return 1;
  int rc = residual_exact(c, root, qnode_columns(root) | BA_COL_FIRST, res->r, &bm, &blocks);
  res->resid_declined = rc == 1;
  if (rc != 0) return rc;
  pb_t p;
  BA_FORWARD(pb_wrap(bm, &p));
  pres_drop(res->r);
  res->r = pres_exact(p);
  res->exact = 1;
  res->blocks_check += blocks;
  return 0;
}
