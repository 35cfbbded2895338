/* Reading a journal ("<segment>.open", doc/format.md §5) group by group:
 * its complete row groups (GROUP blocks) and the live blocks the writer
 * appends so that records of a group not yet full can be read (LIVE blocks,
 * superseded by the GROUP of the same number). Used by crash recovery
 * (recover.c) and by live queries (src/query/live.c). */
#include <string.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

int ba_jreader_open(ba_jreader_t *r, int fd, uint64_t fsize) {
  memset(r, 0, sizeof *r);
  uint8_t hb[BA_SEG_HDR_BYTES];
  BA_RETURN_IF(fsize < BA_SEG_HDR_BYTES, BA_ERR_TRUNCATED);
  BA_FORWARD(ba_pread_full(fd, hb, sizeof hb, 0));
  BA_FORWARD(ba_seg_hdr_decode(hb, &r->h));
  r->recs = ba_malloc((size_t)r->h.block_rows * sizeof *r->recs);
  BA_RETURN_IF(!r->recs, BA_ERR_NOMEM);
  return BA_OK;
}

void ba_jreader_close(ba_jreader_t *r) {
  if (!r) return;
  ba_free(r->buf);
  ba_free(r->raw);
  ba_free(r->fraw);
  ba_free(r->recs);
  memset(r, 0, sizeof *r);
}

/* The LIVE payload has the GROUP layout (§2.3) but may start inside the
 * group: rows [first_row, first_row + rows) of group gi, first_row =
 * gi * block_rows + live_rows (the rows earlier LIVE blocks of gi held). */
static int live_check(const uint8_t *p, uint32_t raw_len, int major, uint32_t gi, uint32_t block_rows,
                      uint32_t live_rows, uint32_t *rows, uint32_t lens[BA_NCOLS_MAX]) {
  unsigned nc = ba_seg_ncols(major);
  BA_RETURN_IF(major < 3 || raw_len != ba_group_payload_bytes(nc), BA_ERR_CORRUPT);
  *rows = ba_load_le32(p + 4);
  BA_RETURN_IF(ba_load_le32(p) != gi || *rows == 0 || live_rows >= block_rows || *rows > block_rows - live_rows ||
                   ba_load_le32(p + 8) != nc || ba_load_le32(p + 12) != 0 ||
                   ba_load_le64(p + 16) != (uint64_t)gi * block_rows + live_rows,
               BA_ERR_CORRUPT);
  for (unsigned c = 0; c < nc; c++) {
    lens[c] = ba_load_le32(p + 24 + 4 * c);
    BA_RETURN_IF(lens[c] == 0 && c == BA_COLID_META, BA_ERR_CORRUPT);
    BA_RETURN_IF(lens[c] != 0 && lens[c] < BA_BLK_HDR_BYTES, BA_ERR_CORRUPT);
  }
  return BA_OK;
}

/* Reads column c's block at off into r->recs (frames into their own buffer,
 * so they survive the columns decoded after them). */
static int read_column(ba_jreader_t *r, int fd, uint64_t fsize, uint64_t off, int c, uint32_t gi, uint32_t rows,
                       uint32_t len) {
  ba_blk_hdr_t h;
  BA_FORWARD(ba_blk_read(fd, off, fsize, &h, &r->buf, &r->cap));
  BA_RETURN_IF(h.type != BA_BLK_COLUMN || h.col != c || h.group != gi || h.rows != rows ||
                   (uint64_t)BA_BLK_HDR_BYTES + h.comp_len != len,
               BA_ERR_CORRUPT);
  uint64_t fixed = ba_col_raw_min(r->h.major, c, rows);
  uint64_t maxraw = ba_col_raw_max(r->h.major, c, rows, c == BA_COLID_FRAME ? (size_t)rows * BA_MAX_CAPLEN : 0);
  BA_RETURN_IF(h.raw_len < fixed || h.raw_len > maxraw, BA_ERR_CORRUPT);
  uint8_t **dst = c == BA_COLID_FRAME ? &r->fraw : &r->raw;
  size_t *dcap = c == BA_COLID_FRAME ? &r->fraw_cap : &r->raw_cap;
  if (*dcap < (size_t)h.raw_len + 1) {
    void *q = *dst;
    BA_FORWARD(ba_grow(&q, dcap, (size_t)h.raw_len + 1, 1));
    *dst = q;
  }
  BA_FORWARD(ba_decompress_block((ba_compress_t)h.compress, r->buf, h.comp_len, *dst, h.raw_len));
  return ba_col_decode(r->h.major, c, *dst, h.raw_len, rows, r->recs);
}

int ba_jreader_group(ba_jreader_t *r, int fd, uint64_t fsize, uint64_t off, uint32_t gi, uint32_t live_rows,
                     ba_jgroup_t *g) {
  ba_blk_hdr_t h;
  BA_FORWARD(ba_blk_read(fd, off, fsize, &h, &r->buf, &r->cap));
  BA_RETURN_IF((h.type != BA_BLK_GROUP && h.type != BA_BLK_LIVE) || h.group != gi, BA_ERR_CORRUPT);
  uint32_t rows = 0, lens[BA_NCOLS_MAX];
  memset(g, 0, sizeof *g);
  g->live = h.type == BA_BLK_LIVE;
  if (g->live) {
    BA_FORWARD(live_check(r->buf, h.raw_len, r->h.major, gi, r->h.block_rows, live_rows, &rows, lens));
  } else {
    BA_FORWARD(ba_group_check(r->buf, h.raw_len, r->h.major, gi, r->h.block_rows, &rows, lens));
  }
  BA_RETURN_IF(rows != h.rows, BA_ERR_CORRUPT);
  g->group = gi;
  g->rows = rows;
  g->first_row = (uint64_t)gi * r->h.block_rows + (g->live ? live_rows : 0);
  unsigned nc = ba_seg_ncols(r->h.major);
  g->e.off = off;
  g->e.rows = rows;
  uint64_t rel = BA_BLK_HDR_BYTES + ba_group_payload_bytes(nc);
  memset(r->recs, 0, (size_t)rows * sizeof *r->recs);
  for (int c = 0; c < (int)nc; c++) {
    BA_RETURN_IF(rel > UINT32_MAX, BA_ERR_CORRUPT);
    if (lens[c] == 0) { /* absent 3.0 column (ba_group_check): stored values 0 */
      BA_FORWARD(ba_col_decode(r->h.major, c, NULL, 0, rows, r->recs));
      continue;
    }
    g->e.col_off[c] = (uint32_t)rel;
    BA_RETURN_IF(off + rel > fsize, BA_ERR_TRUNCATED);
    BA_FORWARD(read_column(r, fd, fsize, off + rel, c, gi, rows, lens[c]));
    rel += lens[c];
  }
  BA_RETURN_IF(rel > UINT32_MAX, BA_ERR_CORRUPT);
  g->e.len = (uint32_t)rel;
  for (uint32_t i = 0; i < rows; i++)
    BA_RETURN_IF(r->recs[i].first_ns < r->h.start_ns || r->recs[i].first_ns >= r->h.end_ns, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_journal_write_group(int fd, const ba_seg_hdr_t *h, uint32_t gi, const ba_record_t *recs, uint32_t n,
                           const uint8_t *frames, size_t nframes, uint64_t at, ba_group_ent_t *e) {
  BA_RETURN_IF(n == 0 || n > h->block_rows, BA_ERR_INVALID);
  unsigned nc = ba_seg_ncols(h->major);
  size_t cap = BA_BLK_HDR_BYTES + ba_group_payload_bytes(nc);
  for (unsigned c = 0; c < nc; c++) cap += BA_BLK_HDR_BYTES + ba_col_raw_max(h->major, (int)c, n, nframes);
  uint8_t *buf = ba_malloc(cap);
  ba_col_scratch_t *x = NULL;
  int rc = buf ? ba_col_scratch_create(&x) : BA_ERR_NOMEM;
  uint8_t *gp = buf + BA_BLK_HDR_BYTES;
  size_t pos = BA_BLK_HDR_BYTES + ba_group_payload_bytes(nc);
  if (rc == BA_OK) {
    memset(gp, 0, ba_group_payload_bytes(nc));
    memset(e, 0, sizeof *e);
  }
  /* Column blocks uncompressed (compressor 4 is always allowed, §2.2). */
  for (unsigned c = 0; c < nc && rc == BA_OK; c++) {
    size_t len = 0;
    rc = ba_col_encode(h->major, (int)c, recs, n, frames, nframes, buf + pos + BA_BLK_HDR_BYTES, &len, x);
    if (rc < 0 || len == 0) continue; /* absent (3.0): every field zero */
    ba_blk_hdr_t bh = {.type = BA_BLK_COLUMN, .col = (uint8_t)c, .compress = BA_COMPRESS_NONE, .rows = n,
                       .raw_len = (uint32_t)len, .comp_len = (uint32_t)len, .group = gi,
                       .payload_crc = ba_crc32c(0, buf + pos + BA_BLK_HDR_BYTES, len)};
    ba_blk_hdr_encode(&bh, buf + pos);
    e->col_off[c] = (uint32_t)pos;
    ba_store_le32(gp + 24 + 4 * c, (uint32_t)(BA_BLK_HDR_BYTES + len));
    pos += BA_BLK_HDR_BYTES + len;
  }
  if (rc == BA_OK && pos > UINT32_MAX) rc = BA_ERR_OVERFLOW;
  if (rc == BA_OK) {
    ba_store_le32(gp, gi);
    ba_store_le32(gp + 4, n);
    ba_store_le32(gp + 8, nc);
    ba_store_le64(gp + 16, (uint64_t)gi * h->block_rows);
    uint32_t gpl = ba_group_payload_bytes(nc);
    ba_blk_hdr_t gh = {.type = BA_BLK_GROUP, .col = 0xFF, .compress = BA_COMPRESS_NONE, .rows = n, .raw_len = gpl,
                       .comp_len = gpl, .group = gi, .payload_crc = ba_crc32c(0, gp, gpl)};
    ba_blk_hdr_encode(&gh, buf);
    e->off = at;
    e->rows = n;
    e->len = (uint32_t)pos;
    if (lseek(fd, (off_t)at, SEEK_SET) < 0) rc = BA_ERR_IO;
    else rc = ba_write_full(fd, buf, pos);
  }
  ba_col_scratch_free(x);
  ba_free(buf);
  return rc;
}
