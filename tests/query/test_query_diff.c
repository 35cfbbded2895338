/* The differential oracle: a store written with the writer API from random
 * skewed flows (IPv4 and IPv6, several slices), then for a table of filters
 * covering every production the index path's rows == the linear scan's rows
 * (ba_segment_scan + the record evaluator) == the in-memory evaluation of the
 * generated records. Rows are identified by first_ns (unique by construction). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitarc/query.h"
#include "testsupport.h"
#include "archive/archive.h"
#include "query/query_internal.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define HOUR_NS (3600ull * 1000000000ull)
/* 2024-07-11T00:00:00Z */
#define BASE_NS (1720656000ull * 1000000000ull)
#define NSLICES 3

typedef struct gen {
  ba_record_t *recs;
  size_t n;
} gen_t;

static void gen_flows(gen_t *g, size_t n, uint64_t seed) {
  ba_rng_t r;
  ba_rng_seed(&r, seed);
  g->recs = calloc(n, sizeof(ba_record_t));
  assert_non_null(g->recs);
  g->n = n;
  static const uint16_t svc[] = {80, 443, 53, 137, 445, 22, 8080, 25, 123, 3389, 1024, 2048, 6000, 0};
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &g->recs[i];
    x->kind = BA_REC_FLOW;
    uint64_t sec = ba_rng_below(&r, NSLICES * 3600);
    x->first_ns = BASE_NS + sec * 1000000000ull + i; /* unique */
    x->last_ns = x->first_ns + ba_rng_zipf(&r, 100000, 1.1) * 1000000ull;
    int v6 = ba_rng_below(&r, 10) == 0;
    x->ipver = v6 ? 6 : 4;
    if (v6) {
      static const uint8_t p6[4][8] = {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1}, {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0},
                                       {0xfe, 0x80, 0, 0, 0, 0, 0, 0}, {0x2a, 0x00, 0x14, 0x50, 0x40, 0x01, 0, 0}};
      memcpy(x->src, p6[ba_rng_zipf(&r, 4, 1.0)], 8);
      memcpy(x->dst, p6[ba_rng_zipf(&r, 4, 1.0)], 8);
      x->src[15] = (uint8_t)ba_rng_zipf(&r, 20, 1.0);
      x->dst[15] = (uint8_t)ba_rng_zipf(&r, 20, 1.0);
    } else {
      uint32_t s, d;
      switch (ba_rng_below(&r, 10)) {
        case 0: case 1: case 2: case 3: case 4: case 5:
          s = 0x0A040000u | (uint32_t)(ba_rng_zipf(&r, 64, 1.2) << 8) | (uint32_t)ba_rng_zipf(&r, 256, 1.0);
          break;
        case 6: case 7: s = 0xC0A80000u | (uint32_t)ba_rng_zipf(&r, 4096, 1.1); break;
        default: s = (uint32_t)ba_rng_next(&r); break;
      }
      switch (ba_rng_below(&r, 4)) {
        case 0: d = 0x0A050500u | (uint32_t)ba_rng_zipf(&r, 256, 1.0); break;
        case 1: d = 0xAC100000u | (uint32_t)ba_rng_zipf(&r, 1 << 20, 1.0); break;
        default: d = (uint32_t)ba_rng_zipf(&r, 1u << 31, 0.9) * 2u + 1u; break;
      }
      ba_addr_set_v4(x->src, s);
      ba_addr_set_v4(x->dst, d);
    }
    unsigned pk = (unsigned)ba_rng_below(&r, 20);
    x->proto = pk < 14 ? 6 : pk < 18 ? 17 : pk == 18 ? (v6 ? 58 : 1) : 47;
    if (x->proto == 6 || x->proto == 17) {
      x->dst_port = ba_rng_below(&r, 4) ? svc[ba_rng_zipf(&r, NELEM(svc) - 1, 1.0)]
                                        : (uint16_t)ba_rng_below(&r, 65536);
      x->src_port = (uint16_t)(1024 + ba_rng_below(&r, 64512));
      if (ba_rng_below(&r, 8) == 0) {
        uint16_t t = x->src_port;
        x->src_port = x->dst_port;
        x->dst_port = t;
      }
    } else if (x->proto == 1 || x->proto == 58) {
      x->icmp_type = (uint8_t)(ba_rng_below(&r, 2) ? 8 : ba_rng_below(&r, 12));
      x->icmp_code = (uint8_t)ba_rng_below(&r, 2);
      x->dst_port = (uint16_t)(x->icmp_type << 8 | x->icmp_code);
    }
    if (x->proto == 6) {
      static const uint8_t fl[] = {0x02, 0x12, 0x18, 0x1b, 0x10, 0x11, 0x04, 0x14, 0x1f, 0xc2, 0x3f, 0x01};
      x->tcp_flags = fl[ba_rng_zipf(&r, NELEM(fl), 1.0)];
    }
    x->packets = 1 + ba_rng_zipf(&r, 100000, 1.2);
    x->bytes = x->packets * (40 + ba_rng_below(&r, 1460));
    x->tos = (uint8_t)(ba_rng_below(&r, 8) == 0 ? 0x20 : 0);
    x->src_as = (uint32_t)ba_rng_zipf(&r, 70000, 1.0);
    x->dst_as = (uint32_t)ba_rng_zipf(&r, 70000, 1.0);
    x->in_if = (uint32_t)ba_rng_below(&r, 8);
    x->out_if = (uint32_t)ba_rng_below(&r, 8);
    ba_addr_set_v4(x->exporter, 0x7F000001);
  }
}

typedef struct idlist {
  uint64_t *v;
  size_t n, cap;
} idlist_t;

static void idl_push(idlist_t *l, uint64_t x) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 1024;
    l->v = realloc(l->v, l->cap * sizeof(uint64_t));
    assert_non_null(l->v);
  }
  l->v[l->n++] = x;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  idlist_t *l = ctx;
  for (size_t i = 0; i < n; i++) idl_push(l, recs[i].first_ns);
  return 0;
}

typedef struct fixture {
  char *dir;
  gen_t g;
  ba_store_t *st;
} fixture_t;

static fixture_t F;
/* 1 if a segment of st was rewritten by ba_store_cluster (format.md §7.9). */
static int store_clustered(ba_store_t *st) {
  int any = 0;
  for (size_t i = 0; i < ba_store_segment_count(st); i++) {
    ba_segment_t *g;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &g), 0);
    assert_int_equal(ba_segment_info(g, &in), 0);
    any |= in.clustered;
    ba_segment_release(g);
  }
  return any;
}

static void build_store(ba_codec_t codec, uint32_t block_rows) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = codec;
  o.block_rows = block_rows;
  o.slice_seconds = 3600;
  o.time_bin_seconds = 60;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(F.dir, &o, &w), 0);
  for (size_t i = 0; i < F.g.n; i += 1000)
    assert_int_equal(ba_store_writer_append(w, F.g.recs + i, F.g.n - i < 1000 ? F.g.n - i : 1000), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  assert_int_equal(ba_store_open(F.dir, &F.st), 0);
  assert_true(ba_store_segment_count(F.st) >= NSLICES);
}

static int setup(void **state) {
  (void)state;
  F.dir = ba_test_mkdtemp();
  const char *big = getenv("BA_TEST_LONG");
  gen_flows(&F.g, big ? 400000 : 30000, 42);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ba_store_close(F.st);
  F.st = NULL;
  ba_test_rmtree(F.dir);
  free(F.dir);
  free(F.g.recs);
  return 0;
}

static const char *const filters[] = {
  "any", "", "ipv4", "ipv6", "not ipv6",
  "ip 10.4.0.1", "src ip 10.4.0.1", "dst host 10.5.5.3", "src and dst ip 10.4.0.0/16",
  "src ip 10.4.*.*", "src ip 10.4.x.x and dst port 137", "ip *.*.*.5", "ip 10.4.0-15,33.*",
  "src ip 10.4.1.1,3,5-7", "src ip 10.4.0.0/20", "net 192.168.0.0/20", "src net 192.168/16",
  "dst net 172.16.0.0 255.240.0.0", "net 10.0.0.0/8", "net 0.0.0.0/0", "not net 0.0.0.0/0",
  "ip in [10.4.0.1, 10.4.0.2, 192.168.0.7]", "dst ip in [10.5.5.0/28 172.16.0.1]",
  "ip in [2001:db8::/32, 10.4.0.0/24]", "ip 2001:db8:0:1::3", "src net 2001:db8::/32",
  "dst net fe80::/10", "net ::/0", "net ::ffff:10.4.0.0/112", "src ip ::ffff:10.4.0.1",
  /* IPv6 hosts and /48-or-longer prefixes: V6NET/V6HOST candidates, then the column (3.1) */
  "src ip 2001:db8:1::2", "dst ip fe80::1 and proto tcp", "src net 2001:db8:1::/48",
  "dst net 2a00:1450:4001::/48 and port 443", "net 2001:db8:0:1::/64", "src net 2001:db8:0:1::/120",
  "src ip in [2001:db8:1::2 fe80::3 10.4.0.1]", "not dst ip 2a00:1450:4001::1",
  "src ip 2001:db8:0:1::3 or dst ip 2001:db8:1::4", "src and dst net 2001:db8::/48",
  "port 80", "src port 53", "dst port 443", "port > 1023", "dst port < 1024", "port >= 6000",
  "port <= 22", "src port gt 60000", "port in [1024-2048, 8080]", "dst port in [80 443 53]",
  "portrange 1-1023", "dst portrange 6000-6063", "src and dst port > 1023", "not port 80",
  "proto tcp", "proto udp", "proto icmp", "proto 47", "proto icmp6", "udp or icmp",
  "flags S", "flags SA", "flags AS and proto tcp", "flags S and not flags AFRPU", "not flags SA",
  "flags X", "flags C", "not (proto tcp and flags SA)", "flags F or flags R",
  "icmp-type 8", "icmp-code 1", "bytes > 100k", "packets < 3", "in packets > 1k", "duration > 1000",
  "pps > 10", "bps > 1m", "bpp < 100", "flows 1", "as 5", "src as > 1000", "dst as 0", "if 3",
  "in if 3", "out if 7", "tos 32", "tos > 0", "vlan 0",
  "first seen > 2024-07-11T01:30", "first seen < 2024-07-11T00:10:30",
  "first seen >= 2024-07-11T01:00 and first seen < 2024-07-11T02:00:00.5",
  "first seen = 2024-07-11T00:00:00", "last seen > 2024-07-11T02:59",
  "after 2024-07-11T02:30:00", "before 2024-07-11T00:05",
  "src ip 10.4.*.* and dst port 137 or proto udp and not port 53",
  "not (src ip 10.4.*.* or dst ip 10.5.5.*) and bytes > 10k",
  "(proto tcp or proto udp) and (port 80 or port 443) and not src net 192.168.0.0/16",
  "not (bytes > 1000 and port 80)", "not not (ip 10.4.0.1 or ipv6)",
  "ip 10.4.0.1 or bytes > 1M", "not (ipv6 and src net 2001:db8::/32)",
  "src ip 10.4.*.* && !dst port 137 || ipv6 && port 443",
  /* AND chains: size order, empty operands, a result that empties, dense operands by row count */
  "src ip 10.4.0.1 and dst port 443 and proto tcp", "dst port 443 and src ip 10.4.0.1 and flags S",
  /* dense last operands: ANDed and counted where they are read */
  "proto udp and dst port 53", "src net 10.4.0.0/16 and proto tcp", "ipv4 and src net 10.4.0.0/16",
  "src ip 10.4.0.1 and dst port 9999", "proto 99 and src ip 10.4.*.*", "src ip 10.4.0.1 and src ip 10.4.0.2",
  "src ip 10.4.0.1 and dst ip 10.4.0.1 and port 80", "proto tcp and src ip 10.4.*.* and not port 80",
  "proto tcp and flags A and src net 10.4.0.0/16 and dst port < 1024", "any and any and proto udp",
  "ipv4 and ipv4 and not ipv6 and port 53", "ipv6 and src ip 10.4.0.1", "ipv6 and proto tcp and port 443",
  "src net 2001:db8::/32 and port 80 and proto tcp", "not ipv6 and proto tcp and port 443",
  "not (src ip 10.4.0.1 and port 80) and proto tcp", "src ip 10.4.*.* and not (port 80 and proto tcp)",
  "src and dst port > 1023 and proto udp", "src and dst ip 10.4.0.0/16 and port 53",
  "src and dst ip 10.4.0.1 and proto tcp", "dst ip 10.5.5.3 and src ip 10.4.0.0/20 and not flags R",
  "first seen > 2024-07-11T01:30 and src ip 10.4.*.* and port 443",
  "bytes > 1k and src ip 10.4.0.1 and dst port 137", "packets < 3 and proto udp and not port 53",
  "flags S and flags A and not flags R and proto tcp", "(port 80 or port 443) and src ip 10.4.0.2 and proto tcp",
  "src ip 10.4.0.1 and (dst port 53 or dst ip 10.5.5.*) and not proto tcp",
  /* address lists: merged patterns (one differing octet), duplicates, wildcards, v4 with v6 */
  "ip in [10.4.0.1 10.4.0.2 10.4.0.3]", "src ip in [10.4.0.1 10.4.1.1 10.4.0.1]", "ip in [10.4.0.1 10.4.1.2]",
  "ip in [10.4.0.* 10.4.0.5 10.4.1.5]", "ip in [10.4.0.1 2001:db8::/32 10.4.0.2]",
  "dst ip in [10.5.5.1 10.5.5.2 10.5.5.3] and proto udp", "ip in [10.4.0.1 10.4.0.2 10.4.0.3] and proto udp",
  "src ip in [10.4.0.1 10.4.0.2] and dst ip in [10.5.5.1 10.5.5.3] and proto tcp",
  "not ip in [10.4.0.1 10.4.0.2 10.4.0.3] and port 80",
  /* a few values ANDed with a selective operand: distributed over the values */
  "src ip 10.4.0.1 and dst port in [80 443 53]", "dst port in [443 53 137 445] and src ip 10.4.0.2 and proto tcp",
  "src ip 10.4.0.1 and dst ip 10.5.5.1,2,3", "src ip 10.4.3.1 and dst port in [80 443]",
};

static void check_filter(const char *f, const ba_query_exec_opts_t *base, const char *what) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  ba_query_set_now(q, BASE_NS + 3 * HOUR_NS);
  if (ba_query_compile(q, f) != 0) fail_msg("'%s': %s", f, ba_query_errmsg(q));
  /* the in-memory oracle */
  idlist_t mem = {0}, idx = {0}, scan = {0};
  uint64_t ws = base->start_ns, we = base->end_ns ? base->end_ns : UINT64_MAX;
  for (size_t i = 0; i < F.g.n; i++) {
    const ba_record_t *x = &F.g.recs[i];
    if (x->first_ns >= ws && x->first_ns < we && ba_query_match(q, x)) idl_push(&mem, x->first_ns);
  }
  ba_query_exec_opts_t o = *base;
  o.out_cols = BA_COL_FIRST;
  ba_query_stats_t s1, s2;
  assert_int_equal(ba_query_run(q, F.st, &o, collect, &idx, &s1), 0);
  /* every column out: the residual check runs before materialization (residual.c); same rows, same order */
  idlist_t wide = {0};
  ba_query_exec_opts_t ow = o;
  ow.out_cols = BA_COL_ALL & ~BA_COL_FRAME;
  assert_int_equal(ba_query_run(q, F.st, &ow, collect, &wide, NULL), 0);
  if (wide.n != idx.n || (idx.n && memcmp(wide.v, idx.v, idx.n * 8)))
    fail_msg("'%s' (%s): all columns %zu rows, first only %zu", f, what, wide.n, idx.n);
  free(wide.v);
  ba_query_exec_opts_t oc = o;
  oc.count_only = 1;
  idlist_t dummy = {0};
  ba_query_stats_t s3;
  assert_int_equal(ba_query_run(q, F.st, &oc, collect, &dummy, &s3), 0);
  free(dummy.v);
  o.force_scan = 1;
  assert_int_equal(ba_query_run(q, F.st, &o, collect, &scan, &s2), 0);
  /* index and scan deliver the same rows in the same order; from clustered
   * segments in time order: the rows of each segment ascend, so the output
   * has at most one descent per segment boundary (segments of one slice
   * overlap in time; arrival order here has thousands) */
  if (idx.n == scan.n && idx.n && memcmp(idx.v, scan.v, idx.n * 8))
    fail_msg("'%s' (%s): index and scan rows in another order", f, what);
  size_t descents = 0;
  int clu = store_clustered(F.st);
  for (size_t i = 1; clu && i < idx.n; i++) descents += idx.v[i] < idx.v[i - 1];
  if (descents >= ba_store_segment_count(F.st))
    fail_msg("'%s' (%s): %zu descents in the first times of %zu segments' rows", f, what, descents,
             ba_store_segment_count(F.st));
  if (mem.n) qsort(mem.v, mem.n, sizeof(uint64_t), cmp_u64);
  if (idx.n) qsort(idx.v, idx.n, sizeof(uint64_t), cmp_u64);
  if (scan.n) qsort(scan.v, scan.n, sizeof(uint64_t), cmp_u64);
  if (scan.n != mem.n || (mem.n && memcmp(scan.v, mem.v, mem.n * 8)))
    fail_msg("'%s' (%s): scan %zu rows, in-memory %zu", f, what, scan.n, mem.n);
  if (idx.n != mem.n || (mem.n && memcmp(idx.v, mem.v, mem.n * 8)))
    fail_msg("'%s' (%s): index %zu rows, scan %zu", f, what, idx.n, mem.n);
  assert_true(s1.rows_candidate >= s1.rows_matched);
  if (getenv("BA_QUERY_VERBOSE"))
    print_message("%-60s %-22s matched %6zu candidates %6llu of %6llu, blocks %llu\n", f, what, idx.n,
                  (unsigned long long)s1.rows_candidate, (unsigned long long)s1.rows_total,
                  (unsigned long long)s1.blocks_read);
  assert_int_equal(s1.rows_matched, idx.n);
  if (s3.rows_matched != idx.n) fail_msg("'%s' (%s): count_only %llu, index rows %zu", f, what,
                                         (unsigned long long)s3.rows_matched, idx.n);
  free(mem.v);
  free(idx.v);
  free(scan.v);
  ba_query_free(q);
}

/* Fully indexed filters must be answered from the bitmaps alone: with
 * count_only no block is read. */
static void check_exact(void) {
  static const char *const exact[] = {
    "ip in [10.4.0.1, 10.4.0.2, 192.168.0.7]", "src ip 10.4.*.* and not dst port 137", "ipv6 or proto udp",
    "flags S and not flags AFRPU", "port > 1023 and src net 10.4.0.0/20", "first seen >= 2024-07-11T01:00",
    "not (ip 10.4.0.1 or dst ip in [10.5.5.0/28 172.16.0.1])",
    "src ip 10.4.0.1 and dst port 443 and proto tcp", "ip in [10.4.0.1 10.4.0.2 10.4.0.3] and proto udp",
    "src ip 10.4.0.1 and src ip 10.4.0.2", "proto tcp and flags A and src net 10.4.0.0/16 and dst port < 1024",
  };
  for (size_t i = 0; i < NELEM(exact); i++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, exact[i]), 0);
    ba_query_exec_opts_t o;
    ba_query_exec_opts_init(&o);
    o.count_only = 1;
    idlist_t got = {0};
    ba_query_stats_t s;
    assert_int_equal(ba_query_run(q, F.st, &o, collect, &got, &s), 0);
    if (s.blocks_read || got.n) fail_msg("'%s' is not answered from the index (%llu blocks read)", exact[i],
                                         (unsigned long long)s.blocks_read);
    free(got.v);
    ba_query_free(q);
  }
}

/* ba_segment_index_range (binary search in the directory) against a filter
 * over ba_segment_index_values, also after ba_segment_release. */
static void check_index_range(void) {
  ba_rng_t r;
  ba_rng_seed(&r, 7);
  static uint32_t all[70000], got[70000], bytes[70000];
  for (size_t si = 0; si < ba_store_segment_count(F.st); si++) {
    ba_segment_t *seg;
    assert_int_equal(ba_store_segment(F.st, si, &seg), 0);
    for (int pass = 0; pass < 2; pass++) {
      for (int a = 0; a < BA_ATTR_COUNT; a++) {
        size_t n;
        assert_int_equal(ba_segment_index_values(seg, (ba_attr_t)a, all, NELEM(all), &n), 0);
        assert_true(n <= NELEM(all));
        for (int k = 0; k < 40; k++) {
          uint32_t lo, hi;
          if (k == 0) lo = 0, hi = UINT32_MAX;
          else if (k == 1 && n) lo = hi = all[n / 2];
          else if (k == 2 && n) lo = all[0] + 1, hi = all[n - 1] - 1;
          else {
            lo = (uint32_t)ba_rng_below(&r, 70000);
            hi = lo + (uint32_t)ba_rng_below(&r, k % 2 ? 300 : 70000);
            if (k % 5 == 0) hi = lo - 1; /* empty */
          }
          size_t m, want = 0;
          assert_int_equal(ba_segment_index_range(seg, (ba_attr_t)a, lo, hi, got, bytes, NELEM(got), &m), 0);
          for (size_t i = 0; i < n; i++) {
            if (all[i] < lo || all[i] > hi) continue;
            assert_true(want < m);
            assert_int_equal(got[want], all[i]);
            assert_true(bytes[want] > 0);
            want++;
          }
          assert_int_equal(m, want);
          size_t cnt;
          assert_int_equal(ba_segment_index_range(seg, (ba_attr_t)a, lo, hi, NULL, NULL, 0, &cnt), 0);
          assert_int_equal(cnt, m);
        }
      }
      ba_segment_release(seg);
    }
  }
}

/* Ports held by few rows are folded into bins (doc/format.md §7.4): the
 * store has bins, and port filters that hit folded ports, whole bins, parts
 * of bins, their complements and mixes with exact ports give the scan's
 * rows; those covering whole bins only stay answered from the index. */
static void check_port_bins(const ba_query_exec_opts_t *o) {
  size_t nbins = 0;
  for (size_t i = 0; i < ba_store_segment_count(F.st); i++) {
    ba_segment_t *seg;
    assert_int_equal(ba_store_segment(F.st, i, &seg), 0);
    for (int a = BA_ATTR_SRC_PORT_BIN; a <= BA_ATTR_DST_PORT_BIN; a++) {
      size_t n = 0;
      assert_int_equal(ba_segment_index_range(seg, (ba_attr_t)a, 0, UINT32_MAX, NULL, NULL, 0, &n), 0);
      assert_true(n <= BA_PORT_NBINS);
      nbins += n;
    }
    ba_segment_release(seg);
  }
  assert_true(nbins > 0);
  static const char *const f[] = {
      "src port 5000", "dst port 40000", "src port 40001 or dst port 7", "port 1023", "port 1024",
      "src port in [1024-4095]", "src port in [1000-5000]", "dst port > 60000", "not src port 40000",
      "not (dst port in [1024-4095])", "src port 80 or src port 50000", "dst port in [80 443 33333 1024-1100]",
      "src port 50000 and dst port 80", "not port > 1023", "src port < 1024 and dst port > 1023",
  };
  for (size_t i = 0; i < NELEM(f); i++) check_filter(f[i], o, "port bins");
  /* No partially covered bin: answered from the bitmaps alone. */
  static const char *const whole[] = {"src port > 1023", "dst port < 1024", "src port in [4096-8191] or dst port in [1024-4095]"};
  for (size_t i = 0; i < NELEM(whole); i++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, whole[i]), 0);
    ba_query_exec_opts_t co = *o;
    co.count_only = 1;
    idlist_t got = {0};
    ba_query_stats_t st;
    assert_int_equal(ba_query_run(q, F.st, &co, collect, &got, &st), 0);
    if (st.blocks_read || got.n) fail_msg("'%s' is not answered from the index", whole[i]);
    free(got.v);
    ba_query_free(q);
  }
}

static void run_table(ba_codec_t codec, uint32_t block_rows, int cluster) {
  build_store(codec, block_rows);
  if (cluster) {
    ba_store_close(F.st);
    size_t n = 0;
    char err[256] = "";
    assert_int_equal(ba_store_cluster(F.dir, 2, 0, NULL, NULL, &n, err, sizeof err), BA_OK);
    assert_true(n >= NSLICES);
    assert_int_equal(ba_store_open(F.dir, &F.st), 0);
  }
  check_index_range();
  check_exact();
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  for (size_t i = 0; i < NELEM(filters); i++) check_filter(filters[i], &o, "reduction, 1 thread");
  check_port_bins(&o);
  if (codec == BA_CODEC_WAH64) {
    /* two threads: segments planned ahead by a worker, delivered in order */
    o.threads = 2;
    for (size_t i = 0; i < NELEM(filters); i++) check_filter(filters[i], &o, "2 threads");
    o.threads = 1;
  }
  /* strategies and threads on the range-heavy filters */
  static const char *const ranges[] = {"port > 1023", "port in [1024-2048, 8080]", "src ip 10.4.0-15,33.*",
                                       "first seen > 2024-07-11T01:30", "not flags SA"};
  for (int st = 0; st < 4; st++)
    for (int th = 1; th <= 2; th++) {
      o.strategy = (ba_range_strategy_t)st;
      o.threads = th;
      for (size_t i = 0; i < NELEM(ranges); i++) check_filter(ranges[i], &o, "strategy/threads");
    }
  /* time windows: inside a slice, across slices, on bin edges, empty */
  static const struct { uint64_t a, b; } win[] = {
    {BASE_NS + HOUR_NS / 2 + 7000000000ull, BASE_NS + HOUR_NS + 60ull * 1000000000ull},
    {BASE_NS + 60ull * 1000000000ull, BASE_NS + 120ull * 1000000000ull},
    {BASE_NS + 2 * HOUR_NS + 1, 0},
    {BASE_NS + 10 * HOUR_NS, BASE_NS + 11 * HOUR_NS},
  };
  ba_query_exec_opts_init(&o);
  for (size_t k = 0; k < NELEM(win); k++) {
    o.start_ns = win[k].a;
    o.end_ns = win[k].b;
    check_filter("any", &o, "window");
    check_filter("src ip 10.4.*.* and port > 1023", &o, "window");
    check_filter("not proto tcp", &o, "window");
    check_filter("bytes > 10k", &o, "window");
  }
  ba_store_close(F.st);
  F.st = NULL;
}

static void test_wah64(void **state) {
  (void)state;
  run_table(BA_CODEC_WAH64, 700, 0);
}

static void test_compax(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  run_table(BA_CODEC_COMPAX, 4000, 0);
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

/* The same table on a clustered copy (reindex --cluster, PLWAH, small
 * groups so a host's rows span few of many), with at most 2,500 records
 * held for the time sort (the CLI tests cover the one-buffer case). */
static void test_clustered(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  query_set_order_max(2500); /* records delivered in slabs of first-time ranges (order.c) */
  run_table(BA_CODEC_PLWAH, 500, 1);
  query_set_order_max(UINT64_C(1) << 21);
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

/* Damage with two threads: a segment whose index directory or bitmaps are
 * damaged is answered by a scan, a truncated one is skipped, the others are
 * planned by either thread; results equal the clean store's. */
typedef struct warnlog {
  int n;
} warnlog_t;
static void on_warn(void *ctx, const char *msg) {
  (void)msg;
  ((warnlog_t *)ctx)->n++;
}

static void run_ids(ba_store_t *st, const char *f, int threads, idlist_t *out, ba_query_stats_t *s, warnlog_t *w) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, f), 0);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.out_cols = BA_COL_FIRST;
  o.threads = threads;
  o.warn = on_warn;
  o.warn_ctx = w;
  assert_int_equal(ba_query_run(q, st, &o, collect, out, s), 0);
  if (out->n) qsort(out->v, out->n, sizeof(uint64_t), cmp_u64);
  ba_query_free(q);
}

static void damage_file(const char *path, int mode) {
  uint64_t index_off, dir_off, table_off, len;
  ba_test_seg_offsets(path, &index_off, &dir_off, &table_off, &len);
  assert_true(index_off < dir_off && dir_off < table_off && table_off <= len);
  uint64_t lo = mode == 0 ? dir_off + 40 : index_off, hi = mode == 0 ? table_off : dir_off;
  ba_test_flip_bytes(path, lo, hi, mode == 0 ? hi : 29);
}

static void test_damage_threads(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  build_store(BA_CODEC_PLWAH, 1000);
  static const char *const fl[] = {"dst port 443 and src ip 10.4.*.*", "proto udp", "any",
                                   "ip in [10.4.0.1 10.4.0.2] or port 53"};
  size_t nseg = ba_store_segment_count(F.st);
  idlist_t want[NELEM(fl)];
  for (size_t k = 0; k < NELEM(fl); k++) {
    memset(&want[k], 0, sizeof(want[k]));
    ba_query_stats_t s;
    warnlog_t w = {0};
    run_ids(F.st, fl[k], 1, &want[k], &s, &w);
    assert_int_equal(w.n, 0);
  }
  const char *victim = ba_store_segment_name(F.st, nseg / 2);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", F.dir, victim);
  ba_store_close(F.st);
  F.st = NULL;
  for (int mode = 0; mode < 2; mode++) {
    damage_file(path, mode); /* mode 1 after mode 0: both damaged */
    assert_int_equal(ba_store_open(F.dir, &F.st), 0);
    for (size_t k = 0; k < NELEM(fl); k++) {
      idlist_t got = {0};
      ba_query_stats_t s;
      warnlog_t w = {0};
      run_ids(F.st, fl[k], 2, &got, &s, &w);
      if (got.n != want[k].n || (got.n && memcmp(got.v, want[k].v, got.n * 8)))
        fail_msg("damaged index, mode %d, '%s': %zu rows, clean %zu", mode, fl[k], got.n, want[k].n);
      assert_true(w.n >= 1 && s.segments_damaged >= 1);
      free(got.v);
    }
    ba_store_close(F.st);
    F.st = NULL;
  }
  /* truncated: skipped, the others answer */
  assert_int_equal(truncate(path, 100), 0);
  assert_int_equal(ba_store_open(F.dir, &F.st), 0);
  idlist_t got = {0};
  ba_query_stats_t s;
  warnlog_t w = {0};
  run_ids(F.st, "any", 2, &got, &s, &w);
  assert_true(w.n >= 1 && s.segments_damaged == 1 && got.n < want[2].n);
  size_t j = 0;
  for (size_t i = 0; i < got.n; i++) {
    while (j < want[2].n && want[2].v[j] != got.v[i]) j++;
    assert_true(j < want[2].n); /* every row is a row of the clean store */
  }
  free(got.v);
  for (size_t k = 0; k < NELEM(fl); k++) free(want[k].v);
  ba_store_close(F.st);
  F.st = NULL;
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

/* Fetch on two threads (fetch_par.c): one segment of 64-row groups, so a
 * filter touches enough groups for the worker to take part. Every record
 * (all columns), its order and the run's counts are those of one thread,
 * and the rows equal the linear scan's; the same after column blocks are
 * damaged (the damaged groups' rows skipped and counted alike, the store's
 * message naming the same block). */
static void run_recs(const char *f, int threads, int scan, ba_test_recs_t *out, ba_query_stats_t *s) {
  ba_test_query_recs(F.st, f, threads, scan, out, s);
}

static void check_two(const char *f, char *msg1, char *msg2) {
  ba_test_recs_t one = {0}, two = {0}, scan = {0};
  ba_query_stats_t s1, s2, ss;
  run_recs(f, 1, 0, &one, &s1);
  if (msg1) snprintf(msg1, 512, "%s", ba_store_errmsg(F.st));
  run_recs(f, 2, 0, &two, &s2);
  if (msg2) snprintf(msg2, 512, "%s", ba_store_errmsg(F.st));
  run_recs(f, 1, 1, &scan, &ss);
  if (one.n != two.n || (one.n && memcmp(one.v, two.v, one.n * sizeof(ba_record_t))))
    fail_msg("'%s': one thread %zu records, two threads %zu (or different bytes)", f, one.n, two.n);
  assert_int_equal(s1.rows_matched, s2.rows_matched);
  assert_int_equal(s1.rows_damaged, s2.rows_damaged);
  assert_int_equal(s1.blocks_read, s2.blocks_read);
  /* the scan skips the same damaged groups */
  if (s1.rows_damaged == 0) {
    assert_int_equal(scan.n, one.n);
    for (size_t i = 0; i < one.n; i++) assert_int_equal(scan.v[i].first_ns, one.v[i].first_ns);
  }
  free(one.v);
  free(two.v);
  free(scan.v);
}

static void test_fetch_two(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = BA_CODEC_PLWAH;
  o.block_rows = 64;
  o.slice_seconds = 3600;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(F.dir, &o, &w), 0);
  for (size_t i = 0; i < F.g.n; i++)
    if (F.g.recs[i].first_ns < BASE_NS + HOUR_NS) assert_int_equal(ba_store_writer_append(w, &F.g.recs[i], 1), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
  assert_int_equal(ba_store_open(F.dir, &F.st), 0);
  assert_int_equal(ba_store_segment_count(F.st), 1);
  static const char *const fl[] = {"any", "proto udp", "src ip 10.4.0.1", "dst port 443 and src ip 10.4.*.*",
                                   "bytes > 1000 and proto tcp", "ip in [10.4.0.1 10.4.0.2] or port 53", "ipv6"};
  for (size_t k = 0; k < NELEM(fl); k++) check_two(fl[k], NULL, NULL);
  /* damage: a bit flipped in every 40th kB of the row groups */
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", F.dir, ba_store_segment_name(F.st, 0));
  ba_store_close(F.st);
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  for (long pos = 20000; pos < 200000; pos += 40000) {
    uint8_t b;
    assert_int_equal(fseek(fp, pos, SEEK_SET), 0);
    assert_int_equal(fread(&b, 1, 1, fp), 1);
    b ^= 0x04;
    assert_int_equal(fseek(fp, pos, SEEK_SET), 0);
    assert_int_equal(fwrite(&b, 1, 1, fp), 1);
  }
  fclose(fp);
  assert_int_equal(ba_store_open(F.dir, &F.st), 0);
  char m1[512], m2[512];
  ba_test_recs_t all = {0};
  ba_query_stats_t s;
  run_recs("any", 2, 0, &all, &s);
  assert_true(s.rows_damaged > 0);
  free(all.v);
  for (size_t k = 0; k < NELEM(fl); k++) {
    check_two(fl[k], m1, m2);
    assert_string_equal(m1, m2);
  }
  assert_non_null(strstr(m1, "column"));
  ba_store_close(F.st);
  F.st = NULL;
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

/* limit and explain */
static void test_limit_explain(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  build_store(BA_CODEC_PLWAH, 1000);
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, "proto tcp"), 0);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.limit = 17;
  idlist_t got = {0};
  ba_query_stats_t s;
  assert_int_equal(ba_query_run(q, F.st, &o, collect, &got, &s), 0);
  assert_int_equal(got.n, 17);
  free(got.v);
  /* the same with two threads: plans in flight when the limit stops the run */
  o.threads = 2;
  idlist_t got2 = {0};
  assert_int_equal(ba_query_run(q, F.st, &o, collect, &got2, &s), 0);
  assert_int_equal(got2.n, 17);
  free(got2.v);
  ba_store_close(F.st);
  F.st = NULL;
  ba_query_free(q);
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

/* An AND of a selective operand with a few values of one attribute is
 * computed as an OR of per-value ANDs ("each(" in the plan): the rows equal
 * the linear scan's (check_filter), and the plan shows the path ran. */
static void explain_cat(void *ctx, const char *line) {
  char *buf = ctx;
  size_t l = strlen(buf);
  snprintf(buf + l, 65536 - l, "%s\n", line);
}

static void test_and_each(void **state) {
  (void)state;
  char *d = F.dir;
  F.dir = ba_test_mkdtemp();
  build_store(BA_CODEC_PLWAH, 1000);
  static const char *const fs[] = {
      "src ip 192.168.1.7 and dst port in [80 443 53]", "src ip 192.168.0.77 and dst port in [80 443 53 137]",
      "src ip 10.4.30.1 and dst port in [80 443]", "dst ip 10.5.5.200 and src port in [80 443 53]",
      "src ip 192.168.2.9 and dst ip 10.5.5.1,2,3"};
  /* PLWAH: dense literal operands ANDed and counted where they are read */
  static const char *const dense[] = {"src net 10.4.0.0/16 and dst port 137", "src ip 10.4.*.* and proto udp",
                                      "proto tcp and src net 10.4.0.0/16 and dst port 445", "src ip 10.4.0.1",
                                      "src ip 10.4.1.*", "dst ip 10.5.5.3"};
  for (size_t i = 0; i < NELEM(dense); i++) {
    ba_query_exec_opts_t o;
    ba_query_exec_opts_init(&o);
    check_filter(dense[i], &o, "dense");
  }
  char *plan = calloc(1, 65536);
  assert_non_null(plan);
  size_t each = 0, rows = 0;
  for (size_t i = 0; i < NELEM(fs); i++) {
    ba_query_exec_opts_t o;
    ba_query_exec_opts_init(&o);
    check_filter(fs[i], &o, "each");
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, fs[i]), 0);
    plan[0] = 0;
    o.explain = explain_cat;
    o.explain_ctx = plan;
    o.explain_only = 1;
    ba_query_stats_t s;
    idlist_t none = {0}, got = {0};
    assert_int_equal(ba_query_run(q, F.st, &o, collect, &none, &s), 0);
    o.explain = NULL;
    o.explain_only = 0;
    assert_int_equal(ba_query_run(q, F.st, &o, collect, &got, &s), 0);
    if (strstr(plan, " each(")) {
      each++;
      rows += got.n;
    }
    printf("# %s: %zu rows, %s\n", fs[i], got.n, strstr(plan, " each(") ? "distributed" : "not distributed");
    free(none.v);
    free(got.v);
    ba_query_free(q);
  }
  assert_true(each > 0 && rows > 0);
  free(plan);
  ba_store_close(F.st);
  F.st = NULL;
  ba_test_rmtree(F.dir);
  free(F.dir);
  F.dir = d;
}

int main(void) {
  query_set_par_min_rows(0); /* the worker path on these small stores too */
  ba_rd_set_map_min(0);      /* index records mapped from the file, as large ones are */
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_wah64),
    cmocka_unit_test(test_compax),
    cmocka_unit_test(test_clustered),
    cmocka_unit_test(test_limit_explain),
    cmocka_unit_test(test_and_each),
    cmocka_unit_test(test_damage_threads),
    cmocka_unit_test(test_fetch_two),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
