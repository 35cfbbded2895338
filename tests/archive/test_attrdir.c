/* The index directory by attribute (doc/format.md §7.3): a segment's
 * attribute table (ATTRDIR at the footer's dir_off) and one DIRENT block per
 * attribute. New segments are written so (writer, reindex, upgrade); the
 * committed 3.0 segment written before (one IDXDIR block) still reads; every
 * index bitmap of both equals the rows a naive pass over the records gives;
 * damaged or truncated tables and DIRENT blocks fail with a message naming
 * the segment, the block and the attribute, never a crash (ASan). */
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
#include "common/common.h"
#include "fixture_gen.h"
#include "testsupport.h"

#define SEG "seg-20251122T000000Z.bitarc"
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void seg_path(const char *dir, char *out, size_t cap) { snprintf(out, cap, "%s/" SEG, dir); }

static void put_fixture(const char *rel, const char *dir) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(ba_test_source(rel), &len);
  assert_non_null(b);
  char path[4096];
  seg_path(dir, path, sizeof path);
  assert_int_equal(ba_test_write_file(path, b, len), 0);
  free(b);
}

static void write_v3(const char *dir) {
  static ba_record_t recs[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(recs, frames);
  ba_test_write_store(dir, recs, FX_N, 100);
}

typedef struct foot {
  uint64_t table_off, dir_off, index_off;
} foot_t;

static foot_t footer(const uint8_t *b, size_t len) {
  const uint8_t *f = b + len - BA_SEG_FOOTER_BYTES;
  return (foot_t){ba_load_le64(f + 24), ba_load_le64(f + 32), ba_load_le64(f + 40)};
}

/* The block type at dir_off; for an ATTRDIR, every structural rule of §7.3:
 * attributes ascending, each DIRENT block (type 8, col = attribute, rows =
 * entries, CRC as the table says) back to back after the last bitmap and up
 * to dir_off, values ascending, bitmaps before the first DIRENT block. */
static int dir_type(const char *dir) {
  char path[4096];
  seg_path(dir, path, sizeof path);
  size_t len = 0;
  uint8_t *b = ba_test_read_file(path, &len);
  assert_non_null(b);
  foot_t ft = footer(b, len);
  assert_true(ft.index_off <= ft.dir_off && ft.dir_off < ft.table_off);
  const uint8_t *h = b + ft.dir_off;
  assert_memory_equal(h, BA_BLK_MAGIC, 4);
  int type = h[4];
  if (type == BA_BLK_ATTRDIR) {
    const uint8_t *p = h + BA_BLK_HDR_BYTES;
    uint32_t nat = ba_load_le32(p), plen = ba_load_le32(h + 16);
    assert_int_equal(plen, BA_ATTRDIR_HDR_BYTES + nat * BA_ATTRDIR_ENT_BYTES);
    assert_int_equal(ba_load_le32(h + 24), ba_crc32c(0, p, plen));
    assert_true(nat > 0 && nat <= BA_ATTR_COUNT);
    uint64_t next = ba_load_le64(p + BA_ATTRDIR_HDR_BYTES + 8), bm_end = next, bm_max = ft.index_off;
    for (uint32_t i = 0; i < nat; i++) {
      const uint8_t *e = p + BA_ATTRDIR_HDR_BYTES + i * BA_ATTRDIR_ENT_BYTES;
      uint32_t attr = ba_load_le16(e), cnt = ba_load_le32(e + 4), dl = ba_load_le32(e + 16);
      uint64_t off = ba_load_le64(e + 8);
      if (i) assert_true(attr > ba_load_le16(e - BA_ATTRDIR_ENT_BYTES));
      assert_int_equal(off, next);
      assert_int_equal(dl, cnt * BA_DIRENT_BYTES);
      const uint8_t *d = b + off;
      assert_memory_equal(d, BA_BLK_MAGIC, 4);
      assert_int_equal(d[4], BA_BLK_DIRENT);
      assert_int_equal(d[5], attr);
      assert_int_equal(ba_load_le32(d + 8), cnt);
      assert_int_equal(ba_load_le32(d + 16), dl);
      assert_int_equal(ba_load_le32(d + 24), ba_load_le32(e + 20));
      assert_int_equal(ba_crc32c(0, d + BA_BLK_HDR_BYTES, dl), ba_load_le32(e + 20));
      uint64_t bm_bytes = 0;
      for (uint32_t k = 0; k < cnt; k++) {
        const uint8_t *q = d + BA_BLK_HDR_BYTES + k * BA_DIRENT_BYTES;
        if (k) assert_true(ba_load_le32(q) > ba_load_le32(q - BA_DIRENT_BYTES));
        uint64_t bo = ba_load_le64(q + 8), bl = ba_load_le32(q + 4);
        assert_true(bo >= ft.index_off && bo + bl <= bm_end);
        assert_int_equal(ba_crc32c(0, b + bo, bl), ba_load_le32(q + 16));
        assert_int_equal(ba_load_le32(q + 20), 0);
        if (bo + bl > bm_max) bm_max = bo + bl;
        bm_bytes += bl;
      }
      assert_int_equal(ba_load_le64(e + 24), bm_bytes);
      next = off + BA_BLK_HDR_BYTES + dl;
    }
    assert_int_equal(next, ft.dir_off);
    assert_int_equal(bm_max, bm_end); /* DIRENT blocks follow the last bitmap */
  }
  free(b);
  return type;
}

/* Every attribute's values and bitmaps equal a naive pass over fx_records()
 * (rows in order; 250 rows fold no port into a bin). */
static void check_index(const char *dir) {
  static ba_record_t recs[FX_N];
  static uint8_t frames[FX_FRAME_BYTES];
  fx_records(recs, frames);
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  ba_segment_t *seg;
  assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
  ba_segment_info_t in;
  assert_int_equal(ba_segment_info(seg, &in), BA_OK);
  uint64_t idx_attr = 0;
  for (int a = 0; a < BA_ATTR_COUNT; a++) idx_attr += in.bytes_index_attr[a];
  assert_true(idx_attr > 0 && idx_attr < in.bytes_index);
  static uint32_t vals[FX_N], got[FX_N + 1];
  uint64_t total = 0;
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_attr_values((ba_attr_t)a, recs, FX_N, in.start_ns, (uint64_t)in.time_bin_seconds * 1000000000ull, vals);
    size_t n = 0;
    assert_int_equal(ba_segment_index_values(seg, (ba_attr_t)a, got, FX_N + 1, &n), BA_OK);
    size_t want_n = 0; /* distinct values, counted by walking got[] and vals[] */
    for (size_t i = 0; i < FX_N; i++) {
      if (vals[i] == BA_IDX_NONE) continue;
      size_t j = 0;
      while (j < i && vals[j] != vals[i]) j++;
      if (j == i) want_n++;
    }
    /* IPv6 attributes came with 3.1 (format.md §7.4): a 3.0 segment has none
     * (reindex, which keeps its version, may build them) */
    int v31 = in.version_major > 3 || (in.version_major == 3 && in.version_minor >= 1);
    if (a >= BA_ATTR_SRC_V6NET && !v31 && n == 0) continue;
    if (n != want_n) fail_msg("%s: %zu values, naive %zu", ba_attr_name((ba_attr_t)a), n, want_n);
    for (size_t k = 0; k < n; k++) {
      if (k) assert_true(got[k] > got[k - 1]);
      ba_bitmap_t *bm = NULL;
      assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, got[k], &bm), BA_OK);
      uint64_t rows[FX_N];
      size_t nr = 0, want = 0;
      assert_int_equal(ba_bitmap_to_rows(bm, rows, FX_N, &nr), BA_OK);
      for (size_t i = 0; i < FX_N; i++)
        if (vals[i] == got[k]) {
          if (want >= nr || rows[want] != i) fail_msg("%s=%u: row %zu missing", ba_attr_name((ba_attr_t)a), got[k], i);
          want++;
        }
      assert_int_equal(nr, want);
      total += nr;
      ba_bitmap_free(bm);
    }
    /* a value that is absent: an empty bitmap */
    ba_bitmap_t *bm = NULL;
    uint64_t c = 1;
    assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, 0xFFFFFFF0u, &bm), BA_OK);
    assert_int_equal(ba_bitmap_count(bm, &c), BA_OK);
    assert_int_equal(c, 0);
    ba_bitmap_free(bm);
  }
  assert_true(total > FX_N * 8);
  uint64_t nbad = 9;
  assert_int_equal(ba_segment_verify(seg, &nbad), BA_OK);
  assert_int_equal(nbad, 0);
  ba_store_close(st);
}

/* A new segment: ATTRDIR layout, index exact; reindex keeps it so. */
static void test_roundtrip(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  write_v3(dir);
  assert_int_equal(dir_type(dir), BA_BLK_ATTRDIR);
  check_index(dir);
  size_t nsegs = 0;
  char err[256];
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_WAH32, "cpu", 1, &nsegs, err, sizeof err), BA_OK);
  assert_int_equal(dir_type(dir), BA_BLK_ATTRDIR);
  check_index(dir);
  ba_test_rmtree(dir);
  free(dir);
}

/* The committed 3.0 segment written with one IDXDIR block reads, index
 * included; reindex rewrites it with an attribute table, same answers. The
 * 1.0 fixture upgraded to 3.0 gets an attribute table too. */
static void test_old_layout(void **state) {
  (void)state;
  char *dir = ba_test_mkdtemp();
  put_fixture("tests/archive/data/seg-v3_0.bitarc", dir);
  assert_int_equal(dir_type(dir), BA_BLK_IDXDIR);
  check_index(dir);
  size_t nsegs = 0;
  char err[256];
  assert_int_equal(ba_store_reindex(dir, BA_CODEC_PLWAH, "cpu", 1, &nsegs, err, sizeof err), BA_OK);
  assert_int_equal(nsegs, 1);
  assert_int_equal(dir_type(dir), BA_BLK_ATTRDIR);
  check_index(dir);
  ba_test_rmtree(dir);
  free(dir);
  dir = ba_test_mkdtemp();
  put_fixture("tests/archive/data/seg-v1_0.bitarc", dir);
  assert_int_equal(dir_type(dir), BA_BLK_IDXDIR);
  assert_int_equal(ba_store_upgrade(dir, 1, &nsegs, err, sizeof err), BA_OK);
  assert_int_equal(nsegs, 1);
  assert_int_equal(dir_type(dir), BA_BLK_ATTRDIR);
  check_index(dir);
  ba_test_rmtree(dir);
  free(dir);
}

/* ---- damage ---- */
static void fix_hdr(uint8_t *b, uint64_t off) { ba_store_le32(b + off + 28, ba_crc32c(0, b + off, 28)); }
static void fix_payload(uint8_t *b, uint64_t off) {
  ba_store_le32(b + off + 24, ba_crc32c(0, b + off + BA_BLK_HDR_BYTES, ba_load_le32(b + off + 16)));
  fix_hdr(b, off);
}
/* ATTRDIR entry i of the clean segment (offset in the file). */
static uint64_t at_ent(const uint8_t *b, foot_t ft, unsigned i) {
  (void)b;
  return ft.dir_off + BA_BLK_HDR_BYTES + BA_ATTRDIR_HDR_BYTES + (uint64_t)i * BA_ATTRDIR_ENT_BYTES;
}
/* A DIRENT payload changed: its block CRC, the table's copy and the table's CRC follow. */
static void fix_dirent(uint8_t *b, foot_t ft, unsigned i) {
  uint64_t e = at_ent(b, ft, i), off = ba_load_le64(b + e + 8);
  fix_payload(b, off);
  ba_store_le32(b + e + 20, ba_load_le32(b + off + 24));
  fix_payload(b, ft.dir_off);
}

typedef struct dmg {
  const char *what;
  int all;          /* every attribute fails (the table), or only `attr_i`'s */
  int rc;           /* expected error */
  const char *msg;  /* expected in the message */
} dmg_t;

static void damage(uint8_t *b, size_t len, int k, unsigned ai) {
  foot_t ft = footer(b, len);
  uint64_t e = at_ent(b, ft, ai), doff = ba_load_le64(b + e + 8);
  switch (k) {
  case 0: b[ft.dir_off + BA_BLK_HDR_BYTES + 9] ^= 1; break; /* table payload bit */
  case 1: /* nattr + 1, CRCs right */
    ba_store_le32(b + ft.dir_off + BA_BLK_HDR_BYTES, ba_load_le32(b + ft.dir_off + BA_BLK_HDR_BYTES) + 1);
    fix_payload(b, ft.dir_off);
    break;
  case 2: ba_store_le32(b + ft.dir_off + 12, 1u << 24); ba_store_le32(b + ft.dir_off + 16, 1u << 24); fix_hdr(b, ft.dir_off); break; /* table longer than the file */
  case 3: b[ft.dir_off + 4] = 9; fix_hdr(b, ft.dir_off); break; /* an unknown block type at dir_off */
  case 4: ba_store_le64(b + e + 8, ft.dir_off - 40); fix_payload(b, ft.dir_off); break; /* DIRENT block runs into the table */
  case 5: /* one entry more than its DIRENT block holds */
    ba_store_le32(b + e + 4, ba_load_le32(b + e + 4) + 1);
    ba_store_le32(b + e + 16, ba_load_le32(b + e + 16) + BA_DIRENT_BYTES);
    fix_payload(b, ft.dir_off);
    break;
  case 6: b[doff + BA_BLK_HDR_BYTES + 1] ^= 4; break; /* DIRENT payload bit */
  case 7: b[doff + 4] = BA_BLK_IDXDIR; fix_hdr(b, doff); break; /* DIRENT header says another type */
  case 8: b[doff + 5] ^= 1; fix_hdr(b, doff); break; /* DIRENT of another attribute */
  case 9: /* a bitmap offset past the bitmaps, CRCs right */
    ba_store_le64(b + doff + BA_BLK_HDR_BYTES + 8, ft.dir_off);
    fix_dirent(b, ft, ai);
    break;
  case 10: /* values out of order, CRCs right */
    ba_store_le32(b + doff + BA_BLK_HDR_BYTES + BA_DIRENT_BYTES, 0);
    ba_store_le32(b + doff + BA_BLK_HDR_BYTES, 5);
    fix_dirent(b, ft, ai);
    break;
  case 11: ba_store_le32(b + doff + 16, 1u << 20); fix_hdr(b, doff); break; /* DIRENT length lies */
  case 12: /* an attribute's bitmap bytes in the table past the DIRENT blocks, CRCs right */
    ba_store_le64(b + e + 24, ft.dir_off - ft.index_off);
    fix_payload(b, ft.dir_off);
    break;
  case 13: /* a bitmap 8 bytes longer (into the next attribute's), CRCs right */
    ba_store_le32(b + doff + BA_BLK_HDR_BYTES + 4, ba_load_le32(b + doff + BA_BLK_HDR_BYTES + 4) + 8);
    fix_dirent(b, ft, ai);
    break;
  }
}

static void test_damage(void **state) {
  (void)state;
  static const dmg_t cases[] = {
      {"table bit", 1, BA_ERR_CHECKSUM, "attribute table block at offset"},
      {"table count", 1, BA_ERR_CORRUPT, "attribute table block"},
      {"table truncated", 1, BA_ERR_TRUNCATED, "attribute table block"},
      {"unknown type", 1, BA_ERR_CORRUPT, "index directory"},
      {"dirent into table", 1, BA_ERR_CORRUPT, "attribute table block"},
      {"dirent count", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"dirent bit", 0, BA_ERR_CHECKSUM, "DIRENT block at offset"},
      {"dirent type", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"dirent attr", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"dirent bitmap offset", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"dirent order", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"dirent length", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
      {"table bitmap bytes", 1, BA_ERR_CORRUPT, "attribute table block"},
      {"bitmap length", 0, BA_ERR_CORRUPT, "DIRENT block at offset"},
  };
  char *dir = ba_test_mkdtemp();
  write_v3(dir);
  char path[4096];
  seg_path(dir, path, sizeof path);
  size_t len = 0;
  uint8_t *clean = ba_test_read_file(path, &len);
  assert_non_null(clean);
  uint8_t *b = malloc(len);
  /* Targets: the first three table entries (not the last) of attributes
   * with two values or more. */
  foot_t cf = footer(clean, len);
  uint32_t nat = ba_load_le32(clean + cf.dir_off + BA_BLK_HDR_BYTES);
  unsigned tg[3], nt = 0;
  for (unsigned i = 0; i + 1 < nat && nt < 3; i++)
    if (ba_load_le32(clean + at_ent(clean, cf, i) + 4) >= 2) tg[nt++] = i;
  assert_true(nt >= 2);
  for (size_t k = 0; k < NELEM(cases); k++) {
    for (unsigned t = 0; t < nt; t++) {
      unsigned ai = tg[t];
      memcpy(b, clean, len);
      damage(b, len, (int)k, ai);
      assert_int_equal(ba_test_write_file(path, b, len), 0);
      unsigned target = ba_load_le16(clean + at_ent(clean, footer(clean, len), ai));
      ba_store_t *st;
      assert_int_equal(ba_store_open(dir, &st), BA_OK);
      ba_segment_t *seg;
      assert_int_equal(ba_store_segment(st, 0, &seg), BA_OK);
      int failed = 0;
      for (int a = 0; a < BA_ATTR_COUNT; a++) {
        uint32_t v[4];
        size_t n = 0;
        int rc = ba_segment_index_values(seg, (ba_attr_t)a, v, 4, &n);
        int expect_fail = cases[k].all || (unsigned)a == target;
        if (!expect_fail) {
          if (rc != BA_OK) fail_msg("%s (attr %u): %s also failed: %s", cases[k].what, target, ba_attr_name((ba_attr_t)a), ba_segment_errmsg(seg));
          continue;
        }
        if (rc != cases[k].rc)
          fail_msg("%s (attr %u): %s gave %d, want %d (%s)", cases[k].what, target, ba_attr_name((ba_attr_t)a), rc, cases[k].rc, ba_segment_errmsg(seg));
        const char *m = ba_segment_errmsg(seg);
        if (!strstr(m, SEG) || !strstr(m, cases[k].msg) || (!cases[k].all && !strstr(m, ba_attr_name((ba_attr_t)a))))
          fail_msg("%s: message '%s'", cases[k].what, m);
        ba_bitmap_t *bm = NULL;
        assert_int_equal(ba_segment_index(seg, (ba_attr_t)a, 1, &bm), cases[k].rc);
        failed++;
      }
      assert_true(failed >= 1);
      uint64_t nbad = 0;
      assert_true(ba_segment_verify(seg, &nbad) < 0);
      assert_true(nbad >= 1);
      assert_non_null(strstr(ba_segment_errmsg(seg), SEG));
      ba_store_close(st);
    }
  }
  free(b);
  free(clean);
  ba_test_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_old_layout),
                                     cmocka_unit_test(test_damage)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
