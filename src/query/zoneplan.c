/* Zone maps in the planner (doc/format.md §7.2): a range predicate on a
 * zoned field (`bytes > 1000000`, `duration > 60000`, first/last seen, the
 * time window) becomes bounds lo <= truth <= hi from each row group's min and
 * max: hi holds the rows of the groups whose zone meets the accepted range,
 * lo those of the groups whose zone lies inside it. Nothing else is read;
 * the rows of hi outside lo get the residual check (exact evaluation on the
 * records), so results are those of the linear scan. */
#include <string.h>

#include "query/plan_int.h"

/* The zoned field a node compares and how its value is derived from the
 * zone's (v / div: duration is compared in ms, zoned in ns). 0 = none. */
static int zone_field(const qnode_t *n, ba_zfield_t *f, uint64_t *div) {
  *div = 1;
  if (n->kind == QN_TIME) {
    *f = n->field == QF_FIRST ? BA_ZF_FIRST : BA_ZF_LAST;
    return 1;
  }
  if (n->kind != QN_NUM || n->ranges) return 0;
  switch (n->field) {
    case QF_PACKETS: *f = BA_ZF_PACKETS; return 1;
    case QF_BYTES: *f = BA_ZF_BYTES; return 1;
    case QF_OUT_BYTES: *f = BA_ZF_OUT_BYTES; return 1;
    case QF_DURATION:
      *f = BA_ZF_DURATION;
      *div = 1000000; /* eval.c: (last - first) / 10^6, 0 when last <= first */
      return 1;
    default: return 0;
  }
}

/* The accepted values [*a, *b] of `cmp value`; 0 if none. */
static int cmp_interval(qcmp_t c, uint64_t T, uint64_t *a, uint64_t *b) {
  *a = 0;
  *b = UINT64_MAX;
  switch (c) {
    case QC_EQ: *a = *b = T; return 1;
    case QC_GT: *a = T + 1; return T != UINT64_MAX;
    case QC_GE: *a = T; return 1;
    case QC_LT: *b = T - 1; return T != 0;
    case QC_LE: *b = T; return 1;
  }
  return 0;
}

/* A node's zones: per group whether some row may match (any) and whether
 * every row does (all). 1 = zones do not apply. */
typedef struct zsel {
  ba_zfield_t f;
  const uint64_t *mn, *mx;
  uint64_t a, b, div;
  int empty;                 /* no value is accepted */
  uint32_t ngroups, nany, nall;
} zsel_t;

static inline int z_any(const zsel_t *z, uint32_t g) {
  return !z->empty && z->mx[g] / z->div >= z->a && z->mn[g] / z->div <= z->b;
}
static inline int z_all(const zsel_t *z, uint32_t g) {
  return !z->empty && z->mn[g] / z->div >= z->a && z->mx[g] / z->div <= z->b;
}

static int zone_select(segctx_t *c, const qnode_t *n, zsel_t *z) {
  memset(z, 0, sizeof *z);
  if (!zone_field(n, &z->f, &z->div)) return 1;
  int rc = ba_segment_zone(c->seg, z->f, &z->mn, &z->mx);
  if (rc == BA_ERR_NOT_FOUND) return 1; /* a segment written before zone maps */
  if (rc < 0) return rc;
  z->empty = !cmp_interval(n->cmp, n->value, &z->a, &z->b);
  z->ngroups = c->info.nblocks;
  for (uint32_t g = 0; g < z->ngroups; g++) {
    z->nany += (uint32_t)z_any(z, g);
    z->nall += (uint32_t)z_all(z, g);
  }
  return 0;
}

int zone_est(segctx_t *c, const qnode_t *n, est_t *e) {
  zsel_t z;
  int rc = zone_select(c, n, &z);
  if (rc != 0) return rc;
  if (z.nany == 0) *e = est_exact(ES_NONE, 0);
  else if (z.nall == z.ngroups) *e = est_exact(ES_ALL, 0);
  else /* run-length bitmaps: a few bytes per group boundary */
    *e = (est_t){z.nall ? ES_SOME : ES_NONE, z.nany == z.ngroups ? ES_ALL : ES_SOME, 16ull * z.nany};
  return 0;
}

/* The rows of the groups `which` (0: any, 1: all) selects. */
static int zone_bitmap(segctx_t *c, const zsel_t *z, int which, pb_t *out) {
  ba_bitmap_t *bm = NULL;
  BA_FORWARD(ba_bitmap_create(c->codec, &bm));
  uint64_t br = c->info.block_rows, rows = c->info.rows, run = 0;
  int rc = 0, cur = -1;
  for (uint32_t g = 0; g < z->ngroups && rc == 0; g++) {
    int v = which ? z_all(z, g) : z_any(z, g);
    uint64_t len = g + 1 < z->ngroups ? br : rows - (uint64_t)g * br;
    if (v != cur && run) {
      rc = ba_bitmap_append_run(bm, cur, run);
      run = 0;
    }
    cur = v;
    run += len;
  }
  if (rc == 0 && run) rc = ba_bitmap_append_run(bm, cur, run);
  if (rc == 0) rc = ba_bitmap_finish(bm, rows);
  if (rc < 0) {
    ba_bitmap_free(bm);
    return rc;
  }
  return pb_wrap(bm, out);
}

int zone_pres(segctx_t *c, const qnode_t *n, pres_t *out) {
  zsel_t z;
  int rc = zone_select(c, n, &z);
  if (rc != 0) return rc;
  if (c->ex) sb_add(c->ex, "zone(%s: %u of %u groups, %u all)", ba_zfield_name(z.f), z.nany, z.ngroups, z.nall);
  if (z.nany == 0) {
    *out = pres_exact(pb_none());
    return 0;
  }
  if (z.nall == z.ngroups) {
    *out = pres_exact(pb_all());
    return 0;
  }
  pb_t lo = pb_none(), hi = pb_all();
  if (z.nany < z.ngroups) BA_FORWARD(zone_bitmap(c, &z, 0, &hi));
  if (z.nall == z.nany) { /* every group all or nothing: exact */
    *out = pres_exact(hi); /* takes our reference */
    return 0;
  }
  if (z.nall && (rc = zone_bitmap(c, &z, 1, &lo)) < 0) {
    pb_drop(hi);
    return rc;
  }
  *out = (pres_t){lo, hi};
  return 0;
}
