/* Planner and executor: per segment, the filter tree becomes bitmap algebra
 * over the segment's indexes. Every node yields two bitmaps lo <= truth <= hi:
 * indexed predicates are exact (lo = hi), the others give lo = none and a
 * superset hi (all rows, or the rows of one IP version). AND/OR combine both
 * bounds; NOT swaps them (lo' = ~hi, hi' = ~lo). Rows in hi are read with the
 * columns the output needs, plus the filter's columns when lo != hi, and the
 * residual evaluator decides those (NET-FLi 4.3: index, then selective block
 * decompression). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

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
  return values_pres(c, &t->vp, x);
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
  uint32_t vals[EACH_MAX], lens[EACH_MAX];
  memcpy(vals, c->vals, sel.k * sizeof(*vals));
  memcpy(lens, c->lens, sel.k * sizeof(*lens));
  if (c->ex) {
    sb_add(c->ex, "each(%s:", ba_attr_name(p->attr));
    for (size_t j = 0; j < sel.k; j++) sb_add(c->ex, "%s%u", j ? "|" : "", vals[j]);
    sb_add(c->ex, ")");
  }
  ba_bitmap_t *parts[EACH_MAX];
  size_t m = 0;
  int rc = 0;
  pb_t own[EACH_MAX];
  for (size_t j = 0; j < sel.k && rc == 0; j++) {
    rc = pb_and_index(c, acc->hi, p->attr, vals[j], lens[j] >= dense_bytes(c), &own[m]);
    if (rc == 0 && own[m].kind != PB_BM) {
      pb_drop(own[m]);
      rc = BA_ERR_INVALID; /* an AND of two bitmaps is a bitmap */
    }
    if (rc == 0) parts[m] = own[m].o->bm, m++;
  }
  ba_bitmap_t *r = NULL;
  if (rc == 0) rc = ba_bitmap_or_many((const ba_bitmap_t *const *)parts, m, c->codec, &r);
  for (size_t j = 0; j < m; j++) pb_drop(own[j]);
  if (rc < 0) return rc;
  c->stats->bitmap_ops += m - 1; /* and one per AND (pb_and_index) */
  pb_t out;
  BA_FORWARD(pb_wrap(r, &out));
  pres_drop(*acc);
  *acc = pres_exact(out);
  return pres_prune(acc);
}

/* acc AND the one value a term selects (sel, c->vals), when acc is an exact
 * bitmap and the value's bitmap is dense: combined as it is read
 * (pb_and_index), where loading it would build the whole bitmap first. The
 * same result, explain text and operation count as or_selected then
 * and_step. 1 = does not apply (acc is untouched). */
static int and_value_direct(segctx_t *c, pres_t *acc, const vpred_t *p, vsel_t sel) {
  if (acc->hi.kind != PB_BM || !pb_same(acc->lo, acc->hi)) return 1;
  if (sel.est.hi != ES_SOME || sel.use_compl || sel.k != 1 || c->lens[0] < dense_bytes(c)) return 1;
  uint32_t v = c->vals[0];
  if (c->ex) sb_add(c->ex, "%s:%u", ba_attr_name(p->attr), v);
  pb_t out;
  BA_FORWARD(pb_and_index(c, acc->hi, p->attr, v, 1, &out));
  pres_drop(*acc);
  *acc = pres_exact(out);
  return pres_prune(acc);
}

/* The last operand of a count-only AND chain (c->count_root), one value:
 * acc AND it counted where it is read, no bitmap built; acc becomes none and
 * c->count the rows. 1 = does not apply (acc is untouched). */
static int and_value_count(segctx_t *c, pres_t *acc, const term_t *t) {
  if (t->node || acc->hi.kind != PB_BM || !pb_same(acc->lo, acc->hi)) return 1;
  vsel_t sel;
  binsel_t b;
  est_t e;
  BA_FORWARD(select_values_bins(c, &t->vp, &sel, &b, &e));
  if (b.nfull + b.npart || sel.est.hi != ES_SOME || sel.use_compl || sel.k != 1) return 1;
  BA_FORWARD(pb_and_index_count(c, acc->hi.o->bm, t->vp.attr, c->vals[0], &c->count));
  c->counted = 1;
  pres_drop(*acc);
  *acc = pres_exact(pb_none());
  return 0;
}

/* The last operands of a count-only AND chain, from t[0] on, all dense
 * single values (two or more): acc AND all of them counted in one pass where
 * they are read (ba_segment_index_and_count_all), no bitmap in between;
 * acc becomes none and c->count the rows. 1 = does not apply. */
static int and_values_count_all(segctx_t *c, pres_t *acc, const term_t *t, size_t m) {
  ba_attr_t attrs[8];
  uint32_t vals[8];
  if (m < 2 || m > 8 || t->node || acc->hi.kind != PB_BM || !pb_same(acc->lo, acc->hi)) return 1;
  for (size_t j = 0; j < m; j++) {
    vsel_t sel;
    binsel_t b;
    est_t e;
    if (t[j].node) return 1;
    BA_FORWARD(select_values_bins(c, &t[j].vp, &sel, &b, &e));
    if (b.nfull + b.npart || sel.est.hi != ES_SOME || sel.use_compl || sel.k != 1 || c->lens[0] < dense_bytes(c))
      return 1;
    attrs[j] = t[j].vp.attr;
    vals[j] = c->vals[0];
  }
  int rc = ba_segment_index_and_count_all(c->seg, attrs, vals, m, acc->hi.o->bm, &c->count);
  if (rc != 0) return rc;
  c->stats->bitmap_ops += m;
  c->counted = 1;
  pres_drop(*acc);
  *acc = pres_exact(pb_none());
  return 0;
}

/* 1 when t is one dense value that and_value_direct would combine with acc
 * (then its place in the chain does not matter much: no by-rows order). */
static int term_direct(segctx_t *c, const pres_t *acc, const term_t *t) {
  if (t->node || acc->hi.kind != PB_BM || !pb_same(acc->lo, acc->hi)) return 0;
  vsel_t sel;
  binsel_t b;
  est_t e;
  if (select_values_bins(c, &t->vp, &sel, &b, &e) < 0) return 0;
  return b.nfull + b.npart == 0 && sel.est.hi == ES_SOME && !sel.use_compl && sel.k == 1 &&
         c->lens[0] >= dense_bytes(c);
}

/* acc AND one operand of a flattened AND chain. */
static int and_term(segctx_t *c, pres_t *acc, const term_t *t) {
  pres_t x;
  if (t->node) {
    BA_FORWARD(plan_node(c, t->node, &x));
  } else { /* the values are selected once, for either way */
    vsel_t sel;
    binsel_t b;
    est_t e;
    BA_FORWARD(select_values_bins(c, &t->vp, &sel, &b, &e));
    if (b.nfull + b.npart == 0) {
      int rc = and_values_each(c, acc, &t->vp, sel);
      if (rc <= 0) return rc;
      if ((rc = and_value_direct(c, acc, &t->vp, sel)) <= 0) return rc;
    }
    BA_FORWARD(values_pres_sel(c, &t->vp, sel, &b, &x));
  }
  return and_step(c, acc, x);
}

/* The index bitmaps an AND chain of single values will read (the octets of
 * an address, a port and a protocol...), asked of the disk together once
 * every operand is estimated (none empty) and before the first is read: from
 * a cold page cache they were one read after another. A hint only: records
 * of a chain that stops early (an empty result) are read in vain, so only
 * small sets are hinted; on a warm cache a one-byte RWF_NOWAIT read of each
 * finds it. */
#define HINT_MAX 16
#define HINT_VALUES 4             /* values of one operand */
#define HINT_BYTES (1u << 20)     /* one record */
typedef struct hintset {
  ba_attr_t attr[HINT_MAX];
  uint32_t value[HINT_MAX];
  size_t n;
} hintset_t;

static void hint_add(segctx_t *c, hintset_t *h, ba_attr_t attr, vsel_t s, binsel_t b) {
  if (s.est.hi != ES_SOME || s.use_compl || b.nfull + b.npart || s.k == 0 || s.k > HINT_VALUES) return;
  for (size_t j = 0; j < s.k && h->n < HINT_MAX; j++) {
    if (c->lens[j] > HINT_BYTES) continue;
    h->attr[h->n] = attr;
    h->value[h->n++] = c->vals[j];
  }
}

static void hint_issue(segctx_t *c, const hintset_t *h) {
  /* errors are the reads' to report, with the segment named */
  if (h->n >= 2) (void)ba_segment_index_prefetch(c->seg, h->attr, h->value, h->n, HINT_BYTES, NULL);
}

/* AND of many operands. Each is estimated from the directory first: an empty
 * one answers the AND without loading anything. The others are combined
 * from the smallest up, stopping as soon as the result is empty; once only
 * dense operands are left and the result so far is dense too (sizes then
 * say nothing about row counts), they are all loaded and combined in the
 * order of their row counts, so the result thins out as early as possible. */
static int and_terms(segctx_t *c, termvec_t *v, int count_last, pres_t *out) {
  int rc = 0, empty = 0;
  hintset_t h = {0};
  for (size_t i = 0; i < v->n && rc == 0 && !empty; i++) {
    term_t *t = &v->t[i];
    if (t->node) {
      rc = est_node(c, t->node, &t->est);
    } else {
      vsel_t s;
      binsel_t b;
      rc = select_values_bins(c, &t->vp, &s, &b, &t->est);
      if (rc == 0) hint_add(c, &h, t->vp.attr, s, b);
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
  hint_issue(c, &h);
  qsort(v->t, v->n, sizeof(term_t), term_cmp);
  uint64_t dense = dense_bytes(c);
  pres_t acc = pres_exact(pb_all());
  ex_open(c, "AND");
  size_t i = 0;
  for (; i < v->n && rc == 0 && acc.hi.kind != PB_NONE; i++) {
    if (v->t[i].key >= 2 + dense && !pb_sparse(c, acc.hi) && !term_direct(c, &acc, &v->t[i])) break;
    if (i) ex_sep(c);
    if (count_last && i + 2 <= v->n && (rc = and_values_count_all(c, &acc, &v->t[i], v->n - i)) <= 0) break;
    if (count_last && i + 1 == v->n && (rc = and_value_count(c, &acc, &v->t[i])) <= 0) continue;
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
  if (rc == 0) rc = and_terms(c, &v, n == c->count_root, out);
  ba_free(v.t);
  return rc;
}

/* One IPv4 pattern on one side: AND over the octets that are not '*'. */
static int plan_v4_item(segctx_t *c, const qaddr_t *a, int dst, int count_last, pb_t *out) {
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
    rc = and_terms(c, &v, count_last, &r);
    if (rc == 0) {
      *out = r.lo; /* exact: lo is hi */
      pb_drop(r.hi);
    }
  }
  ba_free(v.t);
  return rc;
}

/* Candidate rows of one IPv6 pattern on one side (the address column then
 * decides: hashes collide). 3.1 segments index IPv6 addresses (format.md
 * §7.4): a /48 or longer prefix is its V6NET bitmap, a host also ANDed with
 * its V6HOST bitmap; shorter prefixes and older segments take every IPv6
 * row. */
static int plan_v6_item(segctx_t *c, const qaddr_t *a, int dst, pb_t *hi) {
  int v6idx = c->info.version_major > 3 || (c->info.version_major == 3 && c->info.version_minor >= 1);
  if (!v6idx || a->plen < 48) {
    if (c->ex) sb_add(c->ex, "ipver:6+check");
    return rows_ipver(c, 6, hi);
  }
  pb_t net;
  BA_FORWARD(pb_index(c, dst ? BA_ATTR_DST_V6NET : BA_ATTR_SRC_V6NET, ba_v6_hash(a->a6, 6), &net));
  if (a->plen < 128) {
    if (c->ex) sb_add(c->ex, "v6net+check");
    *hi = net;
    return 0;
  }
  pb_t host;
  int rc = pb_index(c, dst ? BA_ATTR_DST_V6HOST : BA_ATTR_SRC_V6HOST, ba_v6_hash(a->a6, 16), &host);
  if (rc == 0) {
    rc = pb_and(c, net, host, hi);
    pb_drop(host);
  }
  pb_drop(net);
  if (rc == 0 && c->ex) sb_add(c->ex, "v6net&v6host+check");
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
        rc = plan_v6_item(c, a, dst, &hi);
        if (rc < 0) break;
      }
      it = (pres_t){pb_none(), hi};
    } else {
      pb_t e;
      rc = plan_v4_item(c, a, dst, n == c->count_root && cnt == 1, &e);
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
  if (t.kind == TP_CHECK || (t.kind == TP_BINS && !c->has_tbin)) {
    /* last seen, or no time bins (oLSH order): the zone maps, else a check */
    int rc = zone_pres(c, n, out);
    if (rc <= 0) return rc;
    t.kind = TP_CHECK;
    t.tag = "check(time)";
  }
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

int plan_node(segctx_t *c, const qnode_t *n, pres_t *out) {
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
      vpred_t p;
      if (n->dir == QD_SRC || n->dir == QD_DST) {
        vp_ranges(&p, n->dir == QD_SRC ? BA_ATTR_SRC_PORT : BA_ATTR_DST_PORT, n, 1);
        return values_pres(c, &p, out);
      }
      ex_open(c, n->dir == QD_BOTH ? "AND" : "OR");
      vp_ranges(&p, BA_ATTR_SRC_PORT, n, 1);
      BA_FORWARD(values_pres(c, &p, &a));
      ex_sep(c);
      vp_ranges(&p, BA_ATTR_DST_PORT, n, 1);
      if ((rc = values_pres(c, &p, &b)) < 0) {
        pres_drop(a);
        return rc;
      }
      ex_close(c);
      rc = combine_dir(c, n->dir, a, b, out);
      pres_drop(a);
      pres_drop(b);
      return rc;
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
      if (n->kind == QN_NUM && (rc = zone_pres(c, n, out)) <= 0) return rc;
      if (c->ex) sb_add(c->ex, "check");
      *out = (pres_t){pb_none(), pb_all()};
      return 0;
  }
  return BA_ERR_INVALID;
}

void segres_drop(segres_t *r) {
  pres_drop(r->r);
  r->r = (pres_t){pb_none(), pb_none()};
  tbuf_free(&r->tb);
}

/* Plans the segment in c (seg, info, codec set); explain text into ex. */
int plan_segment(const qnode_t *root, segctx_t *c, sbuf_t *ex, segres_t *res) {
  /* Which IP versions occur (to skip ipver restrictions when pointless). */
  size_t nv;
  if (c->vals_cap < 256) BA_FORWARD(ba_grow((void **)&c->vals, &c->vals_cap, 256, sizeof(uint32_t)));
  if (c->lens_cap < 256) BA_FORWARD(ba_grow((void **)&c->lens, &c->lens_cap, 256, sizeof(uint32_t)));
  BA_FORWARD(ba_segment_index_range(c->seg, BA_ATTR_IPVER, 0, UINT32_MAX, c->vals, c->lens, c->vals_cap, &nv));
  c->has_non_v4 = c->has_non_v6 = 0;
  size_t ntb = 0;
  BA_FORWARD(ba_segment_index_range(c->seg, BA_ATTR_TIME_BIN, 0, UINT32_MAX, NULL, NULL, 0, &ntb));
  c->has_tbin = ntb > 0;
  for (size_t i = 0; i < nv && i < c->vals_cap; i++) {
    if (c->vals[i] != 4) c->has_non_v4 = 1;
    if (c->vals[i] != 6) c->has_non_v6 = 1;
  }
  uint64_t ops0 = c->stats->bitmap_ops;
  c->ex = ex;
  /* a count of an AND chain needs its rows, not its bitmap */
  int chain = root->kind == QN_AND || (root->kind == QN_ADDR && (root->dir == QD_SRC || root->dir == QD_DST));
  c->count_root = c->opts->count_only && !ex && !c->opts->explain_only && chain ? root : NULL;
  c->counted = 0;
  int rc = plan_node(c, root, &res->r);
  c->ex = NULL;
  c->count_root = NULL;
  cache_clear(c);
  if (rc < 0) return rc;
  res->ops = c->stats->bitmap_ops - ops0;
  res->exact = pb_same(res->r.lo, res->r.hi);
  res->ncand = c->counted ? c->count : count_pb(res->r.hi, c->info.rows);
  res->nsure = res->exact ? res->ncand : count_pb(res->r.lo, c->info.rows);
  return 0;
}

