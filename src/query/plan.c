/* Planner and executor: per segment, the filter tree becomes bitmap algebra
 * over the segment's indexes. Every node yields two bitmaps lo <= truth <= hi:
 * indexed predicates are exact (lo = hi), the others give lo = none and a
 * superset hi (all rows, or the rows of one IP version). AND/OR combine both
 * bounds; NOT swaps them (lo' = ~hi, hi' = ~lo). Rows in hi are read with the
 * columns the output needs, plus the filter's columns when lo != hi, and the
 * residual evaluator decides those (NET-FLi 4.3: index, then selective block
 * decompression). */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
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
  uint32_t *vals;  /* scratch: values of an attribute, */
  uint32_t *lens;  /* their bitmaps' sizes in bytes */
  size_t vals_cap, lens_cap;
  struct addrcache *addrs; /* v4 items of address nodes, merged once per run */
  size_t naddrs, addrs_cap;
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

static const char *strategy_tag(ba_range_strategy_t s, size_t k) {
  (void)k;
  return s == BA_RANGE_AUTO ? "" : s == BA_RANGE_REDUCTION ? "-red" : s == BA_RANGE_ITERATIVE ? "-it" : "-bitset";
}

/* The values of one attribute a predicate accepts, as sorted disjoint
 * ranges (a port list, an octet set, flag bytes, time bins). total: every row
 * has a value of attr (ports, proto, flags), so the complement of the
 * rejected values' OR is the same set. */
typedef struct vpred {
  ba_attr_t attr;
  int total;
  size_t nr;
  const qrange_t *r; /* NULL: the ranges are in buf */
  qrange_t buf[128];
} vpred_t;

static const qrange_t *vp_r(const vpred_t *p) { return p->r ? p->r : p->buf; }

static void vp_ranges(vpred_t *p, ba_attr_t attr, const qnode_t *n, int total) {
  p->attr = attr;
  p->total = total;
  p->nr = n->n;
  p->r = n->ranges;
}

static void vp_one(vpred_t *p, ba_attr_t attr, uint64_t lo, uint64_t hi) {
  p->attr = attr;
  p->total = 0;
  p->r = NULL;
  p->nr = 0;
  if (lo > hi || lo > UINT32_MAX) return;
  p->buf[0] = (qrange_t){(uint32_t)lo, hi > UINT32_MAX ? UINT32_MAX : (uint32_t)hi};
  p->nr = 1;
}

/* A set of byte values (bit v of the 256-bit set). */
static void vp_bytes(vpred_t *p, ba_attr_t attr, const uint64_t set[4], int total) {
  p->attr = attr;
  p->total = total;
  p->r = NULL;
  p->nr = 0;
  for (unsigned v = 0; v < 256;) {
    if (!((set[v >> 6] >> (v & 63)) & 1)) {
      v++;
      continue;
    }
    unsigned e = v;
    while (e + 1 < 256 && ((set[(e + 1) >> 6] >> ((e + 1) & 63)) & 1)) e++;
    p->buf[p->nr++] = (qrange_t){v, e};
    v = e + 1;
  }
}

/* Flag bytes the flags term accepts (qflags_match). */
static void vp_flags(vpred_t *p, const qnode_t *n) {
  uint64_t set[4] = {0};
  for (unsigned v = 0; v < 256; v++)
    if (qflags_match(n, v)) set[v >> 6] |= 1ull << (v & 63);
  vp_bytes(p, BA_ATTR_TCP_FLAGS, set, 1);
}

/* What a bitmap set is known to be before it is loaded: empty, some rows,
 * or every row; lo and hi as in pres_t. bytes estimates hi's size when it is
 * ES_SOME (the serialized sizes of the bitmaps it is built from). */
typedef enum { ES_NONE = 0, ES_SOME, ES_ALL } estate_t;
typedef struct est {
  estate_t lo, hi;
  uint64_t bytes;
} est_t;

static est_t est_exact(estate_t s, uint64_t bytes) { return (est_t){s, s, s == ES_SOME ? bytes : 0}; }
static estate_t es_and(estate_t a, estate_t b) {
  return a == ES_NONE || b == ES_NONE ? ES_NONE : a == ES_ALL && b == ES_ALL ? ES_ALL : ES_SOME;
}
static estate_t es_or(estate_t a, estate_t b) {
  return a == ES_ALL || b == ES_ALL ? ES_ALL : a == ES_NONE && b == ES_NONE ? ES_NONE : ES_SOME;
}
static estate_t es_not(estate_t a) { return a == ES_NONE ? ES_ALL : a == ES_ALL ? ES_NONE : ES_SOME; }
static est_t est_and(est_t a, est_t b) {
  est_t r = {es_and(a.lo, b.lo), es_and(a.hi, b.hi), 0};
  if (r.hi == ES_SOME)
    r.bytes = a.hi == ES_ALL ? b.bytes : b.hi == ES_ALL ? a.bytes : BA_MIN(a.bytes, b.bytes);
  return r;
}
static est_t est_or(est_t a, est_t b) {
  est_t r = {es_or(a.lo, b.lo), es_or(a.hi, b.hi), 0};
  if (r.hi == ES_SOME) r.bytes = (a.hi == ES_SOME ? a.bytes : 0) + (b.hi == ES_SOME ? b.bytes : 0);
  return r;
}
static est_t est_not(est_t a) { return (est_t){es_not(a.hi), es_not(a.lo), a.bytes}; }

/* Which bitmaps an OR over the accepted values loads: the accepted ones, or,
 * if more than half of the present values are accepted and the predicate is
 * total, the rejected ones (complemented afterwards). c->vals and c->lens
 * get the values to load and their sizes (from the directory; binary
 * searches, so a port range costs nothing per absent or rejected value). */
typedef struct vsel {
  size_t n, nacc, k;  /* present, accepted, to load */
  int use_compl;
  est_t est;
} vsel_t;

static int fetch_range(segctx_t *c, ba_attr_t attr, uint32_t lo, uint32_t hi, size_t *k) {
  size_t got;
  BA_FORWARD(ba_segment_index_range(c->seg, attr, lo, hi, c->vals + *k, c->lens + *k, c->vals_cap - *k, &got));
  BA_RETURN_IF(got > c->vals_cap - *k, BA_ERR_INVALID);
  *k += got;
  return 0;
}

static int select_values(segctx_t *c, const vpred_t *p, vsel_t *s) {
  const qrange_t *r = vp_r(p);
  BA_FORWARD(ba_segment_index_range(c->seg, p->attr, 0, UINT32_MAX, NULL, NULL, 0, &s->n));
  s->nacc = 0;
  for (size_t i = 0; i < p->nr; i++) {
    size_t m;
    BA_FORWARD(ba_segment_index_range(c->seg, p->attr, r[i].lo, r[i].hi, NULL, NULL, 0, &m));
    s->nacc += m;
  }
  s->use_compl = p->total && s->nacc > s->n / 2 + 1;
  s->k = s->use_compl ? s->n - s->nacc : s->nacc;
  if (s->nacc == 0 || (p->total && s->nacc == s->n)) {
    s->est = est_exact(s->nacc == 0 ? ES_NONE : ES_ALL, 0);
    s->k = 0;
    return 0;
  }
  if (s->k > c->vals_cap) BA_FORWARD(ba_grow((void **)&c->vals, &c->vals_cap, s->k, sizeof(uint32_t)));
  if (s->k > c->lens_cap) BA_FORWARD(ba_grow((void **)&c->lens, &c->lens_cap, s->k, sizeof(uint32_t)));
  size_t k = 0;
  if (!s->use_compl) {
    for (size_t i = 0; i < p->nr; i++) BA_FORWARD(fetch_range(c, p->attr, r[i].lo, r[i].hi, &k));
  } else {
    uint64_t next = 0; /* first value not yet covered */
    for (size_t i = 0; i < p->nr; i++) {
      if (r[i].lo > next) BA_FORWARD(fetch_range(c, p->attr, (uint32_t)next, r[i].lo - 1, &k));
      next = (uint64_t)r[i].hi + 1;
    }
    if (next <= UINT32_MAX) BA_FORWARD(fetch_range(c, p->attr, (uint32_t)next, UINT32_MAX, &k));
  }
  BA_RETURN_IF(k != s->k, BA_ERR_CORRUPT);
  uint64_t bytes = 0;
  for (size_t i = 0; i < k; i++) bytes += c->lens[i];
  s->est = est_exact(ES_SOME, bytes);
  return 0;
}

/* OR of the bitmaps of every present value the predicate accepts, as
 * select_values chose them (sel, c->vals). */
static int or_selected(segctx_t *c, const vpred_t *p, vsel_t sel, pb_t *out) {
  ba_attr_t attr = p->attr;
  if (sel.est.hi == ES_NONE) {
    *out = pb_none();
    if (c->ex) sb_add(c->ex, "%s:{}", ba_attr_name(attr));
    return 0;
  }
  if (sel.est.hi == ES_ALL) {
    *out = pb_all();
    if (c->ex) sb_add(c->ex, "%s:*", ba_attr_name(attr));
    return 0;
  }
  int use_compl = sel.use_compl;
  size_t k = sel.k;
  const ba_bitmap_t **bms = ba_calloc(k, sizeof(*bms));
  pb_t *own = ba_calloc(k, sizeof(*own));
  int rc = 0;
  if (!bms || !own) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  if (c->ex) {
    if (k <= 6) {
      sb_add(c->ex, "%s%s:", use_compl ? "~" : "", ba_attr_name(attr));
      for (size_t i = 0; i < k; i++) sb_add(c->ex, "%s%u", i ? "|" : "", c->vals[i]);
    } else {
      sb_add(c->ex, "%sOR%s[%zu %s]", use_compl ? "~" : "",
             strategy_tag(c->opts->strategy, k), k, ba_attr_name(attr));
    }
  }
  for (size_t j = 0; j < k && rc == 0; j++) {
    rc = pb_index(c, attr, c->vals[j], &own[j]);
    if (rc == 0) bms[j] = own[j].o->bm;
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

static int or_values(segctx_t *c, const vpred_t *p, pb_t *out) {
  vsel_t sel;
  BA_FORWARD(select_values(c, p, &sel));
  return or_selected(c, p, sel, out);
}

typedef struct { uint64_t lo, hi; } binctx_t;

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

/* A v6 prefix shorter than 96 bits may cover ::ffff:0:0/96 (IPv4 rows). */
static int v6_covers_v4(const qaddr_t *a) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a->plen > 96) return 0;
  for (unsigned b = 0; b < a->plen; b++)
    if (((a->a6[b / 8] ^ mapped[b / 8]) >> (7 - b % 8)) & 1) return 0;
  return 1;
}

static int octet_full(const qaddr_t *a, int i) {
  for (int w = 0; w < 4; w++)
    if (a->oct[i][w] != ~0ull) return 0;
  return 1;
}

/* ---------- address items, merged once per run ---------- */

typedef struct addrcache {
  const qnode_t *node;
  qaddr_t *items;
  size_t n;
} addrcache_t;

/* Two v4 patterns that agree on three octets are one pattern whose fourth
 * octet is the union (a product set stays a product set): `ip in [10.5.1.1
 * 10.5.1.2 10.5.1.3]` is 10.5.1.{1,2,3}, one AND of four octets, not three. */
static size_t merge_v4_items(qaddr_t *it, size_t n) {
  int changed = 1;
  while (changed) {
    changed = 0;
    for (size_t i = 0; i < n; i++) {
      if (it[i].v6) continue;
      for (size_t j = i + 1; j < n; j++) {
        if (it[j].v6) continue;
        int diff = -1, ndiff = 0;
        for (int o = 0; o < 4 && ndiff < 2; o++)
          if (memcmp(it[i].oct[o], it[j].oct[o], sizeof(it[i].oct[o]))) {
            diff = o;
            ndiff++;
          }
        if (ndiff > 1) continue;
        if (diff >= 0)
          for (int w = 0; w < 4; w++) it[i].oct[diff][w] |= it[j].oct[diff][w];
        it[j--] = it[--n];
        changed = 1;
      }
    }
  }
  return n;
}

#define MERGE_MAX_ITEMS 256

static int addr_items(segctx_t *c, const qnode_t *n, const qaddr_t **items, size_t *cnt) {
  for (size_t i = 0; i < c->naddrs; i++)
    if (c->addrs[i].node == n) {
      *items = c->addrs[i].items;
      *cnt = c->addrs[i].n;
      return 0;
    }
  if (n->n < 2 || n->n > MERGE_MAX_ITEMS) {
    *items = n->addrs;
    *cnt = n->n;
    return 0;
  }
  if (c->naddrs == c->addrs_cap)
    BA_FORWARD(ba_grow((void **)&c->addrs, &c->addrs_cap, c->naddrs + 1, sizeof(addrcache_t)));
  qaddr_t *it = ba_malloc(n->n * sizeof(*it));
  BA_RETURN_IF(!it, BA_ERR_NOMEM);
  memcpy(it, n->addrs, n->n * sizeof(*it));
  size_t m = merge_v4_items(it, n->n);
  c->addrs[c->naddrs++] = (addrcache_t){n, it, m};
  *items = it;
  *cnt = m;
  return 0;
}

static void addrs_free(segctx_t *c) {
  for (size_t i = 0; i < c->naddrs; i++) ba_free(c->addrs[i].items);
  ba_free(c->addrs);
  c->addrs = NULL;
  c->naddrs = c->addrs_cap = 0;
}

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

/* How a time predicate is planned: exact none/all, a residual check, or
 * time bins (candidates: bins meeting the range; exact: bins inside it). */
typedef enum { TP_NONE, TP_ALL, TP_CHECK, TP_BINS } tpkind_t;
typedef struct tplan {
  tpkind_t kind;
  const char *tag;
  binctx_t any, full;
} tplan_t;

static void time_plan(const segctx_t *c, const qnode_t *n, tplan_t *t) {
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

static int est_node(segctx_t *c, const qnode_t *n, est_t *e) {
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
    case QN_PORT:
      if (n->dir != QD_DST) {
        vp_ranges(&p, BA_ATTR_SRC_PORT, n, 1);
        BA_FORWARD(select_values(c, &p, &s));
        a = s.est;
      }
      if (n->dir != QD_SRC) {
        vp_ranges(&p, BA_ATTR_DST_PORT, n, 1);
        BA_FORWARD(select_values(c, &p, &s));
        b = s.est;
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
    case QN_NUM: case QN_XADDR: *e = (est_t){ES_NONE, ES_ALL, 0}; return 0;
  }
  return BA_ERR_INVALID;
}

/* Sort key of an operand of an AND: empty first, then every row (free), then
 * by estimated size, so the running result is small from the start. */
static uint64_t est_key(est_t e) { return e.hi == ES_NONE ? 0 : e.hi == ES_ALL ? 1 : 2 + e.bytes; }

/* The hi bound is a bitmap without rows: make it (and lo) PB_NONE, so the
 * operands after it are neither loaded nor combined. */
static int pres_prune(pres_t *r) {
  if (r->hi.kind != PB_BM || ba_bitmap_size_bytes(r->hi.o->bm) > 512) return 0;
  uint64_t cnt;
  BA_FORWARD(ba_bitmap_count(r->hi.o->bm, &cnt));
  if (cnt == 0) {
    pres_drop(*r);
    *r = pres_exact(pb_none());
  }
  return 0;
}

/* ---------- planning ---------- */

static int plan_node(segctx_t *c, const qnode_t *n, pres_t *out);
static uint64_t count_pb(pb_t p, uint64_t rows);

/* ---------- AND chains ---------- */

/* One operand of a flattened AND: a node, or the OR of the values of one
 * attribute that a predicate accepts (a port, proto or flags node, one octet
 * of a v4 pattern), which is estimated and loaded on its own. */
typedef struct term {
  const qnode_t *node; /* NULL: values */
  vpred_t vp;
  est_t est;
  uint64_t key;
  size_t pos;
} term_t;

typedef struct termvec {
  term_t *t;
  size_t n, cap;
} termvec_t;

static int push_term(termvec_t *v, const term_t *t) {
  if (v->n == v->cap) BA_FORWARD(ba_grow((void **)&v->t, &v->cap, v->n + 1, sizeof(term_t)));
  v->t[v->n] = *t;
  v->t[v->n].pos = v->n;
  v->n++;
  return 0;
}

static int push_ranges(termvec_t *v, ba_attr_t attr, const qnode_t *n) {
  term_t t = {0};
  vp_ranges(&t.vp, attr, n, 1);
  return push_term(v, &t);
}

static int flatten_and(segctx_t *c, const qnode_t *n, termvec_t *v) {
  term_t t = {0};
  switch (n->kind) {
    case QN_AND:
      BA_FORWARD(flatten_and(c, n->kid[0], v));
      return flatten_and(c, n->kid[1], v);
    case QN_PORT:
      if (n->dir == QD_EITHER) break;
      if (n->dir != QD_DST) BA_FORWARD(push_ranges(v, BA_ATTR_SRC_PORT, n));
      if (n->dir != QD_SRC) BA_FORWARD(push_ranges(v, BA_ATTR_DST_PORT, n));
      return 0;
    case QN_PROTO: return push_ranges(v, BA_ATTR_PROTO, n);
    case QN_FLAGS:
      vp_flags(&t.vp, n);
      return push_term(v, &t);
    case QN_ADDR: {
      if (n->dir == QD_EITHER) break;
      const qaddr_t *items;
      size_t cnt;
      BA_FORWARD(addr_items(c, n, &items, &cnt));
      if (cnt != 1 || items[0].v6) break;
      int parts = 0;
      for (int i = 0; i < 4; i++) parts += !octet_full(&items[0], i);
      if (parts == 0) break; /* needs the IPv4 rows: the node does that */
      for (int side = 0; side < 2; side++) {
        if ((side == 0 && n->dir == QD_DST) || (side == 1 && n->dir == QD_SRC)) continue;
        for (int i = 0; i < 4; i++) {
          if (octet_full(&items[0], i)) continue;
          vp_bytes(&t.vp, (ba_attr_t)((side ? BA_ATTR_DST_IP0 : BA_ATTR_SRC_IP0) + i), items[0].oct[i], 0);
          BA_FORWARD(push_term(v, &t));
        }
      }
      return 0;
    }
    default: break;
  }
  t.node = n;
  return push_term(v, &t);
}

static int term_cmp(const void *a, const void *b) {
  const term_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A bitmap this large (half the size of a literal per group) has literals in
 * most groups: its size no longer tells how many rows it holds. */
static uint64_t dense_bytes(const segctx_t *c) {
  unsigned wb = ba_codec_word_bits(c->codec);
  if (wb < 32) wb = 32;
  return c->info.rows / (wb - 1) * (wb / 8) / 2;
}

/* Rows of p in a prefix of the segment (an eighth, at least 2^16 rows): the
 * order of dense operands needs relative row counts only, and a prefix is
 * counted without decoding the rest. */
static uint64_t count_sample(pb_t p, uint64_t rows) {
  if (p.kind != PB_BM) return count_pb(p, rows);
  uint64_t to = rows / 8 > 65536 ? rows / 8 : rows, c = 0;
  if (ba_bitmap_count_range(p.o->bm, 0, to, &c) < 0) return count_pb(p, rows);
  return c;
}

static int pb_sparse(const segctx_t *c, pb_t p) {
  return p.kind == PB_NONE || (p.kind == PB_BM && ba_bitmap_size_bytes(p.o->bm) < dense_bytes(c));
}

static int eval_term(segctx_t *c, const term_t *t, pres_t *x) {
  if (t->node) return plan_node(c, t->node, x);
  pb_t p;
  BA_FORWARD(or_values(c, &t->vp, &p));
  *x = pres_exact(p);
  return 0;
}

static int and_step(segctx_t *c, pres_t *acc, pres_t x) {
  pres_t y;
  int rc = pres_and(c, *acc, x, &y);
  pres_drop(x);
  if (rc < 0) return rc;
  pres_drop(*acc);
  *acc = y;
  return pres_prune(acc);
}

/* The most values of one attribute an AND distributes over (below). */
#define EACH_MAX 16

/* acc AND (v1 OR ... OR vk) as (acc AND v1) OR ... OR (acc AND vk), when acc
 * is a sparse exact bitmap and the term a few values of one attribute: each
 * AND steps over the value bitmap under acc's long 0-fills, and the OR joins
 * sparse results, where the OR of dense value bitmaps (a popular last address
 * byte, ports) would build a dense bitmap only to AND it away. sel and
 * c->vals come from select_values. 1 = does not apply (acc is untouched). */
static int and_values_each(segctx_t *c, pres_t *acc, const vpred_t *p, vsel_t sel) {
  if (acc->hi.kind != PB_BM || !pb_same(acc->lo, acc->hi) || !pb_sparse(c, acc->hi)) return 1;
  if (sel.est.hi != ES_SOME || sel.use_compl || sel.k < 2 || sel.k > EACH_MAX) return 1;
  uint32_t vals[EACH_MAX];
  memcpy(vals, c->vals, sel.k * sizeof(*vals));
  if (c->ex) {
    sb_add(c->ex, "each(%s:", ba_attr_name(p->attr));
    for (size_t j = 0; j < sel.k; j++) sb_add(c->ex, "%s%u", j ? "|" : "", vals[j]);
    sb_add(c->ex, ")");
  }
  ba_bitmap_t *parts[EACH_MAX];
  size_t m = 0;
  int rc = 0;
  for (size_t j = 0; j < sel.k && rc == 0; j++) {
    pb_t b;
    if ((rc = pb_index(c, p->attr, vals[j], &b)) < 0) break;
    rc = ba_bitmap_and(acc->hi.o->bm, b.o->bm, c->codec, &parts[m]);
    pb_drop(b);
    if (rc == 0) m++;
  }
  ba_bitmap_t *r = NULL;
  if (rc == 0) rc = ba_bitmap_or_many((const ba_bitmap_t *const *)parts, m, c->codec, &r);
  for (size_t j = 0; j < m; j++) ba_bitmap_free(parts[j]);
  if (rc < 0) return rc;
  c->stats->bitmap_ops += 2 * m - 1;
  pb_t out;
  BA_FORWARD(pb_wrap(r, &out));
  pres_drop(*acc);
  *acc = pres_exact(out);
  return pres_prune(acc);
}

/* acc AND one operand of a flattened AND chain. */
static int and_term(segctx_t *c, pres_t *acc, const term_t *t) {
  pres_t x;
  if (t->node) {
    BA_FORWARD(plan_node(c, t->node, &x));
  } else { /* the values are selected once, for either way */
    vsel_t sel;
    BA_FORWARD(select_values(c, &t->vp, &sel));
    int rc = and_values_each(c, acc, &t->vp, sel);
    if (rc <= 0) return rc;
    pb_t p;
    BA_FORWARD(or_selected(c, &t->vp, sel, &p));
    x = pres_exact(p);
  }
  return and_step(c, acc, x);
}

/* AND of many operands. Each is estimated from the directory first: an empty
 * one answers the AND without loading anything. The others are combined
 * from the smallest up, stopping as soon as the result is empty; once only
 * dense operands are left and the result so far is dense too (sizes then
 * say nothing about row counts), they are all loaded and combined in the
 * order of their row counts, so the result thins out as early as possible. */
static int and_terms(segctx_t *c, termvec_t *v, pres_t *out) {
  int rc = 0, empty = 0;
  for (size_t i = 0; i < v->n && rc == 0 && !empty; i++) {
    term_t *t = &v->t[i];
    if (t->node) {
      rc = est_node(c, t->node, &t->est);
    } else {
      vsel_t s;
      rc = select_values(c, &t->vp, &s);
      t->est = s.est;
    }
    t->key = est_key(t->est);
    empty = t->est.hi == ES_NONE;
  }
  if (rc < 0) return rc;
  if (empty) {
    if (c->ex) sb_add(c->ex, "AND({})");
    *out = pres_exact(pb_none());
    return 0;
  }
  qsort(v->t, v->n, sizeof(term_t), term_cmp);
  uint64_t dense = dense_bytes(c);
  pres_t acc = pres_exact(pb_all());
  ex_open(c, "AND");
  size_t i = 0;
  for (; i < v->n && rc == 0 && acc.hi.kind != PB_NONE; i++) {
    if (v->t[i].key >= 2 + dense && !pb_sparse(c, acc.hi)) break;
    if (i) ex_sep(c);
    rc = and_term(c, &acc, &v->t[i]);
  }
  if (i < v->n && rc == 0 && acc.hi.kind != PB_NONE) {
    size_t m = v->n - i;
    pres_t *xs = ba_calloc(m, sizeof(*xs));
    uint64_t *cnt = ba_calloc(m, sizeof(*cnt));
    size_t *ord = ba_calloc(m, sizeof(*ord));
    size_t got = 0;
    if (!xs || !cnt || !ord) rc = BA_ERR_NOMEM;
    if (c->ex) sb_add(c->ex, "%sby-rows(", i ? " " : "");
    for (size_t j = 0; j < m && rc == 0; j++, got++) {
      if (j) ex_sep(c);
      if ((rc = eval_term(c, &v->t[i + j], &xs[j])) < 0) break;
      cnt[j] = count_sample(xs[j].hi, c->info.rows);
      size_t k = j;
      while (k > 0 && cnt[ord[k - 1]] > cnt[j]) {
        ord[k] = ord[k - 1];
        k--;
      }
      ord[k] = j;
    }
    ex_close(c);
    for (size_t k = 0; k < got && rc == 0 && acc.hi.kind != PB_NONE; k++) {
      rc = and_step(c, &acc, xs[ord[k]]);
      xs[ord[k]] = (pres_t){pb_none(), pb_none()};
    }
    for (size_t j = 0; j < got; j++) pres_drop(xs[j]);
    ba_free(xs);
    ba_free(cnt);
    ba_free(ord);
    i = v->n;
  }
  if (i < v->n && rc == 0 && c->ex) sb_add(c->ex, " {}: %zu skipped", v->n - i);
  ex_close(c);
  if (rc < 0) {
    pres_drop(acc);
    return rc;
  }
  *out = acc;
  return 0;
}

static int plan_and(segctx_t *c, const qnode_t *n, pres_t *out) {
  termvec_t v = {0};
  int rc = flatten_and(c, n, &v);
  if (rc == 0) rc = and_terms(c, &v, out);
  ba_free(v.t);
  return rc;
}

/* One IPv4 pattern on one side: AND over the octets that are not '*'. */
static int plan_v4_item(segctx_t *c, const qaddr_t *a, int dst, pb_t *out) {
  termvec_t v = {0};
  int rc = 0;
  for (int i = 0; i < 4 && rc == 0; i++) {
    if (octet_full(a, i)) continue;
    term_t t = {0};
    vp_bytes(&t.vp, (ba_attr_t)((dst ? BA_ATTR_DST_IP0 : BA_ATTR_SRC_IP0) + i), a->oct[i], 0);
    rc = push_term(&v, &t);
  }
  if (rc == 0 && v.n == 0) {
    /* The byte indexes hold IPv4 rows only (format.md); "*.*.*.*" needs the
     * IPv4 rows explicitly. */
    if (c->ex) sb_add(c->ex, "ipver:4");
    rc = rows_ipver(c, 4, out);
  } else if (rc == 0) {
    pres_t r;
    rc = and_terms(c, &v, &r);
    if (rc == 0) {
      *out = r.lo; /* exact: lo is hi */
      pb_drop(r.hi);
    }
  }
  ba_free(v.t);
  return rc;
}

/* Address node on one side: OR of its items; v6 items are inexact. */
static int plan_addr_side(segctx_t *c, const qnode_t *n, int dst, pres_t *out) {
  const qaddr_t *items;
  size_t cnt;
  BA_FORWARD(addr_items(c, n, &items, &cnt));
  pres_t acc = {pb_none(), pb_none()};
  int rc = 0;
  ex_open(c, "OR");
  for (size_t i = 0; i < cnt && rc == 0; i++) {
    if (i) ex_sep(c);
    const qaddr_t *a = &items[i];
    pres_t it;
    if (a->v6) {
      pb_t hi;
      if (v6_covers_v4(a)) {
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
  tplan_t t;
  time_plan(c, n, &t);
  if (c->ex && t.tag) sb_add(c->ex, "%s", t.tag);
  switch (t.kind) {
    case TP_NONE: *out = pres_exact(pb_none()); return 0;
    case TP_ALL: *out = pres_exact(pb_all()); return 0;
    case TP_CHECK: *out = (pres_t){pb_none(), pb_all()}; return 0;
    case TP_BINS: break;
  }
  pb_t lo = pb_none(), hi;
  if (c->ex) sb_add(c->ex, "exact(");
  vpred_t p;
  vp_one(&p, BA_ATTR_TIME_BIN, t.full.lo, t.full.hi);
  if (t.full.lo <= t.full.hi) BA_FORWARD(or_values(c, &p, &lo));
  if (c->ex) sb_add(c->ex, ") cand(");
  vp_one(&p, BA_ATTR_TIME_BIN, t.any.lo, t.any.hi);
  int rc = or_values(c, &p, &hi);
  if (c->ex) sb_add(c->ex, ")");
  if (rc < 0) {
    pb_drop(lo);
    return rc;
  }
  if (t.full.lo == t.any.lo && t.full.hi == t.any.hi) {
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
    case QN_AND:
      return plan_and(c, n, out);
    case QN_OR:
      ex_open(c, "OR");
      BA_FORWARD(plan_node(c, n->kid[0], &a));
      ex_sep(c);
      if ((rc = plan_node(c, n->kid[1], &b)) < 0) {
        pres_drop(a);
        return rc;
      }
      ex_close(c);
      rc = pres_or(c, a, b, out);
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
      vpred_t p;
      vp_ranges(&p, BA_ATTR_SRC_PORT, n, 1);
      if (n->dir != QD_DST) BA_FORWARD(or_values(c, &p, &s));
      if (n->dir != QD_SRC && n->dir != QD_DST) ex_sep(c);
      vp_ranges(&p, BA_ATTR_DST_PORT, n, 1);
      if (n->dir != QD_SRC && (rc = or_values(c, &p, &t)) < 0) {
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
      vpred_t p;
      vp_ranges(&p, BA_ATTR_PROTO, n, 1);
      BA_FORWARD(or_values(c, &p, &r));
      *out = (pres_t){r, pb_ref(r)};
      return 0;
    }
    case QN_FLAGS: {
      pb_t r;
      vpred_t p;
      vp_flags(&p, n);
      BA_FORWARD(or_values(c, &p, &r));
      *out = (pres_t){r, pb_ref(r)};
      return 0;
    }
    case QN_TIME:
      return plan_time(c, n, out);
    case QN_NUM: case QN_XADDR:
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
  ba_record_sink_fn sink; /* run_sink with a runctx_t, or a buffer */
  void *sink_ctx;
  uint64_t *rows;
  size_t n, cap;
  uint64_t last_block, blocks, damaged;
  int rc;
} rowfeed_t;

#define FEED_BATCH 65536

static int feed_flush(rowfeed_t *f, size_t upto) {
  if (upto == 0) return 0;
  uint64_t dmg = 0;
  int rc = ba_segment_read_rows(f->seg, f->rows, upto, f->cols, f->sink, f->sink_ctx, &dmg);
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

/* A segment's plan: the candidate rows (lo <= truth <= hi) and their counts. */
typedef struct segres {
  pres_t r;
  uint64_t ncand, nsure, ops;
  int exact;
  /* Candidate records read ahead by the worker (have_rows): delivered from
   * here, residual check and limit applied at delivery. */
  int have_rows;
  ba_record_t *recs;
  size_t nrecs, cap;
  uint64_t blocks, damaged;
} segres_t;

static int buffer_sink(void *ctx, const ba_record_t *recs, size_t n) {
  segres_t *r = ctx;
  if (r->nrecs + n > r->cap) BA_FORWARD(ba_grow((void **)&r->recs, &r->cap, r->nrecs + n, sizeof(ba_record_t)));
  memcpy(r->recs + r->nrecs, recs, n * sizeof(ba_record_t));
  r->nrecs += n;
  return 0;
}

static void segres_drop(segres_t *r) {
  pres_drop(r->r);
  r->r = (pres_t){pb_none(), pb_none()};
  ba_free(r->recs);
  r->recs = NULL;
  r->nrecs = r->cap = 0;
}

/* Plans the segment in c (seg, info, codec set); explain text into ex. */
static int plan_segment(const qnode_t *root, segctx_t *c, sbuf_t *ex, segres_t *res) {
  /* Which IP versions occur (to skip ipver restrictions when pointless). */
  size_t nv;
  if (c->vals_cap < 256) BA_FORWARD(ba_grow((void **)&c->vals, &c->vals_cap, 256, sizeof(uint32_t)));
  if (c->lens_cap < 256) BA_FORWARD(ba_grow((void **)&c->lens, &c->lens_cap, 256, sizeof(uint32_t)));
  BA_FORWARD(ba_segment_index_range(c->seg, BA_ATTR_IPVER, 0, UINT32_MAX, c->vals, c->lens, c->vals_cap, &nv));
  c->has_non_v4 = c->has_non_v6 = 0;
  for (size_t i = 0; i < nv && i < c->vals_cap; i++) {
    if (c->vals[i] != 4) c->has_non_v4 = 1;
    if (c->vals[i] != 6) c->has_non_v6 = 1;
  }
  uint64_t ops0 = c->stats->bitmap_ops;
  c->ex = ex;
  int rc = plan_node(c, root, &res->r);
  c->ex = NULL;
  cache_clear(c);
  if (rc < 0) return rc;
  res->ops = c->stats->bitmap_ops - ops0;
  res->exact = pb_same(res->r.lo, res->r.hi);
  res->ncand = count_pb(res->r.hi, c->info.rows);
  res->nsure = res->exact ? res->ncand : count_pb(res->r.lo, c->info.rows);
  return 0;
}

/* Counts or reads the candidates of a planned segment (takes res->r). */
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
  if (o->explain) {
    explain_line(o, "segment %s: %" PRIu64 " rows, %u blocks", c->info.name, c->info.rows, c->info.nblocks);
    explain_line(o, "  bitmaps: %s", extext ? extext : "");
    explain_line(o, "  candidates: %" PRIu64 " rows (%" PRIu64 " certain, %s), columns 0x%04x", ncand,
                 res->nsure, exact ? "exact: no residual check" : "residual check on the rest", cols);
  }
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
  if (res->have_rows) {
    /* Read ahead by the worker: the same records in the same order. */
    rc = 0;
    for (size_t i = 0; i < res->nrecs && rc == 0; i += 4096)
      rc = run_sink(run, res->recs + i, BA_MIN((size_t)4096, res->nrecs - i));
    st->blocks_read += res->blocks;
    st->rows_damaged += res->damaged;
    segres_drop(res);
    if (rc == QUERY_STOP) {
      *stop = 1;
      return 0;
    }
    return rc;
  }
  rowfeed_t f = {0};
  f.seg = c->seg;
  f.cols = cols;
  f.block_rows = c->info.block_rows;
  f.sink = run_sink;
  f.sink_ctx = run;
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
    int rc = ba_segment_scan(c->seg, o->out_cols | q->cols | BA_COL_FIRST, run_sink, run, &dmg);
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

static void segctx_free(segctx_t *c) {
  cache_clear(c);
  ba_free(c->cache);
  ba_free(c->vals);
  ba_free(c->lens);
  addrs_free(c);
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
} par_t;

/* Most candidate rows a worker reads ahead for one segment, and how many
 * segments it may run ahead of delivery while doing so (bounds memory). */
#define PREFETCH_MAX_ROWS (1u << 18)
#define PREFETCH_AHEAD 2

/* 1 if the segment cannot hold rows of the window. */
static int seg_pruned(const ba_segment_info_t *in, uint64_t ws, uint64_t we) {
  return in->rows == 0 || in->end_ns <= ws || in->start_ns >= we || in->max_first_ns < ws || in->min_first_ns >= we;
}

/* Plans segment i of the caller's store on store st (the caller's or the
 * worker's handle). A pruned segment gets an empty plan. */
static int par_plan(par_t *p, ba_store_t *st, size_t i, segctx_t *c, segres_t *res) {
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
  if (rc == 0 && st != p->ms && p->prefetch && res->r.hi.kind == PB_BM && res->ncand > 0 &&
      res->ncand <= PREFETCH_MAX_ROWS && !(p->wo.count_only && res->exact)) {
    /* Read the candidates here too (the caller's thread only delivers). */
    rowfeed_t f = {0};
    f.seg = seg;
    f.cols = p->cols | (res->exact ? 0 : p->qcols | BA_COL_FIRST);
    f.block_rows = c->info.block_rows;
    f.sink = buffer_sink;
    f.sink_ctx = res;
    rc = ba_bitmap_foreach(res->r.hi.o->bm, feed_rows, &f);
    if (rc == 0) rc = feed_flush(&f, f.n);
    ba_free(f.rows);
    res->blocks = f.blocks;
    res->damaged = f.damaged;
    if (rc == 0) res->have_rows = 1;
    else segres_drop(res);
  }
  ba_segment_release(seg);
  return rc;
}

static void *par_worker(void *arg) {
  par_t *p = arg;
  ba_store_t *st = NULL;
  int open_rc = ba_store_reopen(p->ms, &st);
  segctx_t c = {0};
  ba_query_stats_t wst = {0};
  c.opts = &p->wo;
  c.stats = &wst;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->prefetch && !p->quit && p->next < p->nseg && p->next > p->delivered + PREFETCH_AHEAD)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->quit || p->next >= p->nseg) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    size_t i = p->next++;
    p->slots[i].state = 1;
    pthread_mutex_unlock(&p->mu);
    segres_t res = {0};
    int rc = open_rc < 0 ? open_rc : par_plan(p, st, i, &c, &res);
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

/* Waits until segment i is planned, planning others (or i) meanwhile. */
static void par_wait(par_t *p, size_t i, segctx_t *c) {
  pthread_mutex_lock(&p->mu);
  p->delivered = i; /* segments before i are done: the worker may read ahead */
  pthread_cond_broadcast(&p->cv);
  while (p->slots[i].state != 2) {
    if (p->next < p->nseg) {
      size_t j = p->next++;
      p->slots[j].state = 1;
      pthread_mutex_unlock(&p->mu);
      segres_t res = {0};
      ba_query_stats_t *keep = c->stats, scratch = {0};
      c->stats = &scratch; /* the plan's operations are counted at delivery (res.ops) */
      int rc = par_plan(p, p->ms, j, c, &res);
      c->stats = keep;
      pthread_mutex_lock(&p->mu);
      p->slots[j].rc = rc;
      p->slots[j].res = res;
      p->slots[j].state = 2;
      continue;
    }
    pthread_cond_wait(&p->cv, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
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
  /* Two threads plan segments ahead when the plan is not printed (explain
   * lines come in segment order) and no range-OR device is plugged in. */
  par_t par;
  int parallel = o.threads >= 2 && nseg >= 2 && !o.force_scan && !o.explain && !o.range_or;
  pthread_t worker;
  if (parallel) {
    memset(&par, 0, sizeof(par));
    par.nseg = nseg;
    par.ms = s;
    par.root = root;
    par.wo = o;
    par.wo.threads = 1;
    par.ws = ws;
    par.we = we;
    par.cols = o.out_cols;
    par.qcols = q->cols;
    par.prefetch = !(o.out_cols & BA_COL_FRAME) && !(q->cols & BA_COL_FRAME);
    par.slots = ba_calloc(nseg, sizeof(pslot_t));
    if (!par.slots) return BA_ERR_NOMEM;
    pthread_mutex_init(&par.mu, NULL);
    pthread_cond_init(&par.cv, NULL);
    if (pthread_create(&worker, NULL, par_worker, &par) != 0) {
      pthread_mutex_destroy(&par.mu);
      pthread_cond_destroy(&par.cv);
      ba_free(par.slots);
      parallel = 0;
    }
  }
  /* The caller's thread plans with threads = 1 too when the worker runs. */
  ba_query_exec_opts_t po = o;
  if (parallel) po.threads = 1;
  c.opts = &po;
  for (size_t i = 0; i < nseg && !stop; i++) {
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
      c.opts = &po;
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
    ba_segment_release(c.seg); /* its directory and buffers: the next segment reuses the memory */
    if (rc != 0) break;
  }
  if (parallel) {
    pthread_mutex_lock(&par.mu);
    par.quit = 1;
    pthread_cond_broadcast(&par.cv);
    pthread_mutex_unlock(&par.mu);
    pthread_join(worker, NULL);
    /* Plans of segments not delivered (stopped early, or pruned). */
    for (size_t i = 0; i < nseg; i++)
      if (par.slots[i].state == 2 && par.slots[i].rc == 0) segres_drop(&par.slots[i].res);
    pthread_mutex_destroy(&par.mu);
    pthread_cond_destroy(&par.cv);
    ba_free(par.slots);
  }
  segctx_free(&c);
  ba_free(run.batch);
  return rc;
}
