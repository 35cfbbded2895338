/* What a filter predicate accepts, as values of index attributes: value
 * ranges (vpred_t), the present values among them from the segment's index
 * directory (select_values), ports folded into bins, their OR as a bitmap
 * set, and the IPv4 address items of an address node merged once per run. */
#include <stdlib.h>
#include <string.h>

#include "query/plan_int.h"

static const char *strategy_tag(ba_range_strategy_t s, size_t k) {
  (void)k;
  return s == BA_RANGE_AUTO ? "" : s == BA_RANGE_REDUCTION ? "-red" : s == BA_RANGE_ITERATIVE ? "-it" : "-bitset";
}

const qrange_t *vp_r(const vpred_t *p) { return p->r ? p->r : p->buf; }

void vp_ranges(vpred_t *p, ba_attr_t attr, const qnode_t *n, int total) {
  p->attr = attr;
  p->total = total;
  p->nr = n->n;
  p->r = n->ranges;
}

void vp_one(vpred_t *p, ba_attr_t attr, uint64_t lo, uint64_t hi) {
  p->attr = attr;
  p->total = 0;
  p->r = NULL;
  p->nr = 0;
  if (lo > hi || lo > UINT32_MAX) return;
  p->buf[0] = (qrange_t){(uint32_t)lo, hi > UINT32_MAX ? UINT32_MAX : (uint32_t)hi};
  p->nr = 1;
}

/* A set of byte values (bit v of the 256-bit set). */
void vp_bytes(vpred_t *p, ba_attr_t attr, const uint64_t set[4], int total) {
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
void vp_flags(vpred_t *p, const qnode_t *n) {
  uint64_t set[4] = {0};
  for (unsigned v = 0; v < 256; v++)
    if (qflags_match(n, v)) set[v >> 6] |= 1ull << (v & 63);
  vp_bytes(p, BA_ATTR_TCP_FLAGS, set, 1);
}
static int fetch_range(segctx_t *c, ba_attr_t attr, uint32_t lo, uint32_t hi, size_t *k) {
  size_t got;
  BA_FORWARD(ba_segment_index_range(c->seg, attr, lo, hi, c->vals + *k, c->lens + *k, c->vals_cap - *k, &got));
  BA_RETURN_IF(got > c->vals_cap - *k, BA_ERR_INVALID);
  *k += got;
  return 0;
}

/* ---------- ports folded into bins (doc/format.md §7.4) ---------- */

/* The bin attribute of a port attribute, or BA_ATTR_COUNT. */
static ba_attr_t bin_attr(ba_attr_t a) {
  return a == BA_ATTR_SRC_PORT ? BA_ATTR_SRC_PORT_BIN : a == BA_ATTR_DST_PORT ? BA_ATTR_DST_PORT_BIN : BA_ATTR_COUNT;
}

static int select_bins(segctx_t *c, const vpred_t *p, binsel_t *b) {
  memset(b, 0, sizeof *b);
  ba_attr_t ba = bin_attr(p->attr);
  if (ba == BA_ATTR_COUNT) return 0;
  uint32_t vals[BA_PORT_NBINS], lens[BA_PORT_NBINS];
  size_t n = 0;
  BA_FORWARD(ba_segment_index_range(c->seg, ba, 0, UINT32_MAX, vals, lens, BA_PORT_NBINS, &n));
  BA_RETURN_IF(n > BA_PORT_NBINS, BA_ERR_CORRUPT);
  const qrange_t *r = vp_r(p);
  /* A port with an exact bitmap has no row in its bin: only the accepted
   * ports without one count. */
  for (size_t j = 0; j < n; j++) {
    uint32_t lo, hi;
    ba_port_bin_range(vals[j], &lo, &hi);
    size_t ex = 0;
    BA_FORWARD(ba_segment_index_range(c->seg, p->attr, lo, hi, NULL, NULL, 0, &ex));
    uint64_t folded = (uint64_t)(hi - lo + 1) - ex, covered = 0;
    for (size_t i = 0; i < p->nr; i++) {
      uint32_t a = r[i].lo > lo ? r[i].lo : lo, z = r[i].hi < hi ? r[i].hi : hi;
      if (a > z) continue;
      size_t exi = 0;
      BA_FORWARD(ba_segment_index_range(c->seg, p->attr, a, z, NULL, NULL, 0, &exi));
      covered += (uint64_t)(z - a + 1) - exi;
    }
    if (covered == folded) {
      b->full_len[b->nfull] = lens[j];
      b->full[b->nfull++] = vals[j];
    } else if (covered) {
      b->part_len[b->npart] = lens[j];
      b->part[b->npart++] = vals[j];
    }
    if (covered) b->bytes += lens[j];
  }
  return 0;
}

/* 1 if the segment folded any value of p's attribute into bins. */
static int has_bins(segctx_t *c, const vpred_t *p) {
  ba_attr_t ba = bin_attr(p->attr);
  size_t n = 0;
  if (ba == BA_ATTR_COUNT || ba_segment_index_range(c->seg, ba, 0, UINT32_MAX, NULL, NULL, 0, &n) < 0) return 0;
  return n > 0;
}

/* OR of the bitmaps of bins vals[0..k). */
static int or_bins(segctx_t *c, ba_attr_t attr, const uint32_t *vals, size_t k, pb_t *out) {
  *out = pb_none();
  for (size_t j = 0; j < k; j++) {
    pb_t b, r;
    BA_FORWARD(pb_index(c, bin_attr(attr), vals[j], &b));
    int rc = pb_or(c, *out, b, &r);
    pb_drop(b);
    pb_drop(*out);
    *out = pb_none();
    BA_FORWARD(rc);
    *out = r;
  }
  return 0;
}

int select_values(segctx_t *c, const vpred_t *p, vsel_t *s) {
  const qrange_t *r = vp_r(p);
  BA_FORWARD(ba_segment_index_range(c->seg, p->attr, 0, UINT32_MAX, NULL, NULL, 0, &s->n));
  s->nacc = 0;
  for (size_t i = 0; i < p->nr; i++) {
    size_t m;
    BA_FORWARD(ba_segment_index_range(c->seg, p->attr, r[i].lo, r[i].hi, NULL, NULL, 0, &m));
    s->nacc += m;
  }
  /* With folded values, "every present value" is not "every row", and the
   * complement of the other exact values would take in every folded row. */
  int bins = has_bins(c, p);
  s->use_compl = p->total && s->nacc > s->n / 2 + 1 && !bins;
  s->k = s->use_compl ? s->n - s->nacc : s->nacc;
  if (s->nacc == 0 || (p->total && s->nacc == s->n && !bins)) {
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

/* select_values plus the bins of a folded port attribute: the estimate of
 * exact values and overlapping bins together. */
int select_values_bins(segctx_t *c, const vpred_t *p, vsel_t *s, binsel_t *b, est_t *e) {
  BA_FORWARD(select_values(c, p, s));
  BA_FORWARD(select_bins(c, p, b));
  *e = s->est;
  if (b->nfull + b->npart == 0) return 0;
  if (e->hi != ES_ALL) e->hi = ES_SOME;
  if (b->nfull && e->lo == ES_NONE) e->lo = ES_SOME;
  e->bytes += b->bytes;
  return 0;
}

/* OR of the bitmaps of every present value the predicate accepts, as
 * select_values chose them (sel, c->vals). */
int or_selected(segctx_t *c, const vpred_t *p, vsel_t sel, pb_t *out) {
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

int or_values(segctx_t *c, const vpred_t *p, pb_t *out) {
  vsel_t sel;
  BA_FORWARD(select_values(c, p, &sel));
  return or_selected(c, p, sel, out);
}

/* The rows whose value p accepts as bounds: the OR of the accepted exact
 * values; for a port attribute with bins, the bins fully inside p join the
 * exact part (lo) and the partly covered ones only hi (their rows are
 * checked against the column). sel: from select_values. */
int values_pres_sel(segctx_t *c, const vpred_t *p, vsel_t sel, const binsel_t *b, pres_t *out) {
  pb_t ex;
  BA_FORWARD(or_selected(c, p, sel, &ex));
  if (b->nfull + b->npart == 0) {
    *out = pres_exact(ex);
    return 0;
  }
  if (c->ex) sb_add(c->ex, "+bins:%zu full %zu part", b->nfull, b->npart);
  pb_t full, part, lo, hi;
  int rc = or_bins(c, p->attr, b->full, b->nfull, &full);
  if (rc < 0) {
    pb_drop(ex);
    return rc;
  }
  rc = pb_or(c, ex, full, &lo);
  pb_drop(ex);
  pb_drop(full);
  BA_FORWARD(rc);
  if ((rc = or_bins(c, p->attr, b->part, b->npart, &part)) < 0) {
    pb_drop(lo);
    return rc;
  }
  rc = pb_or(c, lo, part, &hi);
  pb_drop(part);
  if (rc < 0) {
    pb_drop(lo);
    return rc;
  }
  *out = (pres_t){lo, hi};
  return 0;
}

int values_pres(segctx_t *c, const vpred_t *p, pres_t *out) {
  vsel_t sel;
  binsel_t b;
  est_t e;
  BA_FORWARD(select_values_bins(c, p, &sel, &b, &e));
  return values_pres_sel(c, p, sel, &b, out);
}


/* Rows of one IP version (exact via the IPVER index). */
int rows_ipver(segctx_t *c, unsigned ver, pb_t *out) {
  if (ver == 4 && !c->has_non_v4) { *out = pb_all(); return 0; }
  if (ver == 6 && !c->has_non_v6) { *out = pb_all(); return 0; }
  return pb_index(c, BA_ATTR_IPVER, ver, out);
}

int v6_covers_v4(const qaddr_t *a) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a->plen > 96) return 0;
  for (unsigned b = 0; b < a->plen; b++)
    if (((a->a6[b / 8] ^ mapped[b / 8]) >> (7 - b % 8)) & 1) return 0;
  return 1;
}

int octet_full(const qaddr_t *a, int i) {
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

int addr_items(segctx_t *c, const qnode_t *n, const qaddr_t **items, size_t *cnt) {
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

void addrs_free(segctx_t *c) {
  for (size_t i = 0; i < c->naddrs; i++) ba_free(c->addrs[i].items);
  ba_free(c->addrs);
  c->addrs = NULL;
  c->naddrs = c->addrs_cap = 0;
}

