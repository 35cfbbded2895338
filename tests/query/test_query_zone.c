/* Zone maps (doc/format.md §7.2): every segment path (writer, recovery,
 * reindex, oLSH) writes per-group min/max equal to a naive recomputation from
 * the linear scan; range predicates and time windows pruned by them give the
 * rows of the linear scan and of the in-memory evaluation, and prune (blocks
 * read) on clustered data; oLSH segments have no TIME_BIN; damaged ZONE and
 * ZONEDIR blocks are named by verify and never crash a query. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bitarc/query.h"
#include "bitarc/store.h"
#include "common/common.h"
#include "testsupport.h"
#include "query/query_internal.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define SEC 1000000000ull
#define HOUR_NS (3600ull * SEC)
#define BASE_NS (1720656000ull * SEC) /* 2024-07-11T00:00:00Z */

typedef struct {
  ba_record_t *r;
  size_t n;
} recs_t;

/* clustered: first_ns ascending over 3 hours, bytes growing with the row,
 * long durations in every fifth stretch of 2000 rows; otherwise random. */
static void gen(recs_t *g, size_t n, uint64_t seed, int clustered) {
  ba_rng_t rng;
  ba_rng_seed(&rng, seed);
  g->n = n;
  g->r = calloc(n, sizeof *g->r);
  assert_non_null(g->r);
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &g->r[i];
    x->kind = BA_REC_FLOW;
    x->ipver = 4;
    uint64_t t = clustered ? 3 * HOUR_NS * i / n : ba_rng_below(&rng, 3 * HOUR_NS);
    x->first_ns = BASE_NS + (t / 1000) * 1000 + (i % 1000); /* unique */
    int longd = clustered ? (i / 2000) % 5 == 0 : ba_rng_below(&rng, 5) == 0;
    x->last_ns = x->first_ns + (longd ? 60 * SEC + ba_rng_below(&rng, 600 * SEC) : ba_rng_below(&rng, 5 * SEC));
    if (ba_rng_below(&rng, 50) == 0) x->last_ns = x->first_ns; /* duration 0 */
    ba_addr_set_v4(x->src, 0x0A040000u | (uint32_t)ba_rng_below(&rng, 4096));
    ba_addr_set_v4(x->dst, 0xC0A80000u | (uint32_t)ba_rng_zipf(&rng, 4096, 1.1));
    x->proto = ba_rng_below(&rng, 4) ? 6 : 17;
    x->src_port = (uint16_t)(1024 + ba_rng_below(&rng, 60000));
    x->dst_port = (uint16_t)(ba_rng_below(&rng, 2) ? 443 : ba_rng_below(&rng, 1024));
    x->packets = 1 + ba_rng_zipf(&rng, 10000, 1.2);
    x->bytes = clustered ? 40 + i * 50 + ba_rng_below(&rng, 1000) : x->packets * (40 + ba_rng_below(&rng, 1460));
    if (ba_rng_below(&rng, 3) == 0) x->out_bytes = ba_rng_below(&rng, 1u << 20);
    ba_addr_set_v4(x->exporter, 0x7F000001);
  }
}

static void write_store(const char *dir, const recs_t *g, uint32_t block_rows, int olsh, int threads) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = block_rows;
  o.slice_seconds = 3600;
  o.time_bin_seconds = 60;
  o.threads = threads;
  o.codec = BA_CODEC_WAH64;
  if (olsh) {
    o.reorder = BA_REORDER_OLSH;
    o.olsh_mem_records = 5000;
  }
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), 0);
  for (size_t i = 0; i < g->n; i += 777)
    assert_int_equal(ba_store_writer_append(w, g->r + i, BA_MIN((size_t)777, g->n - i)), 0);
  assert_int_equal(ba_store_writer_close(w), 0);
}

/* ---------- zones against a naive recomputation ---------- */

typedef struct zref {
  uint64_t br, row;
  uint64_t *mn, *mx; /* [field * ngroups + g] */
  uint32_t ng;
} zref_t;

static uint64_t zval(const ba_record_t *x, int f) {
  switch (f) {
    case BA_ZF_FIRST: return x->first_ns;
    case BA_ZF_LAST: return x->last_ns;
    case BA_ZF_DURATION: return x->last_ns > x->first_ns ? x->last_ns - x->first_ns : 0;
    case BA_ZF_PACKETS: return x->packets;
    case BA_ZF_BYTES: return x->bytes;
    case BA_ZF_OUT_BYTES: return x->out_bytes;
    case BA_ZF_SRC_PORT: return x->src_port;
    case BA_ZF_DST_PORT: return x->dst_port;
    default: return x->proto;
  }
}

static int zref_sink(void *ctx, const ba_record_t *recs, size_t n) {
  zref_t *z = ctx;
  for (size_t i = 0; i < n; i++, z->row++) {
    uint64_t g = z->row / z->br;
    for (int f = 0; f < BA_ZF_COUNT; f++) {
      uint64_t v = zval(&recs[i], f);
      size_t k = (size_t)f * z->ng + g;
      if (z->row % z->br == 0 || v < z->mn[k]) z->mn[k] = v;
      if (z->row % z->br == 0 || v > z->mx[k]) z->mx[k] = v;
    }
  }
  return 0;
}

/* Every segment of dir has zone maps equal to the scan's; returns segments. */
static size_t check_zones(const char *dir, int want_tbin) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), 0);
  size_t ns = ba_store_segment_count(st);
  for (size_t i = 0; i < ns; i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &seg), 0);
    assert_int_equal(ba_segment_info(seg, &in), 0);
    zref_t z = {.br = in.block_rows, .ng = in.nblocks};
    z.mn = calloc((size_t)BA_ZF_COUNT * z.ng, 8);
    z.mx = calloc((size_t)BA_ZF_COUNT * z.ng, 8);
    uint64_t dmg = 0;
    assert_int_equal(ba_segment_scan(seg, BA_COL_ALL, zref_sink, &z, &dmg), 0);
    assert_int_equal(dmg, 0);
    assert_int_equal(z.row, in.rows);
    for (int f = 0; f < BA_ZF_COUNT; f++) {
      const uint64_t *mn, *mx;
      assert_int_equal(ba_segment_zone(seg, (ba_zfield_t)f, &mn, &mx), 0);
      assert_non_null(ba_zfield_name((ba_zfield_t)f));
      for (uint32_t g = 0; g < z.ng; g++) {
        if (mn[g] != z.mn[(size_t)f * z.ng + g] || mx[g] != z.mx[(size_t)f * z.ng + g])
          fail_msg("%s: zone %s of group %u: [%llu, %llu], scan [%llu, %llu]", in.name,
                   ba_zfield_name((ba_zfield_t)f), g, (unsigned long long)mn[g], (unsigned long long)mx[g],
                   (unsigned long long)z.mn[(size_t)f * z.ng + g], (unsigned long long)z.mx[(size_t)f * z.ng + g]);
      }
    }
    const uint64_t *a, *b;
    assert_int_equal(ba_segment_zone(seg, BA_ZF_COUNT, &a, &b), BA_ERR_INVALID);
    size_t ntb = 0;
    assert_int_equal(ba_segment_index_range(seg, BA_ATTR_TIME_BIN, 0, UINT32_MAX, NULL, NULL, 0, &ntb), 0);
    if (want_tbin) assert_true(ntb > 0);
    else assert_int_equal(ntb, 0);
    uint64_t nbad = 1;
    assert_int_equal(ba_segment_verify(seg, &nbad), 0);
    assert_int_equal(nbad, 0);
    free(z.mn);
    free(z.mx);
    ba_segment_release(seg);
  }
  ba_store_close(st);
  return ns;
}

/* ---------- queries against the oracles ---------- */

typedef struct {
  uint64_t *v;
  size_t n, cap;
} ids_t;

static int ids_sink(void *ctx, const ba_record_t *recs, size_t n) {
  ids_t *l = ctx;
  for (size_t i = 0; i < n; i++) {
    if (l->n == l->cap) {
      l->cap = l->cap ? 2 * l->cap : 1024;
      l->v = realloc(l->v, l->cap * 8);
      assert_non_null(l->v);
    }
    l->v[l->n++] = recs[i].first_ns;
  }
  return 0;
}

static int cmp64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Index rows == scan rows == in-memory rows, count_only agrees; *blocks gets
 * the row groups the index run read, *cblocks the count run's. */
static void check_q(const char *dir, const recs_t *g, const char *f, uint64_t ws, uint64_t we, int threads,
                    uint64_t *blocks, uint64_t *cblocks) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), 0);
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  ba_query_set_now(q, BASE_NS + 3 * HOUR_NS);
  if (ba_query_compile(q, f) != 0) fail_msg("'%s': %s", f, ba_query_errmsg(q));
  ids_t mem = {0}, idx = {0}, scan = {0}, dummy = {0};
  for (size_t i = 0; i < g->n; i++)
    if (g->r[i].first_ns >= ws && g->r[i].first_ns < (we ? we : UINT64_MAX) && ba_query_match(q, &g->r[i]))
      ids_sink(&mem, &g->r[i], 1);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.start_ns = ws;
  o.end_ns = we;
  o.threads = threads;
  o.out_cols = BA_COL_FIRST;
  ba_query_stats_t s1, s2, s3;
  assert_int_equal(ba_query_run(q, st, &o, ids_sink, &idx, &s1), 0);
  ba_query_exec_opts_t oc = o;
  oc.count_only = 1;
  assert_int_equal(ba_query_run(q, st, &oc, ids_sink, &dummy, &s3), 0);
  /* every column out: the residual check runs before materialization (residual.c) */
  ids_t wide = {0};
  ba_query_exec_opts_t ow = o;
  ow.out_cols = BA_COL_ALL & ~BA_COL_FRAME;
  assert_int_equal(ba_query_run(q, st, &ow, ids_sink, &wide, NULL), 0);
  if (wide.n != idx.n || (idx.n && memcmp(wide.v, idx.v, idx.n * 8)))
    fail_msg("'%s': all columns %zu rows, first only %zu", f, wide.n, idx.n);
  free(wide.v);
  o.force_scan = 1;
  assert_int_equal(ba_query_run(q, st, &o, ids_sink, &scan, &s2), 0);
  if (mem.n) qsort(mem.v, mem.n, 8, cmp64);
  if (idx.n) qsort(idx.v, idx.n, 8, cmp64);
  if (scan.n) qsort(scan.v, scan.n, 8, cmp64);
  if (scan.n != mem.n || (mem.n && memcmp(scan.v, mem.v, mem.n * 8)))
    fail_msg("'%s': scan %zu rows, in-memory %zu", f, scan.n, mem.n);
  if (idx.n != mem.n || (mem.n && memcmp(idx.v, mem.v, mem.n * 8)))
    fail_msg("'%s': index %zu rows, in-memory %zu", f, idx.n, mem.n);
  if (s3.rows_matched != mem.n)
    fail_msg("'%s': count %llu, in-memory %zu", f, (unsigned long long)s3.rows_matched, mem.n);
  if (getenv("BA_QUERY_VERBOSE"))
    print_message("%-50s matched %6zu blocks %4llu (count %4llu) of %4llu\n", f, mem.n,
                  (unsigned long long)s1.blocks_read, (unsigned long long)s3.blocks_read,
                  (unsigned long long)s2.blocks_read);
  if (blocks) *blocks = s1.blocks_read;
  if (cblocks) *cblocks = s3.blocks_read;
  free(mem.v);
  free(idx.v);
  free(scan.v);
  free(dummy.v);
  ba_query_free(q);
  ba_store_close(st);
}

static const char *const range_filters[] = {
  "bytes > 100000", "bytes > 1m", "bytes < 5000", "bytes >= 600000 and bytes <= 700000", "bytes = 12345",
  "packets < 10", "packets > 1000", "in packets >= 5", "out bytes > 500000", "out bytes = 0",
  "duration > 60000", "duration < 100", "duration = 0", "duration >= 60000 and proto tcp",
  "not bytes > 300000", "bytes > 300000 or duration > 60000", "not (duration > 60000 and dst port 443)",
  "bytes > 200000 and src ip 10.4.0.0/22", "dst port 443 and bytes < 100000",
  "first seen > 2024-07-11T01:30", "first seen < 2024-07-11T00:10:30", "last seen > 2024-07-11T02:59",
  "last seen < 2024-07-11T00:30", "first seen >= 2024-07-11T01:00 and first seen < 2024-07-11T02:00:00.5",
  "after 2024-07-11T02:30:00 and bytes > 1000", "before 2024-07-11T00:05", "bytes > 1000000000000",
  "duration > 1000000000",
};

static const struct {
  uint64_t a, b;
} windows[] = {
  {BASE_NS + HOUR_NS / 2 + 7 * SEC, BASE_NS + HOUR_NS + 60 * SEC},
  {BASE_NS + 60 * SEC, BASE_NS + 120 * SEC},
  {BASE_NS + 2 * HOUR_NS + 1, 0},
  {BASE_NS + 10 * HOUR_NS, BASE_NS + 11 * HOUR_NS},
};

static void run_filters(const char *dir, const recs_t *g) {
  for (size_t i = 0; i < NELEM(range_filters); i++)
    for (int th = 1; th <= 2; th++) check_q(dir, g, range_filters[i], 0, 0, th, NULL, NULL);
  for (size_t k = 0; k < NELEM(windows); k++) {
    check_q(dir, g, "any", windows[k].a, windows[k].b, 1, NULL, NULL);
    check_q(dir, g, "bytes > 100000", windows[k].a, windows[k].b, 2, NULL, NULL);
    check_q(dir, g, "not proto tcp", windows[k].a, windows[k].b, 1, NULL, NULL);
  }
}

/* Writer zones on random and clustered data; pruning happens on clustered. */
static void test_writer(void **state) {
  (void)state;
  for (int clustered = 0; clustered < 2; clustered++) {
    recs_t g;
    gen(&g, 40000, 5 + (uint64_t)clustered, clustered);
    char *dir = ba_test_mkdtemp();
    write_store(dir, &g, 1000, 0, 2);
    assert_true(check_zones(dir, 1) >= 3);
    run_filters(dir, &g);
    if (clustered) {
      /* bytes grow with the row: 'bytes > X' touches the groups from X on,
       * and counting reads only the one group that straddles X. */
      uint64_t b = 0, cb = 0, all = 0;
      check_q(dir, &g, "bytes > 1500000", 0, 0, 1, &b, &cb);
      check_q(dir, &g, "bytes > 0", 0, 0, 1, &all, NULL);
      assert_true(b < all / 4 + 2);
      assert_true(cb <= 2);
      check_q(dir, &g, "duration > 60000", 0, 0, 1, &b, NULL);
      assert_true(b < all / 2);
    }
    ba_test_rmtree(dir);
    free(dir);
    free(g.r);
  }
}

static void copy_file(const char *from, const char *to) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(from, &len);
  assert_non_null(b);
  assert_int_equal(ba_test_write_file(to, b, len), 0);
  free(b);
}

static int same_file(const char *a, const char *b) {
  size_t la = 0, lb = 0;
  uint8_t *x = ba_test_read_file(a, &la), *y = ba_test_read_file(b, &lb);
  int same = x && y && la == lb && memcmp(x, y, la) == 0;
  free(x);
  free(y);
  return same;
}

/* The first segment file of dir (its name into out). */
static void first_seg(const char *dir, char *out, size_t cap) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls %s/seg-*.bitarc | head -1", dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_non_null(fgets(out, (int)cap, p));
  pclose(p);
  out[strcspn(out, "\n")] = 0;
}

/* oLSH: no TIME_BIN, time windows from zones; reindex (batch builder) gives
 * the writer's (online builder's) bytes, zones included. */
static void test_olsh_reindex(void **state) {
  (void)state;
  for (int olsh = 0; olsh < 2; olsh++) {
    recs_t g;
    gen(&g, 30000, 11, olsh);
    char *dir = ba_test_mkdtemp();
    ba_store_opts_t probe;
    ba_store_opts_init(&probe);
    write_store(dir, &g, 700, olsh, 2);
    check_zones(dir, !olsh);
    run_filters(dir, &g);
    char seg[4096], keep[4200];
    first_seg(dir, seg, sizeof seg);
    snprintf(keep, sizeof keep, "%s.orig", seg);
    copy_file(seg, keep);
    char err[256] = "";
    size_t n = 0;
    assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH64, "cpu", 2, &n, err, sizeof err), 0);
    assert_true(n >= 3);
    if (!same_file(seg, keep)) fail_msg("reindex changed %s (olsh %d)", seg, olsh);
    unlink(keep);
    assert_int_equal(ba_store_reindex(dir, BA_CODEC_PLWAH, "cpu", 1, &n, err, sizeof err), 0);
    check_zones(dir, !olsh);
    check_q(dir, &g, "first seen > 2024-07-11T01:30 and bytes > 1000", 0, 0, 1, NULL, NULL);
    check_q(dir, &g, "any", windows[0].a, windows[0].b, 2, NULL, NULL);
    ba_test_rmtree(dir);
    free(dir);
    free(g.r);
  }
}

/* Crash recovery finishes the journal with zone maps. */
static void test_recovery(void **state) {
  (void)state;
  recs_t g;
  gen(&g, 5000, 21, 1);
  for (size_t i = 0; i < g.n; i++) g.r[i].first_ns = BASE_NS + i * 1000; /* one slice */
  char *dir = ba_test_mkdtemp();
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.slice_seconds = 3600;
  o.time_bin_seconds = 60;
  o.block_rows = 300;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ba_store_writer_t *w;
    if (ba_store_writer_open(dir, &o, &w) != BA_OK) _exit(3);
    if (ba_store_writer_append(w, g.r, 3000) != BA_OK) _exit(4);
    if (ba_store_writer_sync(w) != BA_OK) _exit(5);
    raise(SIGKILL);
    _exit(7);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_recovered(w), 3000);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  assert_int_equal(check_zones(dir, 1), 1);
  g.n = 3000;
  check_q(dir, &g, "bytes > 100000", 0, 0, 1, NULL, NULL);
  ba_test_rmtree(dir);
  free(dir);
  free(g.r);
}

/* ---------- damage ---------- */

static void on_warn(void *ctx, const char *msg) {
  (void)msg;
  (*(int *)ctx)++;
}

/* verify's first error on the store's first segment (0 if clean), its message into msg. */
static int verify_first(const char *dir, char *msg, size_t cap) {
  ba_store_t *st;
  int rc = ba_store_open(dir, &st);
  if (rc < 0) {
    snprintf(msg, cap, "%s", ba_store_errmsg(st));
    ba_store_close(st);
    return rc;
  }
  ba_segment_t *seg;
  rc = ba_store_segment(st, 0, &seg);
  if (rc == 0) {
    uint64_t nbad = 0;
    rc = ba_segment_verify(seg, &nbad);
  }
  snprintf(msg, cap, "%s", ba_store_errmsg(st));
  ba_store_close(st);
  return rc;
}

/* Rewrites the footer's zone-map offset (CRC fixed). */
static void set_zone_off(const char *path, uint64_t v) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(path, &len);
  uint8_t *f = b + len - 80;
  for (int i = 0; i < 8; i++) f[56 + i] = (uint8_t)(v >> (8 * i));
  uint32_t crc = ba_crc32c(0, f, 64);
  for (int i = 0; i < 4; i++) f[64 + i] = (uint8_t)(crc >> (8 * i));
  assert_int_equal(ba_test_write_file(path, b, len), 0);
  free(b);
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void test_damage(void **state) {
  (void)state;
  recs_t g;
  gen(&g, 12000, 31, 1);
  char *dir = ba_test_mkdtemp();
  write_store(dir, &g, 500, 0, 1);
  char seg[4096], keep[4200], msg[600];
  first_seg(dir, seg, sizeof seg);
  snprintf(keep, sizeof keep, "%s.orig", seg);
  copy_file(seg, keep);
  size_t len = 0;
  uint8_t *b = ba_test_read_file(seg, &len);
  uint64_t zdir = le64(b + len - 80 + 56);
  assert_true(zdir > 0 && zdir < len);
  uint64_t zone0 = le64(b + zdir + 32 + 8 + 8); /* entry 0 (first) */
  uint64_t zone4 = le64(b + zdir + 32 + 8 + 4 * 24 + 8); /* entry 4 (bytes) */
  const char *base = strrchr(seg, '/') + 1;
  uint64_t pl = 8 + 16ull * 24; /* 12000 rows over 3 hours: 4000 a segment, 8 groups of 500 */
  struct {
    uint64_t off;
    const char *want;
    int used;  /* read by the bytes query */
    int recrc; /* 1: a bytes ZONE block with valid CRCs (swapped min/max, ngroups) */
  } cases[] = {
    {zone4 + 32 + 8 + 16 * 3 + 2, "ZONE block) of field bytes", 1, 0}, /* a min of group 3 */
    {zone4 + 5, "ZONE block) of field bytes", 1, 0},                    /* its header */
    {zone0 + 32 + 1, "ZONE block) of field first", 0, 0},               /* its field byte */
    {zdir + 32 + 8 + 24 + 9, "ZONEDIR", 1, 0},                          /* entry 1's offset */
    {zdir + 2, "ZONEDIR", 1, 0},                                        /* the block header */
    {zone4 + 32 + 8 + 16 * 3, "ZONE block) of field bytes", 1, 1},      /* min > max */
    {zone4 + 32 + 4, "ZONE block) of field bytes", 1, 1},               /* ngroups */
  };
  {
    ba_store_t *st;
    ba_segment_t *sg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_open(dir, &st), 0);
    assert_int_equal(ba_store_segment(st, 0, &sg), 0);
    assert_int_equal(ba_segment_info(sg, &in), 0);
    pl = 8 + 16ull * in.nblocks;
    ba_store_close(st);
  }
  for (size_t k = 0; k < NELEM(cases); k++) {
    uint8_t *d = malloc(len);
    memcpy(d, b, len);
    if (cases[k].recrc) {
      uint8_t *p = d + cases[k].off;
      if (cases[k].recrc && k == 5) {
        p[0] = 0xFF; /* min of group 3 far above its max */
        p[6] = 0x7F;
      } else {
        p[0]++;
      }
      /* payload and header CRCs, the directory's CRC of it, the directory's CRCs */
      uint32_t c = ba_crc32c(0, d + zone4 + 32, pl);
      for (int i = 0; i < 4; i++) d[zone4 + 24 + i] = (uint8_t)(c >> (8 * i));
      uint32_t h = ba_crc32c(0, d + zone4, 28);
      for (int i = 0; i < 4; i++) d[zone4 + 28 + i] = (uint8_t)(h >> (8 * i));
      for (int i = 0; i < 4; i++) d[zdir + 32 + 8 + 4 * 24 + 4 + i] = (uint8_t)(c >> (8 * i));
      c = ba_crc32c(0, d + zdir + 32, 8 + 24 * BA_ZF_COUNT);
      for (int i = 0; i < 4; i++) d[zdir + 24 + i] = (uint8_t)(c >> (8 * i));
      h = ba_crc32c(0, d + zdir, 28);
      for (int i = 0; i < 4; i++) d[zdir + 28 + i] = (uint8_t)(h >> (8 * i));
    } else {
      d[cases[k].off] ^= 0x5A;
    }
    assert_int_equal(ba_test_write_file(seg, d, len), 0);
    free(d);
    int rc = verify_first(dir, msg, sizeof msg);
    if (rc == 0 || !strstr(msg, cases[k].want) || !strstr(msg, base))
      fail_msg("case %zu: verify %d '%s', wanted '%s'", k, rc, msg, cases[k].want);
    /* queries: the damaged segment is answered by a linear scan (warned), results exact */
    check_q(dir, &g, "bytes > 300000", 0, 0, 1, NULL, NULL);
    check_q(dir, &g, "first seen > 2024-07-11T00:30 and duration > 60000", 0, 0, 2, NULL, NULL);
    ba_store_t *st;
    assert_int_equal(ba_store_open(dir, &st), 0);
    ba_query_t *q;
    assert_int_equal(ba_query_create(&q), 0);
    assert_int_equal(ba_query_compile(q, "bytes > 300000"), 0);
    ba_query_exec_opts_t o;
    ba_query_exec_opts_init(&o);
    int warned = 0;
    o.warn = on_warn;
    o.warn_ctx = &warned;
    ids_t ids = {0};
    assert_int_equal(ba_query_run(q, st, &o, ids_sink, &ids, NULL), 0);
    if (cases[k].used) assert_true(warned >= 1);
    free(ids.v);
    ba_query_free(q);
    ba_store_close(st);
  }
  /* The footer's offset: 0 reads as a segment without zone maps; garbage is refused at open. */
  assert_int_equal(ba_test_write_file(seg, b, len), 0);
  set_zone_off(seg, 0);
  assert_int_equal(verify_first(dir, msg, sizeof msg), 0);
  run_filters(dir, &g);
  {
    ba_store_t *st;
    ba_segment_t *sg;
    const uint64_t *mn, *mx;
    assert_int_equal(ba_store_open(dir, &st), 0);
    assert_int_equal(ba_store_segment(st, 0, &sg), 0);
    assert_int_equal(ba_segment_zone(sg, BA_ZF_BYTES, &mn, &mx), BA_ERR_NOT_FOUND);
    ba_store_close(st);
  }
  set_zone_off(seg, len - 10);
  assert_true(verify_first(dir, msg, sizeof msg) < 0);
  set_zone_off(seg, 12);
  assert_true(verify_first(dir, msg, sizeof msg) < 0);
  /* A truncated ZONE area: the ZONEDIR's entries point past it. */
  copy_file(keep, seg);
  {
    uint8_t *d = malloc(len);
    memcpy(d, b, len);
    memset(d + zone4, 0, (size_t)(zdir - zone4)); /* zones 4.. and nothing else */
    assert_int_equal(ba_test_write_file(seg, d, len), 0);
    free(d);
    assert_true(verify_first(dir, msg, sizeof msg) < 0);
    assert_non_null(strstr(msg, "ZONE block"));
    check_q(dir, &g, "out bytes > 500000 or bytes < 20000", 0, 0, 1, NULL, NULL);
  }
  unlink(keep);
  free(b);
  ba_test_rmtree(dir);
  free(dir);
  free(g.r);
}

int main(void) {
  query_set_par_min_rows(0); /* the worker path on these small stores too */
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_writer),
    cmocka_unit_test(test_olsh_reindex),
    cmocka_unit_test(test_recovery),
    cmocka_unit_test(test_damage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
