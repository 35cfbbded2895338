/* Estimates of a filter node's result from the index directory alone
 * (nothing loaded): empty, every row, or some rows with the serialized size
 * of the bitmaps it would be built from. The AND planner orders its operands
 * by them. Also how a time predicate maps to time bins (time_plan). */
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

/* ---------- estimates (from the index directory, nothing loaded) ---------- */

static int est_ipver(segctx_t *c, unsigned ver, est_t *e) {
  if ((ver == 4 && !c->has_non_v4) || (ver == 6 && !c->has_non_v6)) {
    *e = est_exact(ES_ALL, 0);
    return 0;
  }
  vpred_t p;
  vp_one(&p, BA_ATTR_IPVER, ver, ver);
  vsel_t s;
  BA_FORWARD(select_values(c, &p, &s));
  *e = s.est;
  return 0;
}

static int est_v4_item(segctx_t *c, const qaddr_t *a, int dst, est_t *e) {
  est_t r = est_exact(ES_ALL, 0);
  int nparts = 0;
  for (int i = 0; i < 4 && r.hi != ES_NONE; i++) {
    if (octet_full(a, i)) continue;
    nparts++;
    vpred_t p;
    vp_bytes(&p, (ba_attr_t)((dst ? BA_ATTR_DST_IP0 : BA_ATTR_SRC_IP0) + i), a->oct[i], 0);
    vsel_t s;
    BA_FORWARD(select_values(c, &p, &s));
    r = est_and(r, s.est);
  }
  if (nparts == 0) return est_ipver(c, 4, e);
  *e = r;
  return 0;
}

static int est_addr_side(segctx_t *c, const qnode_t *n, int dst, est_t *e) {
  const qaddr_t *items;
  size_t cnt;
  BA_FORWARD(addr_items(c, n, &items, &cnt));
  est_t r = est_exact(ES_NONE, 0);
  for (size_t i = 0; i < cnt && r.hi != ES_ALL; i++) {
    est_t it;
    if (items[i].v6) {
      if (v6_covers_v4(&items[i])) it = (est_t){ES_NONE, ES_ALL, 0};
      else {
        BA_FORWARD(est_ipver(c, 6, &it));
        it.lo = ES_NONE;
      }
    } else {
      BA_FORWARD(est_v4_item(c, &items[i], dst, &it));
    }
    r = est_or(r, it);
  }
  *e = r;
  return 0;
}

void time_plan(const segctx_t *c, const qnode_t *n, tplan_t *t) {
  uint64_t a = 0, b = UINT64_MAX, T = n->value;
  t->tag = NULL;
  switch (n->cmp) {
    case QC_EQ: a = b = T; break;
    case QC_GT: if (T == UINT64_MAX) { t->kind = TP_NONE; return; } a = T + 1; break;
    case QC_GE: a = T; break;
    case QC_LT: if (T == 0) { t->kind = TP_NONE; return; } b = T - 1; break;
    case QC_LE: b = T; break;
  }
  const ba_segment_info_t *in = &c->info;
  if (n->field != QF_FIRST) {
    t->kind = TP_CHECK;
    t->tag = "check(last)";
    return;
  }
  if (b < in->min_first_ns || a > in->max_first_ns) {
    t->kind = TP_NONE;
    t->tag = "time:{}";
    return;
  }
  if (a <= in->min_first_ns && b >= in->max_first_ns) {
    t->kind = TP_ALL;
    t->tag = "time:*";
    return;
  }
  uint64_t w = (uint64_t)in->time_bin_seconds * 1000000000ull;
  if (w == 0) {
    t->kind = TP_CHECK;
    t->tag = "check(first)";
    return;
  }
  /* A bound beyond the segment's first-seen range constrains nothing. */
  if (a <= in->min_first_ns) a = 0;
  if (b >= in->max_first_ns) b = UINT64_MAX;
  uint64_t s0 = in->start_ns;
  /* Bin k holds first_ns in [s0 + k*w, s0 + (k+1)*w - 1]. */
  t->kind = TP_BINS;
  t->any.lo = a <= s0 ? 0 : (a - s0) / w;
  t->any.hi = b == UINT64_MAX ? UINT64_MAX : (b < s0 ? 0 : (b - s0) / w);
  t->full.lo = a <= s0 ? 0 : (a - s0 + w - 1) / w;
  if (b == UINT64_MAX) t->full.hi = UINT64_MAX;
  else if (b < s0 || (b - s0 + 1) / w == 0) { t->full.lo = 1; t->full.hi = 0; }
  else t->full.hi = (b - s0 + 1) / w - 1;
}

int est_node(segctx_t *c, const qnode_t *n, est_t *e) {
  est_t a = est_exact(ES_ALL, 0), b = a;
  vsel_t s;
  vpred_t p;
  switch (n->kind) {
    case QN_TRUE: *e = est_exact(ES_ALL, 0); return 0;
    case QN_FALSE: *e = est_exact(ES_NONE, 0); return 0;
    case QN_AND: case QN_OR:
      BA_FORWARD(est_node(c, n->kid[0], &a));
      BA_FORWARD(est_node(c, n->kid[1], &b));
      *e = n->kind == QN_AND ? est_and(a, b) : est_or(a, b);
      return 0;
    case QN_NOT:
      BA_FORWARD(est_node(c, n->kid[0], &a));
      *e = est_not(a);
      return 0;
    case QN_IPVER:
      vp_one(&p, BA_ATTR_IPVER, n->value, n->value);
      BA_FORWARD(select_values(c, &p, &s));
      *e = s.est;
      return 0;
    case QN_ADDR:
      if (n->dir != QD_DST) BA_FORWARD(est_addr_side(c, n, 0, &a));
      if (n->dir != QD_SRC) BA_FORWARD(est_addr_side(c, n, 1, &b));
      *e = n->dir == QD_SRC ? a : n->dir == QD_DST ? b : n->dir == QD_BOTH ? est_and(a, b) : est_or(a, b);
      return 0;
    case QN_PORT: {
      binsel_t bs;
      if (n->dir != QD_DST) {
        vp_ranges(&p, BA_ATTR_SRC_PORT, n, 1);
        BA_FORWARD(select_values_bins(c, &p, &s, &bs, &a));
      }
      if (n->dir != QD_SRC) {
        vp_ranges(&p, BA_ATTR_DST_PORT, n, 1);
        BA_FORWARD(select_values_bins(c, &p, &s, &bs, &b));
      }
    }
      *e = n->dir == QD_SRC ? a : n->dir == QD_DST ? b : n->dir == QD_BOTH ? est_and(a, b) : est_or(a, b);
      return 0;
    case QN_PROTO:
      vp_ranges(&p, BA_ATTR_PROTO, n, 1);
      BA_FORWARD(select_values(c, &p, &s));
      *e = s.est;
      return 0;
    case QN_FLAGS:
      vp_flags(&p, n);
      BA_FORWARD(select_values(c, &p, &s));
      *e = s.est;
      return 0;
    case QN_TIME: {
      tplan_t t;
      time_plan(c, n, &t);
      if (t.kind == TP_CHECK || (t.kind == TP_BINS && !c->has_tbin)) {
        int rc = zone_est(c, n, e); /* as plan_time */
        if (rc <= 0) return rc;
        t.kind = TP_CHECK;
      }
      if (t.kind == TP_NONE) *e = est_exact(ES_NONE, 0);
      else if (t.kind == TP_ALL) *e = est_exact(ES_ALL, 0);
      else if (t.kind == TP_CHECK) *e = (est_t){ES_NONE, ES_ALL, 0};
      else {
        vp_one(&p, BA_ATTR_TIME_BIN, t.any.lo, t.any.hi);
        BA_FORWARD(select_values(c, &p, &s));
        *e = s.est;
        if (t.full.lo > t.full.hi) e->lo = ES_NONE;
        else if (t.full.lo != t.any.lo || t.full.hi != t.any.hi) e->lo = es_and(e->lo, ES_SOME);
      }
      return 0;
    }
    case QN_NUM: case QN_XADDR: {
      int rc = n->kind == QN_NUM ? zone_est(c, n, e) : 1;
      if (rc <= 0) return rc;
      *e = (est_t){ES_NONE, ES_ALL, 0};
      return 0;
    }
  }
  return BA_ERR_INVALID;
}

/* Sort key of an operand of an AND: empty first, then every row (free), then
 * by estimated size, so the running result is small from the start. */
uint64_t est_key(est_t e) { return e.hi == ES_NONE ? 0 : e.hi == ES_ALL ? 1 : 2 + e.bytes; }

