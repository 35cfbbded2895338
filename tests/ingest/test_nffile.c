/* ba_nffile_ingest on nfdump files written by tests/ingest/nffile_writer.h:
 * every decoded flow equals the record the writer says it wrote (random
 * values, random extension maps / element lists, each layout and codec);
 * damaged files (every truncation point, flipped bytes, undecompressable
 * blocks, impossible records) never crash, deliver only correct flows, count
 * what they drop and name the file and block. The comparison with nfdump's
 * own reader is test_nffile_vs_nfdump (import_vs_nfdump.sh). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bitarc/ingest.h"
#include "nffile_writer.h"

typedef struct vec {
  ba_record_t *r;
  size_t n, cap;
  size_t fail_after;  /* sink refuses once this many records came (0 = never) */
} vec_t;

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  vec_t *v = ctx;
  if (v->fail_after && v->n + n > v->fail_after) return BA_ERR_IO;
  if (v->n + n > v->cap) {
    v->cap = (v->n + n) * 2;
    v->r = realloc(v->r, v->cap * sizeof(*v->r));
    assert_non_null(v->r);
  }
  memcpy(v->r + v->n, recs, n * sizeof(*recs));
  v->n += n;
  return 0;
}

static int ingest_mem(const uint8_t *p, size_t n, vec_t *v, ba_nffile_result_t *res) {
  FILE *f = fmemopen((void *)(uintptr_t)p, n ? n : 1, "rb");
  assert_non_null(f);
  if (!n) getc(f);  /* an empty stream */
  return ba_nffile_ingest("mem.nf", f, collect, v, res);
}

/* A random file and the records a reader must return. */
typedef struct made {
  nfw_buf_t file;
  ba_record_t *want;
  size_t n;
  uint32_t blocks;
} made_t;

static void make(int layout, int comp, size_t nflows, made_t *m) {
  nfw_file_t f;
  nfw_begin(&f, layout, comp);
  nfw_exp_t e = {.id = 4242, .sampling = 100, .sampling_algo = 2, .present = 1};
  ba_addr_set_v4(e.ip, 0xC6336401);
  nfw_exporter(&f, 3, 0xC6336401, 4242);
  nfw_sampler(&f, 3, 100, 2);
  m->want = calloc(nflows, sizeof(*m->want));
  m->n = nflows;
  uint16_t maps[6][64];
  int nmap[6];
  for (size_t i = 0; i < nflows; i++) {
    if (layout == 1) {
      unsigned k = (unsigned)(i % 6);
      if (i < 6) {
        nmap[k] = nfw_rand_v1_map(maps[k]);
        nfw_extmap(&f, (uint16_t)(100 + k), maps[k], nmap[k]);
      }
      /* sysid 3 is described, sysid 9 is not: its flows keep no exporter */
      uint16_t sys = i % 5 ? 3 : 9;
      nfw_v1_flow(&f, (uint16_t)(100 + k), maps[k], nmap[k], (unsigned)(nfw_rand() & 7), sys, sys == 3 ? &e : NULL,
                  &m->want[i]);
    } else {
      uint16_t ids[32];
      int k = nfw_rand_v3_list(ids);
      uint16_t sys = i % 5 ? 3 : 9;
      nfw_v3_flow(&f, ids, k, (int)(nfw_rand() & 1), sys, sys == 3 ? &e : NULL, &m->want[i]);
    }
    if (f.nrec >= 97) nfw_block(&f, 0);
  }
  nfw_end(&f);
  m->file = f.out;
  m->blocks = f.nblocks;
}

static void made_free(made_t *m) {
  free(m->file.p);
  free(m->want);
}

static void expect_same(const ba_record_t *got, const ba_record_t *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (memcmp(&got[i], &want[i], sizeof(ba_record_t)) != 0) {
      const uint8_t *a = (const uint8_t *)&got[i], *b = (const uint8_t *)&want[i];
      size_t off = 0;
      while (a[off] == b[off]) off++;
      fail_msg("flow %zu differs from what was written at byte %zu of ba_record_t", i, off);
    }
  }
}

static void roundtrip(int layout, int comp) {
  made_t m;
  make(layout, comp, 1500, &m);
  vec_t v = {0};
  ba_nffile_result_t res;
  assert_int_equal(ingest_mem(m.file.p, m.file.n, &v, &res), 0);
  assert_int_equal(res.layout, layout);
  assert_int_equal(res.compression, comp);
  assert_int_equal(res.blocks, m.blocks);
  assert_int_equal(res.records, m.n);
  assert_int_equal(ba_nffile_dropped(&res), 0);
  assert_int_equal(res.meta_records, 2 + (layout == 1 ? 6 : 0));
  if (layout == 1) assert_string_equal(res.ident, "bitarc-test");
  assert_int_equal(v.n, m.n);
  expect_same(v.r, m.want, m.n);
  assert_string_equal(res.errmsg, "");
  free(v.r);
  made_free(&m);
}

static void test_v1_codecs(void **s) {
  (void)s;
  for (int c = NFW_NONE; c <= NFW_LZ4; c++) roundtrip(1, c);
}
static void test_v3_codecs(void **s) {
  (void)s;
  for (int c = NFW_NONE; c <= NFW_ZSTD; c++) roundtrip(2, c);
}

/* A file recompressed by the writer decodes to the same flows. */
static void test_recompress(void **s) {
  (void)s;
  made_t m;
  make(2, NFW_LZ4, 700, &m);
  for (int to = NFW_NONE; to <= NFW_ZSTD; to++) {
    nfw_buf_t out = {0};
    assert_int_equal(nfw_recompress(m.file.p, m.file.n, to, &out), 0);
    vec_t v = {0};
    ba_nffile_result_t res;
    assert_int_equal(ingest_mem(out.p, out.n, &v, &res), 0);
    assert_int_equal(res.compression, to);
    assert_int_equal(v.n, m.n);
    expect_same(v.r, m.want, m.n);
    free(v.r);
    free(out.p);
  }
  made_free(&m);
}

/* Cut at every byte: never a crash; what is delivered is a prefix of the
 * written flows; a cut inside a block is reported with its number. */
static void test_truncation(void **s) {
  (void)s;
  for (int layout = 1; layout <= 2; layout++) {
    made_t m;
    make(layout, layout == 1 ? NFW_LZO : NFW_ZSTD, 30, &m);
    for (size_t cut = 0; cut < m.file.n; cut++) {
      vec_t v = {0};
      ba_nffile_result_t res;
      int rc = ingest_mem(m.file.p, cut, &v, &res);
      assert_true(v.n <= m.n);
      expect_same(v.r, m.want, v.n);
      if (rc == BA_ERR_TRUNCATED) {
        assert_non_null(strstr(res.errmsg, "mem.nf"));
        if (res.error_block) assert_non_null(strstr(res.errmsg, "block"));
      } else if (rc == 0) {
        assert_true(v.n < m.n);  /* cut between blocks: fewer flows, no error */
      } else {
        assert_int_equal(rc, BA_ERR_NOT_OURS);  /* fewer than 4 bytes */
        assert_true(cut < 4);
      }
      free(v.r);
    }
    made_free(&m);
  }
}

/* Random byte flips anywhere: no crash, counts consistent, every failure
 * explained. */
static void test_flips(void **s) {
  (void)s;
  for (int layout = 1; layout <= 2; layout++) {
    for (int comp = NFW_NONE; comp <= NFW_LZ4; comp++) {
      made_t m;
      make(layout, comp, 200, &m);
      uint8_t *p = malloc(m.file.n);
      for (int it = 0; it < 60; it++) {
        memcpy(p, m.file.p, m.file.n);
        int flips = 1 + (int)(nfw_rand() % 4);
        for (int k = 0; k < flips; k++) p[nfw_rand() % m.file.n] ^= (uint8_t)(1u << (nfw_rand() % 8));
        vec_t v = {0};
        ba_nffile_result_t res;
        int rc = ingest_mem(p, m.file.n, &v, &res);
        assert_int_equal(v.n, res.records);
        if (rc) assert_true(res.errmsg[0] != 0);
        if (ba_nffile_dropped(&res)) assert_non_null(strstr(res.detail, "block"));
        free(v.r);
      }
      free(p);
      made_free(&m);
    }
  }
}

/* Offset of data block k (0-based) of a file with the given header size. */
static size_t block_off(const nfw_buf_t *b, size_t hdr, int k) {
  size_t off = hdr;
  for (int i = 0; i < k; i++) off += 12 + ((uint32_t)b->p[off + 4] | (uint32_t)b->p[off + 5] << 8 | (uint32_t)b->p[off + 6] << 16);
  return off;
}

/* A block that does not decompress is counted and skipped; the next blocks
 * are still read. */
static void test_bad_block_skipped(void **s) {
  (void)s;
  made_t m;
  make(2, NFW_LZ4, 400, &m);
  size_t off = block_off(&m.file, 40, 1);
  uint32_t size = (uint32_t)m.file.p[off + 4] | (uint32_t)m.file.p[off + 5] << 8;
  memset(m.file.p + off + 12, 0xFF, size);  /* LZ4 garbage */
  vec_t v = {0};
  ba_nffile_result_t res;
  assert_int_equal(ingest_mem(m.file.p, m.file.n, &v, &res), 0);
  assert_int_equal(res.dropped[BA_NFDROP_BLOCK_CORRUPT], 1);
  assert_non_null(strstr(res.detail, "block 2"));
  /* block 1 holds the exporter, sampler and 95 flows; block 2 the next 97 */
  assert_int_equal(v.n, m.n - 97);
  expect_same(v.r, m.want, 95);
  expect_same(v.r + 95, m.want + 95 + 97, v.n - 95);
  free(v.r);
  made_free(&m);
}

static void test_drops_counted(void **s) {
  (void)s;
  nfw_file_t f;
  nfw_begin(&f, 1, NFW_NONE);
  uint16_t ids[] = {4, 7};
  ba_record_t r;
  nfw_v1_flow(&f, 5, ids, 2, 0, 0, NULL, &r);  /* map 5 not yet defined */
  nfw_extmap(&f, 5, ids, 2);
  nfw_v1_flow(&f, 5, ids, 2, 0, 0, NULL, &r);  /* fine */
  uint8_t unknown[8] = {99, 0, 8, 0, 1, 2, 3, 4}, legacy[8] = {1, 0, 8, 0, 0, 0, 0, 0};
  nfw_put(&f.blk, unknown, 8); f.nrec++;
  nfw_put(&f.blk, legacy, 8); f.nrec++;
  uint8_t tiny[8] = {10, 0, 8, 0, 0, 0, 5, 0};  /* a flow record too short for its map */
  nfw_put(&f.blk, tiny, 8); f.nrec++;
  nfw_block(&f, 0);
  nfw_v1_flow(&f, 5, ids, 2, 0, 0, NULL, &r);
  nfw_block(&f, 1);  /* nfdump 1.5 block type: skipped */
  nfw_v1_flow(&f, 5, ids, 2, 0, 0, NULL, &r);
  f.nrec += 3;  /* claims more records than it holds: overrun */
  nfw_block(&f, 0);
  nfw_end(&f);
  vec_t v = {0};
  ba_nffile_result_t res;
  assert_int_equal(ingest_mem(f.out.p, f.out.n, &v, &res), 0);
  assert_int_equal(v.n, 2);
  assert_int_equal(res.dropped[BA_NFDROP_NO_EXTMAP], 1);
  assert_int_equal(res.dropped[BA_NFDROP_UNKNOWN_RECORD], 1);
  assert_int_equal(res.dropped[BA_NFDROP_LEGACY], 1);
  assert_int_equal(res.dropped[BA_NFDROP_MALFORMED], 1);
  assert_int_equal(res.dropped[BA_NFDROP_BLOCK_TYPE], 1);
  assert_int_equal(res.dropped[BA_NFDROP_BLOCK_CORRUPT], 1);
  assert_non_null(strstr(res.detail, "mem.nf: block 1: flow record names extension map 5"));
  free(v.r);
  free(f.out.p);
}

static void test_bad_files(void **s) {
  (void)s;
  vec_t v = {0};
  ba_nffile_result_t res;
  const uint8_t text[] = "this is no nfdump file at all";
  assert_int_equal(ingest_mem(text, sizeof text, &v, &res), BA_ERR_NOT_OURS);
  assert_non_null(strstr(res.errmsg, "mem.nf: not an nfdump file"));
  uint8_t h[40] = {0x0C, 0xA5, 3, 0};
  assert_int_equal(ingest_mem(h, sizeof h, &v, &res), BA_ERR_VERSION);
  assert_non_null(strstr(res.errmsg, "layout 3"));
  uint8_t be[40] = {0xA5, 0x0C, 0, 2};
  assert_int_equal(ingest_mem(be, sizeof be, &v, &res), BA_ERR_VERSION);
  h[2] = 2;
  h[17] = 1;  /* encrypted */
  assert_int_equal(ingest_mem(h, sizeof h, &v, &res), BA_ERR_UNSUPPORTED);
  h[17] = 0;
  h[16] = 9;  /* compression 9 */
  assert_int_equal(ingest_mem(h, sizeof h, &v, &res), BA_ERR_UNSUPPORTED);
  h[16] = 0;
  assert_int_equal(ingest_mem(h, sizeof h, &v, &res), 0);  /* an empty file is fine */
  uint8_t big[52] = {0x0C, 0xA5, 2, 0};
  big[40] = 1; big[44] = 0xFF; big[45] = 0xFF; big[46] = 0xFF; big[47] = 0x7F;  /* block of 2 GiB */
  assert_int_equal(ingest_mem(big, sizeof big, &v, &res), BA_ERR_CORRUPT);
  assert_non_null(strstr(res.errmsg, "block 1 at offset 40: impossible size"));
  assert_int_equal(res.error_block, 1);
  assert_int_equal(res.error_offset, 40);
  assert_int_equal(ba_nffile_ingest("/nonexistent/nfcapd.1", NULL, collect, &v, &res), BA_ERR_IO);
  assert_non_null(strstr(res.errmsg, "/nonexistent/nfcapd.1: cannot open"));
  assert_int_equal(v.n, 0);
}

static void test_sink_stops(void **s) {
  (void)s;
  made_t m;
  make(2, NFW_NONE, 3000, &m);
  vec_t v = {.fail_after = 1500};
  ba_nffile_result_t res;
  assert_int_equal(ingest_mem(m.file.p, m.file.n, &v, &res), BA_ERR_IO);
  assert_true(res.dropped[BA_NFDROP_STORE] > 0);
  assert_int_equal(res.records, v.n);
  expect_same(v.r, m.want, v.n);
  free(v.r);
  made_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_v1_codecs),     cmocka_unit_test(test_v3_codecs),
    cmocka_unit_test(test_recompress),    cmocka_unit_test(test_truncation),
    cmocka_unit_test(test_flips),         cmocka_unit_test(test_bad_block_skipped),
    cmocka_unit_test(test_drops_counted), cmocka_unit_test(test_bad_files),
    cmocka_unit_test(test_sink_stops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
