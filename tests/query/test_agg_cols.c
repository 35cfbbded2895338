/* Aggregation from column vectors (ba_segment_read_fields into
 * ba_query_agg_add_fields) against a naive linear aggregation of the same
 * rows read as records, for every -s element and -A field set, every
 * order, IPv4, IPv6 and non-IP rows, bidirectional -b/-B; and the record
 * adapter (ba_query_agg_add) against the column path, row for row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bitarc/query.h"
#include "bitarc/store.h"
#include "testsupport.h"
#include "query/query_internal.h"

#define N 6000
#define T0 1700000000000000000ull

/* ---------- the naive reference ---------- */

typedef struct rfield {
  const char *name;
  size_t off, off2, size;
  int addr; /* 1: a 16-byte address; 2: a flow address (its IP version joins the key) */
} rfield_t;

#define RF(n, f, f2, a) {n, offsetof(ba_record_t, f), offsetof(ba_record_t, f2), sizeof(((ba_record_t *)0)->f), a}
static const rfield_t g_rf[] = {
  RF("srcip", src, src, 2), RF("dstip", dst, dst, 2), RF("ip", src, dst, 2),
  RF("srcport", src_port, src_port, 0), RF("dstport", dst_port, dst_port, 0), RF("port", src_port, dst_port, 0),
  RF("proto", proto, proto, 0), RF("srcas", src_as, src_as, 0), RF("dstas", dst_as, dst_as, 0),
  RF("as", src_as, dst_as, 0), RF("inif", in_if, in_if, 0), RF("outif", out_if, out_if, 0),
  RF("if", in_if, out_if, 0), RF("tos", tos, tos, 0), RF("dsttos", dst_tos, dst_tos, 0),
  RF("srcvlan", vlan, vlan, 0), RF("dstvlan", dst_vlan, dst_vlan, 0), RF("vlan", vlan, dst_vlan, 0),
  RF("srcmask", src_mask, src_mask, 0), RF("dstmask", dst_mask, dst_mask, 0), RF("mask", src_mask, dst_mask, 0),
  RF("router", exporter, exporter, 1), RF("nhip", next_hop, next_hop, 1),
  RF("nhbip", bgp_next_hop, bgp_next_hop, 1), RF("dir", direction, direction, 0),
  RF("prevas", prev_as, prev_as, 0), RF("nextas", next_as, next_as, 0), RF("odid", obs_domain, obs_domain, 0),
};

typedef struct rspec {
  const rfield_t *f[32];
  unsigned bits[32]; /* address prefix length (IPv4: of the 32 bits), 0 = whole */
  int fam[32];      /* the family the prefix applies to: 4 or 6 */
  size_t nf;
  int pair, bidir, keyver;
} rspec_t;

typedef struct rgrp {
  uint8_t key[160];
  uint64_t flows, packets, bytes, opk, oby, first, last;
  uint8_t flags;
} rgrp_t;

static int is_v4(const ba_record_t *r, const uint8_t *a) {
  static const uint8_t z[16];
  if (r->ipver == 4) return 1;
  if (r->ipver == 6) return 0;
  return ba_addr_is_v4(a) || !memcmp(a, z, 16);
}

/* The reference key of r: each field's bytes (side 1: a pair's other side;
 * rev: source and destination swapped), then the IP version if keyed. */
static size_t rkey(const rspec_t *s, const ba_record_t *r, int side, int rev, uint8_t *k) {
  size_t o = 0;
  for (size_t i = 0; i < s->nf; i++) {
    const rfield_t *f = s->f[i];
    size_t off = side ? f->off2 : f->off;
    if (rev) {
      if (off == offsetof(ba_record_t, src)) off = offsetof(ba_record_t, dst);
      else if (off == offsetof(ba_record_t, dst)) off = offsetof(ba_record_t, src);
      else if (off == offsetof(ba_record_t, src_port)) off = offsetof(ba_record_t, dst_port);
      else if (off == offsetof(ba_record_t, dst_port)) off = offsetof(ba_record_t, src_port);
    }
    memcpy(k + o, (const uint8_t *)r + off, f->size);
    if (f->addr == 2 && s->bits[i] && (is_v4(r, k + o) ? 4 : 6) == s->fam[i]) {
      unsigned b = s->fam[i] == 4 ? 96 + s->bits[i] : s->bits[i];
      for (unsigned j = 0; j < 16; j++) {
        int nb = (int)b - (int)(8 * j);
        k[o + j] &= nb >= 8 ? 0xFF : nb <= 0 ? 0 : (uint8_t)(0xFF00u >> nb);
      }
    }
    o += f->size;
  }
  k[o++] = s->keyver ? r->ipver : 0;
  return o;
}

static long rfind(const rgrp_t *g, size_t ng, const uint8_t *k, size_t kl) {
  for (size_t i = 0; i < ng; i++)
    if (!memcmp(g[i].key, k, kl)) return (long)i;
  return -1;
}

static int server_first(const ba_record_t *r) {
  static const uint16_t lim[3] = {1024, 32768, 49152};
  if (r->proto != 6 && r->proto != 17) return 0;
  for (int i = 0; i < 3; i++)
    if (r->src_port < lim[i] && r->dst_port >= lim[i]) return 1;
  return 0;
}

static size_t reference(const rspec_t *s, const ba_record_t *r, size_t n, rgrp_t *g, size_t *klen) {
  size_t ng = 0;
  for (size_t i = 0; i < n; i++)
    for (int side = 0; side < (s->pair ? 2 : 1); side++) {
      uint8_t k[160], kr[160];
      int frev = s->bidir == 2 && server_first(&r[i]);
      size_t kl = rkey(s, &r[i], side, frev, k);
      *klen = kl;
      long x = rfind(g, ng, k, kl);
      int rev = frev;
      if (x < 0 && s->bidir) {
        rkey(s, &r[i], side, !frev, kr);
        x = rfind(g, ng, kr, kl);
        if (x >= 0) rev = !frev;
      }
      if (x < 0) {
        x = (long)ng++;
        memset(&g[x], 0, sizeof g[x]);
        memcpy(g[x].key, k, kl);
        g[x].first = UINT64_MAX;
      }
      rgrp_t *q = &g[x];
      q->flows += r[i].aggr_flows ? r[i].aggr_flows : 1;
      q->packets += rev ? r[i].out_packets : r[i].packets;
      q->bytes += rev ? r[i].out_bytes : r[i].bytes;
      q->opk += rev ? r[i].packets : r[i].out_packets;
      q->oby += rev ? r[i].bytes : r[i].out_bytes;
      if (r[i].first_ns < q->first) q->first = r[i].first_ns;
      if (r[i].last_ns > q->last) q->last = r[i].last_ns;
      q->flags |= r[i].tcp_flags;
    }
  return ng;
}

/* The order's value (descending), as nfdump: rates over milliseconds. */
static uint64_t oval(int o, uint64_t fl, uint64_t pk, uint64_t by, uint64_t first, uint64_t last) {
  uint64_t a = first / 1000000, b = last / 1000000, d = b > a ? b - a : 0;
  switch (o) {
    case BA_ORDER_PACKETS: return pk;
    case BA_ORDER_BYTES: return by;
    case BA_ORDER_PPS: return d ? pk * 1000 / d : 0;
    case BA_ORDER_BPS: return d ? by * 8000 / d : 0;
    case BA_ORDER_BPP: return pk ? by / pk : 0;
    case BA_ORDER_TSTART: return UINT64_MAX - first;
    case BA_ORDER_TEND: return UINT64_MAX - last;
    default: return fl;
  }
}

/* ---------- records, store ---------- */

static void addr(ba_rng_t *g, uint8_t a[16], int v6, uint32_t pool) {
  if (v6) {
    memset(a, 0, 16);
    a[0] = 0x20, a[1] = 0x01, a[2] = 0x0d, a[3] = 0xb8;
    a[7] = (uint8_t)ba_rng_below(g, 3);
    a[15] = (uint8_t)ba_rng_below(g, pool);
  } else {
    ba_addr_set_v4(a, 0x0A000000u | (uint32_t)ba_rng_below(g, 2) << 8 | (uint32_t)ba_rng_below(g, pool));
  }
}

static void make_records(ba_record_t *r, size_t n, uint64_t seed) {
  ba_rng_t g;
  ba_rng_seed(&g, seed);
  memset(r, 0, n * sizeof *r);
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &r[i];
    unsigned k = (unsigned)ba_rng_below(&g, 100);
    x->first_ns = T0 + ba_rng_below(&g, 3600) * 1000000000ull + ba_rng_below(&g, 1000000000);
    x->last_ns = x->first_ns + ba_rng_below(&g, 3) * ba_rng_below(&g, 20000) * 1000000ull;
    x->packets = 1 + ba_rng_below(&g, 50);
    x->bytes = x->packets * (40 + ba_rng_below(&g, 1400));
    if (k < 15) { /* a non-IP packet row */
      x->kind = BA_REC_PACKET;
      x->last_ns = x->first_ns;
      x->packets = 1;
      continue;
    }
    int v6 = k < 40;
    x->kind = BA_REC_FLOW;
    x->ipver = v6 ? 6 : 4;
    addr(&g, x->src, v6, 12);
    addr(&g, x->dst, v6, 12);
    addr(&g, x->exporter, 0, 2);
    if (ba_rng_below(&g, 2)) addr(&g, x->next_hop, v6, 3);
    if (ba_rng_below(&g, 3) == 0) addr(&g, x->bgp_next_hop, 0, 3);
    static const uint16_t ports[] = {53, 80, 443, 445, 1023, 1024, 32767, 32768, 49151, 49152, 50000, 60001};
    x->src_port = ports[ba_rng_below(&g, 12)];
    x->dst_port = ports[ba_rng_below(&g, 12)];
    static const uint8_t protos[] = {6, 17, 1, 58, 47};
    x->proto = protos[ba_rng_below(&g, 5)];
    x->tcp_flags = (uint8_t)ba_rng_below(&g, 64);
    x->tos = (uint8_t)(ba_rng_below(&g, 3) * 8);
    x->dst_tos = (uint8_t)ba_rng_below(&g, 2);
    x->src_as = (uint32_t)ba_rng_below(&g, 4) * 65000u;
    x->dst_as = (uint32_t)ba_rng_below(&g, 4) + 100000u;
    x->in_if = (uint32_t)ba_rng_below(&g, 5);
    x->out_if = (uint32_t)ba_rng_below(&g, 5);
    x->vlan = (uint16_t)ba_rng_below(&g, 3);
    x->dst_vlan = (uint16_t)ba_rng_below(&g, 3) * 100;
    x->src_mask = (uint8_t)(16 + ba_rng_below(&g, 3) * 8);
    x->dst_mask = (uint8_t)(16 + ba_rng_below(&g, 3) * 8);
    x->direction = (uint8_t)ba_rng_below(&g, 2);
    x->prev_as = (uint32_t)ba_rng_below(&g, 3);
    x->next_as = (uint32_t)ba_rng_below(&g, 3) * 7;
    x->obs_domain = (uint32_t)ba_rng_below(&g, 2) * 1000;
    if (ba_rng_below(&g, 2)) {
      x->out_packets = ba_rng_below(&g, 30);
      x->out_bytes = x->out_packets * 60;
    }
    if (ba_rng_below(&g, 5) == 0) x->aggr_flows = 1 + (uint32_t)ba_rng_below(&g, 4);
  }
}

typedef struct rows {
  ba_record_t *r;
  size_t n;
} rows_t;

static int rec_sink(void *ctx, const ba_record_t *recs, size_t n) {
  rows_t *b = ctx;
  memcpy(b->r + b->n, recs, n * sizeof *recs);
  b->n += n;
  return 0;
}

static int agg_sink(void *ctx, const uint64_t *const *vals, size_t n) {
  return ba_query_agg_add_fields(ctx, vals, n);
}

/* The rows of every segment picked by `every` (1: all; k: rows whose
 * number mod k is 0 or 1, then also a sparse 1 in 97) as records into
 * *got and as column vectors into a. */
static void read_both(ba_store_t *st, unsigned every, ba_query_agg_t *a, rows_t *got) {
  for (size_t si = 0; si < ba_store_segment_count(st); si++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, si, &seg), 0);
    assert_int_equal(ba_segment_info(seg, &in), 0);
    uint64_t *rows = malloc(in.rows * sizeof *rows);
    size_t n = 0;
    for (uint64_t i = 0; i < in.rows; i++)
      if (every == 1 || i % every < 2 || i % 97 == 3) rows[n++] = i;
    size_t nf = 0;
    const uint16_t *f = ba_query_agg_fields(a, &nf);
    if (every == 1) {
      assert_int_equal(ba_segment_scan(seg, BA_COL_ALL & ~(uint32_t)BA_COL_FRAME, rec_sink, got, NULL), 0);
      assert_int_equal(ba_segment_read_fields(seg, NULL, 0, f, nf, agg_sink, a, NULL), 0);
    } else if (n) {
      assert_int_equal(ba_segment_read_rows(seg, rows, n, BA_COL_ALL & ~(uint32_t)BA_COL_FRAME, rec_sink, got, NULL),
                       0);
      assert_int_equal(ba_segment_read_fields(seg, rows, n, f, nf, agg_sink, a, NULL), 0);
    }
    free(rows);
    ba_segment_release(seg);
  }
}

static ba_store_t *g_st;
static char *g_dir;

static int setup(void **state) {
  (void)state;
  ba_record_t *r = malloc(N * sizeof *r);
  make_records(r, N, 77);
  g_dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 500;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(g_dir, &o, &w), 0);
  assert_int_equal(ba_store_writer_append(w, r, N), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  assert_int_equal(ba_store_open(g_dir, &g_st), 0);
  free(r);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ba_store_close(g_st);
  ba_test_rmtree(g_dir);
  free(g_dir);
  return 0;
}

/* The reference spec of a -s element or -A field list. */
static void ref_spec(const char *text, const ba_query_agg_spec_t *sp, rspec_t *s) {
  memset(s, 0, sizeof *s);
  char buf[128];
  snprintf(buf, sizeof buf, "%s", text);
  /* -A record, -b and -B group by the five-tuple (in g_rf's order, as the aggregator's fields) */
  int five = sp->bidir || (sp->fields & BA_AGG_RECORD);
  for (size_t i = 0; i < sizeof(g_rf) / sizeof(g_rf[0]); i++) {
    const rfield_t *f = &g_rf[i];
    int on = 0;
    unsigned bits = 0;
    int fam = 0;
    if (five && (!strcmp(f->name, "srcip") || !strcmp(f->name, "dstip") || !strcmp(f->name, "srcport") ||
                 !strcmp(f->name, "dstport") || !strcmp(f->name, "proto")))
      on = 1;
    for (char *p = buf, *e; p; p = e ? e + 1 : NULL) {
      e = strchr(p, ',');
      size_t l = e ? (size_t)(e - p) : strlen(p);
      const char *sl = memchr(p, '/', l);
      size_t nl = sl ? (size_t)(sl - p) - 1 : l; /* "srcip4/24": name "srcip" */
      if (strlen(f->name) == nl && !strncmp(p, f->name, nl)) {
        on = 1;
        if (sl) bits = (unsigned)atoi(sl + 1), fam = sl[-1] - '0';
      }
    }
    if (!on) continue;
    s->bits[s->nf] = bits;
    s->fam[s->nf] = fam;
    s->f[s->nf++] = f;
    if (f->off != f->off2) s->pair = 1;
    if (f->addr == 2) s->keyver = 1;
  }
  s->bidir = sp->bidir;
}

/* One spec over the store's rows picked by `every`, every order. */
static void check_spec(const char *text, int element, int bidir, unsigned every) {
  ba_query_agg_spec_t sp;
  char err[128];
  assert_int_equal(ba_query_agg_parse(text, element, &sp, err, sizeof err), 0);
  sp.bidir = bidir;
  ba_query_agg_t *a, *b;
  assert_int_equal(ba_query_agg_create(&sp, &a), 0);
  assert_int_equal(ba_query_agg_create(&sp, &b), 0);
  rows_t got = {malloc(N * sizeof(ba_record_t)), 0};
  read_both(g_st, every, a, &got);
  assert_true(got.n > 0);
  assert_int_equal(ba_query_agg_add(b, got.r, got.n), 0); /* the record adapter */
  assert_int_equal(ba_query_agg_drop_flags(b), BA_ERR_INVALID); /* after an add: refused */
  /* d keeps no flags: it reads no tcp_flags and its groups are a's with key.tcp_flags 0 */
  ba_query_agg_t *d;
  assert_int_equal(ba_query_agg_create(&sp, &d), 0);
  assert_int_equal(ba_query_agg_drop_flags(d), 0);
  size_t ndf = 0;
  const uint16_t *df = ba_query_agg_fields(d, &ndf);
  for (size_t i = 0; i < ndf; i++) assert_int_not_equal(df[i], offsetof(ba_record_t, tcp_flags));
  assert_int_equal(ba_query_agg_columns(d) & BA_COL_FLAGS, 0);
  assert_int_equal(ba_query_agg_add(d, got.r, got.n), 0);
  rspec_t rs;
  ref_spec(text, &sp, &rs);
  rgrp_t *ref = malloc(2 * got.n * sizeof *ref);
  size_t klen = 0, nref = reference(&rs, got.r, got.n, ref, &klen);
  for (int o = 0; o <= BA_ORDER_TEND; o++) {
    const ba_query_agg_row_t *ra, *rb;
    size_t na, nb;
    assert_int_equal(ba_query_agg_result(a, (ba_agg_order_t)o, &ra, &na), 0);
    assert_int_equal(ba_query_agg_result(b, (ba_agg_order_t)o, &rb, &nb), 0);
    assert_int_equal(na, nref);
    assert_int_equal(nb, nref);
    assert_memory_equal(ra, rb, na * sizeof *ra);
    const ba_query_agg_row_t *rd;
    size_t nd;
    assert_int_equal(ba_query_agg_result(d, (ba_agg_order_t)o, &rd, &nd), 0);
    assert_int_equal(nd, na);
    for (size_t g = 0; g < nd; g++) {
      ba_query_agg_row_t x = ra[g];
      x.key.tcp_flags = 0;
      assert_memory_equal(&rd[g], &x, sizeof x);
    }
    for (size_t g = 0; g < na; g++) {
      uint8_t k[160];
      rkey(&rs, &ra[g].key, 0, 0, k);
      long x = rfind(ref, nref, k, klen);
      if (x < 0) fail_msg("%s order %d: group %zu not in the reference", text, o, g);
      const rgrp_t *q = &ref[x];
      assert_int_equal(ra[g].flows, q->flows);
      assert_int_equal(ra[g].packets, q->packets);
      assert_int_equal(ra[g].bytes, q->bytes);
      assert_int_equal(ra[g].key.out_packets, q->opk);
      assert_int_equal(ra[g].key.out_bytes, q->oby);
      assert_int_equal(ra[g].key.first_ns, q->first);
      assert_int_equal(ra[g].key.last_ns, q->last);
      assert_int_equal(ra[g].key.tcp_flags, q->flags);
      if (g) {
        uint64_t u = oval(o, ra[g - 1].flows, ra[g - 1].packets, ra[g - 1].bytes, ra[g - 1].key.first_ns,
                          ra[g - 1].key.last_ns);
        uint64_t v = oval(o, ra[g].flows, ra[g].packets, ra[g].bytes, ra[g].key.first_ns, ra[g].key.last_ns);
        assert_true(u >= v);
      }
    }
    /* the top 5 are the first 5 of the full order */
    const ba_query_agg_row_t *rt;
    size_t nt;
    ba_query_agg_t *c;
    assert_int_equal(ba_query_agg_create(&sp, &c), 0);
    assert_int_equal(ba_query_agg_add(c, got.r, got.n), 0);
    assert_int_equal(ba_query_agg_top(c, (ba_agg_order_t)o, 5, &rt, &nt), 0);
    assert_int_equal(nt, na < 5 ? na : 5);
    assert_memory_equal(rt, ra, nt * sizeof *rt);
    ba_query_agg_free(c);
  }
  free(ref);
  free(got.r);
  ba_query_agg_free(a);
  ba_query_agg_free(b);
  ba_query_agg_free(d);
}

static void test_elements(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(g_rf) / sizeof(g_rf[0]); i++)
    for (unsigned every = 1; every <= 16; every += 15) check_spec(g_rf[i].name, 1, 0, every);
  check_spec("srcip4/24", 1, 0, 1);
  check_spec("dstip6/64", 1, 0, 16);
  check_spec("ip4/16", 1, 0, 1);
}

static void test_aggregates(void **state) {
  (void)state;
  static const char *const sets[] = {"srcip,dstport", "srcip,dstip,srcport,dstport,proto", "srcip4/24,dstip4/28",
                                     "srcip4/24,dstip", "proto,srcas,dstas,inif,outif,tos", "router,nhip,dir,odid",
                                     "dstip6/48,dstport,srcvlan,dstvlan", "srcmask,dstmask,prevas,nextas,nhbip",
                                     /* every field: more than ba_query_exec_opts_t.fields takes */
                                     "srcip,dstip,srcport,dstport,proto,srcas,dstas,inif,outif,tos,dsttos,srcvlan,"
                                     "dstvlan,srcmask,dstmask,router,nhip,nhbip,dir,prevas,nextas,odid"};
  for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
    for (unsigned every = 1; every <= 16; every += 15) check_spec(sets[i], 0, 0, every);
  check_spec("record", 1, 0, 1);
  check_spec("srcip,dstip,srcport,dstport,proto", 0, 1, 1);  /* -b */
  check_spec("srcip,dstip,srcport,dstport,proto", 0, 2, 16); /* -B */
  check_spec("srcip,dstip,srcport,dstport,proto", 0, 2, 1);
}

static int rec_agg_sink(void *ctx, const ba_record_t *recs, size_t n) { return ba_query_agg_add(ctx, recs, n); }

/* ba_query_run with field_fn (column vectors for exactly planned
 * segments, on one and two threads) gives the groups and the totals of the
 * run that delivers records, for exact and residual filters. */
static void test_run_fields(void **state) {
  (void)state;
  ba_record_t *r = malloc(N * sizeof *r);
  make_records(r, N, 78);
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 64; /* many row groups: fetch_rows_two's threshold is 24 */
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), 0);
  assert_int_equal(ba_store_writer_append(w, r, N), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), 0);
  static const char *const filters[] = {"any", "proto tcp", "dst port 443 or src port 53", "bytes > 5000",
                                        "proto udp and packets < 20", "inet6"};
  for (size_t fi = 0; fi < sizeof(filters) / sizeof(filters[0]); fi++)
    for (int threads = 1; threads <= 2; threads++) {
      ba_query_t *q;
      assert_int_equal(ba_query_create(&q), 0);
      assert_int_equal(ba_query_compile(q, filters[fi]), 0);
      ba_query_agg_spec_t sp;
      char err[64];
      assert_int_equal(ba_query_agg_parse("srcip", 1, &sp, err, sizeof err), 0);
      ba_query_agg_t *a, *b;
      assert_int_equal(ba_query_agg_create(&sp, &a), 0);
      assert_int_equal(ba_query_agg_create(&sp, &b), 0);
      ba_query_exec_opts_t eo;
      ba_query_exec_opts_init(&eo);
      eo.threads = threads;
      eo.out_cols = ba_query_agg_columns(b) | BA_COL_OUT;
      ba_query_stats_t sa, sb;
      assert_int_equal(ba_query_run(q, st, &eo, rec_agg_sink, b, &sb), 0);
      size_t nf = 0;
      eo.fields = ba_query_agg_fields(a, &nf);
      eo.nfields = nf;
      eo.field_fn = agg_sink;
      eo.field_ctx = a;
      assert_int_equal(ba_query_run(q, st, &eo, rec_agg_sink, a, &sa), 0);
      assert_int_equal(sa.rows_matched, sb.rows_matched);
      assert_int_equal(sa.packets, sb.packets);
      assert_int_equal(sa.bytes, sb.bytes);
      assert_int_equal(sa.out_packets, sb.out_packets);
      assert_int_equal(sa.out_bytes, sb.out_bytes);
      assert_int_equal(sa.first_ns, sb.first_ns);
      assert_int_equal(sa.last_ns, sb.last_ns);
      assert_int_equal(sa.blocks_read, sb.blocks_read);
      const ba_query_agg_row_t *ra, *rb;
      size_t na, nb;
      assert_int_equal(ba_query_agg_result(a, BA_ORDER_BYTES, &ra, &na), 0);
      assert_int_equal(ba_query_agg_result(b, BA_ORDER_BYTES, &rb, &nb), 0);
      assert_int_equal(na, nb);
      assert_memory_equal(ra, rb, na * sizeof *ra);
      ba_query_agg_free(a);
      ba_query_agg_free(b);
      ba_query_free(q);
    }
  ba_store_close(st);
  ba_test_rmtree(dir);
  free(dir);
  free(r);
}

/* A committed segment (tests/archive/data) in a store of its own. */
static char *fixture_store(const char *rel) {
  char *dir = ba_test_fixture_store(rel);
  assert_non_null(dir);
  return dir;
}

typedef struct fcheck {
  const ba_record_t *r;
  const uint16_t *f;
  size_t nf, at;
} fcheck_t;

static int check_fields(void *ctx, const uint64_t *const *vals, size_t n) {
  fcheck_t *c = ctx;
  for (size_t i = 0; i < n; i++, c->at++)
    for (size_t f = 0; f < c->nf; f++)
      if (vals[f][i] != ba_record_field_get(&c->r[c->at], c->f[f]))
        fail_msg("row %zu field at %u: %llu, the record has %llu", c->at, c->f[f], (unsigned long long)vals[f][i],
                 (unsigned long long)ba_record_field_get(&c->r[c->at], c->f[f]));
  return 0;
}

/* Every stored field (but frames) of chosen rows read as column vectors
 * equals the field of the record ba_segment_read_rows gives, on the 1.0,
 * 2.0 and 3.0 fixtures and a store of this test's records. */
static void test_read_fields(void **state) {
  (void)state;
  uint16_t all[512];
  size_t nall = 0;
  for (size_t off = 0; off < sizeof(ba_record_t) && nall < 512; off++)
    if (ba_record_field_ok(off)) all[nall++] = (uint16_t)off;
  assert_true(nall > 40);
  static const char *const fx[] = {"tests/archive/data/seg-v1_0.bitarc", "tests/archive/data/seg-v2_0.bitarc",
                                   "tests/archive/data/seg-v3_0.bitarc", NULL};
  for (int i = 0; i < 4; i++) {
    char *dir = fx[i] ? fixture_store(fx[i]) : NULL;
    ba_store_t *st = g_st;
    if (dir) assert_int_equal(ba_store_open(dir, &st), 0);
    for (size_t si = 0; si < ba_store_segment_count(st); si++) {
      ba_segment_t *seg;
      ba_segment_info_t in;
      assert_int_equal(ba_store_segment(st, si, &seg), 0);
      assert_int_equal(ba_segment_info(seg, &in), 0);
      for (unsigned every = 1; every <= 16; every += 5) {
        uint64_t *rows = malloc(in.rows * sizeof *rows);
        size_t n = 0;
        for (uint64_t r = 0; r < in.rows; r++)
          if (r % every == 0 || r % 53 == 7) rows[n++] = r;
        rows_t got = {malloc(n * sizeof(ba_record_t)), 0};
        assert_int_equal(ba_segment_read_rows(seg, rows, n, BA_COL_ALL & ~(uint32_t)BA_COL_FRAME, rec_sink, &got, NULL),
                         0);
        assert_int_equal(got.n, n);
        for (size_t f0 = 0; f0 < nall; f0 += BA_FIELDS_MAX) {
          fcheck_t c = {got.r, all + f0, nall - f0 < BA_FIELDS_MAX ? nall - f0 : BA_FIELDS_MAX, 0};
          assert_int_equal(ba_segment_read_fields(seg, rows, n, c.f, c.nf, check_fields, &c, NULL), 0);
          assert_int_equal(c.at, n);
        }
        free(got.r);
        free(rows);
      }
      ba_segment_release(seg);
    }
    if (dir) {
      ba_store_close(st);
      ba_test_rmtree(dir);
      free(dir);
    }
  }
}

int main(void) {
  query_set_par_min_rows(0); /* the worker path on these small stores too */
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_elements),
    cmocka_unit_test(test_aggregates),
    cmocka_unit_test(test_run_fields),
    cmocka_unit_test(test_read_fields),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
