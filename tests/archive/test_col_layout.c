/* Column layouts (doc/format.md §3, §7.1): every column of segment layouts
 * 1.0, 2.0 and 3.0 round-trips on random records (edge values and extended
 * fields included) and on records read from the shared captures, in arrival
 * and in reordered order; 3.0 single-row decoding equals the whole-block
 * decode; hostile 2.0 payloads decode or fail cleanly (ASan checks the
 * reads); committed 1.0 and 2.0 segments written by those writers still read
 * back record for record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "archive/archive.h"
#include "bitarc/bitarc.h"
#include "bitarc/ingest.h"
#include "common/common.h"
#include "fixture_gen.h"
#include "store_gen.h"

/* 2.0 methods (FOR, DELTA, DICT, PDICT) and the byte-plane layout seen at
 * the first field of integer columns, so the tests know they covered them. */
static unsigned g_seen;

/* 3.0: random ascending subsets of rows decoded one by one equal the
 * whole-block decode (dec), column by column. */
static void pick_rows_check(uint8_t *const *raws, const size_t *lens, const ba_record_t *dec, size_t n) {
  ba_rng_t rng;
  ba_rng_seed(&rng, n * 7919 + 1);
  uint32_t *rows = malloc((n ? n : 1) * sizeof *rows);
  ba_record_t *got = calloc(n ? n : 1, sizeof *got);
  for (int rep = 0; rep < 10; rep++) {
    size_t k = 0;
    if (rep >= 4) { /* a selective query: 1 to 3 rows anywhere (escape counts walked forward or back) */
      size_t want = 1 + (size_t)ba_rng_below(&rng, 3), lo = 0;
      for (size_t t = 0; t < want && lo < n; t++) {
        size_t left = n - lo, i = lo + (size_t)ba_rng_below(&rng, rep % 2 ? left : BA_MIN(left, 1 + left / 4));
        rows[k++] = (uint32_t)i;
        lo = i + 1;
      }
    } else {
      unsigned keep = rep == 3 ? 1 : 1 + (unsigned)ba_rng_below(&rng, 8); /* rep 3: every row */
      for (size_t i = 0; i < n; i++)
        if (keep == 1 || ba_rng_below(&rng, keep) == 0) rows[k++] = (uint32_t)i;
    }
    memset(got, 0, (k ? k : 1) * sizeof *got);
    for (int c = 0; c < BA_NCOLS3; c++) { /* lens[c] 0: absent, decoded as stored values 0 */
      assert_int_equal(ba_col_decode_rows(3, c, raws[c], lens[c], n, rows, k, got), BA_OK);
    }
    for (size_t j = 0; j < k; j++) {
      const ba_record_t *w = &dec[rows[j]];
      if (!rec_equal(w, &got[j], BA_COL_ALL)) fail_msg("3.0 row %u of %zu differs when picked", rows[j], n);
      if (w->caplen && got[j].frame != w->frame) fail_msg("3.0 row %u: frame pointer differs", rows[j]);
    }
    /* Rows out of order or past the block are refused. */
    if (k >= 2) {
      uint32_t t = rows[0];
      rows[0] = rows[1];
      rows[1] = t;
      assert_int_equal(ba_col_decode_rows(3, BA_COLID_META, raws[BA_COLID_META], lens[BA_COLID_META], n, rows, k, got),
                       BA_ERR_INVALID);
    }
  }
  uint32_t past = (uint32_t)n;
  assert_int_equal(ba_col_decode_rows(3, BA_COLID_META, raws[BA_COLID_META], lens[BA_COLID_META], n, &past, 1, got),
                   BA_ERR_INVALID);
  free(rows);
  free(got);
}

/* One block through encode + decode of every column; compares with the input. */
static void roundtrip_block(int major, const ba_record_t *in, size_t n) {
  size_t fbytes = 0;
  for (size_t i = 0; i < n; i++) fbytes += in[i].caplen;
  uint8_t *frames = malloc(fbytes + 1);
  size_t fo = 0;
  for (size_t i = 0; i < n; i++) {
    if (in[i].caplen) memcpy(frames + fo, in[i].frame, in[i].caplen);
    fo += in[i].caplen;
  }
  ba_record_t *out = calloc(n ? n : 1, sizeof *out);
  uint8_t *raws[BA_NCOLS_MAX];
  const int nc = (int)ba_seg_ncols(major);
  size_t lens[BA_NCOLS_MAX];
  for (int c = 0; c < nc; c++) {
    size_t max = ba_col_raw_max(major, c, n, fbytes);
    raws[c] = malloc(max + 1);
    size_t len = 0;
    assert_int_equal(ba_col_encode(major, c, in, n, frames, fbytes, raws[c], &len, NULL), BA_OK);
    assert_true(len <= max);
    lens[c] = len;
    if (major >= 3 && len == 0) { /* absent: every stored value 0, which rec_equal checks */
      assert_int_not_equal(c, BA_COLID_META);
      assert_int_equal(ba_col_decode(major, c, NULL, 0, n, out), BA_OK);
      continue;
    }
    assert_true(len >= ba_col_raw_min(major, c, n) + (c == BA_COLID_FRAME ? fbytes : 0));
    /* Dependencies (2.0 LAST needs FIRST) come first in column order. */
    assert_true((ba_col_deps(major, c) >> c) == 0);
    assert_int_equal(ba_col_decode(major, c, raws[c], len, n, out), BA_OK);
    if (major == 2 && c != 2 && c != 3 && c != 12 && len >= BA_COL2_FIELD_HDR) {
      if (raws[c][0] < 4) g_seen |= 1u << raws[c][0];
      if (raws[c][2] == 1) g_seen |= 1u << 4;
    }
    /* Any other length is refused. */
    if (len) assert_int_not_equal(ba_col_decode(major, c, raws[c], len - 1, n, out), BA_OK);
    assert_int_equal(ba_col_decode(major, c, raws[c], len, n, out), BA_OK);
  }
  uint32_t mask = major >= 3 ? BA_COL_ALL : BA_COL_ALL & 0xFFFFu; /* extended fields: 3.0 */
  for (size_t i = 0; i < n; i++) {
    if (!rec_equal(&in[i], &out[i], mask)) {
      int bit = -1; /* the first differing column, for the message */
      for (int b = 0; b < 32 && bit < 0; b++)
        if (((mask >> b) & 1) && !rec_equal(&in[i], &out[i], 1u << b)) bit = b;
      fail_msg("major %d: row %zu of %zu differs (column bit %d, kind %d/%d)", major, i, n, bit, in[i].kind,
               out[i].kind);
    }
  }
  if (major >= 3) pick_rows_check(raws, lens, out, n);
  for (int c = 0; c < nc; c++) free(raws[c]);
  free(out);
  free(frames);
}

static void roundtrip_all(const ba_record_t *r, size_t n, size_t block) {
  for (int major = 1; major <= 3; major++)
    for (size_t i = 0; i < n; i += block) roundtrip_block(major, r + i, BA_MIN(block, n - i));
}

/* Edge values: extremes, all equal, common scales, LAST before FIRST. */
static void edge_values(ba_record_t *r, size_t n, ba_rng_t *rng, int variant) {
  for (size_t i = 0; i < n; i++) {
    ba_record_t *x = &r[i];
    switch (variant) {
      case 0: /* extremes */
        x->first_ns = ba_rng_below(rng, 2) ? UINT64_MAX : 0;
        x->last_ns = ba_rng_below(rng, 2) ? UINT64_MAX : 0;
        x->packets = ba_rng_next(rng);
        x->bytes = ba_rng_below(rng, 2) ? UINT64_MAX - ba_rng_below(rng, 3) : 0;
        x->src_port = (uint16_t)(ba_rng_below(rng, 2) ? 65535 : 0);
        x->dst_as = ba_rng_below(rng, 2) ? UINT32_MAX : 0;
        x->tcp_flags = (uint8_t)(ba_rng_below(rng, 2) ? 255 : 0);
        break;
      case 1: /* all equal */
        x->first_ns = 1763769600123456789ull;
        x->last_ns = x->first_ns - 5;
        x->packets = 7;
        x->bytes = 7 * 1500;
        x->src_port = 443;
        break;
      case 2: /* millisecond and microsecond timestamps, durations */
        x->first_ns = 1763769600000000000ull + ba_rng_below(rng, 3600000) * 1000000ull;
        x->last_ns = x->first_ns + ba_rng_below(rng, 30000) * 1000ull;
        x->bytes = ba_rng_below(rng, 100) * 1000ull;
        break;
      default: /* random 64-bit values everywhere */
        x->first_ns = ba_rng_next(rng);
        x->last_ns = ba_rng_next(rng);
        x->packets = ba_rng_next(rng);
        x->bytes = ba_rng_next(rng);
        x->src_as = (uint32_t)ba_rng_next(rng);
        x->in_if = (uint32_t)ba_rng_next(rng);
        x->vlan = (uint16_t)ba_rng_next(rng);
        x->wirelen = (uint32_t)ba_rng_next(rng);
        x->linktype = (uint16_t)ba_rng_next(rng);
        break;
    }
  }
}

static void test_roundtrip_random(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 2, 7, 63, 64, 65, 1000, 4000};
  for (uint64_t seed = 1; seed <= 6; seed++) {
    for (size_t k = 0; k < BA_ARRAY_LEN(sizes); k++) {
      gen_t g;
      gen_records(&g, sizes[k], seed * 100 + k, 1763769600000000000ull, 3600000000000ull, (int)(seed & 1));
      ba_rng_t rng;
      ba_rng_seed(&rng, seed);
      if (seed >= 3) edge_values(g.r, g.n, &rng, (int)(seed - 3));
      roundtrip_all(g.r, g.n, g.n);
      gen_free(&g);
    }
  }
  /* FOR, DELTA, DICT, PDICT and byte planes all occurred. */
  assert_int_equal(g_seen, 0x1F);
}

/* Records from the shared captures (packets with frames; flows from the
 * flow exports). */
typedef struct {
  ba_record_t *r;
  size_t n, cap;
} recs_t;

static int collect(void *ctx, const ba_record_t *recs, size_t n) {
  recs_t *c = ctx;
  for (size_t i = 0; i < n && c->n < 200000; i++) {
    if (c->n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 4096;
      c->r = realloc(c->r, c->cap * sizeof *c->r);
    }
    ba_record_t *x = &c->r[c->n++];
    *x = recs[i];
    if (x->caplen) {
      uint8_t *f = malloc(x->caplen);
      memcpy(f, recs[i].frame, x->caplen);
      x->frame = f;
    } else {
      x->frame = NULL;
    }
  }
  return 0;
}

static void read_capture(const char *path, void *ctx) {
  ba_flow_decoder_t *d = NULL;
  if (ba_flow_decoder_create(NULL, &d) != BA_OK) return;
  ba_capture_opts_t o = {.as = BA_INGEST_AUTO, .flows = d};
  ba_capture_result_t res;
  (void)ba_capture_ingest(path, NULL, &o, collect, ctx, &res);
  ba_flow_decoder_free(d);
}

static int cmp_src(const void *a, const void *b) {
  const ba_record_t *x = a, *y = b;
  int c = memcmp(x->src, y->src, 16);
  if (!c) c = memcmp(x->dst, y->dst, 16);
  return c ? c : (x->dst_port > y->dst_port) - (x->dst_port < y->dst_port);
}

static void test_roundtrip_real(void **state) {
  (void)state;
  static const char *const dirs[] = {"traces/chrissanders__packets", "traces/CESNET__ipfixprobe",
                                     "traces/akvorado__akvorado", "traces/cisco__joy"};
  static const char *const exts[] = {"pcap", "pcapng", NULL};
  recs_t c = {0};
  int found = 0;
  for (size_t k = 0; k < BA_ARRAY_LEN(dirs); k++) {
    const char *dir = ba_test_shared(dirs[k]);
    if (!dir) continue;
    found = 1;
    ba_test_walk(dir, exts, read_capture, &c);
  }
  if (!found || c.n == 0) {
    print_message("skipped: shared captures not found\n");
    free(c.r);
    return;
  }
  size_t flows = 0;
  for (size_t i = 0; i < c.n; i++) flows += c.r[i].kind == BA_REC_FLOW;
  print_message("%zu records from the captures (%zu flows)\n", c.n, flows);
  roundtrip_all(c.r, c.n, 4000);
  /* Reordered (grouped by address pair): other transforms win. */
  qsort(c.r, c.n, sizeof *c.r, cmp_src);
  roundtrip_all(c.r, c.n, 4000);
  for (size_t i = 0; i < c.n; i++) free((void *)c.r[i].frame);
  free(c.r);
}

/* Mutated and random 2.0 payloads: decode returns OK or an error, never
 * reads outside the payload (ASan) and never trips UBSan. */
static void hostile(int major) {
  ba_rng_t rng;
  ba_rng_seed(&rng, 77);
  gen_t g;
  gen_records(&g, 600, 9, 1763769600000000000ull, 3600000000000ull, 1);
  /* Half of the source ports one service, half random: PDICT. */
  for (size_t i = 0; i < g.n; i++) g.r[i].src_port = (uint16_t)(i % 2 ? 1024 + ba_rng_below(&rng, 60000) : 80);
  size_t fbytes = 0;
  for (size_t i = 0; i < g.n; i++) fbytes += g.r[i].caplen;
  uint8_t *frames = malloc(fbytes + 1);
  size_t fo = 0;
  for (size_t i = 0; i < g.n; i++) {
    if (g.r[i].caplen) memcpy(frames + fo, g.r[i].frame, g.r[i].caplen);
    fo += g.r[i].caplen;
  }
  ba_record_t *out = calloc(g.n, sizeof *out);
  size_t ok = 0, bad = 0;
  for (int c = 0; c < (int)ba_seg_ncols(major); c++) {
    size_t max = ba_col_raw_max(major, c, g.n, fbytes);
    uint8_t *good = malloc(max + 1);
    size_t len = 0;
    assert_int_equal(ba_col_encode(major, c, g.r, g.n, frames, fbytes, good, &len, NULL), BA_OK);
    if (c == 4) assert_int_equal(good[0], 3); /* the PDICT method is what gets mutated */
    for (int iter = 0; iter < 3000; iter++) {
      /* An exact-size copy so ASan sees any read past the end. */
      size_t mlen = len;
      int how = (int)ba_rng_below(&rng, 4);
      if (how == 0 && mlen) mlen = (size_t)ba_rng_below(&rng, mlen);
      if (how == 1) mlen += (size_t)ba_rng_below(&rng, 64);
      uint8_t *m = malloc(mlen ? mlen : 1);
      for (size_t i = 0; i < mlen; i++) m[i] = i < len ? good[i] : (uint8_t)ba_rng_next(&rng);
      int flips = 1 + (int)ba_rng_below(&rng, 4);
      for (int f = 0; f < flips && mlen; f++) {
        /* Mostly the headers (the first bytes of each field), sometimes anywhere. */
        size_t at = ba_rng_below(&rng, 2) ? (size_t)ba_rng_below(&rng, BA_MIN(mlen, 64)) : (size_t)ba_rng_below(&rng, mlen);
        m[at] = ba_rng_below(&rng, 2) ? (uint8_t)ba_rng_next(&rng) : (uint8_t)(m[at] ^ (1u << ba_rng_below(&rng, 8)));
      }
      if (how == 3)
        for (size_t i = 0; i < mlen; i++) m[i] = (uint8_t)ba_rng_next(&rng);
      /* FIRST decoded for LAST, as a reader does. */
      int rc = ba_col_decode(major, c, m, mlen, g.n, out);
      assert_true(rc == BA_OK || rc == BA_ERR_CORRUPT);
      if (major >= 3) { /* single rows: every third row */
        uint32_t rows[200];
        for (uint32_t k = 0; k < 200; k++) rows[k] = 3 * k;
        int r2 = ba_col_decode_rows(major, c, m, mlen, g.n, rows, 200, out);
        assert_true(r2 == BA_OK || r2 == BA_ERR_CORRUPT);
      }
      if (rc == BA_OK) ok++;
      else bad++;
      free(m);
    }
    free(good);
  }
  print_message("hostile %d.0 payloads: %zu decoded, %zu refused\n", major, ok, bad);
  assert_true(bad > 0);
  free(out);
  free(frames);
  gen_free(&g);
}

static void test_hostile_v2(void **state) {
  (void)state;
  hostile(2);
}

static void test_hostile_v3(void **state) {
  (void)state;
  hostile(3);
}

/* The store at dir holds one segment, of format major version `major`,
 * whose records are fx_records(): verify, a full scan, and LAST asked with
 * PORTS but without FIRST (2.0 LAST needs FIRST; FIRST must stay zero). */
static void expect_fixture_store(const char *dir, int major, const char *what) {
  static ba_record_t want[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(want, frames);
  char path[4096];
  snprintf(path, sizeof path, "%s/seg-20251122T000000Z.bitarc", dir);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  uint8_t hdr[12];
  assert_int_equal(fread(hdr, 1, sizeof hdr, f), sizeof hdr);
  fclose(f);
  assert_int_equal(hdr[8] | hdr[9] << 8, major);
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  assert_int_equal(ba_store_segment_count(st), 1);
  ba_segment_t *seg;
  assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
  uint64_t nbad = 99;
  assert_int_equal(ba_segment_verify(seg, &nbad), BA_OK);
  assert_int_equal(nbad, 0);
  recs_t got = {0};
  assert_int_equal(ba_segment_scan(seg, BA_COL_ALL, collect, &got, NULL), BA_OK);
  assert_int_equal(got.n, FX_N);
  for (size_t i = 0; i < FX_N; i++)
    if (!rec_equal(&want[i], &got.r[i], BA_COL_ALL)) fail_msg("%s: row %zu differs", what, i);
  for (size_t i = 0; i < got.n; i++) free((void *)got.r[i].frame);
  got.n = 0;
  assert_int_equal(ba_segment_scan(seg, BA_COL_LAST | BA_COL_PORTS, collect, &got, NULL), BA_OK);
  assert_int_equal(got.n, FX_N);
  for (size_t i = 0; i < FX_N; i++) {
    assert_int_equal(got.r[i].last_ns, want[i].last_ns);
    assert_int_equal(got.r[i].first_ns, 0);
    assert_int_equal(got.r[i].src_port, want[i].src_port);
  }
  free(got.r);
  ba_store_close(st);
}

/* Writes the committed 1.0 fixture to dir/name, all of it or (cut_at_index)
 * only up to its index, as a journal. Returns the fixture's index_off. */
static uint64_t put_fixture_file(const char *src, const char *dir, const char *name, int cut_at_index) {
  const char *fx = ba_test_source(src);
  assert_non_null(fx);
  FILE *in = fopen(fx, "rb");
  assert_non_null(in);
  static uint8_t buf[1 << 17];
  size_t len = fread(buf, 1, sizeof buf, in);
  fclose(in);
  assert_true(len > 80 && len < sizeof buf);
  uint64_t index_off = ba_load_le64(buf + len - 80 + 40);
  assert_true(index_off > 64 && index_off < len);
  if (cut_at_index) len = (size_t)index_off;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *out = fopen(path, "wb");
  assert_non_null(out);
  assert_int_equal(fwrite(buf, 1, len, out), len);
  fclose(out);
  return index_off;
}

static uint64_t put_fixture(const char *dir, const char *name, int cut_at_index) {
  return put_fixture_file("tests/archive/data/seg-v1_0.bitarc", dir, name, cut_at_index);
}

/* The committed 1.0 segment (written by the 1.0 writer from fx_records(),
 * block_rows 100, PLWAH, LZO) reads back exactly, and so it does after
 * `reindex`, which keeps its version (its row groups are copied as they
 * are). */
static void test_read_v1_fixture(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  put_fixture(dir, "seg-20251122T000000Z.bitarc", 0);
  expect_fixture_store(dir, 1, "1.0 fixture");
  size_t nsegs = 0;
  char err[256];
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH32, "cpu", 1, &nsegs, err, sizeof err), BA_OK);
  assert_int_equal(nsegs, 1);
  expect_fixture_store(dir, 1, "1.0 fixture after reindex");
  ba_test_rmtree(dir);
  free(dir);
}

/* A 1.0 journal (the fixture cut after its last row group, as a crash
 * leaves it) is recovered by the 2.0 writer into a 1.0 segment. */
static void test_recover_v1_journal(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  put_fixture(dir, "seg-20251122T000000Z.bitarc.open", 1);
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, NULL, &w), BA_OK);
  assert_int_equal(ba_store_writer_recovered(w), FX_N);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
  expect_fixture_store(dir, 1, "recovered 1.0 journal");
  ba_test_rmtree(dir);
  free(dir);
}

/* The committed 2.0 segment (written by the 2.0 writer from fx_records(),
 * block_rows 100, PLWAH, LZO) reads back exactly, also after reindex. */
static void test_read_v2_fixture(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  put_fixture_file("tests/archive/data/seg-v2_0.bitarc", dir, "seg-20251122T000000Z.bitarc", 0);
  expect_fixture_store(dir, 2, "2.0 fixture");
  size_t nsegs = 0;
  char err[256];
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH32, "cpu", 1, &nsegs, err, sizeof err), BA_OK);
  expect_fixture_store(dir, 2, "2.0 fixture after reindex");
  ba_test_rmtree(dir);
  free(dir);
}

/* `reindex --upgrade`: the committed 1.0 and 2.0 segments become 3.0
 * segments holding the same records (verify, full scan, LAST without
 * FIRST); a second upgrade changes nothing; the scratch directory is gone. */
static void test_upgrade(void **state) {
  (void)state;
  static const char *const fx[] = {"tests/archive/data/seg-v1_0.bitarc", "tests/archive/data/seg-v2_0.bitarc"};
  for (size_t i = 0; i < 2; i++) {
    char *dir = ba_test_mkdtemp();
    put_fixture_file(fx[i], dir, "seg-20251122T000000Z.bitarc", 0);
    size_t nsegs = 99;
    char err[256];
    assert_int_equal(ba_store_upgrade(dir, 2, &nsegs, err, sizeof err), BA_OK);
    assert_int_equal(nsegs, 1);
    expect_fixture_store(dir, 3, i ? "2.0 fixture upgraded" : "1.0 fixture upgraded");
    assert_int_equal(ba_store_upgrade(dir, 1, &nsegs, err, sizeof err), BA_OK);
    assert_int_equal(nsegs, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/.upgrade", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    /* a writer holding the store: refused */
    ba_store_writer_t *w;
    assert_int_equal(ba_store_writer_open(dir, NULL, &w), BA_OK);
    assert_int_equal(ba_store_upgrade(dir, 1, &nsegs, err, sizeof err), BA_ERR_BUSY);
    assert_int_equal(ba_store_writer_close(w), BA_OK);
    ba_test_rmtree(dir);
    free(dir);
  }
}

/* The same records through the current (3.0) writer and reader. */
static void test_store_v3(void **state) {
  (void)state;
  static ba_record_t recs[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(recs, frames);
  char *dir = ba_test_mkdtemp();
  ba_test_write_store(dir, recs, FX_N, 100);
  expect_fixture_store(dir, 3, "3.0");
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_random), cmocka_unit_test(test_roundtrip_real),
      cmocka_unit_test(test_hostile_v2), cmocka_unit_test(test_hostile_v3), cmocka_unit_test(test_read_v1_fixture),
      cmocka_unit_test(test_recover_v1_journal), cmocka_unit_test(test_read_v2_fixture), cmocka_unit_test(test_upgrade),
      cmocka_unit_test(test_store_v3)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
