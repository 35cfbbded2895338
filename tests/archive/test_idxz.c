/* Compressed index bitmap records (doc/format.md §7.8, format 3.2): in a
 * segment of every codec some records are zstd frames and some stay raw,
 * and every bitmap equals the linear reference over the records; a 3.1
 * segment keeps raw records (reindex keeps its version) and reads, and
 * `reindex --upgrade` rewrites it as 3.2 with compressed records; a
 * compressed flag in a 3.1 segment, a damaged frame (CRC right or wrong), a
 * word count out of bounds or unknown flags fail with the segment, the
 * attribute, the value and "zstd" named, in queries and in verify, never a
 * crash (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "archive/archive.h"
#include "bitarc/bitarc.h"
#include "common/common.h"
#include "store_gen.h"
#include "testsupport.h"

#define NREC 30000u
#define BIN_NS (60ull * 1000000000ull)

static uint64_t t0(void) { return (1795000000ull / 3600) * 3600 * 1000000000ull; }

/* One segment of NREC records (one hour slice) in codec; the records in *g. */
static void write_store(const char *dir, ba_codec_t codec, gen_t *g) {
  gen_records(g, NREC, 42 + codec, t0(), 3000ull * 1000000000ull, 1);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = codec;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, g->r, g->n), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

/* The only segment's path. */
static void seg_path(const char *dir, char *out, size_t cap) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  assert_int_equal(ba_store_segment_count(st), 1);
  ba_segment_t *seg;
  ba_segment_info_t in;
  assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
  assert_int_equal(ba_segment_info(seg, &in), BA_OK);
  snprintf(out, cap, "%s/%s", dir, in.name);
  ba_store_close(st);
}

/* A bitmap record of the segment file: its DIRENT entry's offset in the
 * file, the attribute table entry's and the DIRENT block's. */
typedef struct rec {
  uint64_t ent, at, dblk, off;
  uint32_t len, attr, value;
} rec_t;

/* Every bitmap record (ATTRDIR layout); returns how many, up to cap. */
static size_t records(const uint8_t *b, size_t len, rec_t *out, size_t cap) {
  const uint8_t *f = b + len - BA_SEG_FOOTER_BYTES;
  uint64_t dir = ba_load_le64(f + 32);
  assert_int_equal(b[dir + 4], BA_BLK_ATTRDIR);
  uint32_t nat = ba_load_le32(b + dir + BA_BLK_HDR_BYTES);
  size_t k = 0;
  for (uint32_t i = 0; i < nat; i++) {
    uint64_t at = dir + BA_BLK_HDR_BYTES + BA_ATTRDIR_HDR_BYTES + (uint64_t)i * BA_ATTRDIR_ENT_BYTES;
    uint64_t d = ba_load_le64(b + at + 8);
    uint32_t n = ba_load_le32(b + at + 4);
    for (uint32_t e = 0; e < n && k < cap; e++, k++) {
      uint64_t q = d + BA_BLK_HDR_BYTES + (uint64_t)e * BA_DIRENT_BYTES;
      out[k] = (rec_t){.ent = q, .at = at, .dblk = d, .off = ba_load_le64(b + q + 8), .len = ba_load_le32(b + q + 4),
                       .attr = ba_load_le16(b + at), .value = ba_load_le32(b + q)};
    }
  }
  return k;
}

static uint8_t *read_seg(const char *dir, char *path, size_t cap, size_t *len) {
  seg_path(dir, path, cap);
  uint8_t *b = ba_test_read_file(path, len);
  assert_non_null(b);
  return b;
}

/* Records with the zstd flag and raw ones. */
static void count_packed(const char *dir, size_t *packed, size_t *raw) {
  char path[4096];
  size_t len = 0;
  uint8_t *b = read_seg(dir, path, sizeof path, &len);
  static rec_t r[8192];
  size_t n = records(b, len, r, 8192);
  *packed = *raw = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(r[i].len >= BA_BM_REC_HDR);
    uint8_t fl = b[r[i].off + 1];
    assert_true(fl == 0 || fl == BA_BM_FLAG_ZSTD);
    if (fl) ++*packed;
    else ++*raw;
  }
  free(b);
}

static size_t g_all; /* records counted by ba_segment_index_and_count_all */

/* ba_segment_index_and(attr=v, x) against ba_bitmap_and(x, bm) (bm: that
 * bitmap) for operands x of the segment's codec: sparse, dense, every row. */
static void check_and(ba_segment_t *seg, ba_attr_t a, uint32_t v, const ba_bitmap_t *bm, ba_codec_t codec,
                      uint64_t nrows, uint64_t *rows) {
  static const unsigned step[] = {97, 3, 1};
  for (size_t s = 0; s < sizeof step / sizeof step[0]; s++) {
    size_t k = 0;
    for (uint64_t i = (v * 7u) % step[s]; i < nrows; i += step[s]) rows[k++] = i;
    ba_bitmap_t *x, *want, *got = NULL;
    assert_int_equal(ba_bitmap_from_rows(codec, rows, k, nrows, &x), BA_OK);
    assert_int_equal(ba_bitmap_and(x, bm, codec, &want), BA_OK);
    assert_int_equal(ba_segment_index_and(seg, a, v, x, &got, NULL), BA_OK);
    uint64_t cw = 0, cg = 9;
    assert_int_equal(ba_bitmap_count(want, &cw), BA_OK);
    assert_int_equal(ba_segment_index_and(seg, a, v, x, NULL, &cg), BA_OK);
    if (cg != cw) fail_msg("%s=%u AND every %u-th row: counted %llu, want %llu", ba_attr_name(a), v, step[s],
                           (unsigned long long)cg, (unsigned long long)cw);
    /* the same record twice in one pass (declined, or the same count) */
    ba_attr_t at2[2] = {a, a};
    uint32_t v2[2] = {v, v};
    int rc2 = ba_segment_index_and_count_all(seg, at2, v2, 2, x, &cg);
    assert_true(rc2 == 1 || rc2 == 0);
    if (rc2 == 0) {
      g_all++;
      if (cg != cw) fail_msg("%s=%u twice AND every %u-th row: counted %llu, want %llu", ba_attr_name(a), v,
                             step[s], (unsigned long long)cg, (unsigned long long)cw);
    }
    size_t nw, ng;
    const void *ww = ba_bitmap_words(want, &nw), *wg = ba_bitmap_words(got, &ng);
    if (ba_bitmap_codec(got) != codec || ba_bitmap_rows(got) != nrows || nw != ng ||
        (nw && memcmp(ww, wg, ba_bitmap_size_bytes(want))))
      fail_msg("%s=%u AND every %u-th row: not the words of ba_bitmap_and", ba_attr_name(a), v, step[s]);
    ba_bitmap_free(x);
    ba_bitmap_free(want);
    ba_bitmap_free(got);
  }
}

/* Every attribute's bitmaps against the linear reference (ref_column), and
 * ANDed where they are read (check_and). */
static void check_index(const char *dir, const gen_t *g) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  ba_segment_t *seg;
  ba_segment_info_t in;
  assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
  assert_int_equal(ba_segment_info(seg, &in), BA_OK);
  assert_int_equal(in.rows, g->n);
  uint32_t *ref = malloc(g->n * sizeof *ref), *vals = malloc(65536 * sizeof *vals);
  uint64_t *cnt = calloc(65536, sizeof *cnt), *rows = malloc((g->n + 1) * sizeof *rows);
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ref_column((ba_attr_t)a, g->r, g->n, in.start_ns, BIN_NS, ref);
    memset(cnt, 0, 65536 * sizeof *cnt);
    size_t want = 0, got = 0, npresent = 0;
    for (size_t i = 0; i < g->n; i++)
      if (ref[i] != UINT32_MAX) {
        assert_true(ref[i] < 65536);
        npresent += cnt[ref[i]]++ == 0;
        want++;
      }
    size_t nv = 0;
    assert_int_equal(ba_segment_index_values(seg, (ba_attr_t)a, vals, 65536, &nv), BA_OK);
    if (a >= BA_ATTR_SRC_V6NET && nv == 0 && in.version_minor < 1) continue;
    assert_int_equal(nv, npresent);
    for (size_t k = 0; k < nv; k++) {
      ba_bitmap_t *bm;
      assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, vals[k], &bm), BA_OK);
      size_t nr = 0;
      assert_int_equal(ba_bitmap_to_rows(bm, rows, g->n + 1, &nr), BA_OK);
      if (nr != cnt[vals[k]]) fail_msg("%s=%u: %zu rows, reference %llu", ba_attr_name((ba_attr_t)a), vals[k], nr,
                                       (unsigned long long)cnt[vals[k]]);
      for (size_t i = 0; i < nr; i++) assert_int_equal(ref[rows[i]], vals[k]);
      got += nr;
      check_and(seg, (ba_attr_t)a, vals[k], bm, in.codec, g->n, rows);
      ba_bitmap_free(bm);
      if (k + 1 == nv) { /* a value past the last: absent, an empty bitmap */
        assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, vals[k] + 1, &bm), BA_OK);
        check_and(seg, (ba_attr_t)a, vals[k] + 1, bm, in.codec, g->n, rows);
        ba_bitmap_free(bm);
      }
    }
    assert_int_equal(got, want);
  }
  uint64_t nbad = 9;
  assert_int_equal(ba_segment_verify(seg, &nbad), BA_OK);
  assert_int_equal(nbad, 0);
  free(ref);
  free(vals);
  free(cnt);
  free(rows);
  ba_store_close(st);
}

static void test_roundtrip(void **state) {
  (void)state;
  static const ba_codec_t codecs[] = {BA_CODEC_PLWAH, BA_CODEC_WAH32, BA_CODEC_WAH64, BA_CODEC_COMPAX,
                                      BA_CODEC_MASC};
  for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
    char *dir = ba_test_mkdtemp();
    gen_t g;
    write_store(dir, codecs[c], &g);
    size_t packed = 0, raw = 0;
    count_packed(dir, &packed, &raw);
    if (packed == 0 || raw == 0) fail_msg("%s: %zu compressed, %zu raw", ba_codec_name(codecs[c]), packed, raw);
    check_index(dir, &g);
    ba_rd_set_map_min(0); /* every record mapped from the file */
    g_all = 0;
    check_index(dir, &g);
    ba_rd_set_map_min(256u << 10);
    if ((codecs[c] == BA_CODEC_PLWAH || codecs[c] == BA_CODEC_WAH32) && g_all == 0)
      fail_msg("%s: no record counted in one pass", ba_codec_name(codecs[c]));
    gen_free(&g);
    ba_test_rmtree(dir);
    free(dir);
  }
}

/* Sets the segment header's minor version (CRC fixed). */
static void set_minor(const char *dir, uint16_t minor) {
  char path[4096];
  size_t len = 0;
  uint8_t *b = read_seg(dir, path, sizeof path, &len);
  ba_store_le16(b + 10, minor);
  ba_store_le32(b + 60, ba_crc32c(0, b, 60));
  assert_int_equal(ba_test_write_file(path, b, len), 0);
  free(b);
}

/* 3.1: raw records only (reindex keeps the version); upgrade makes 3.2. A
 * 3.1 header over compressed records is refused, raw records still read. */
static void test_versions(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  write_store(dir, BA_CODEC_PLWAH, &g);
  set_minor(dir, 1);
  ba_store_t *st;
  ba_segment_t *seg;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
  uint64_t nbad = 0;
  assert_true(ba_segment_verify(seg, &nbad) < 0);
  assert_true(nbad >= 1);
  assert_non_null(strstr(ba_segment_errmsg(seg), "zstd"));
  char path[4096];
  size_t len = 0, nr = 0, nraw = 0;
  uint8_t *b = read_seg(dir, path, sizeof path, &len);
  static rec_t r[8192];
  nr = records(b, len, r, 8192);
  for (size_t i = 0; i < nr; i++) {
    ba_bitmap_t *bm = NULL;
    int rc = ba_segment_index(seg, (ba_attr_t)r[i].attr, r[i].value, &bm);
    ba_bitmap_free(bm);
    if (b[r[i].off + 1] == 0) nraw++;
    assert_int_equal(rc, b[r[i].off + 1] == 0 ? BA_OK : BA_ERR_CORRUPT);
  }
  assert_true(nraw > 0);
  free(b);
  ba_store_close(st);

  size_t n = 0, packed = 0, raw = 0;
  char err[256];
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_PLWAH, "cpu", 1, &n, err, sizeof err), BA_OK);
  count_packed(dir, &packed, &raw);
  assert_int_equal(packed, 0);
  check_index(dir, &g);
  assert_int_equal(ba_store_upgrade(dir, 1, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 1);
  count_packed(dir, &packed, &raw);
  assert_true(packed > 0);
  check_index(dir, &g);
  assert_int_equal(ba_store_upgrade(dir, 1, &n, err, sizeof err), BA_OK);
  assert_int_equal(n, 0); /* 3.2 is current */
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

/* A record changed, and (fix) its CRC in the DIRENT entry, the DIRENT
 * block's CRCs, the attribute table's copy and the table's CRCs made right. */
static void fix_crcs(uint8_t *b, size_t len, const rec_t *r) {
  const uint8_t *f = b + len - BA_SEG_FOOTER_BYTES;
  uint64_t dir = ba_load_le64(f + 32);
  ba_store_le32(b + r->ent + 16, ba_crc32c(0, b + r->off, r->len));
  uint32_t dl = ba_load_le32(b + r->dblk + 16);
  ba_store_le32(b + r->dblk + 24, ba_crc32c(0, b + r->dblk + BA_BLK_HDR_BYTES, dl));
  ba_store_le32(b + r->dblk + 28, ba_crc32c(0, b + r->dblk, 28));
  ba_store_le32(b + r->at + 20, ba_load_le32(b + r->dblk + 24));
  uint32_t al = ba_load_le32(b + dir + 16);
  ba_store_le32(b + dir + 24, ba_crc32c(0, b + dir + BA_BLK_HDR_BYTES, al));
  ba_store_le32(b + dir + 28, ba_crc32c(0, b + dir, 28));
}

static void test_damage(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  gen_t g;
  write_store(dir, BA_CODEC_PLWAH, &g);
  char path[4096];
  size_t len = 0;
  uint8_t *clean = read_seg(dir, path, sizeof path, &len), *b = malloc(len);
  static rec_t r[8192];
  size_t n = records(clean, len, r, 8192), target = n;
  for (size_t i = 0; i < n && target == n; i++)
    if (clean[r[i].off + 1] == BA_BM_FLAG_ZSTD && r[i].len > 64) target = i;
  assert_true(target < n);
  const rec_t *t = &r[target];
  char name[64];
  snprintf(name, sizeof name, "%s=%u", ba_attr_name((ba_attr_t)t->attr), t->value);
  enum { D_BIT, D_FRAME, D_NWORDS, D_NWORDS_HUGE, D_FLAGS, D_TAIL, D_FLIPS };
  for (int k = D_BIT; k <= D_FLIPS; k++) {
    for (int rep = 0; rep < (k == D_FLIPS ? 64 : 1); rep++) {
      memcpy(b, clean, len);
      uint8_t *p = b + t->off;
      int want = BA_ERR_CORRUPT;
      switch (k) {
      case D_BIT: p[t->len / 2] ^= 0x10; want = BA_ERR_CHECKSUM; break;
      case D_FRAME: p[BA_BM_REC_HDR] |= 0x08; break; /* frame header: the reserved bit */
      case D_NWORDS: ba_store_le64(p + 12, ba_load_le64(p + 12) + 1); break;
      case D_NWORDS_HUGE: ba_store_le64(p + 12, 1ull << 40); break;
      case D_FLAGS: p[1] = 3; break;
      case D_TAIL: p[t->len - 1] ^= 0xFF; p[t->len - 2] ^= 0x5A; want = 0; break; /* fails or decodes validly */
      case D_FLIPS: p[BA_BM_REC_HDR + (size_t)(ba_crc32c((uint32_t)rep, "x", 1) % (t->len - BA_BM_REC_HDR))] ^=
                    (uint8_t)(1u << (rep % 8)); want = 0; break;
      }
      if (k != D_BIT) fix_crcs(b, len, t);
      assert_int_equal(ba_test_write_file(path, b, len), 0);
      ba_store_t *st;
      ba_segment_t *seg;
      assert_int_equal(ba_store_open(dir, &st), BA_OK);
      assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
      ba_bitmap_t *bm = NULL, *all = NULL, *anded = NULL;
      int rc = ba_segment_index(seg, (ba_attr_t)t->attr, t->value, &bm);
      ba_bitmap_free(bm);
      if (want != 0 && rc != want) fail_msg("case %d: rc %d, want %d", k, rc, want);
      /* the same error where it is ANDed as read */
      assert_int_equal(ba_bitmap_create(BA_CODEC_PLWAH, &all), BA_OK);
      assert_int_equal(ba_bitmap_append_run(all, 1, g.n), BA_OK);
      assert_int_equal(ba_bitmap_finish(all, g.n), BA_OK);
      int arc = ba_segment_index_and(seg, (ba_attr_t)t->attr, t->value, all, &anded, NULL);
      ba_bitmap_free(anded);
      uint64_t cnt;
      if (ba_segment_index_and(seg, (ba_attr_t)t->attr, t->value, all, NULL, &cnt) != arc)
        fail_msg("case %d: counting gives another result", k);
      ba_bitmap_free(all);
      if (arc != rc) fail_msg("case %d: ba_segment_index %d, ba_segment_index_and %d", k, rc, arc);
      uint64_t nbad = 0;
      int vrc = ba_segment_verify(seg, &nbad);
      if (rc < 0) {
        const char *m = ba_segment_errmsg(seg);
        assert_true(vrc < 0 && nbad == 1);
        if (!strstr(m, name) || !strstr(m, "zstd") || !strstr(m, "seg-"))
          fail_msg("case %d: message '%s' (want %s, zstd)", k, m, name);
      } else {
        assert_int_equal(vrc, BA_OK); /* the words decoded to a valid bitmap */
      }
      /* the other bitmaps of the segment are unaffected */
      assert_int_equal(ba_segment_index(seg, (ba_attr_t)r[target ? 0 : 1].attr, r[target ? 0 : 1].value, &bm),
                       BA_OK);
      ba_bitmap_free(bm);
      ba_store_close(st);
    }
  }
  free(b);
  free(clean);
  gen_free(&g);
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_versions),
                                     cmocka_unit_test(test_damage)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
