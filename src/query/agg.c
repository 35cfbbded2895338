/* Aggregation (-A, -a, -b, -B), top-N statistics (-s) and record ordering
 * (-O): a hash table keyed by the chosen fields (serialized into a compact
 * byte key), counters per group, sorted on demand. Field names, pair
 * elements and orders follow nfdump 1.7.1 (nfstat.c, nflowcache.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "query/format_int.h"

typedef struct afield {
  const char *name, *title;
  uint32_t bit;
  uint16_t off, size;  /* the field in ba_record_t */
  uint16_t off2;       /* pair elements: the destination-side field */
  uint8_t kind;        /* 0 number, 1 address, 2 MAC */
} afield_t;

#define F(name, title, bit, fld, fld2, kind) \
  {name, title, bit, offsetof(ba_record_t, fld), sizeof(((ba_record_t *)0)->fld), offsetof(ba_record_t, fld2), kind}
static const afield_t g_f[] = {
  F("srcip", "Src IP Addr", BA_AGG_SRCIP, src, src, 1),
  F("dstip", "Dst IP Addr", BA_AGG_DSTIP, dst, dst, 1),
  F("ip", "IP Addr", BA_AGG_IP, src, dst, 1),
  F("srcport", "Src Port", BA_AGG_SRCPORT, src_port, src_port, 0),
  F("dstport", "Dst Port", BA_AGG_DSTPORT, dst_port, dst_port, 0),
  F("port", "Port", BA_AGG_PORT, src_port, dst_port, 0),
  F("proto", "Protocol", BA_AGG_PROTO, proto, proto, 0),
  F("srcas", "Src AS", BA_AGG_SRCAS, src_as, src_as, 0),
  F("dstas", "Dst AS", BA_AGG_DSTAS, dst_as, dst_as, 0),
  F("as", "AS", BA_AGG_AS, src_as, dst_as, 0),
  F("inif", "Input If", BA_AGG_INIF, in_if, in_if, 0),
  F("outif", "Output If", BA_AGG_OUTIF, out_if, out_if, 0),
  F("if", "In/Out If", BA_AGG_IF, in_if, out_if, 0),
  F("tos", "Tos", BA_AGG_TOS, tos, tos, 0),
  F("srctos", "Tos", BA_AGG_TOS, tos, tos, 0),
  F("dsttos", "Dst Tos", BA_AGG_DSTTOS, dst_tos, dst_tos, 0),
  F("srcvlan", "Src Vlan", BA_AGG_SRCVLAN, vlan, vlan, 0),
  F("dstvlan", "Dst Vlan", BA_AGG_DSTVLAN, dst_vlan, dst_vlan, 0),
  F("vlan", "Vlan", BA_AGG_VLAN, vlan, dst_vlan, 0),
  F("srcmask", "Src Mask", BA_AGG_SRCMASK, src_mask, src_mask, 0),
  F("dstmask", "Dst Mask", BA_AGG_DSTMASK, dst_mask, dst_mask, 0),
  F("mask", "Mask", BA_AGG_MASK, src_mask, dst_mask, 0),
  F("router", "Router IP", BA_AGG_ROUTER, exporter, exporter, 1),
  F("nhip", "Nexthop IP", BA_AGG_NEXTHOP, next_hop, next_hop, 1),
  F("nhbip", "Nexthop BGP IP", BA_AGG_BGPNEXTHOP, bgp_next_hop, bgp_next_hop, 1),
  F("dir", "Dir", BA_AGG_DIR, direction, direction, 0),
  F("prevas", "Prev AS", BA_AGG_PREVAS, prev_as, prev_as, 0),
  F("nextas", "Next AS", BA_AGG_NEXTAS, next_as, next_as, 0),
  F("odid", "obs domainID", BA_AGG_ODID, obs_domain, obs_domain, 0),
};
#undef F
#define PAIRS (BA_AGG_IP | BA_AGG_PORT | BA_AGG_AS | BA_AGG_IF | BA_AGG_VLAN | BA_AGG_MASK)
#define FIVE (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_SRCPORT | BA_AGG_DSTPORT | BA_AGG_PROTO)
#define KEY_MAX 160

struct ba_query_agg {
  ba_query_agg_spec_t spec;
  const afield_t *fl[32];
  size_t nf, klen;
  int keyver;                /* the IP version is part of the key (address fields only) */
  ba_query_agg_row_t *rows;  /* dense group array */
  uint8_t *keys;             /* klen bytes per group */
  size_t n, cap, kcap;
  uint32_t *slots;           /* hash slots: row index + 1, 0 = empty */
  size_t nslots;
  int sorted_by;
};

static const afield_t *find_field(const char *s, size_t l) {
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
  if (sl[-1] == '4') o->v4bits = (uint8_t)v;
  else o->v6bits = (uint8_t)v;
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
    }
  a->klen += 1; /* ipver */
  /* IPv4 and IPv6 addresses are told apart by the version; other groups
   * (-s proto, -A dstport) hold flows of both versions, as nfdump's */
  a->keyver = (fields & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP)) != 0;
  a->nslots = 1024;
  a->slots = ba_calloc(a->nslots, sizeof(uint32_t));
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
  ba_free(a->rows);
  ba_free(a->keys);
  ba_free(a->slots);
  ba_free(a);
}

static void mask_addr(uint8_t a[16], unsigned bits) {
  for (unsigned i = 0; i < 16; i++) {
    int nb = (int)bits - (int)(8 * i);
    a[i] &= nb >= 8 ? 0xFF : nb <= 0 ? 0 : (uint8_t)(0xFF00u >> nb);
  }
}

/* Key record (only the grouped fields) and its serialized bytes. `side` 1:
 * the destination side of a pair element; `rev`: a bidirectional lookup
 * with source and destination swapped. */
static void make_key(const ba_query_agg_t *a, const ba_record_t *r, int side, int rev, ba_record_t *k, uint8_t *kb) {
  memset(k, 0, sizeof(*k));
  size_t o = 0;
  for (size_t i = 0; i < a->nf; i++) {
    const afield_t *f = a->fl[i];
    size_t from = side ? f->off2 : f->off;
    if (rev && (f->bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_SRCPORT | BA_AGG_DSTPORT))) {
      static const size_t sw[4][2] = {{offsetof(ba_record_t, src), offsetof(ba_record_t, dst)},
                                      {offsetof(ba_record_t, dst), offsetof(ba_record_t, src)},
                                      {offsetof(ba_record_t, src_port), offsetof(ba_record_t, dst_port)},
                                      {offsetof(ba_record_t, dst_port), offsetof(ba_record_t, src_port)}};
      for (int j = 0; j < 4; j++)
        if (sw[j][0] == f->off) from = sw[j][1];
    }
    uint8_t *dst = (uint8_t *)k + f->off;
    memcpy(dst, (const uint8_t *)r + from, f->size);
    if (f->kind == 1 && (f->bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP))) {
      int v4 = fmt_addr_is_v4(dst, r->ipver);
      unsigned bits = v4 ? a->spec.v4bits : a->spec.v6bits;
      if (bits) mask_addr(dst, v4 ? 96 + bits : bits);
    }
    memcpy(kb + o, dst, f->size);
    o += f->size;
  }
  k->ipver = r->ipver;
  kb[o] = a->keyver ? r->ipver : 0;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

static int rehash(ba_query_agg_t *a, size_t ns) {
  uint32_t *s = ba_calloc(ns, sizeof(uint32_t));
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  for (size_t i = 0; i < a->n; i++) {
    size_t h = (size_t)hash_bytes(a->keys + i * a->klen, a->klen) & (ns - 1);
    while (s[h]) h = (h + 1) & (ns - 1);
    s[h] = (uint32_t)(i + 1);
  }
  ba_free(a->slots);
  a->slots = s;
  a->nslots = ns;
  return 0;
}

/* The group of key kb, or -1 (with *slot set where it would go). */
static long lookup(const ba_query_agg_t *a, const uint8_t *kb, size_t *slot) {
  size_t h = (size_t)hash_bytes(kb, a->klen) & (a->nslots - 1);
  while (a->slots[h]) {
    size_t g = a->slots[h] - 1;
    if (!memcmp(a->keys + g * a->klen, kb, a->klen)) return (long)g;
    h = (h + 1) & (a->nslots - 1);
  }
  *slot = h;
  return -1;
}

static void add_to(ba_query_agg_row_t *g, const ba_record_t *r, int rev) {
  uint64_t fl = r->aggr_flows ? r->aggr_flows : 1;
  g->flows += fl;
  if (rev) {
    g->key.out_packets += r->packets;
    g->key.out_bytes += r->bytes;
  } else {
    g->packets += r->packets;
    g->bytes += r->bytes;
    g->key.out_packets += r->out_packets;
    g->key.out_bytes += r->out_bytes;
  }
  if (r->first_ns < g->key.first_ns) g->key.first_ns = r->first_ns;
  if (r->last_ns > g->key.last_ns) g->key.last_ns = r->last_ns;
  g->key.tcp_flags |= r->tcp_flags;
}

/* -B: the flow's server side is the lower port; a flow from the server is
 * looked up reversed first. */
static int from_server(const ba_record_t *r) { return r->src_port < r->dst_port; }

static int add_one(ba_query_agg_t *a, const ba_record_t *r, int side) {
  ba_record_t k;
  uint8_t kb[KEY_MAX + 1], kr[KEY_MAX + 1];
  size_t slot = 0, slot2;
  int first_rev = a->spec.bidir == 2 && from_server(r);
  make_key(a, r, side, first_rev, &k, kb);
  long g = lookup(a, kb, &slot);
  int rev = first_rev;
  if (g < 0 && a->spec.bidir) {
    ba_record_t k2;
    make_key(a, r, side, !first_rev, &k2, kr);
    long g2 = lookup(a, kr, &slot2);
    if (g2 >= 0) {
      g = g2;
      rev = !first_rev;
    }
  }
  if (g >= 0) {
    add_to(&a->rows[g], r, rev);
    return 0;
  }
  BA_RETURN_IF(a->n >= UINT32_MAX - 1, BA_ERR_OVERFLOW);
  if (a->n == a->cap) BA_FORWARD(ba_grow((void **)&a->rows, &a->cap, a->n + 1, sizeof(ba_query_agg_row_t)));
  if ((a->n + 1) * a->klen > a->kcap) BA_FORWARD(ba_grow((void **)&a->keys, &a->kcap, (a->n + 1) * a->klen, 1));
  ba_query_agg_row_t *row = &a->rows[a->n];
  memset(row, 0, sizeof(*row));
  row->key = k;
  row->key.kind = r->kind;
  row->key.first_ns = r->first_ns;
  row->key.last_ns = r->last_ns;
  memcpy(a->keys + a->n * a->klen, kb, a->klen);
  add_to(row, r, rev);
  row->flows = r->aggr_flows ? r->aggr_flows : 1;
  row->key.first_ns = r->first_ns;
  row->key.last_ns = r->last_ns;
  a->slots[slot] = (uint32_t)(++a->n);
  if (a->n * 2 > a->nslots) BA_FORWARD(rehash(a, a->nslots * 2));
  return 0;
}

int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n) {
  BA_RETURN_IF(!a || (n && !recs), BA_ERR_INVALID);
  if (a->sorted_by >= 0) {
    BA_FORWARD(rehash(a, a->nslots));
    a->sorted_by = -1;
  }
  int two = (a->spec.fields & PAIRS) != 0;
  for (size_t i = 0; i < n; i++) {
    BA_FORWARD(add_one(a, &recs[i], 0));
    if (two) BA_FORWARD(add_one(a, &recs[i], 1));
  }
  return 0;
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

static int row_cmp(const void *pa, const void *pb, void *vctx) {
  const ba_query_agg_row_t *x = pa, *y = pb;
  const sctx_t *c = vctx;
  int io = c->a->spec.inout;
  uint64_t u = order_value(c->order, x->flows, (io != 2 ? x->packets : 0) + (io ? x->key.out_packets : 0),
                           (io != 2 ? x->bytes : 0) + (io ? x->key.out_bytes : 0), &x->key);
  uint64_t v = order_value(c->order, y->flows, (io != 2 ? y->packets : 0) + (io ? y->key.out_packets : 0),
                           (io != 2 ? y->bytes : 0) + (io ? y->key.out_bytes : 0), &y->key);
  if (u != v) return u > v ? -1 : 1;
  /* ties: by the grouped values, ascending (numbers as numbers, addresses
   * by their bytes), so the top-N cut is the same for any input order */
  for (size_t i = 0; i < c->a->nf; i++) {
    const afield_t *f = c->a->fl[i];
    const uint8_t *px = (const uint8_t *)&x->key + f->off, *py = (const uint8_t *)&y->key + f->off;
    if (f->kind == 1) {
      int r = memcmp(px, py, f->size);
      if (r) return r;
    } else {
      uint64_t vx = 0, vy = 0;
      memcpy(&vx, px, f->size); /* little-endian hosts: the low bytes */
      memcpy(&vy, py, f->size);
      if (vx != vy) return vx < vy ? -1 : 1;
    }
  }
  return x->key.ipver < y->key.ipver ? -1 : x->key.ipver > y->key.ipver;
}

int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n) {
  BA_RETURN_IF(!a || !rows || !n, BA_ERR_INVALID);
  if (a->sorted_by != (int)order) {
    /* Sorting moves rows: the keys are rebuilt in the new order and the
     * hash slots on the next add. */
    sctx_t c = {a, order};
    qsort_r(a->rows, a->n, sizeof(*a->rows), row_cmp, &c);
    for (size_t i = 0; i < a->n; i++) {
      uint8_t *kb = a->keys + i * a->klen;
      size_t o = 0;
      for (size_t j = 0; j < a->nf; j++) {
        memcpy(kb + o, (const uint8_t *)&a->rows[i].key + a->fl[j]->off, a->fl[j]->size);
        o += a->fl[j]->size;
      }
      kb[o] = a->keyver ? a->rows[i].key.ipver : 0;
    }
    a->sorted_by = (int)order;
  }
  *rows = a->rows;
  *n = a->n;
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
  qsort_r(recs, n, sizeof(*recs), rec_cmp, &order);
}
