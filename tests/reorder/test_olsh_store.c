/* reorder/ + archive/: a store written with oLSH holds exactly the records of
 * the same input written in arrival order, slice by slice, and every index
 * lookup (single values and conjunctions) returns the same set of records
 * from both stores, which is also the set a linear scan of the input finds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testsupport.h"
#include "bitarc/query.h"
#include "common/common.h"

#define SLICE_S 3600u
#define NREC 24000

static uint64_t t0(void) { return 1763769600ull * 1000000000ull; } /* an hour boundary */

/* Skewed flows and packets over three slices, roughly in time order; the
 * record's id is kept in src_as (archived, not indexed). */
static ba_record_t *gen(size_t n, uint8_t **frames_out) {
  ba_rng_t rng;
  ba_rng_seed(&rng, 4242);
  ba_record_t *r = calloc(n, sizeof *r);
  uint8_t *frames = malloc(n * 300 + 1);
  size_t fo = 0;
  static const uint16_t svc[] = {80, 443, 53, 22, 445, 137, 8080, 123};
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &r[i];
    /* time order with up to 10 minutes of disorder (late records join their slice) */
    uint64_t span = 3ull * SLICE_S * 1000000000ull - 600000000000ull;
    x->first_ns = t0() + span / n * i + ba_rng_below(&rng, 600000000000ull);
    x->last_ns = x->first_ns + ba_rng_below(&rng, 2000000000ull);
    x->src_as = (uint32_t)i;
    x->ipver = ba_rng_below(&rng, 10) ? 4 : 6;
    if (x->ipver == 4) {
      ba_addr_set_v4(x->src, 0x0A040000u | (uint32_t)ba_rng_zipf(&rng, 3000, 1.1));
      ba_addr_set_v4(x->dst, 0xC0A80000u | (uint32_t)ba_rng_zipf(&rng, 400, 1.2));
    } else {
      x->src[0] = 0x20; x->src[1] = 0x01;
      x->src[15] = (uint8_t)ba_rng_below(&rng, 16);
      x->dst[0] = 0x20; x->dst[15] = (uint8_t)ba_rng_next(&rng);
    }
    x->dst_port = svc[ba_rng_zipf(&rng, 8, 1.0)];
    x->src_port = (uint16_t)(32768 + ba_rng_below(&rng, 30000));
    x->proto = x->dst_port == 53 || x->dst_port == 123 ? 17 : 6;
    x->tcp_flags = x->proto == 6 ? (uint8_t)ba_rng_below(&rng, 32) : 0;
    x->packets = 1 + ba_rng_zipf(&rng, 1000, 1.3);
    x->bytes = x->packets * 60;
    if (ba_rng_below(&rng, 3) == 0) {
      x->kind = BA_REC_PACKET;
      x->packets = 1;
      x->caplen = (uint32_t)ba_rng_below(&rng, 300);
      x->wirelen = x->caplen + 10;
      x->linktype = 1;
      for (uint32_t k = 0; k < x->caplen; k++) frames[fo + k] = (uint8_t)ba_rng_next(&rng);
      x->frame = x->caplen ? frames + fo : NULL;
      fo += x->caplen;
    } else {
      x->kind = BA_REC_FLOW;
      ba_addr_set_v4(x->exporter, 0x7F000001u);
    }
  }
  *frames_out = frames;
  return r;
}

static void write_store(const char *dir, const ba_record_t *r, size_t n, ba_reorder_t reorder) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 500;
  o.slice_seconds = SLICE_S;
  o.reorder = reorder;
  o.olsh_mem_records = 3000; /* purges happen: 8000 records per slice */
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  for (size_t i = 0; i < n; i += 777) assert_int_equal(ba_store_writer_append(w, r + i, BA_MIN(777, n - i)), BA_OK);
  ba_store_writer_stats_t st;
  ba_store_writer_get_stats(w, &st);
  assert_int_equal(st.records_in, n);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

/* Records delivered by the store, by id, with their row. */
typedef struct {
  const ba_record_t *in;
  size_t nin;
  uint64_t seg_start, seg_end;
  uint32_t *ids;
  size_t n, cap;
} got;

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  got *g = ctx;
  for (size_t i = 0; i < n; i++) {
    uint32_t id = recs[i].src_as;
    assert_true(id < g->nin);
    const ba_record_t *want = &g->in[id];
    /* every archived field comes back */
    ba_record_t a = recs[i], b = *want;
    a.frame = b.frame = NULL;
    assert_memory_equal(&a, &b, sizeof a);
    if (want->caplen) assert_memory_equal(recs[i].frame, want->frame, want->caplen);
    assert_true(want->first_ns >= g->seg_start && want->first_ns < g->seg_end);
    if (g->n == g->cap) {
      g->cap = g->cap ? 2 * g->cap : 256;
      g->ids = realloc(g->ids, g->cap * sizeof *g->ids);
    }
    g->ids[g->n++] = id;
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Ids of the rows set in bm, sorted. */
static void ids_of(ba_segment_t *seg, const ba_bitmap_t *bm, got *g) {
  size_t n = 0;
  assert_int_equal(ba_bitmap_to_rows(bm, NULL, 0, &n), BA_OK);
  uint64_t *rows = malloc((n ? n : 1) * sizeof *rows);
  size_t n2;
  assert_int_equal(ba_bitmap_to_rows(bm, rows, n, &n2), BA_OK);
  g->n = 0;
  uint64_t dmg = 0;
  assert_int_equal(ba_segment_read_rows(seg, rows, n, BA_COL_ALL, collect, g, &dmg), BA_OK);
  assert_int_equal(dmg, 0);
  assert_int_equal(g->n, n);
  qsort(g->ids, g->n, sizeof *g->ids, cmp_u32);
  free(rows);
}

/* The attribute value of a record as the index defines it; -1 = not indexed. */
static int64_t attr_value(const ba_record_t *r, ba_attr_t a, uint64_t seg_start, uint32_t bin_s) {
  int v4 = r->ipver == 4;
  switch (a) {
    case BA_ATTR_SRC_IP0: case BA_ATTR_SRC_IP1: case BA_ATTR_SRC_IP2: case BA_ATTR_SRC_IP3:
      return v4 ? r->src[12 + (a - BA_ATTR_SRC_IP0)] : -1;
    case BA_ATTR_DST_IP0: case BA_ATTR_DST_IP1: case BA_ATTR_DST_IP2: case BA_ATTR_DST_IP3:
      return v4 ? r->dst[12 + (a - BA_ATTR_DST_IP0)] : -1;
    case BA_ATTR_SRC_PORT: return r->src_port;
    case BA_ATTR_DST_PORT: return r->dst_port;
    case BA_ATTR_PROTO: return r->proto;
    case BA_ATTR_TCP_FLAGS: return r->tcp_flags;
    case BA_ATTR_TIME_BIN: return (int64_t)((r->first_ns - seg_start) / ((uint64_t)bin_s * 1000000000ull));
    case BA_ATTR_IPVER: return r->ipver;
    case BA_ATTR_SRC_V6NET: return r->ipver == 6 ? (int64_t)ba_test_v6_hash(r->src, 6) : -1;
    case BA_ATTR_DST_V6NET: return r->ipver == 6 ? (int64_t)ba_test_v6_hash(r->dst, 6) : -1;
    case BA_ATTR_SRC_V6HOST: return r->ipver == 6 ? (int64_t)ba_test_v6_hash(r->src, 16) : -1;
    case BA_ATTR_DST_V6HOST: return r->ipver == 6 ? (int64_t)ba_test_v6_hash(r->dst, 16) : -1;
    default: return -1;
  }
}

typedef struct { ba_attr_t a; uint32_t v; } term;

/* Linear scan of the input: ids in [start, end) matching every term. */
static size_t reference(const ba_record_t *r, size_t n, uint64_t start, uint64_t end, uint32_t bin_s,
                        const term *t, size_t nt, uint32_t *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (r[i].first_ns < start || r[i].first_ns >= end) continue;
    size_t k = 0;
    while (k < nt && attr_value(&r[i], t[k].a, start, bin_s) == (int64_t)t[k].v) k++;
    if (k == nt) out[m++] = (uint32_t)i;
  }
  return m;
}

static ba_bitmap_t *and_terms(ba_segment_t *seg, const term *t, size_t nt) {
  ba_bitmap_t *acc = NULL;
  for (size_t k = 0; k < nt; k++) {
    ba_bitmap_t *b;
    assert_int_equal(ba_segment_index(seg, t[k].a, t[k].v, &b), BA_OK);
    if (!acc) {
      acc = b;
      continue;
    }
    ba_bitmap_t *x;
    assert_int_equal(ba_bitmap_and(acc, b, ba_bitmap_codec(b), &x), BA_OK);
    ba_bitmap_free(acc);
    ba_bitmap_free(b);
    acc = x;
  }
  return acc;
}

/* One input, written once in arrival order and once through oLSH. */
typedef struct {
  ba_record_t *in;
  uint8_t *frames;
  char *dir;
  ba_store_t *sa, *sb;
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  fx->in = gen(NREC, &fx->frames);
  fx->dir = ba_test_mkdtemp();
  char da[4096], db[4096];
  snprintf(da, sizeof da, "%s/plain", fx->dir);
  snprintf(db, sizeof db, "%s/olsh", fx->dir);
  write_store(da, fx->in, NREC, BA_REORDER_NONE);
  write_store(db, fx->in, NREC, BA_REORDER_OLSH);
  if (ba_store_open(da, &fx->sa) != BA_OK || ba_store_open(db, &fx->sb) != BA_OK) return -1;
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  ba_store_close(fx->sa);
  ba_store_close(fx->sb);
  ba_test_rmtree(fx->dir);
  free(fx->dir);
  free(fx->in);
  free(fx->frames);
  free(fx);
  return 0;
}

static void test_same_answers(void **state) {
  fixture *fx = *state;
  const ba_record_t *in = fx->in;
  ba_store_t *sa = fx->sa, *sb = fx->sb;
  size_t nseg = ba_store_segment_count(sa);
  assert_int_equal(nseg, 3);
  assert_int_equal(ba_store_segment_count(sb), nseg);
  uint32_t *want = malloc(NREC * sizeof *want);
  got ga = {.in = in, .nin = NREC}, gb = {.in = in, .nin = NREC};
  size_t total = 0, reordered = 0, queries = 0;
  ba_rng_t rng;
  ba_rng_seed(&rng, 77);
  for (size_t s = 0; s < nseg; s++) {
    ba_segment_t *A, *B;
    ba_segment_info_t ia, ib;
    assert_int_equal(ba_store_segment(sa, s, &A), BA_OK);
    assert_int_equal(ba_store_segment(sb, s, &B), BA_OK);
    assert_int_equal(ba_segment_info(A, &ia), BA_OK);
    assert_int_equal(ba_segment_info(B, &ib), BA_OK);
    assert_int_equal(ia.reorder, BA_REORDER_NONE);
    assert_int_equal(ib.reorder, BA_REORDER_OLSH);
    assert_true(ia.start_ns == ib.start_ns && ia.end_ns == ib.end_ns);
    assert_int_equal(ia.rows, ib.rows);
    ga.seg_start = gb.seg_start = ia.start_ns;
    ga.seg_end = gb.seg_end = ia.end_ns;

    /* The whole slice: the same multiset (ids are unique), in another order. */
    ga.n = gb.n = 0;
    assert_int_equal(ba_segment_scan(A, BA_COL_ALL, collect, &ga, NULL), BA_OK);
    assert_int_equal(ba_segment_scan(B, BA_COL_ALL, collect, &gb, NULL), BA_OK);
    assert_int_equal(ga.n, ia.rows);
    assert_int_equal(gb.n, ib.rows);
    for (size_t i = 0; i < ga.n; i++) reordered += ga.ids[i] != gb.ids[i];
    qsort(ga.ids, ga.n, sizeof *ga.ids, cmp_u32);
    qsort(gb.ids, gb.n, sizeof *gb.ids, cmp_u32);
    assert_memory_equal(ga.ids, gb.ids, ga.n * sizeof *ga.ids);
    size_t nref = reference(in, NREC, ia.start_ns, ia.end_ns, ia.time_bin_seconds, NULL, 0, want);
    assert_int_equal(nref, ga.n);
    assert_memory_equal(want, ga.ids, nref * sizeof *want);
    total += ga.n;

    /* Every value of every attribute (values sampled for the wide ones),
     * then random conjunctions of two and three terms. */
    term pool[4096];
    size_t npool = 0;
    for (int a = 0; a < BA_ATTR_COUNT; a++) {
      /* Port bins hold rows of several ports (their reference is in
       * test_store's ref_column); exact port bitmaps are compared here. */
      if (a == BA_ATTR_SRC_PORT_BIN || a == BA_ATTR_DST_PORT_BIN) continue;
      if (a == BA_ATTR_TIME_BIN) { /* reordered segments: zone maps answer time (format.md §7.2) */
        size_t nt = 1;
        assert_int_equal(ba_segment_index_values(B, (ba_attr_t)a, NULL, 0, &nt), BA_OK);
        assert_int_equal(nt, 0);
        continue;
      }
      size_t nv;
      assert_int_equal(ba_segment_index_values(A, (ba_attr_t)a, NULL, 0, &nv), BA_OK);
      uint32_t *vals = malloc((nv ? nv : 1) * sizeof *vals);
      size_t nv2, nvb;
      assert_int_equal(ba_segment_index_values(A, (ba_attr_t)a, vals, nv, &nv2), BA_OK);
      assert_int_equal(ba_segment_index_values(B, (ba_attr_t)a, NULL, 0, &nvb), BA_OK);
      assert_int_equal(nv, nvb);
      for (size_t k = 0; k < nv; k++) {
        if (nv > 60 && ba_rng_below(&rng, nv) >= 60) continue;
        term t = {(ba_attr_t)a, vals[k]};
        if (npool < BA_ARRAY_LEN(pool)) pool[npool++] = t;
      }
      free(vals);
    }
    for (size_t qi = 0; qi < npool + 300; qi++) {
      term t[3];
      size_t nt = qi < npool ? 1 : 2 + ba_rng_below(&rng, 2);
      if (qi < npool) t[0] = pool[qi];
      else
        for (size_t k = 0; k < nt; k++) t[k] = pool[ba_rng_below(&rng, npool)];
      ba_bitmap_t *ba = and_terms(A, t, nt), *bb = and_terms(B, t, nt);
      ids_of(A, ba, &ga);
      ids_of(B, bb, &gb);
      nref = reference(in, NREC, ia.start_ns, ia.end_ns, ia.time_bin_seconds, t, nt, want);
      assert_int_equal(ga.n, nref);
      assert_int_equal(gb.n, nref);
      assert_memory_equal(ga.ids, want, nref * sizeof *want);
      assert_memory_equal(gb.ids, want, nref * sizeof *want);
      ba_bitmap_free(ba);
      ba_bitmap_free(bb);
      queries++;
    }
  }
  assert_int_equal(total, NREC);
  assert_true(reordered > NREC / 2); /* oLSH did reorder */
  print_message("%zu index queries, same answers with and without oLSH\n", queries);
  free(ga.ids);
  free(gb.ids);
  free(want);
}

/* The query module on both stores: the same set of records, equal to the
 * records of the input the evaluator accepts (linear scan). */
typedef struct {
  uint32_t *ids;
  size_t n, cap;
} idset;

static int id_sink(void *ctx, const ba_record_t *recs, size_t n) {
  idset *g = ctx;
  for (size_t i = 0; i < n; i++) {
    if (g->n == g->cap) {
      g->cap = g->cap ? 2 * g->cap : 256;
      g->ids = realloc(g->ids, g->cap * sizeof *g->ids);
    }
    g->ids[g->n++] = recs[i].src_as;
  }
  return 0;
}

static void run_query(ba_store_t *s, ba_query_t *q, idset *g) {
  ba_query_exec_opts_t eo;
  ba_query_exec_opts_init(&eo);
  eo.out_cols = BA_COL_AS;
  ba_query_stats_t st;
  g->n = 0;
  assert_int_equal(ba_query_run(q, s, &eo, id_sink, g, &st), BA_OK);
  assert_int_equal(st.rows_damaged, 0);
  qsort(g->ids, g->n, sizeof *g->ids, cmp_u32);
}

static void test_same_query_results(void **state) {
  fixture *fx = *state;
  const ba_record_t *in = fx->in;
  ba_store_t *sa = fx->sa, *sb = fx->sb;
  static const char *const filters[] = {
      "src ip 10.4.0.1", "src ip 10.4.0.7 and dst port 443", "dst port 443", "proto udp",
      "src net 10.4.0.0/24 and dst port 53", "not dst port 80", "src port > 50000 and proto tcp",
      "dst host 192.168.0.3 or src port 40000", "ipv6", "any", "src ip 10.4.1.200 or dst ip 192.168.1.44",
      "flags S and not flags A", "dst net 192.168.0.0/28",
  };
  idset ga = {0}, gb = {0};
  uint32_t *want = malloc(NREC * sizeof *want);
  size_t nonempty = 0;
  for (size_t f = 0; f < BA_ARRAY_LEN(filters); f++) {
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), BA_OK);
    if (ba_query_compile(q, filters[f]) != BA_OK) fail_msg("filter does not compile: %s", filters[f]);
    run_query(sa, q, &ga);
    run_query(sb, q, &gb);
    size_t nw = 0;
    for (size_t i = 0; i < NREC; i++)
      if (ba_query_match(q, &in[i]) == 1) want[nw++] = (uint32_t)i;
    if (ga.n != nw || gb.n != nw)
      fail_msg("%s: %zu matches without oLSH, %zu with, %zu by linear scan", filters[f], ga.n, gb.n, nw);
    assert_memory_equal(ga.ids, want, nw * sizeof *want);
    assert_memory_equal(gb.ids, want, nw * sizeof *want);
    nonempty += nw > 0;
    ba_query_free(q);
  }
  assert_true(nonempty >= BA_ARRAY_LEN(filters) - 2);
  free(ga.ids);
  free(gb.ids);
  free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_same_answers), cmocka_unit_test(test_same_query_results)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
