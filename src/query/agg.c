/* Aggregation (-A) and top-N statistics (-s): a hash table keyed by the
 * chosen fields, counters per group, sorted on demand. */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "query/query_internal.h"

struct ba_query_agg {
  uint32_t fields;
  ba_query_agg_row_t *rows;  /* dense group array */
  size_t n, cap;
  uint32_t *slots;           /* hash slots: row index + 1, 0 = empty */
  size_t nslots;
  ba_agg_order_t sorted_by;
};

int ba_query_agg_parse(const char *fields, uint32_t *out) {
  BA_RETURN_IF(!fields || !out, BA_ERR_INVALID);
  static const struct { const char *name; uint32_t bit; } names[] = {
    {"srcip", BA_AGG_SRCIP}, {"dstip", BA_AGG_DSTIP}, {"srcport", BA_AGG_SRCPORT},
    {"dstport", BA_AGG_DSTPORT}, {"proto", BA_AGG_PROTO}, {"ip", BA_AGG_IP}, {"port", BA_AGG_PORT},
  };
  uint32_t f = 0;
  const char *p = fields;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    size_t i;
    for (i = 0; i < BA_ARRAY_LEN(names); i++)
      if (strlen(names[i].name) == l && !strncmp(names[i].name, p, l)) break;
    if (i == BA_ARRAY_LEN(names)) return BA_ERR_SYNTAX;
    f |= names[i].bit;
    if (!e) break;
    p = e + 1;
  }
  if (!f) return BA_ERR_SYNTAX;
  /* ip/port split each flow into two keys; they do not combine with others. */
  if ((f & (BA_AGG_IP | BA_AGG_PORT)) && (f & ~(uint32_t)(BA_AGG_IP | BA_AGG_PORT))) return BA_ERR_SYNTAX;
  if ((f & BA_AGG_IP) && (f & BA_AGG_PORT)) return BA_ERR_SYNTAX;
  *out = f;
  return 0;
}

int ba_query_agg_create(uint32_t fields, ba_query_agg_t **out) {
  BA_RETURN_IF(!out || !fields, BA_ERR_INVALID);
  ba_query_agg_t *a = ba_calloc(1, sizeof(*a));
  BA_RETURN_IF(!a, BA_ERR_NOMEM);
  a->fields = fields;
  a->nslots = 1024;
  a->slots = ba_calloc(a->nslots, sizeof(uint32_t));
  if (!a->slots) {
    ba_free(a);
    return BA_ERR_NOMEM;
  }
  a->sorted_by = (ba_agg_order_t)-1;
  *out = a;
  return 0;
}

void ba_query_agg_free(ba_query_agg_t *a) {
  if (!a) return;
  ba_free(a->rows);
  ba_free(a->slots);
  ba_free(a);
}

/* Key record: only the grouped fields, everything else zero. */
static void make_key(uint32_t f, const ba_record_t *r, int second, ba_record_t *k) {
  memset(k, 0, sizeof(*k));
  if (f & BA_AGG_IP) {
    memcpy(k->src, second ? r->dst : r->src, 16);
    k->ipver = r->ipver;
    return;
  }
  if (f & BA_AGG_PORT) {
    k->src_port = second ? r->dst_port : r->src_port;
    return;
  }
  if (f & (BA_AGG_SRCIP | BA_AGG_DSTIP)) k->ipver = r->ipver;
  if (f & BA_AGG_SRCIP) memcpy(k->src, r->src, 16);
  if (f & BA_AGG_DSTIP) memcpy(k->dst, r->dst, 16);
  if (f & BA_AGG_SRCPORT) k->src_port = r->src_port;
  if (f & BA_AGG_DSTPORT) k->dst_port = r->dst_port;
  if (f & BA_AGG_PROTO) k->proto = r->proto;
}

static int key_eq(const ba_record_t *a, const ba_record_t *b) {
  return a->ipver == b->ipver && a->src_port == b->src_port && a->dst_port == b->dst_port &&
         a->proto == b->proto && !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16);
}

static uint64_t key_hash(const ba_record_t *k) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ k->ipver;
  for (int i = 0; i < 16; i++) h = (h ^ k->src[i]) * 0x100000001B3ull;
  for (int i = 0; i < 16; i++) h = (h ^ k->dst[i]) * 0x100000001B3ull;
  h = (h ^ k->src_port) * 0x100000001B3ull;
  h = (h ^ k->dst_port) * 0x100000001B3ull;
  h = (h ^ k->proto) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

static int rehash(ba_query_agg_t *a) {
  size_t ns = a->nslots * 2;
  uint32_t *s = ba_calloc(ns, sizeof(uint32_t));
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  for (size_t i = 0; i < a->n; i++) {
    size_t h = (size_t)key_hash(&a->rows[i].key) & (ns - 1);
    while (s[h]) h = (h + 1) & (ns - 1);
    s[h] = (uint32_t)(i + 1);
  }
  ba_free(a->slots);
  a->slots = s;
  a->nslots = ns;
  return 0;
}

static int add_one(ba_query_agg_t *a, const ba_record_t *r, int second) {
  ba_record_t k;
  make_key(a->fields, r, second, &k);
  size_t h = (size_t)key_hash(&k) & (a->nslots - 1);
  while (a->slots[h]) {
    ba_query_agg_row_t *g = &a->rows[a->slots[h] - 1];
    if (key_eq(&g->key, &k)) {
      g->flows++;
      g->packets += r->packets;
      g->bytes += r->bytes;
      if (r->first_ns < g->key.first_ns) g->key.first_ns = r->first_ns;
      if (r->last_ns > g->key.last_ns) g->key.last_ns = r->last_ns;
      return 0;
    }
    h = (h + 1) & (a->nslots - 1);
  }
  BA_RETURN_IF(a->n >= UINT32_MAX - 1, BA_ERR_OVERFLOW);
  if (a->n == a->cap) BA_FORWARD(ba_grow((void **)&a->rows, &a->cap, a->n + 1, sizeof(ba_query_agg_row_t)));
  ba_query_agg_row_t *g = &a->rows[a->n];
  g->key = k;
  g->key.first_ns = r->first_ns;
  g->key.last_ns = r->last_ns;
  g->key.kind = r->kind;
  g->flows = 1;
  g->packets = r->packets;
  g->bytes = r->bytes;
  a->slots[h] = (uint32_t)(++a->n);
  if (a->n * 2 > a->nslots) BA_FORWARD(rehash(a));
  return 0;
}

int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n) {
  BA_RETURN_IF(!a || (n && !recs), BA_ERR_INVALID);
  a->sorted_by = (ba_agg_order_t)-1;
  int two = (a->fields & (BA_AGG_IP | BA_AGG_PORT)) != 0;
  for (size_t i = 0; i < n; i++) {
    BA_FORWARD(add_one(a, &recs[i], 0));
    if (two) BA_FORWARD(add_one(a, &recs[i], 1));
  }
  return 0;
}

static int key_cmp(const ba_record_t *x, const ba_record_t *y) {
  int c = memcmp(x->src, y->src, 16);
  if (!c) c = memcmp(x->dst, y->dst, 16);
  if (!c) c = (int)x->src_port - (int)y->src_port;
  if (!c) c = (int)x->dst_port - (int)y->dst_port;
  if (!c) c = (int)x->proto - (int)y->proto;
  return c;
}

static int row_cmp(const void *pa, const void *pb, void *octx) {
  const ba_query_agg_row_t *a = pa, *b = pb;
  ba_agg_order_t g_order = *(const ba_agg_order_t *)octx;
  uint64_t x = g_order == BA_ORDER_PACKETS ? a->packets : g_order == BA_ORDER_BYTES ? a->bytes : a->flows;
  uint64_t y = g_order == BA_ORDER_PACKETS ? b->packets : g_order == BA_ORDER_BYTES ? b->bytes : b->flows;
  if (x != y) return x > y ? -1 : 1;
  return key_cmp(&a->key, &b->key);
}

int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n) {
  BA_RETURN_IF(!a || !rows || !n, BA_ERR_INVALID);
  if (a->sorted_by != order) {
    /* Sorting moves rows: the hash slots are rebuilt on the next add. */
    qsort_r(a->rows, a->n, sizeof(*a->rows), row_cmp, &order);
    a->sorted_by = order;
    memset(a->slots, 0, a->nslots * sizeof(uint32_t));
    for (size_t i = 0; i < a->n; i++) {
      size_t h = (size_t)key_hash(&a->rows[i].key) & (a->nslots - 1);
      while (a->slots[h]) h = (h + 1) & (a->nslots - 1);
      a->slots[h] = (uint32_t)(i + 1);
    }
  }
  *rows = a->rows;
  *n = a->n;
  return 0;
}
