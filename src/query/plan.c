/* Planner and executor: per segment, the filter tree becomes bitmap algebra
 * over the segment's indexes. Every node yields two bitmaps lo <= truth <= hi:
 * indexed predicates are exact (lo = hi), the others give lo = none and a
 * superset hi (all rows, or the rows of one IP version). AND/OR combine both
 * bounds; NOT swaps them (lo' = ~hi, hi' = ~lo). Rows in hi are read with the
 * columns the output needs, plus the filter's columns when lo != hi, and the
 * residual evaluator decides those (NET-FLi 4.3: index, then selective block
 * decompression). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "query/query_internal.h"

/* ---------- reference-counted bitmap sets ---------- */

typedef enum { PB_NONE = 0, PB_ALL, PB_BM } pbkind_t;
typedef struct pbobj {
  ba_bitmap_t *bm;
  int refs;
} pbobj_t;
typedef struct pb {
  pbkind_t kind;
  pbobj_t *o;
} pb_t;

static pb_t pb_none(void) { return (pb_t){PB_NONE, NULL}; }
static pb_t pb_all(void) { return (pb_t){PB_ALL, NULL}; }
static pb_t pb_ref(pb_t p) {
  if (p.kind == PB_BM) p.o->refs++;
  return p;
}
static void pb_drop(pb_t p) {
  if (p.kind == PB_BM && --p.o->refs == 0) {
    ba_bitmap_free(p.o->bm);
    ba_free(p.o);
  }
}
static int pb_wrap(ba_bitmap_t *bm, pb_t *out) {
  pbobj_t *o = ba_malloc(sizeof(*o));
  if (!o) {
    ba_bitmap_free(bm);
    return BA_ERR_NOMEM;
  }
  o->bm = bm;
  o->refs = 1;
  *out = (pb_t){PB_BM, o};
  return 0;
}
static int pb_same(pb_t a, pb_t b) { return a.kind == b.kind && (a.kind != PB_BM || a.o == b.o); }

typedef struct pres {
  pb_t lo, hi;
} pres_t;

static void pres_drop(pres_t r) {
  pb_drop(r.lo);
  pb_drop(r.hi);
}
static pres_t pres_exact(pb_t p) { return (pres_t){p, pb_ref(p)}; }

/* ---------- segment context ---------- */

typedef struct sbuf {
  char *s;
  size_t len, cap;
  int oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void sb_add(sbuf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int l = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (l < 0) return;
  size_t need = b->len + (size_t)l + 1;
  if (need > b->cap && ba_grow((void **)&b->s, &b->cap, need, 1) < 0) {
    b->oom = 1;
    return;
  }
  memcpy(b->s + b->len, tmp, (size_t)l + 1);
  b->len += (size_t)l;
}

typedef struct segctx {
  ba_segment_t *seg;
  ba_segment_info_t info;
  ba_codec_t codec;
  const ba_query_exec_opts_t *opts;
  ba_query_stats_t *stats;
  sbuf_t *ex;      /* explain text, or NULL */
  int has_non_v4;  /* segment holds rows that are not IPv4 */
  int has_non_v6;
  uint32_t *vals;  /* scratch for present values */
  size_t vals_cap;
  struct bmcache *cache; /* index bitmaps loaded for this segment (one reference each) */
  size_t ncache, cache_cap;
} segctx_t;

typedef struct bmcache {
  uint32_t attr, value;
  pb_t p;
} bmcache_t;

static int pb_and(segctx_t *c, pb_t a, pb_t b, pb_t *out) {
  if (a.kind == PB_NONE || b.kind == PB_NONE) { *out = pb_none(); return 0; }
  if (a.kind == PB_ALL) { *out = pb_ref(b); return 0; }
  if (b.kind == PB_ALL || pb_same(a, b)) { *out = pb_ref(a); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_and(a.o->bm, b.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

static int pb_or(segctx_t *c, pb_t a, pb_t b, pb_t *out) {
  if (a.kind == PB_ALL || b.kind == PB_ALL) { *out = pb_all(); return 0; }
  if (a.kind == PB_NONE) { *out = pb_ref(b); return 0; }
  if (b.kind == PB_NONE || pb_same(a, b)) { *out = pb_ref(a); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_or(a.o->bm, b.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

static int pb_not(segctx_t *c, pb_t a, pb_t *out) {
  if (a.kind == PB_NONE) { *out = pb_all(); return 0; }
  if (a.kind == PB_ALL) { *out = pb_none(); return 0; }
  ba_bitmap_t *r;
  BA_FORWARD(ba_bitmap_not(a.o->bm, c->codec, &r));
  c->stats->bitmap_ops++;
  return pb_wrap(r, out);
}

/* The bitmap of attr == v, loaded once per segment (a filter may name the
 * same octet or port several times: `ip in [...]`, either-side terms). */
static int pb_index(segctx_t *c, ba_attr_t attr, uint32_t v, pb_t *out) {
  for (size_t i = 0; i < c->ncache; i++)
    if (c->cache[i].attr == (uint32_t)attr && c->cache[i].value == v) {
      *out = pb_ref(c->cache[i].p);
      return 0;
    }
  ba_bitmap_t *bm;
  BA_FORWARD(ba_segment_index(c->seg, attr, v, &bm));
  pb_t p;
  BA_FORWARD(pb_wrap(bm, &p));
  if (c->ncache == c->cache_cap && ba_grow((void **)&c->cache, &c->cache_cap, c->ncache + 1, sizeof(bmcache_t)) < 0) {
    *out = p; /* uncached */
    return 0;
  }
  c->cache[c->ncache++] = (bmcache_t){(uint32_t)attr, v, pb_ref(p)};
  *out = p;
  return 0;
}

static void cache_clear(segctx_t *c) {
  for (size_t i = 0; i < c->ncache; i++) pb_drop(c->cache[i].p);
  c->ncache = 0;
}

/* Present values of attr; c->vals holds them. */
static int present_values(segctx_t *c, ba_attr_t attr, size_t *n) {
  size_t cnt;
  BA_FORWARD(ba_segment_index_values(c->seg, attr, c->vals, c->vals_cap, &cnt));
  if (cnt > c->vals_cap) {
    BA_FORWARD(ba_grow((void **)&c->vals, &c->vals_cap, cnt, sizeof(uint32_t)));
    BA_FORWARD(ba_segment_index_values(c->seg, attr, c->vals, c->vals_cap, &cnt));
  }
  *n = cnt;
  return 0;
}

static const char *strategy_tag(ba_range_strategy_t s, size_t k) {
  if (s == BA_RANGE_AUTO) s = k >= 32 ? BA_RANGE_BITSET : BA_RANGE_REDUCTION;
  return s == BA_RANGE_REDUCTION ? "-red" : s == BA_RANGE_ITERATIVE ? "-it" : "-bitset";
}

typedef int (*value_pred_fn)(const void *ctx, uint32_t v);

/* OR of the bitmaps of every present value of attr accepted by pred. If more
 * than half of the present values are accepted and every row has a value
 * (ports, proto, flags), the complement of the rejected values is cheaper. */
static int or_values(segctx_t *c, ba_attr_t attr, value_pred_fn pred, const void *pctx, int total,
                     pb_t *out) {
  size_t n;
  BA_FORWARD(present_values(c, attr, &n));
  size_t nacc = 0;
  for (size_t i = 0; i < n; i++)
    if (pred(pctx, c->vals[i])) nacc++;
  if (nacc == 0) {
    *out = pb_none();
    if (c->ex) sb_add(c->ex, "%s:{}", ba_attr_name(attr));
    return 0;
  }
  int complement = total && nacc == n;
  if (complement) {
    *out = pb_all();
    if (c->ex) sb_add(c->ex, "%s:*", ba_attr_name(attr));
    return 0;
  }
  int use_compl = total && nacc > n / 2 + 1;
  size_t k = use_compl ? n - nacc : nacc;
  const ba_bitmap_t **bms = ba_calloc(k, sizeof(*bms));
  pb_t *own = ba_calloc(k, sizeof(*own));
  int rc = 0;
  if (!bms || !own) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  size_t j = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    int acc = pred(pctx, c->vals[i]) != 0;
    if (acc == use_compl) continue;
    rc = pb_index(c, attr, c->vals[i], &own[j]);
    if (rc == 0) bms[j] = own[j].o->bm;
    j++;
  }
  if (c->ex) {
    if (k <= 6) {
      sb_add(c->ex, "%s%s:", use_compl ? "~" : "", ba_attr_name(attr));
      for (size_t i = 0, shown = 0; i < n; i++)
        if ((pred(pctx, c->vals[i]) != 0) != use_compl) sb_add(c->ex, "%s%u", shown++ ? "|" : "", c->vals[i]);
    } else {
      sb_add(c->ex, "%sOR%s[%zu %s]", use_compl ? "~" : "",
             strategy_tag(c->opts->strategy, k), k, ba_attr_name(attr));
    }
  }
  if (rc == 0 && k == 1 && !use_compl) {
    *out = pb_ref(own[0]); /* one value: its bitmap as is */
  } else if (rc == 0) {
    ba_bitmap_t *r;
    if (c->opts->range_or && k > 1)
      rc = c->opts->range_or(c->opts->range_ctx, bms, k, c->info.rows, c->codec, &r);
    else
      rc = ba_query_or_many(bms, k, c->info.rows, c->codec, c->opts->strategy, c->opts->threads, &r);
    c->stats->bitmap_ops += k > 1 ? k - 1 : 0;
    if (rc == 0 && use_compl) {
      ba_bitmap_t *nr;
      rc = ba_bitmap_not(r, c->codec, &nr);
      ba_bitmap_free(r);
      r = rc == 0 ? nr : NULL;
      c->stats->bitmap_ops++;
    }
    if (rc == 0) rc = pb_wrap(r, out);
  }
done:
  for (size_t i = 0; own && i < k; i++) pb_drop(own[i]);
  ba_free(own);
  ba_free(bms);
  return rc;
}

static int pred_ranges(const void *ctx, uint32_t v) {
  const qnode_t *n = ctx;
  for (size_t i = 0; i < n->n; i++)
    if (v >= n->ranges[i].lo && v <= n->ranges[i].hi) return 1;
  return 0;
}
static int pred_flags(const void *ctx, uint32_t v) {
  const qnode_t *n = ctx;
  return n->cmp == QC_EQ ? (v & n->value) == n->value : (v & n->value) != 0;
}
typedef struct { const uint64_t *set; } octctx_t;
static int pred_octet(const void *ctx, uint32_t v) {
  const octctx_t *o = ctx;
  return v < 256 && ((o->set[v >> 6] >> (v & 63)) & 1);
}
typedef struct { uint64_t lo, hi; } binctx_t;
static int pred_bins(const void *ctx, uint32_t v) {
  const binctx_t *b = ctx;
  return v >= b->lo && v <= b->hi;
}

/* Rows of one IP version (exact via the IPVER index). */
static int rows_ipver(segctx_t *c, unsigned ver, pb_t *out) {
  if (ver == 4 && !c->has_non_v4) { *out = pb_all(); return 0; }
  if (ver == 6 && !c->has_non_v6) { *out = pb_all(); return 0; }
  return pb_index(c, BA_ATTR_IPVER, ver, out);
}

static void ex_open(segctx_t *c, const char *op) { if (c->ex) sb_add(c->ex, "%s(", op); }
static void ex_sep(segctx_t *c) { if (c->ex) sb_add(c->ex, " "); }
static void ex_close(segctx_t *c) { if (c->ex) sb_add(c->ex, ")"); }

static int pres_and(segctx_t *c, pres_t a, pres_t b, pres_t *out) {
  BA_FORWARD(pb_and(c, a.lo, b.lo, &out->lo));
  if (pb_same(a.lo, a.hi) && pb_same(b.lo, b.hi)) {
    out->hi = pb_ref(out->lo);
    return 0;
  }
  int rc = pb_and(c, a.hi, b.hi, &out->hi);
  if (rc < 0) pb_drop(out->lo);
  return rc;
}

static int pres_or(segctx_t *c, pres_t a, pres_t b, pres_t *out) {
  BA_FORWARD(pb_or(c, a.lo, b.lo, &out->lo));
  if (pb_same(a.lo, a.hi) && pb_same(b.lo, b.hi)) {
    out->hi = pb_ref(out->lo);
    return 0;
  }
  int rc = pb_or(c, a.hi, b.hi, &out->hi);
  if (rc < 0) pb_drop(out->lo);
  return rc;
}

/* One IPv4 pattern on one side: AND over the octets that are not '*'. */
static int plan_v4_item(segctx_t *c, const qaddr_t *a, int dst, pb_t *out) {
  pb_t acc = pb_all();
  int rc = 0, nparts = 0;
  ex_open(c, "AND");
  for (int i = 0; i < 4 && rc == 0; i++) {
    int full = 1;
    for (int w = 0; w < 4; w++)
      if (a->oct[i][w] != ~0ull) full = 0;
    if (full) continue;
    if (nparts++) ex_sep(c);
    octctx_t oc = {a->oct[i]};
    pb_t o;
    rc = or_values(c, (ba_attr_t)((dst ? BA_ATTR_DST_IP0 : BA_ATTR_SRC_IP0) + i), pred_octet, &oc, 0, &o);
    if (rc < 0) break;
    pb_t t;
    rc = pb_and(c, acc, o, &t);
    pb_drop(o);
    pb_drop(acc);
    acc = rc == 0 ? t : pb_none();
  }
  if (rc == 0 && nparts == 0) {
    /* The byte indexes hold IPv4 rows only (format.md); "*.*.*.*" needs the
     * IPv4 rows explicitly. */
    if (c->ex) sb_add(c->ex, "ipver:4");
    pb_t v4, t;
    rc = rows_ipver(c, 4, &v4);
    if (rc == 0) {
      rc = pb_and(c, acc, v4, &t);
      pb_drop(v4);
      pb_drop(acc);
      acc = rc == 0 ? t : pb_none();
    }
  }
  ex_close(c);
  if (rc < 0) {
    pb_drop(acc);
    return rc;
  }
  *out = acc;
  return 0;
}

/* Address node on one side: OR of its items; v6 items are inexact. */
static int plan_addr_side(segctx_t *c, const qnode_t *n, int dst, pres_t *out) {
  pres_t acc = {pb_none(), pb_none()};
  int rc = 0;
  ex_open(c, "OR");
  for (size_t i = 0; i < n->n && rc == 0; i++) {
    if (i) ex_sep(c);
    const qaddr_t *a = &n->addrs[i];
    pres_t it;
    if (a->v6) {
      /* A prefix shorter than 96 bits may cover ::ffff:0:0/96 (IPv4 rows). */
      static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
      int covers_v4 = 1;
      for (unsigned b = 0; b < a->plen && b < 96; b++)
        if (((a->a6[b / 8] ^ mapped[b / 8]) >> (7 - b % 8)) & 1) covers_v4 = 0;
      if (a->plen > 96) covers_v4 = 0;
      pb_t hi;
      if (covers_v4) {
        hi = pb_all();
        if (c->ex) sb_add(c->ex, "scan");
      } else {
        if (c->ex) sb_add(c->ex, "ipver:6+check");
        rc = rows_ipver(c, 6, &hi);
        if (rc < 0) break;
      }
      it = (pres_t){pb_none(), hi};
    } else {
      pb_t e;
      rc = plan_v4_item(c, a, dst, &e);
      if (rc < 0) break;
      it = (pres_t){e, pb_ref(e)};
    }
    pres_t t;
    rc = pres_or(c, acc, it, &t);
    pres_drop(it);
    pres_drop(acc);
    acc = rc == 0 ? t : (pres_t){pb_none(), pb_none()};
  }
  ex_close(c);
  if (rc < 0) {
    pres_drop(acc);
    return rc;
  }
  *out = acc;
  return 0;
}

/* dir combination of a per-side exact planner result. */
static int combine_dir(segctx_t *c, qdir_t d, pres_t s, pres_t t, pres_t *out) {
  if (d == QD_BOTH) return pres_and(c, s, t, out);
  return pres_or(c, s, t, out);
}

static int plan_time(segctx_t *c, const qnode_t *n, pres_t *out) {
  uint64_t a = 0, b = UINT64_MAX, T = n->value;
  switch (n->cmp) {
    case QC_EQ: a = b = T; break;
    case QC_GT: if (T == UINT64_MAX) { *out = pres_exact(pb_none()); return 0; } a = T + 1; break;
    case QC_GE: a = T; break;
    case QC_LT: if (T == 0) { *out = pres_exact(pb_none()); return 0; } b = T - 1; break;
    case QC_LE: b = T; break;
  }
  const ba_segment_info_t *in = &c->info;
  if (n->field != QF_FIRST) {
    if (c->ex) sb_add(c->ex, "check(last)");
    *out = (pres_t){pb_none(), pb_all()};
    return 0;
  }
  if (b < in->min_first_ns || a > in->max_first_ns) {
    if (c->ex) sb_add(c->ex, "time:{}");
    *out = pres_exact(pb_none());
    return 0;
  }
  if (a <= in->min_first_ns && b >= in->max_first_ns) {
    if (c->ex) sb_add(c->ex, "time:*");
    *out = pres_exact(pb_all());
    return 0;
  }
  uint64_t w = (uint64_t)in->time_bin_seconds * 1000000000ull;
  if (w == 0) {
    if (c->ex) sb_add(c->ex, "check(first)");
    *out = (pres_t){pb_none(), pb_all()};
    return 0;
  }
  /* A bound beyond the segment's first-seen range constrains nothing. */
  if (a <= in->min_first_ns) a = 0;
  if (b >= in->max_first_ns) b = UINT64_MAX;
  uint64_t s0 = in->start_ns;
  /* Bin k holds first_ns in [s0 + k*w, s0 + (k+1)*w - 1]. Candidates: bins
   * meeting [a, b]; exact: bins inside [a, b]. */
  binctx_t any, full;
  any.lo = a <= s0 ? 0 : (a - s0) / w;
  any.hi = b == UINT64_MAX ? UINT64_MAX : (b < s0 ? 0 : (b - s0) / w);
  full.lo = a <= s0 ? 0 : (a - s0 + w - 1) / w;
  if (b == UINT64_MAX) full.hi = UINT64_MAX;
  else if (b < s0 || (b - s0 + 1) / w == 0) { full.lo = 1; full.hi = 0; }
  else full.hi = (b - s0 + 1) / w - 1;
  pb_t lo = pb_none(), hi;
  if (c->ex) sb_add(c->ex, "exact(");
  if (full.lo <= full.hi) BA_FORWARD(or_values(c, BA_ATTR_TIME_BIN, pred_bins, &full, 0, &lo));
  if (c->ex) sb_add(c->ex, ") cand(");
  int rc = or_values(c, BA_ATTR_TIME_BIN, pred_bins, &any, 0, &hi);
  if (c->ex) sb_add(c->ex, ")");
  if (rc < 0) {
    pb_drop(lo);
    return rc;
  }
  if (full.lo == any.lo && full.hi == any.hi) {
    pb_drop(hi);
    *out = pres_exact(lo); /* takes our reference, adds one for hi */
    return 0;
  }
  *out = (pres_t){lo, hi};
  return 0;
}

static int plan_node(segctx_t *c, const qnode_t *n, pres_t *out) {
  int rc = 0;
  pres_t a, b;
  switch (n->kind) {
    case QN_TRUE: *out = pres_exact(pb_all()); if (c->ex) sb_add(c->ex, "*"); return 0;
    case QN_FALSE: *out = pres_exact(pb_none()); if (c->ex) sb_add(c->ex, "{}"); return 0;
    case QN_AND: case QN_OR:
      ex_open(c, n->kind == QN_AND ? "AND" : "OR");
      BA_FORWARD(plan_node(c, n->kid[0], &a));
      ex_sep(c);
      if ((rc = plan_node(c, n->kid[1], &b)) < 0) {
        pres_drop(a);
        return rc;
      }
      ex_close(c);
      rc = n->kind == QN_AND ? pres_and(c, a, b, out) : pres_or(c, a, b, out);
      pres_drop(a);
      pres_drop(b);
      return rc;
    case QN_NOT:
      ex_open(c, "NOT");
      BA_FORWARD(plan_node(c, n->kid[0], &a));
      ex_close(c);
      rc = pb_not(c, a.hi, &out->lo);
      if (rc == 0) {
        if (pb_same(a.lo, a.hi)) out->hi = pb_ref(out->lo);
        else if ((rc = pb_not(c, a.lo, &out->hi)) < 0) pb_drop(out->lo);
      }
      pres_drop(a);
      return rc;
    case QN_IPVER: {
      if (c->ex) sb_add(c->ex, "ipver:%u", (unsigned)n->value);
      pb_t p;
      BA_FORWARD(pb_index(c, BA_ATTR_IPVER, (uint32_t)n->value, &p));
      *out = (pres_t){p, pb_ref(p)};
      return 0;
    }
    case QN_ADDR:
      if (n->dir == QD_SRC) return plan_addr_side(c, n, 0, out);
      if (n->dir == QD_DST) return plan_addr_side(c, n, 1, out);
      ex_open(c, n->dir == QD_BOTH ? "AND" : "OR");
      BA_FORWARD(plan_addr_side(c, n, 0, &a));
      ex_sep(c);
      if ((rc = plan_addr_side(c, n, 1, &b)) < 0) {
        pres_drop(a);
        return rc;
      }
      ex_close(c);
      rc = combine_dir(c, n->dir, a, b, out);
      pres_drop(a);
      pres_drop(b);
      return rc;
    case QN_PORT: {
      pb_t s = pb_none(), t = pb_none();
      if (n->dir != QD_DST) BA_FORWARD(or_values(c, BA_ATTR_SRC_PORT, pred_ranges, n, 1, &s));
      if (n->dir != QD_SRC && n->dir != QD_DST) ex_sep(c);
      if (n->dir != QD_SRC && (rc = or_values(c, BA_ATTR_DST_PORT, pred_ranges, n, 1, &t)) < 0) {
        pb_drop(s);
        return rc;
      }
      pb_t r;
      if (n->dir == QD_SRC) r = pb_ref(s);
      else if (n->dir == QD_DST) r = pb_ref(t);
      else if (n->dir == QD_BOTH) rc = pb_and(c, s, t, &r);
      else rc = pb_or(c, s, t, &r);
      pb_drop(s);
      pb_drop(t);
      if (rc < 0) return rc;
      *out = (pres_t){r, pb_ref(r)};
      return 0;
    }
    case QN_PROTO: {
      pb_t r;
      BA_FORWARD(or_values(c, BA_ATTR_PROTO, pred_ranges, n, 1, &r));
      *out = (pres_t){r, pb_ref(r)};
      return 0;
    }
    case QN_FLAGS: {
      pb_t r;
      BA_FORWARD(or_values(c, BA_ATTR_TCP_FLAGS, pred_flags, n, 1, &r));
      *out = (pres_t){r, pb_ref(r)};
      return 0;
    }
    case QN_TIME:
      return plan_time(c, n, out);
    case QN_NUM:
      if (c->ex) sb_add(c->ex, "check");
      *out = (pres_t){pb_none(), pb_all()};
      return 0;
  }
  return BA_ERR_INVALID;
}

/* ---------- execution ---------- */

typedef struct runctx {
  const qnode_t *root;
  int check;                  /* evaluate every delivered record */
  ba_record_sink_fn fn;
  void *ctx;
  ba_query_stats_t *stats;
  uint64_t limit;
  int stopped;
  ba_record_t *batch;
  size_t batch_cap;
} runctx_t;

#define QUERY_STOP 1

static int run_sink(void *vctx, const ba_record_t *recs, size_t n) {
  runctx_t *r = vctx;
  if (r->stopped) return QUERY_STOP;
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
  for (size_t i = 0; i < k; i++) {
    const ba_record_t *x = &r->batch[i];
    ba_query_stats_t *s = r->stats;
    if (s->rows_matched + i == 0 || x->first_ns < s->first_ns) s->first_ns = x->first_ns;
    if (x->last_ns > s->last_ns) s->last_ns = x->last_ns;
    s->packets += x->packets;
    s->bytes += x->bytes;
  }
  r->stats->rows_matched += k;
  if (k) {
    int rc = r->fn(r->ctx, r->batch, k);
    if (rc) return rc;
  }
  return r->stopped ? QUERY_STOP : 0;
}

/* Batches candidate rows and reads them, cutting batches at block ends. */
typedef struct rowfeed {
  ba_segment_t *seg;
  uint32_t cols, block_rows;
  runctx_t *run;
  uint64_t *rows;
  size_t n, cap;
  uint64_t last_block, blocks, damaged;
  int rc;
} rowfeed_t;

#define FEED_BATCH 65536

static int feed_flush(rowfeed_t *f, size_t upto) {
  if (upto == 0) return 0;
  uint64_t dmg = 0;
  int rc = ba_segment_read_rows(f->seg, f->rows, upto, f->cols, run_sink, f->run, &dmg);
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

static uint64_t count_pb(pb_t p, uint64_t rows) {
  if (p.kind == PB_NONE) return 0;
  if (p.kind == PB_ALL) return rows;
  uint64_t c = 0;
  ba_bitmap_count(p.o->bm, &c);
  return c;
}

typedef struct blkcount {
  uint64_t block_rows, last, n;
} blkcount_t;

static int count_blocks(void *vctx, const uint64_t *rows, size_t n) {
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

static int run_segment(ba_query_t *q, const qnode_t *root, segctx_t *c, runctx_t *run, int *stop) {
  const ba_query_exec_opts_t *o = c->opts;
  ba_query_stats_t *st = c->stats;
  int rc;
  uint32_t cols = o->out_cols;
  if (o->force_scan) {
    explain_line(o, "segment %s: %" PRIu64 " rows, linear scan", c->info.name, c->info.rows);
    if (o->explain_only) return 0;
    run->check = 1;
    uint64_t dmg = 0;
    st->rows_candidate += c->info.rows;
    st->blocks_read += c->info.nblocks;
    rc = ba_segment_scan(c->seg, cols | q->cols | BA_COL_FIRST, run_sink, run, &dmg);
    st->rows_damaged += dmg;
    if (rc == QUERY_STOP) *stop = 1;
    return rc == QUERY_STOP ? 0 : rc;
  }
  /* Which IP versions occur (to skip ipver restrictions when pointless). */
  size_t nv;
  BA_FORWARD(present_values(c, BA_ATTR_IPVER, &nv));
  c->has_non_v4 = c->has_non_v6 = 0;
  for (size_t i = 0; i < nv; i++) {
    if (c->vals[i] != 4) c->has_non_v4 = 1;
    if (c->vals[i] != 6) c->has_non_v6 = 1;
  }
  sbuf_t ex = {0};
  c->ex = o->explain ? &ex : NULL;
  pres_t r;
  rc = plan_node(c, root, &r);
  c->ex = NULL;
  if (rc < 0) {
    ba_free(ex.s);
    return rc;
  }
  int exact = pb_same(r.lo, r.hi);
  uint64_t ncand = count_pb(r.hi, c->info.rows);
  uint64_t nsure = exact ? ncand : count_pb(r.lo, c->info.rows);
  st->rows_candidate += ncand;
  if (!exact) cols |= q->cols | BA_COL_FIRST;
  uint64_t nblocks = r.hi.kind == PB_ALL ? c->info.nblocks : 0;
  if (o->explain) {
    explain_line(o, "segment %s: %" PRIu64 " rows, %u blocks", c->info.name, c->info.rows, c->info.nblocks);
    explain_line(o, "  bitmaps: %s", ex.s ? ex.s : "");
    explain_line(o, "  candidates: %" PRIu64 " rows (%" PRIu64 " certain, %s), columns 0x%04x", ncand,
                 nsure, exact ? "exact: no residual check" : "residual check on the rest", cols);
  }
  ba_free(ex.s);
  if (o->explain_only || ncand == 0) {
    if (o->explain && o->explain_only) {
      uint64_t nb = r.hi.kind == PB_ALL ? c->info.nblocks : 0;
      if (r.hi.kind == PB_BM) {
        blkcount_t bc = {c->info.block_rows, UINT64_MAX, 0};
        ba_bitmap_foreach(r.hi.o->bm, count_blocks, &bc);
        nb = bc.n;
      }
      explain_line(o, "  blocks to read: %" PRIu64 " of %u", nb, c->info.nblocks);
    }
    pres_drop(r);
    return 0;
  }
  if (o->count_only && exact) {
    st->rows_matched += ncand;
    pres_drop(r);
    return 0;
  }
  run->check = !exact;
  rowfeed_t f = {0};
  f.seg = c->seg;
  f.cols = cols;
  f.block_rows = c->info.block_rows;
  f.run = run;
  if (r.hi.kind == PB_ALL) {
    uint64_t dmg = 0;
    rc = ba_segment_scan(c->seg, cols, run_sink, run, &dmg);
    st->rows_damaged += dmg;
  } else {
    rc = ba_bitmap_foreach(r.hi.o->bm, feed_rows, &f);
    if (rc == 0) rc = feed_flush(&f, f.n);
    nblocks = f.blocks;
    st->rows_damaged += f.damaged;
  }
  st->blocks_read += nblocks;
  ba_free(f.rows);
  pres_drop(r);
  if (rc == QUERY_STOP) {
    *stop = 1;
    return 0;
  }
  return rc;
}

int ba_query_run(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts, ba_record_sink_fn fn,
                 void *ctx, ba_query_stats_t *stats) {
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
  segctx_t c = {0};
  c.opts = &o;
  c.stats = stats;
  int rc = 0, stop = 0;
  size_t nseg = ba_store_segment_count(s);
  stats->segments_total = nseg;
  for (size_t i = 0; i < nseg && !stop; i++) {
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
    /* Segment pruning by slice and by the first-seen range inside it. */
    if (c.info.rows == 0 || c.info.end_ns <= ws || c.info.start_ns >= we || c.info.max_first_ns < ws ||
        c.info.min_first_ns >= we)
      continue;
    c.codec = c.info.codec;
    stats->segments_used++;
    stats->rows_total += c.info.rows;
    uint64_t matched_before = stats->rows_matched;
    rc = run_segment(q, root, &c, &run, &stop);
    cache_clear(&c);
    if (rc < 0 && is_damage(rc) && !o.force_scan && stats->rows_matched == matched_before) {
      /* The index (or a block it led to) is damaged and nothing of this
       * segment was delivered yet: answer it by a linear scan of its blocks,
       * which skips damaged blocks and counts their rows. */
      stats->segments_damaged++;
      warn_line(&o, "segment %s: %s (%s); answered by a linear scan", c.info.name, ba_strerror(rc),
                ba_store_errmsg(s));
      ba_query_exec_opts_t so = o;
      so.force_scan = 1;
      so.explain = NULL;
      c.opts = &so;
      rc = run_segment(q, root, &c, &run, &stop);
      c.opts = &o;
      cache_clear(&c);
      if (rc < 0 && is_damage(rc)) {
        warn_line(&o, "segment %s: the linear scan failed too (%s); segment skipped", c.info.name,
                  ba_strerror(rc));
        rc = 0;
      }
    } else if (rc < 0 && is_damage(rc)) {
      stats->segments_damaged++;
      warn_line(&o, "segment %s: %s (%s); the rest of this segment is skipped", c.info.name,
                ba_strerror(rc), ba_store_errmsg(s));
      rc = 0;
    }
    if (rc != 0) break;
  }
  cache_clear(&c);
  ba_free(c.cache);
  ba_free(c.vals);
  ba_free(run.batch);
  return rc;
}
