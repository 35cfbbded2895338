/* Fuzz target: the input is one segment file in a store directory; every
 * reader entry point must fail cleanly or return consistent data. The
 * checksums are fixed in a second pass (fix_crcs), bitmap records included,
 * so mutated zstd frames of compressed bitmaps (3.2) reach the decoder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitarc/store.h"
#include "common/common.h"

static char g_dir[64];
static char g_path[128];

static int sink(void *ctx, const ba_record_t *recs, size_t n) {
  uint64_t *sum = ctx;
  for (size_t i = 0; i < n; i++) {
    *sum += recs[i].first_ns + recs[i].caplen;
    if (recs[i].caplen) *sum += recs[i].frame[0] + recs[i].frame[recs[i].caplen - 1];
  }
  return 0;
}

/* Recomputes the CRCs of the block at off (if it looks like one); returns the
 * offset after it or 0. */
static size_t fix_block(uint8_t *b, size_t size, size_t off) {
  if (off > size || 32 > size - off || memcmp(b + off, "BABK", 4)) return 0;
  uint32_t clen = ba_load_le32(b + off + 16);
  if (clen > size - off - 32) return 0;
  ba_store_le32(b + off + 24, ba_crc32c(0, b + off + 32, clen));
  ba_store_le32(b + off + 28, ba_crc32c(0, b + off, 28));
  return off + 32 + clen;
}

/* Makes every checksum match so that mutations reach the structural checks
 * behind them (lengths, decompression, layouts, bitmap words). */
static void fix_crcs(uint8_t *b, size_t size) {
  if (size >= 64) ba_store_le32(b + 60, ba_crc32c(0, b, 60));
  for (size_t off = 64, next; (next = fix_block(b, size, off)) != 0; off = next) {
  }
  if (size < 64 + 80) return;
  uint8_t *f = b + size - 80;
  uint64_t table = ba_load_le64(f + 24), dir = ba_load_le64(f + 32);
  fix_block(b, size, (size_t)BA_MIN(table, (uint64_t)size));
  if (dir < size && 40 <= size - dir && !memcmp(b + dir, "BABK", 4) && b[dir + 4] == 7) {
    /* attribute table (format.md §7.3): each DIRENT block's bitmap CRCs,
     * the block's CRCs, the table's copy of its payload CRC */
    uint32_t clen = ba_load_le32(b + dir + 16);
    if (clen >= 8 && clen <= size - dir - 32) {
      uint8_t *p = b + dir + 32;
      uint32_t n = ba_load_le32(p);
      for (uint32_t i = 0; i < n && 8 + 32ull * (i + 1) <= clen; i++) {
        uint8_t *t = p + 8 + 32 * i;
        uint64_t d = ba_load_le64(t + 8);
        if (d > size || 32 > size - d || memcmp(b + d, "BABK", 4)) continue;
        uint32_t dl = ba_load_le32(b + d + 16);
        for (uint32_t k = 0; dl <= size - d - 32 && 24ull * (k + 1) <= dl; k++) {
          uint8_t *e = b + d + 32 + 24 * k;
          uint64_t o = ba_load_le64(e + 8);
          uint32_t l = ba_load_le32(e + 4);
          if (o <= size && l <= size - o) ba_store_le32(e + 16, ba_crc32c(0, b + o, l));
        }
        if (fix_block(b, size, (size_t)d)) ba_store_le32(t + 20, ba_load_le32(b + d + 24));
      }
    }
    fix_block(b, size, (size_t)dir);
  } else if (dir < size && 40 <= size - dir && !memcmp(b + dir, "BABK", 4)) {
    uint32_t clen = ba_load_le32(b + dir + 16);
    if (clen >= 8 && clen <= size - dir - 32) {
      uint8_t *p = b + dir + 32;
      uint32_t n = ba_load_le32(p);
      for (uint32_t i = 0; i < n && 8 + 24ull * (i + 1) <= clen; i++) {
        uint8_t *e = p + 8 + 24 * i;
        uint64_t o = ba_load_le64(e + 8);
        uint32_t l = ba_load_le32(e + 16);
        if (o <= size && l <= size - o) ba_store_le32(e + 20, ba_crc32c(0, b + o, l));
      }
    }
    fix_block(b, size, (size_t)dir);
  }
  /* zone maps (§7.2): each ZONE block, its CRC in the ZONEDIR, the ZONEDIR */
  uint64_t zd = ba_load_le64(f + 56);
  if (zd < size && 40 <= size - zd && !memcmp(b + zd, "BABK", 4)) {
    uint32_t clen = ba_load_le32(b + zd + 16);
    if (clen >= 8 && clen <= size - zd - 32) {
      uint8_t *p = b + zd + 32;
      uint32_t n = ba_load_le32(p);
      for (uint32_t i = 0; i < n && 8 + 24ull * (i + 1) <= clen; i++) {
        uint8_t *e = p + 8 + 24 * i;
        uint64_t o = ba_load_le64(e + 8);
        if (o < size && fix_block(b, size, (size_t)o)) ba_store_le32(e + 4, ba_load_le32(b + o + 24));
      }
    }
    fix_block(b, size, (size_t)zd);
  }
  ba_store_le32(f + 64, ba_crc32c(0, f, 64));
}

static void one(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size);
  uint8_t *copy = malloc(size ? size : 1);
  if (size) memcpy(copy, data, size);
  fix_crcs(copy, size);
  one(copy, size);
  free(copy);
  return 0;
}

static void one(const uint8_t *data, size_t size) {
  if (!g_dir[0]) {
    snprintf(g_dir, sizeof g_dir, "/tmp/bitarc-fuzz-seg-XXXXXX");
    if (!mkdtemp(g_dir)) abort();
    snprintf(g_path, sizeof g_path, "%s/seg-20261120T100000Z.bitarc", g_dir);
  }
  FILE *f = fopen(g_path, "wb");
  if (!f) abort();
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  ba_store_t *s;
  if (ba_store_open(g_dir, &s) != BA_OK) abort();
  ba_segment_t *seg;
  if (ba_store_segment_count(s) == 1 && ba_store_segment(s, 0, &seg) == BA_OK) {
    ba_segment_info_t in;
    ba_segment_info(seg, &in);
    uint64_t sum = 0, dmg = 0, nbad = 0;
    ba_segment_scan(seg, BA_COL_ALL, sink, &sum, &dmg);
    uint64_t rows[3] = {0, in.rows / 2, in.rows ? in.rows - 1 : 0};
    size_t nr = in.rows >= 3 && rows[1] > 0 && rows[2] > rows[1] ? 3 : in.rows ? 1 : 0;
    ba_segment_read_rows(seg, rows, nr, BA_COL_SRC | BA_COL_FRAME, sink, &sum, &dmg);
    /* a clone (another thread's reader) reads what the segment reads */
    ba_segment_t *cl = NULL;
    if (ba_segment_clone(seg, &cl) == BA_OK) {
      uint64_t s1 = 0, s2 = 0, d1 = 0, d2 = 0;
      int r1 = ba_segment_read_rows(seg, rows, nr, BA_COL_ALL & ~BA_COL_FRAME, sink, &s1, &d1);
      int r2 = ba_segment_read_rows(cl, rows, nr, BA_COL_ALL & ~BA_COL_FRAME, sink, &s2, &d2);
      if (r1 != r2 || s1 != s2 || d1 != d2) abort();
      ba_segment_clone_free(cl);
    }
    /* bitmaps, raw and (3.2, format.md §7.8) zstd-compressed: a damaged
     * frame, word count or flag must fail cleanly, a bitmap that reads must
     * be whole (rows, count within them) */
    for (int a = 0; a < BA_ATTR_COUNT; a++) {
      uint32_t vals[64];
      size_t nv = 0;
      if (ba_segment_index_values(seg, (ba_attr_t)a, vals, 64, &nv) != BA_OK) break;
      for (size_t i = 0; i < nv && i < 64; i++) {
        ba_bitmap_t *bm = NULL;
        if (ba_segment_index(seg, (ba_attr_t)a, vals[i], &bm) == BA_OK) {
          uint64_t c = 0;
          if (ba_bitmap_rows(bm) != in.rows || ba_bitmap_count(bm, &c) != BA_OK || c > in.rows) abort();
          ba_bitmap_free(bm);
        }
      }
    }
    for (int z = 0; z < BA_ZF_COUNT; z++) {
      const uint64_t *mn, *mx;
      if (ba_segment_zone(seg, (ba_zfield_t)z, &mn, &mx) != BA_OK) continue;
      for (uint32_t g = 0; g < in.nblocks; g++)
        if (mn[g] > mx[g]) abort(); /* the reader refuses such a block */
    }
    ba_segment_verify(seg, &nbad);
  }
  ba_store_close(s);
  unlink(g_path);
}
