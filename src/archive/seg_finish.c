/* Finishing a segment (doc/format.md §2, §4, §7.2, §7.3, §7.8): after the
 * last row group of a journal, the index bitmaps (rare ports folded into
 * bins; in 3.2 zstd-compressed where that pays), one DIRENT block per
 * attribute and the ATTRDIR table, the zone maps, the group table and the
 * footer; then fsync and the rename from .open to
 * .bitarc. The writer, crash recovery, reindex and upgrade all end here, so
 * their segments are byte for byte alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

typedef struct wbuf {
  int fd;
  uint8_t *p;
  size_t n, cap;
  uint64_t off;
} wbuf_t;

static int wbuf_flush(wbuf_t *w) {
  if (w->n) BA_FORWARD(ba_write_full(w->fd, w->p, w->n));
  w->n = 0;
  return BA_OK;
}

static int wbuf_put(void *ctx, const void *p, size_t n) {
  wbuf_t *w = ctx;
  if (w->n + n > w->cap) BA_FORWARD(wbuf_flush(w));
  if (n >= w->cap) {
    BA_FORWARD(ba_write_full(w->fd, p, n));
  } else {
    memcpy(w->p + w->n, p, n);
    w->n += n;
  }
  w->off += n;
  return BA_OK;
}

/* An uncompressed block; col and rows as the block type defines them. */
static int put_block(wbuf_t *w, uint8_t type, uint8_t col, uint32_t rows, const uint8_t *payload,
                     size_t len, uint32_t crc) {
  BA_RETURN_IF(len > UINT32_MAX, BA_ERR_OVERFLOW);
  ba_blk_hdr_t h = {.type = type, .col = col, .compress = BA_COMPRESS_NONE, .rows = rows,
                    .raw_len = (uint32_t)len, .comp_len = (uint32_t)len, .group = 0,
                    .payload_crc = crc};
  uint8_t hb[BA_BLK_HDR_BYTES];
  ba_blk_hdr_encode(&h, hb);
  BA_FORWARD(wbuf_put(w, hb, sizeof hb));
  return wbuf_put(w, payload, len);
}

/* The index directory by attribute (§7.3): one DIRENT block per attribute
 * holding bitmaps (dir: ba_idx_write's entries, by attribute; tmp: room for
 * all of them), then the attribute table, whose offset goes to *dir_off. */
static int write_attr_dir(wbuf_t *w, const ba_idx_dirent_t *dir, size_t ndir, uint8_t *tmp, uint64_t *dir_off) {
  uint8_t at[BA_ATTRDIR_HDR_BYTES + BA_ATTR_COUNT * BA_ATTRDIR_ENT_BYTES];
  uint32_t nat = 0;
  for (size_t i = 0, j; i < ndir; i = j) {
    uint16_t a = dir[i].attr;
    uint8_t *p = tmp;
    for (j = i; j < ndir && dir[j].attr == a; j++, p += BA_DIRENT_BYTES) {
      ba_store_le32(p, dir[j].value);
      ba_store_le32(p + 4, dir[j].len);
      ba_store_le64(p + 8, dir[j].off);
      ba_store_le32(p + 16, dir[j].crc);
      ba_store_le32(p + 20, 0);
    }
    size_t plen = (j - i) * BA_DIRENT_BYTES;
    uint32_t crc = ba_crc32c(0, tmp, plen);
    uint64_t bm_bytes = dir[j - 1].off + dir[j - 1].len - dir[i].off; /* back to back (ba_idx_write) */
    uint8_t *e = at + BA_ATTRDIR_HDR_BYTES + nat++ * BA_ATTRDIR_ENT_BYTES;
    ba_store_le16(e, a);
    ba_store_le16(e + 2, 0);
    ba_store_le32(e + 4, (uint32_t)(j - i));
    ba_store_le64(e + 8, w->off);
    ba_store_le32(e + 16, (uint32_t)plen);
    ba_store_le32(e + 20, crc);
    ba_store_le64(e + 24, bm_bytes);
    BA_FORWARD(put_block(w, BA_BLK_DIRENT, (uint8_t)a, (uint32_t)(j - i), tmp, plen, crc));
  }
  *dir_off = w->off;
  ba_store_le32(at, nat);
  ba_store_le32(at + 4, 0);
  size_t alen = BA_ATTRDIR_HDR_BYTES + (size_t)nat * BA_ATTRDIR_ENT_BYTES;
  return put_block(w, BA_BLK_ATTRDIR, 0xFF, 0, at, alen, ba_crc32c(0, at, alen));
}

int ba_seg_finish(ba_seg_finish_t *f) {
  int rc = BA_OK;
  wbuf_t w = {.fd = f->fd, .cap = 4u << 20, .off = f->end};
  ba_idx_dirent_t *dir = NULL;
  size_t ndir = 0;
  uint8_t *tmp = NULL;
  ba_idxz_t z = {0};
  w.p = ba_malloc(w.cap);
  if (!w.p) return BA_ERR_NOMEM;
  if (lseek(f->fd, (off_t)f->end, SEEK_SET) < 0 || ftruncate(f->fd, (off_t)f->end) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  uint64_t index_off = w.off;
  /* oLSH-reordered or clustered rows: time windows are answered by the zone maps (§7.2) or a check, not
   * TIME_BIN (§7.9). */
  uint8_t hb[BA_SEG_HDR_BYTES];
  ba_seg_hdr_t sh;
  if (f->ngroups <= BA_ZONE_MAX_GROUPS && ba_pread_full(f->fd, hb, sizeof hb, 0) == BA_OK &&
      ba_seg_hdr_decode(hb, &sh) == BA_OK && (sh.flags & (BA_SEG_FLAG_OLSH | BA_SEG_FLAG_CLUSTER)))
    ba_idx_attr_clear(&f->attrs[BA_ATTR_TIME_BIN]);
  /* 3.2: bitmaps zstd-compressed where that pays (§7.8); a journal begun in
   * an older version is finished in it (recovery), so its bitmaps stay raw */
  ba_seg_hdr_t ver = {.major = f->major ? f->major : BA_SEG_MAJOR, .minor = f->major ? f->minor : BA_SEG_MINOR};
  int packed = ba_seg_has_idxz(&ver);
  /* Rare ports into bins (§7.4); the bin attributes arrive empty (ba_attr_values). */
  for (int side = 0; side < 2 && rc == BA_OK && !f->folded; side++) {
    ba_idx_attr_t *ex = &f->attrs[side ? BA_ATTR_DST_PORT : BA_ATTR_SRC_PORT];
    ba_idx_attr_t *bins = &f->attrs[side ? BA_ATTR_DST_PORT_BIN : BA_ATTR_SRC_PORT_BIN];
    ba_idx_attr_clear(bins);
    if (ex->n) rc = ba_idx_fold(ex, bins, f->rows >> BA_PORT_FOLD_SHIFT, ba_port_bin, ba_bitmap_codec(ex->bms[0]));
  }
  if (rc < 0) goto done;
  if ((rc = ba_idx_write(f->attrs, BA_ATTR_COUNT, index_off, wbuf_put, &w, packed ? ba_idxz_pack : NULL, &z,
                         &dir, &ndir, NULL)) < 0)
    goto done;
  unsigned nc = f->ncols ? f->ncols : BA_NCOLS2;
  size_t tlen = (size_t)f->ngroups * ba_table_entry_bytes(nc);
  tmp = ba_malloc(BA_MAX(ndir * BA_DIRENT_BYTES, tlen) + 1);
  if (!tmp) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  uint64_t dir_off;
  if ((rc = write_attr_dir(&w, dir, ndir, tmp, &dir_off)) < 0) goto done;
  uint64_t zone_off = 0; /* zone maps (§7.2) after the attribute table, counted as index bytes */
  if ((rc = ba_zone_write(f->groups, f->ngroups, w.off, wbuf_put, &w, &zone_off)) < 0) goto done;
  f->bytes_index = w.off - index_off;
  uint64_t table_off = w.off;
  for (uint32_t g = 0; g < f->ngroups; g++) {
    uint8_t *e = tmp + (size_t)g * ba_table_entry_bytes(nc);
    ba_store_le64(e, f->groups[g].off);
    ba_store_le32(e + 8, f->groups[g].rows);
    ba_store_le32(e + 12, f->groups[g].len);
    for (unsigned c = 0; c < nc; c++) ba_store_le32(e + 16 + 4 * c, f->groups[g].col_off[c]);
  }
  if ((rc = put_block(&w, BA_BLK_TABLE, 0xFF, 0, tmp, tlen, ba_crc32c(0, tmp, tlen))) < 0) goto done;
  ba_seg_footer_t ft = {.rows = f->rows, .min_first = f->min_first, .max_first = f->max_first,
                        .table_off = table_off, .dir_off = dir_off, .index_off = index_off,
                        .ngroups = f->ngroups, .kinds = f->kinds, .zone_off = zone_off};
  uint8_t fb[BA_SEG_FOOTER_BYTES];
  ba_seg_footer_encode(&ft, fb);
  if ((rc = wbuf_put(&w, fb, sizeof fb)) < 0 || (rc = wbuf_flush(&w)) < 0) goto done;
  if (fsync(f->fd) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  if (renameat(f->dirfd, f->open_name, f->dirfd, f->final_name) != 0 || fsync(f->dirfd) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
done:
  ba_idxz_free(&z);
  ba_free(w.p);
  ba_free(dir);
  ba_free(tmp);
  return rc;
}
