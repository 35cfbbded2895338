/* Aggregation (-A, -a, -b, -B), top-N statistics (-s) and record ordering
 * (-O): a hash table keyed by the chosen fields (serialized into a compact
 * byte key), counters per group, sorted on demand. Field names, pair
 * elements and orders follow nfdump 1.7.1 (nfstat.c, nflowcache.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "query/agg_int.h"
#include "query/format_int.h"

#define F(name, title, bit, fld, fld2, kind, cols) \
  {name, title, bit, offsetof(ba_record_t, fld), sizeof(((ba_record_t *)0)->fld), offsetof(ba_record_t, fld2), kind, \
   cols}
static const afield_t g_f[] = {
  F("srcip", "Src IP Addr", BA_AGG_SRCIP, src, src, 1, BA_COL_SRC),
  F("dstip", "Dst IP Addr", BA_AGG_DSTIP, dst, dst, 1, BA_COL_DST),
  F("ip", "IP Addr", BA_AGG_IP, src, dst, 1, BA_COL_SRC | BA_COL_DST),
  F("srcport", "Src Port", BA_AGG_SRCPORT, src_port, src_port, 0, BA_COL_PORTS),
  F("dstport", "Dst Port", BA_AGG_DSTPORT, dst_port, dst_port, 0, BA_COL_PORTS),
  F("port", "Port", BA_AGG_PORT, src_port, dst_port, 0, BA_COL_PORTS),
  F("proto", "Protocol", BA_AGG_PROTO, proto, proto, 0, BA_COL_PROTO),
  F("srcas", "Src AS", BA_AGG_SRCAS, src_as, src_as, 0, BA_COL_AS),
  F("dstas", "Dst AS", BA_AGG_DSTAS, dst_as, dst_as, 0, BA_COL_AS),
  F("as", "AS", BA_AGG_AS, src_as, dst_as, 0, BA_COL_AS),
  F("inif", "Input If", BA_AGG_INIF, in_if, in_if, 0, BA_COL_IF),
  F("outif", "Output If", BA_AGG_OUTIF, out_if, out_if, 0, BA_COL_IF),
  F("if", "In/Out If", BA_AGG_IF, in_if, out_if, 0, BA_COL_IF),
  F("tos", "Tos", BA_AGG_TOS, tos, tos, 0, BA_COL_TOS),
  F("srctos", "Tos", BA_AGG_TOS, tos, tos, 0, BA_COL_TOS),
  F("dsttos", "Dst Tos", BA_AGG_DSTTOS, dst_tos, dst_tos, 0, BA_COL_DSTTOS),
  F("srcvlan", "Src Vlan", BA_AGG_SRCVLAN, vlan, vlan, 0, BA_COL_VLAN),
  F("dstvlan", "Dst Vlan", BA_AGG_DSTVLAN, dst_vlan, dst_vlan, 0, BA_COL_DSTTOS),
  F("vlan", "Vlan", BA_AGG_VLAN, vlan, dst_vlan, 0, BA_COL_VLAN | BA_COL_DSTTOS),
  F("srcmask", "Src Mask", BA_AGG_SRCMASK, src_mask, src_mask, 0, BA_COL_MASK),
  F("dstmask", "Dst Mask", BA_AGG_DSTMASK, dst_mask, dst_mask, 0, BA_COL_MASK),
  F("mask", "Mask", BA_AGG_MASK, src_mask, dst_mask, 0, BA_COL_MASK),
  F("router", "Router IP", BA_AGG_ROUTER, exporter, exporter, 1, BA_COL_EXPORTER),
  F("nhip", "Nexthop IP", BA_AGG_NEXTHOP, next_hop, next_hop, 1, BA_COL_NEXTHOP),
  F("nhbip", "Nexthop BGP IP", BA_AGG_BGPNEXTHOP, bgp_next_hop, bgp_next_hop, 1, BA_COL_NEXTHOP),
  F("dir", "Dir", BA_AGG_DIR, direction, direction, 0, BA_COL_ENGINE),
  F("prevas", "Prev AS", BA_AGG_PREVAS, prev_as, prev_as, 0, BA_COL_BGPAS),
  F("nextas", "Next AS", BA_AGG_NEXTAS, next_as, next_as, 0, BA_COL_BGPAS),
  F("odid", "obs domainID", BA_AGG_ODID, obs_domain, obs_domain, 0, BA_COL_ENGINE),
};
#undef F
static const afield_t *find_field(const char *s, size_t l) {
  if (l == 4 && !strncmp(s, "next", 4)) return find_field("nhip", 4); /* nfdump -A's names */
  if (l == 7 && !strncmp(s, "bgpnext", 7)) return find_field("nhbip", 5);
  for (size_t i = 0; i < BA_ARRAY_LEN(g_f); i++)
    if (strlen(g_f[i].name) == l && !strncmp(g_f[i].name, s, l)) return &g_f[i];
  return NULL;
}

/* "srcip4/24" / "dstip6/64" / "ip4/16": an address field with a prefix length. */
static int prefix_field(const char *s, size_t l, ba_query_agg_spec_t *o, const afield_t **f) {
  const char *sl = memchr(s, '/', l);
  if (!sl || sl - s < 3 || (sl[-1] != '4' && sl[-1] != '6')) return -1;
  if (!(*f = find_field(s, (size_t)(sl - s - 1))) || (*f)->kind != 1 || (*f)->bit & BA_AGG_ROUTER) return -1;
  unsigned v = 0;
  size_t k = (size_t)(sl - s) + 1;
  if (k >= l) return -1;
  for (; k < l; k++) {
    if (s[k] < '0' || s[k] > '9' || v > 128) return -1;
    v = v * 10 + (unsigned)(s[k] - '0');
  }
  if (sl[-1] == '4' ? v > 32 : v > 128) return -1;
  /* each side keeps its own length (nfdump: srcip4/24,dstip leaves dstip whole) */
  o->split_bits = 1;
  int v4 = sl[-1] == '4';
  if (!((*f)->bit & BA_AGG_DSTIP)) *(v4 ? &o->v4bits : &o->v6bits) = (uint8_t)v;
  if (!((*f)->bit & BA_AGG_SRCIP)) *(v4 ? &o->dst_v4bits : &o->dst_v6bits) = (uint8_t)v;
  return 0;
}

int ba_query_agg_parse(const char *fields, int element, ba_query_agg_spec_t *out, char *err, size_t errcap) {
  BA_RETURN_IF(!fields || !out, BA_ERR_INVALID);
  char dummy[8];
  if (!err || !errcap) {
    err = dummy;
    errcap = sizeof(dummy);
  }
  memset(out, 0, sizeof(*out));
  const char *p = fields;
  size_t nf = 0;
  do {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    const afield_t *f = find_field(p, l);
    if (!f && l == 6 && !strncmp(p, "record", 6) && element) {
      out->fields |= BA_AGG_RECORD;
    } else if (!f && prefix_field(p, l, out, &f) < 0) {
      snprintf(err, errcap, "unknown %s '%.*s'", element ? "statistic" : "aggregation field", (int)l, p);
      return BA_ERR_SYNTAX;
    }
    if (f) out->fields |= f->bit;
    nf++;
    p = e ? e + 1 : NULL;
  } while (p);
  if (element && nf != 1) {
    snprintf(err, errcap, "one statistic per -s (give -s several times): '%s'", fields);
    return BA_ERR_SYNTAX;
  }
  if (!element && (out->fields & PAIRS)) {
    snprintf(err, errcap, "ip, port, as, if, vlan and mask are -s statistics; -A takes src.../dst... fields");
    return BA_ERR_SYNTAX;
  }
  return 0;
}

int ba_query_agg_order(const char *name, ba_agg_order_t *out) {
  for (int i = 0; i <= BA_ORDER_TEND; i++)
    if (!strcmp(name, ba_query_agg_order_name((ba_agg_order_t)i))) {
      *out = (ba_agg_order_t)i;
      return 0;
    }
  return BA_ERR_SYNTAX;
}

const char *ba_query_agg_order_name(ba_agg_order_t o) {
  static const char *const n[] = {"flows", "packets", "bytes", "pps", "bps", "bpp", "tstart", "tend"};
  return (unsigned)o <= BA_ORDER_TEND ? n[o] : "?";
}

uint32_t ba_query_agg_columns(const ba_query_agg_t *a) {
  /* the counters, times and flags of add_to; META (kind, ipver) is always read */
  uint32_t c = BA_COL_FIRST | BA_COL_LAST | BA_COL_PACKETS | BA_COL_BYTES | BA_COL_OUT | BA_COL_FLAGS | BA_COL_MISC;
  if (!a) return BA_COL_ALL & ~(uint32_t)BA_COL_FRAME;
  if (a->no_flags) c &= ~(uint32_t)BA_COL_FLAGS;
  for (size_t i = 0; i < a->nf; i++) c |= a->fl[i]->cols;
  return c;
}

const char *ba_query_agg_title(uint32_t field) {
  for (size_t i = 0; i < BA_ARRAY_LEN(g_f); i++)
    if (g_f[i].bit & field) return g_f[i].title;
  return "";
}

size_t ba_query_agg_value(uint32_t field, const ba_record_t *key, unsigned fmt_flags, int full_v6, char *buf,
                          size_t cap) {
  char t[48];
  size_t l = 0;
  (void)fmt_flags;
  const afield_t *f = NULL;
  for (size_t i = 0; i < BA_ARRAY_LEN(g_f) && !f; i++)
    if (g_f[i].bit & field) f = &g_f[i];
  if (!f || cap == 0) return 0;
  const uint8_t *p = (const uint8_t *)key + f->off;
  if (f->kind == 1) {
    l = fmt_addr(p, (f->bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP)) ? key->ipver : 0, full_v6, t);
  } else {
    uint64_t v = 0;
    memcpy(&v, p, f->size); /* little-endian hosts: the low bytes */
    char tmp[24];
    char *q = fmt_u64(v, tmp);
    l = (size_t)(tmp + 24 - q);
    memcpy(t, q, l);
  }
  if (l >= cap) l = cap - 1;
  memcpy(buf, t, l);
  buf[l] = 0;
  return l;
}

static uint64_t load_be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

static uint64_t bswap_u64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 8; i++, v >>= 8) r = r << 8 | (v & 0xFF);
  return r;
}

size_t ba_query_agg_pipe_value(uint32_t field, const ba_record_t *key, int *af, char *buf, size_t cap) {
  const afield_t *f = NULL;
  for (size_t i = 0; i < BA_ARRAY_LEN(g_f) && !f; i++)
    if (g_f[i].bit & field) f = &g_f[i];
  *af = 0;
  if (!f || cap == 0) return 0;
  const uint8_t *p = (const uint8_t *)key + f->off;
  int n;
  if (f->kind == 1) {
    /* nfdump keys an address as two host-order words (hi, lo; IPv4 in lo)
     * and prints IPv6 after htonll: the words' bytes swapped */
    int v4 = fmt_addr_is_v4(p, (f->bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP)) ? key->ipver : 0);
    uint64_t hi = v4 ? 0 : load_be64(p), lo = v4 ? ba_addr_get_v4(p) : load_be64(p + 8);
    uint64_t k0 = hi, k1 = lo;
    if (hi) {
      k0 = bswap_u64(hi);
      k1 = bswap_u64(lo);
    }
    *af = hi ? 10 : 2;
    n = snprintf(buf, cap, "%u|%u|%u|%u", (unsigned)(k0 >> 32), (unsigned)k0, (unsigned)(k1 >> 32), (unsigned)k1);
  } else {
    uint64_t v = 0;
    memcpy(&v, p, f->size); /* little-endian hosts: the low bytes */
    n = snprintf(buf, cap, "%llu", (unsigned long long)v);
  }
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

int ba_query_agg_create(const ba_query_agg_spec_t *spec, ba_query_agg_t **out) {
  BA_RETURN_IF(!out || !spec || !spec->fields, BA_ERR_INVALID);
  ba_query_agg_t *a = ba_calloc(1, sizeof(*a));
  BA_RETURN_IF(!a, BA_ERR_NOMEM);
  a->spec = *spec;
  uint32_t fields = spec->fields & BA_AGG_RECORD ? (spec->fields & ~(uint32_t)BA_AGG_RECORD) | FIVE : spec->fields;
  if (spec->bidir) fields |= FIVE;
  if (spec->proto_split) fields |= BA_AGG_PROTO;
  for (size_t i = 0; i < BA_ARRAY_LEN(g_f); i++)
    if ((g_f[i].bit & fields) && strcmp(g_f[i].name, "srctos")) {
      a->fl[a->nf++] = &g_f[i];
      a->klen += g_f[i].size;
      if (g_f[i].kind == 1 && (g_f[i].bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP))) a->keyver = 1;
    }
  a->klen += 1; /* ipver */
  if (agg_plan_fields(a) < 0) {
    ba_free(a);
    return BA_ERR_INVALID;
  }
  a->nslots = 1024;
  a->slots = ba_calloc(a->nslots, sizeof *a->slots);
  if (!a->slots) {
    ba_free(a);
    return BA_ERR_NOMEM;
  }
  a->sorted_by = -1;
  *out = a;
  return 0;
}

void ba_query_agg_free(ba_query_agg_t *a) {
  if (!a) return;
  ba_free(a->g);
  ba_free(a->rows);
  ba_free(a->perm);
  ba_free(a->keys);
  ba_free(a->slots);
  ba_free(a->ghash);
  ba_free(a->kbuf);
  ba_free(a->hbuf);
  ba_free(a);
}

/* Group i as a result row: its key fields and counters in a record. */
static void group_row(const ba_query_agg_t *a, size_t i, ba_query_agg_row_t *row) {
  const grp_t *g = &a->g[i];
  const uint8_t *kb = a->keys + i * a->klen;
  memset(row, 0, sizeof(*row));
  size_t o = 0;
  for (size_t j = 0; j < a->nf; j++) {
    memcpy((uint8_t *)&row->key + a->fl[j]->off, kb + o, a->fl[j]->size);
    o += a->fl[j]->size;
  }
  row->key.ipver = kb[o];
  row->key.kind = g->kind;
  row->key.first_ns = g->first_ns;
  row->key.last_ns = g->last_ns;
  row->key.out_packets = g->out_packets;
  row->key.out_bytes = g->out_bytes;
  row->key.tcp_flags = g->tcp_flags;
  row->flows = g->flows;
  row->packets = g->packets;
  row->bytes = g->bytes;
}

static uint64_t dur(const ba_record_t *k) { return fmt_dur_ms(k); }

/* The value an order sorts by (descending), for a group or a record. */
static uint64_t order_value(ba_agg_order_t o, uint64_t flows, uint64_t pk, uint64_t by, const ba_record_t *k) {
  uint64_t d;
  switch (o) {
    case BA_ORDER_PACKETS: return pk;
    case BA_ORDER_BYTES: return by;
    case BA_ORDER_PPS: d = dur(k); return d ? pk * 1000 / d : 0;
    case BA_ORDER_BPS: d = dur(k); return d ? by * 8000 / d : 0;
    case BA_ORDER_BPP: return pk ? by / pk : 0;
    case BA_ORDER_TSTART: return UINT64_MAX - k->first_ns;
    case BA_ORDER_TEND: return UINT64_MAX - k->last_ns;
    default: return flows;
  }
}

typedef struct sctx {
  const ba_query_agg_t *a;
  ba_agg_order_t order;
} sctx_t;

/* The result order of groups i and j: the order's value descending, ties by
 * the key fields' bytes, then by the current group order (a stable sort). */
static int grp_cmp(const sctx_t *c, uint32_t i, uint32_t j) {
  const ba_query_agg_t *a = c->a;
  const grp_t *x = &a->g[i], *y = &a->g[j];
  ba_record_t kx, ky; /* the fields order_value reads */
  kx.first_ns = x->first_ns;
  kx.last_ns = x->last_ns;
  ky.first_ns = y->first_ns;
  ky.last_ns = y->last_ns;
  int io = a->spec.inout; /* 0 in, 1 both directions, 2 out (nfdump's i/o orders) */
  uint64_t u = order_value(c->order, x->flows, (io != 2 ? x->packets : 0) + (io ? x->out_packets : 0),
                           (io != 2 ? x->bytes : 0) + (io ? x->out_bytes : 0), &kx);
  uint64_t v = order_value(c->order, y->flows, (io != 2 ? y->packets : 0) + (io ? y->out_packets : 0),
                           (io != 2 ? y->bytes : 0) + (io ? y->out_bytes : 0), &ky);
  if (u != v) return u > v ? -1 : 1;
  /* ties: by the grouped values, ascending (numbers as numbers, addresses
   * by their bytes), so the top-N cut is the same for any input order */
  const uint8_t *kbx = a->keys + (size_t)i * a->klen, *kby = a->keys + (size_t)j * a->klen;
  size_t o = 0;
  for (size_t f = 0; f < a->nf; f++) {
    const afield_t *fl = a->fl[f];
    if (fl->kind == 1) {
      int r = memcmp(kbx + o, kby + o, fl->size);
      if (r) return r;
    } else {
      uint64_t vx = 0, vy = 0;
      memcpy(&vx, kbx + o, fl->size); /* little-endian hosts: the low bytes */
      memcpy(&vy, kby + o, fl->size);
      if (vx != vy) return vx < vy ? -1 : 1;
    }
    o += fl->size;
  }
  if (kbx[o] != kby[o]) return kbx[o] < kby[o] ? -1 : 1; /* the IP version (address keys) */
  return i < j ? -1 : i > j;
}

static int perm_cmp(const void *pa, const void *pb, void *vctx) {
  return grp_cmp(vctx, *(const uint32_t *)pa, *(const uint32_t *)pb);
}

/* Result rows for groups perm[0..k) in a->rows. */
static int make_rows(ba_query_agg_t *a, const uint32_t *perm, size_t k) {
  if (k > a->rcap) BA_FORWARD(ba_grow((void **)&a->rows, &a->rcap, k, sizeof(ba_query_agg_row_t)));
  for (size_t i = 0; i < k; i++) group_row(a, perm[i], &a->rows[i]);
  return 0;
}

static int perm_reserve(ba_query_agg_t *a) {
  if (a->n > a->pcap) BA_FORWARD(ba_grow((void **)&a->perm, &a->pcap, a->n, sizeof(uint32_t)));
  return 0;
}

int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n) {
  BA_RETURN_IF(!a || !rows || !n, BA_ERR_INVALID);
  BA_FORWARD(perm_reserve(a));
  if (a->sorted_by != (int)order) {
    /* The groups move into the order: the hash slots are rebuilt on the next add. */
    sctx_t c = {a, order};
    for (size_t i = 0; i < a->n; i++) a->perm[i] = (uint32_t)i;
    if (a->n > 1) qsort_r(a->perm, a->n, sizeof(uint32_t), perm_cmp, &c);
    grp_t *g = agg_alloc_big((a->n ? a->n : 1) * sizeof(*g));
    uint8_t *keys = agg_alloc_big((a->n ? a->n : 1) * a->klen);
    if (!g || !keys) {
      ba_free(g);
      ba_free(keys);
      return BA_ERR_NOMEM;
    }
    for (size_t i = 0; i < a->n; i++) {
      g[i] = a->g[a->perm[i]];
      memcpy(keys + i * a->klen, a->keys + (size_t)a->perm[i] * a->klen, a->klen);
    }
    ba_free(a->g);
    ba_free(a->keys);
    a->g = g;
    a->cap = a->n ? a->n : 1;
    a->keys = keys;
    a->kcap = (a->n ? a->n : 1) * a->klen;
    a->sorted_by = (int)order;
  }
  for (size_t i = 0; i < a->n; i++) a->perm[i] = (uint32_t)i;
  BA_FORWARD(make_rows(a, a->perm, a->n));
  *rows = a->rows;
  *n = a->n;
  return 0;
}

/* Sift-down in a heap whose root is the last in result order. */
static void heap_down(const sctx_t *c, uint32_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && grp_cmp(c, h[l], h[m]) > 0) m = l;
    if (l + 1 < n && grp_cmp(c, h[l + 1], h[m]) > 0) m = l + 1;
    if (m == i) return;
    uint32_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

int ba_query_agg_top(ba_query_agg_t *a, ba_agg_order_t order, size_t k, const ba_query_agg_row_t **rows,
                     size_t *n) {
  BA_RETURN_IF(!a || !rows || !n, BA_ERR_INVALID);
  if (k == 0 || k >= a->n || a->sorted_by == (int)order) {
    BA_FORWARD(ba_query_agg_result(a, order, rows, n));
    if (k && k < *n) *n = k;
    return 0;
  }
  BA_FORWARD(perm_reserve(a));
  sctx_t c = {a, order};
  uint32_t *h = a->perm;
  for (size_t i = 0; i < k; i++) h[i] = (uint32_t)i;
  for (size_t i = k / 2; i-- > 0;) heap_down(&c, h, k, i);
  for (size_t i = k; i < a->n; i++)
    if (grp_cmp(&c, (uint32_t)i, h[0]) < 0) {
      h[0] = (uint32_t)i;
      heap_down(&c, h, k, 0);
    }
  if (k > 1) qsort_r(h, k, sizeof(uint32_t), perm_cmp, &c);
  BA_FORWARD(make_rows(a, h, k));
  *rows = a->rows;
  *n = k;
  return 0;
}

static int rec_cmp(const void *pa, const void *pb, void *vctx) {
  const ba_record_t *x = pa, *y = pb;
  ba_agg_order_t o = *(const ba_agg_order_t *)vctx;
  uint64_t u = order_value(o, 1, x->packets, x->bytes, x), v = order_value(o, 1, y->packets, y->bytes, y);
  if (u != v) return u > v ? -1 : 1;
  return 0;
}

void ba_query_sort_records(ba_record_t *recs, size_t n, ba_agg_order_t order) {
  if (n < 2) return;
  if (n > 1) qsort_r(recs, n, sizeof(*recs), rec_cmp, &order);
}
