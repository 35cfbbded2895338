/* A segment's index directory and the bitmaps it finds (doc/format.md §4,
 * §7.3). Since §7.3 the block at the footer's dir_off is an attribute table
 * (ATTRDIR, a few hundred bytes) and each attribute's entries are a DIRENT
 * block of their own, read and checked only when a query first touches the
 * attribute. Segments written before hold the whole directory in one IDXDIR
 * block (24 bytes per bitmap, about 3 MB for 10 M flows); the block type at
 * dir_off tells the two apart, whatever the segment's version. Nothing read
 * is trusted before its CRC and bounds are checked; every error names the
 * segment, the block and the attribute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/reader_int.h"
#include "common/common.h"

/* Bytes read at dir_off first: a whole attribute table (at most 8 + 24 per
 * attribute) in one pread; an IDXDIR is then read whole by ba_blk_read. */
#define AT_FIRST_READ 1024u

void ba_rd_dir_release(ba_segment_t *g) {
  ba_free(g->dir);
  g->dir = NULL;
  g->ndir = 0;
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_free(g->ar_buf[a]);
    g->ar_buf[a] = NULL;
    g->ar_ent[a] = NULL;
    g->ar_n[a] = 0;
  }
}

/* The attribute table: attributes ascending, reserved fields zero, at least
 * one entry each, length 24 per entry, each DIRENT block inside
 * [index_off, dir_off), the attributes' bitmaps back to back from index_off
 * and ending before the first DIRENT block. Attributes this reader does not know (a
 * later minor) are skipped. */
static int check_attrdir(ba_segment_t *g) {
  uint64_t lo = g->f.index_off, hi = g->f.dir_off, first = hi;
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    g->ar_at[a] = -1;
    g->ar_rc[a] = BA_OK; /* no bitmap: no entries */
    g->ar_n[a] = 0;
  }
  uint32_t prev = 0;
  uint64_t bm_sum = 0;
  for (size_t i = 0; i < g->ndir; i++) {
    const uint8_t *q = g->dir + BA_ATTRDIR_HDR_BYTES + i * BA_ATTRDIR_ENT_BYTES;
    uint32_t attr = ba_load_le16(q), cnt = ba_load_le32(q + 4), len = ba_load_le32(q + 16);
    uint64_t off = ba_load_le64(q + 8), bm = ba_load_le64(q + 24);
    if (bm > hi - lo - bm_sum) return BA_ERR_CORRUPT;
    if (ba_load_le16(q + 2) != 0 || (i > 0 && attr <= prev) || cnt == 0 ||
        (uint64_t)len != (uint64_t)cnt * BA_DIRENT_BYTES || off < lo || off > hi ||
        BA_BLK_HDR_BYTES + (uint64_t)len > hi - off)
      return BA_ERR_CORRUPT;
    prev = attr;
    if (off < first) first = off;
    if (attr < BA_ATTR_COUNT) {
      g->ar_at[attr] = (int32_t)i;
      g->ar_rc[attr] = 1;
      g->ar_bm_off[attr] = lo + bm_sum;
      g->ar_bm_len[attr] = bm;
    }
    bm_sum += bm;
  }
  /* <=, not ==: other blocks (zone maps, §7.2) may follow the bitmaps */
  BA_RETURN_IF(bm_sum > first - lo, BA_ERR_CORRUPT);
  g->bm_end = first;
  return BA_OK;
}

static int check_idxdir(ba_segment_t *g, const ba_blk_hdr_t *h) {
  BA_RETURN_IF(h->comp_len < 8, BA_ERR_TRUNCATED);
  uint32_t cnt = ba_load_le32(g->dir);
  BA_RETURN_IF(ba_load_le32(g->dir + 4) != 0 || cnt > (h->comp_len - 8) / BA_IDX_DIRENT_BYTES ||
                   h->comp_len - 8 != (uint64_t)cnt * BA_IDX_DIRENT_BYTES,
               BA_ERR_CORRUPT);
  g->ndir = cnt;
  g->bm_end = g->f.dir_off;
  for (int a = 0; a < BA_ATTR_COUNT; a++) g->ar_rc[a] = 1;
  return BA_OK;
}

static int check_attrdir_hdr(ba_segment_t *g, const ba_blk_hdr_t *h) {
  BA_RETURN_IF(h->comp_len < BA_ATTRDIR_HDR_BYTES, BA_ERR_TRUNCATED);
  uint32_t cnt = ba_load_le32(g->dir);
  BA_RETURN_IF(ba_load_le32(g->dir + 4) != 0 ||
                   cnt > (h->comp_len - BA_ATTRDIR_HDR_BYTES) / BA_ATTRDIR_ENT_BYTES ||
                   h->comp_len - BA_ATTRDIR_HDR_BYTES != (uint64_t)cnt * BA_ATTRDIR_ENT_BYTES,
               BA_ERR_CORRUPT);
  g->ndir = cnt;
  return check_attrdir(g);
}

/* Reads and CRC-checks the block at dir_off: the attribute table in one
 * pread, or a whole IDXDIR. */
static int load_dir(ba_segment_t *g) {
  if (g->dir_rc != 1) return g->dir_rc;
  uint64_t ext = g->f.table_off - g->f.dir_off; /* > 0 (seg_validate) */
  size_t want = ext < AT_FIRST_READ ? (size_t)ext : AT_FIRST_READ;
  ba_blk_hdr_t h = {0};
  int rc = BA_OK;
  if (g->ccap < want + 1) {
    void *p = g->cbuf;
    rc = ba_grow(&p, &g->ccap, want + 1, 1);
    g->cbuf = p;
  }
  if (rc == BA_OK) rc = want < BA_BLK_HDR_BYTES ? BA_ERR_TRUNCATED : ba_pread_full(g->fd, g->cbuf, want, g->f.dir_off);
  if (rc == BA_OK) rc = ba_blk_hdr_decode(g->cbuf, &h);
  if (rc == BA_OK && ((h.type != BA_BLK_ATTRDIR && h.type != BA_BLK_IDXDIR) || h.compress != BA_COMPRESS_NONE))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && h.comp_len > ext - BA_BLK_HDR_BYTES) rc = BA_ERR_TRUNCATED;
  const uint8_t *payload = g->cbuf + BA_BLK_HDR_BYTES;
  if (rc == BA_OK && h.comp_len > want - BA_BLK_HDR_BYTES) { /* IDXDIR, or a large table */
    rc = ba_blk_read(g->fd, g->f.dir_off, g->f.table_off, &h, &g->cbuf, &g->ccap);
    payload = g->cbuf;
  } else if (rc == BA_OK && ba_crc32c(0, payload, h.comp_len) != h.payload_crc) {
    rc = BA_ERR_CHECKSUM;
  }
  if (rc == BA_OK && payload == g->cbuf) { /* read whole: the buffer becomes the directory */
    g->dir = g->cbuf;
    g->cbuf = NULL;
    g->ccap = 0;
  } else if (rc == BA_OK) {
    if (!(g->dir = ba_malloc((size_t)h.comp_len + 1))) rc = BA_ERR_NOMEM;
    else memcpy(g->dir, payload, h.comp_len);
  }
  if (rc == BA_OK) {
    g->dir_whole = h.type == BA_BLK_IDXDIR;
    /* value, length and CRC inside a 24-byte entry (offset at 8 in both) */
    g->ev = g->dir_whole ? 4 : 0;
    g->el = g->dir_whole ? 16 : 4;
    g->ec = g->dir_whole ? 20 : 16;
    rc = g->dir_whole ? check_idxdir(g, &h) : check_attrdir_hdr(g, &h);
  }
  if (rc < 0) {
    ba_free(g->dir);
    g->dir = NULL;
    g->ndir = 0;
    ba_rd_serr(g->store, "%s: index directory (%s at offset %llu): %s", g->name,
               h.type == BA_BLK_IDXDIR    ? "IDXDIR block"
               : h.type == BA_BLK_ATTRDIR ? "attribute table block"
                                          : "block",
               (unsigned long long)g->f.dir_off, ba_strerror(rc));
  }
  g->dir_rc = rc;
  return rc;
}

static ba_idx_dirent_t ent_get(const ba_segment_t *g, ba_attr_t attr, const uint8_t *q) {
  return (ba_idx_dirent_t){.attr = (uint16_t)attr, .value = ba_load_le32(q + g->ev),
                           .off = ba_load_le64(q + 8), .len = ba_load_le32(q + g->el),
                           .crc = ba_load_le32(q + g->ec)};
}

/* The n entries at q of attr: values strictly increasing, the reserved word
 * (IDXDIR: attribute and pad; DIRENT: the last u32) as it must be, bitmaps
 * inside [index_off, bm_end). One pass, branch-light. */
static int check_entries(const ba_segment_t *g, ba_attr_t attr, const uint8_t *q, size_t n) {
  uint64_t lo = g->f.index_off, hi = g->bm_end, prev = 0, sum = 0;
  if (!g->dir_whole) { /* the attribute's own bitmaps, as the table says */
    lo = g->ar_bm_off[attr];
    hi = lo + g->ar_bm_len[attr];
  }
  unsigned tag_at = g->dir_whole ? 0 : 20;
  uint32_t tag = g->dir_whole ? (uint32_t)attr : 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++, q += BA_DIRENT_BYTES) {
    uint64_t v = ba_load_le32(q + g->ev), off = ba_load_le64(q + 8), len = ba_load_le32(q + g->el);
    bad |= (ba_load_le32(q + tag_at) != tag) | (off < lo) | (off > hi) | (len > hi - off) | (i > 0 && v <= prev);
    prev = v;
    sum += len;
  }
  if (!g->dir_whole && sum != g->ar_bm_len[attr]) bad = 1;
  return bad ? BA_ERR_CORRUPT : BA_OK;
}

/* First IDXDIR entry whose attribute is >= attr (sorted by attribute). */
static size_t whole_lower(const ba_segment_t *g, unsigned attr) {
  size_t lo = 0, hi = g->ndir;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ba_load_le16(g->dir + 8 + mid * BA_IDX_DIRENT_BYTES) < attr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int whole_attr(ba_segment_t *g, ba_attr_t attr) {
  size_t a = whole_lower(g, attr), b = whole_lower(g, attr + 1u);
  g->ar_ent[attr] = g->dir + 8 + a * BA_IDX_DIRENT_BYTES;
  g->ar_n[attr] = (uint32_t)(b - a);
  int rc = check_entries(g, attr, g->ar_ent[attr], b - a);
  if (rc < 0)
    ba_rd_serr(g->store, "%s: index directory (IDXDIR block at offset %llu) %s entries: %s", g->name,
               (unsigned long long)g->f.dir_off, ba_attr_name(attr), ba_strerror(rc));
  return rc;
}

/* attr's DIRENT block, header and payload in one pread, checked against its
 * attribute-table entry. */
static int dirent_attr(ba_segment_t *g, ba_attr_t attr) {
  const uint8_t *t = g->dir + BA_ATTRDIR_HDR_BYTES + (size_t)g->ar_at[attr] * BA_ATTRDIR_ENT_BYTES;
  uint32_t cnt = ba_load_le32(t + 4), len = ba_load_le32(t + 16), crc = ba_load_le32(t + 20);
  uint64_t off = ba_load_le64(t + 8);
  uint8_t *b = ba_malloc((size_t)BA_BLK_HDR_BYTES + len + 1);
  int rc = b ? ba_pread_full(g->fd, b, BA_BLK_HDR_BYTES + (size_t)len, off) : BA_ERR_NOMEM;
  ba_blk_hdr_t h;
  if (rc == BA_OK) rc = ba_blk_hdr_decode(b, &h);
  if (rc == BA_OK && (h.type != BA_BLK_DIRENT || h.col != (unsigned)attr || h.rows != cnt ||
                      h.compress != BA_COMPRESS_NONE || h.comp_len != len || h.group != 0 || h.payload_crc != crc))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && ba_crc32c(0, b + BA_BLK_HDR_BYTES, len) != crc) rc = BA_ERR_CHECKSUM;
  if (rc == BA_OK) rc = check_entries(g, attr, b + BA_BLK_HDR_BYTES, cnt);
  if (rc < 0) {
    ba_free(b);
    ba_rd_serr(g->store, "%s: index directory of %s (DIRENT block at offset %llu): %s", g->name,
               ba_attr_name(attr), (unsigned long long)off, ba_strerror(rc));
    return rc;
  }
  g->ar_buf[attr] = b;
  g->ar_ent[attr] = b + BA_BLK_HDR_BYTES;
  g->ar_n[attr] = cnt;
  return BA_OK;
}

/* attr's entries (24 bytes each, sorted by value, checked), read once. */
static int attr_entries(ba_segment_t *g, ba_attr_t attr, const uint8_t **ent, size_t *n) {
  BA_FORWARD(load_dir(g));
  if (g->ar_rc[attr] == 1) g->ar_rc[attr] = g->dir_whole ? whole_attr(g, attr) : dirent_attr(g, attr);
  *ent = g->ar_ent[attr];
  *n = g->ar_rc[attr] == BA_OK ? g->ar_n[attr] : 0;
  return g->ar_rc[attr];
}

/* First of the n entries whose value is >= v (strict: > v). */
static size_t ent_lower(const ba_segment_t *g, const uint8_t *ent, size_t n, uint32_t v, int strict) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t x = ba_load_le32(ent + mid * BA_DIRENT_BYTES + g->ev);
    if (x < v || (strict && x == v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void ba_rd_index_attr_bytes(ba_segment_t *g, uint64_t bytes[BA_ATTR_COUNT]) {
  memset(bytes, 0, BA_ATTR_COUNT * sizeof *bytes);
  if (load_dir(g) < 0) return;
  if (!g->dir_whole) { /* from the attribute table: no DIRENT block read */
    for (unsigned a = 0; a < BA_ATTR_COUNT; a++)
      if (g->ar_at[a] >= 0) bytes[a] = g->ar_bm_len[a];
    return;
  }
  /* Bitmaps lie back to back in (attribute, value) order (ba_idx_write), so
   * an attribute's bytes run from its first bitmap to the end of its last. */
  for (unsigned a = 0; a < BA_ATTR_COUNT; a++) {
    const uint8_t *ent;
    size_t n;
    bytes[a] = 0;
    if (attr_entries(g, (ba_attr_t)a, &ent, &n) < 0 || !n) continue;
    ba_idx_dirent_t first = ent_get(g, (ba_attr_t)a, ent), last = ent_get(g, (ba_attr_t)a, ent + (n - 1) * BA_DIRENT_BYTES);
    uint64_t end = last.off + last.len;
    bytes[a] = end > first.off ? end - first.off : 0;
  }
}

/* ---------- bitmaps ---------- */

/* A record this large is mapped from the file rather than read: its pages
 * come from the page cache as they are touched (16 at a fault), with no copy
 * and no fresh memory, where a pread copies it into a buffer whose first
 * touches fault a page at a time. Private and writable, so a compressed
 * record can still be decoded in place (ba_idxz_load; a copy-on-write page). */
static size_t g_map_min = 256u << 10;

void ba_rd_set_map_min(size_t bytes) { g_map_min = bytes; }

typedef struct rec {
  uint8_t *p;
  void *map;
  size_t maplen;
} rec_t;

/* Where a record starts in g->bmbuf: its words (after the 20-byte header)
 * then lie on an 8-byte boundary, so they can be read in place. */
#define REC_AT 4u

static int rec_buf(ba_segment_t *g, size_t len) {
  if (g->bmcap >= len + REC_AT + 1) return BA_OK;
  void *p = g->bmbuf;
  BA_FORWARD(ba_grow(&p, &g->bmcap, len + REC_AT + 1, 1));
  g->bmbuf = p;
  return BA_OK;
}

static int rec_get(ba_segment_t *g, const ba_idx_dirent_t *e, rec_t *r) {
  r->map = NULL;
  if (e->len >= g_map_min && e->len > 0) {
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) pg = 4096;
    uint64_t at = e->off - e->off % (uint64_t)pg;
    size_t l = (size_t)(e->off - at) + e->len;
    /* only bytes the file still holds: a page past its end would be SIGBUS
     * where a pread says BA_ERR_TRUNCATED (segments are not cut after they
     * are written, but a damaged store may be) */
    struct stat st;
    void *m = fstat(g->fd, &st) == 0 && (uint64_t)st.st_size >= e->off + e->len
                  ? mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_PRIVATE, g->fd, (off_t)at)
                  : MAP_FAILED;
    if (m != MAP_FAILED) {
      r->map = m;
      r->maplen = l;
      r->p = (uint8_t *)m + (e->off - at);
      return BA_OK;
    }
  }
  BA_FORWARD(rec_buf(g, e->len));
  r->p = g->bmbuf + REC_AT;
  return ba_pread_full(g->fd, r->p, e->len, e->off);
}

static void rec_done(rec_t *r) {
  if (r->map) munmap(r->map, r->maplen);
  r->map = NULL;
}

/* *zstd: the record is a compressed one (for error messages). */
static int read_bitmap(ba_segment_t *g, const ba_idx_dirent_t *e, ba_bitmap_t **out, int *zstd) {
  rec_t r;
  int rc = rec_get(g, e, &r);
  *zstd = rc == BA_OK && e->len > 1 && (r.p[1] & BA_BM_FLAG_ZSTD);
  if (rc == BA_OK)
    rc = ba_idxz_load(&g->idxz, r.p, e->len, e->crc, ba_seg_has_idxz(&g->h), (ba_codec_t)g->h.codec, g->f.rows,
                      out);
  rec_done(&r);
  return rc;
}

static int empty_bitmap(const ba_segment_t *g, ba_bitmap_t **out) {
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bitmap_create((ba_codec_t)g->h.codec, &bm));
  int rc = ba_bitmap_finish(bm, g->f.rows);
  if (rc < 0) {
    ba_bitmap_free(bm);
    return rc;
  }
  *out = bm;
  return BA_OK;
}

static void bitmap_err(ba_segment_t *g, const ba_idx_dirent_t *e, int zstd, int rc) {
  ba_rd_serr(g->store, "%s: index bitmap %s=%u at offset %llu (%u bytes%s): %s", g->name,
             ba_attr_name((ba_attr_t)e->attr), e->value, (unsigned long long)e->off, e->len, zstd ? ", zstd" : "",
             ba_strerror(rc));
}

/* The directory entry of attr == value: 1 = found, 0 = the value is absent. */
static int find_entry(ba_segment_t *g, ba_attr_t attr, uint32_t value, ba_idx_dirent_t *e) {
  const uint8_t *ent;
  size_t n;
  BA_FORWARD(attr_entries(g, attr, &ent, &n));
  size_t k = ent_lower(g, ent, n, value, 0);
  if (k >= n || ba_load_le32(ent + k * BA_DIRENT_BYTES + g->ev) != value) return 0;
  *e = ent_get(g, attr, ent + k * BA_DIRENT_BYTES);
  return 1;
}

int ba_rd_find_entry(ba_segment_t *g, ba_attr_t attr, uint32_t value, ba_idx_dirent_t *e) { return find_entry(g, attr, value, e); }

int ba_segment_index(ba_segment_t *g, ba_attr_t attr, uint32_t value, ba_bitmap_t **out) {
  BA_RETURN_IF(!g || !out || (unsigned)attr >= BA_ATTR_COUNT, BA_ERR_INVALID);
  ba_idx_dirent_t e;
  int rc = find_entry(g, attr, value, &e), zstd = 0;
  if (rc <= 0) return rc < 0 ? rc : empty_bitmap(g, out);
  if ((rc = read_bitmap(g, &e, out, &zstd)) < 0) bitmap_err(g, &e, zstd, rc);
  return rc;
}

/* a AND a raw record's words where they lie (ba_bitmap_and_words): in the
 * buffer they were read into, or in the mapping when they are aligned there,
 * else copied into the buffer (no fresh bitmap either way). 1 = not
 * applicable (a header the decoder must judge; a big-endian host). */
static int and_in_place(ba_segment_t *g, const uint8_t *p, size_t len, const ba_bitmap_t *a, ba_bitmap_t **out,
                        uint64_t *count) {
  const uint16_t one = 1;
  ba_codec_t codec = (ba_codec_t)g->h.codec;
  unsigned wb = ba_codec_word_bits(codec) / 8;
  if (*(const uint8_t *)&one != 1 || wb == 0 || len < BA_BM_REC_HDR || p[0] != (uint8_t)codec || p[1] != 0 ||
      ba_load_le16(p + 2) != 0 || ba_load_le64(p + 4) != g->f.rows)
    return 1;
  uint64_t nwords = ba_load_le64(p + 12);
  if (nwords > (len - BA_BM_REC_HDR) / wb || BA_BM_REC_HDR + nwords * wb != len) return 1;
  if ((uintptr_t)(p + BA_BM_REC_HDR) % wb) { /* unaligned (mapped, decompressed): into the buffer */
    BA_FORWARD(rec_buf(g, len));
    memcpy(g->bmbuf + REC_AT, p, len);
    p = g->bmbuf + REC_AT;
  }
  return ba_bitmap_and_words(a, codec, p + BA_BM_REC_HDR, (size_t)nwords, g->f.rows, codec, out, count);
}

int ba_segment_index_and(ba_segment_t *g, ba_attr_t attr, uint32_t value, const ba_bitmap_t *a,
                         ba_bitmap_t **out, uint64_t *count) {
  BA_RETURN_IF(!g || !a || !(out || count) || (unsigned)attr >= BA_ATTR_COUNT, BA_ERR_INVALID);
  if (out) *out = NULL;
  int done = 0;
  ba_codec_t codec = (ba_codec_t)g->h.codec;
  ba_idx_dirent_t e;
  ba_bitmap_t *b = NULL;
  int rc = find_entry(g, attr, value, &e), zstd = 0;
  if (rc < 0) return rc;
  if (rc == 0) {
    rc = empty_bitmap(g, &b);
  } else {
    rec_t r;
    const uint8_t *raw = NULL;
    size_t rlen = 0;
    rc = rec_get(g, &e, &r);
    zstd = rc == BA_OK && e.len > 1 && (r.p[1] & BA_BM_FLAG_ZSTD);
    rc = rc == BA_OK && ba_crc32c(0, r.p, e.len) != e.crc ? BA_ERR_CHECKSUM : rc;
    /* a compressed record decoded first (checked as ba_idxz_load does) */
    if (rc == BA_OK) rc = ba_idxz_unpack(r.p, e.len, ba_seg_has_idxz(&g->h), codec, g->f.rows, &raw, &rlen);
    if (rc == BA_OK && (ba_bitmap_codec(a) != codec || ba_bitmap_rows(a) != g->f.rows))
      rc = 1; /* 1: declined */
    else if (rc == BA_OK)
      rc = out ? ba_bitmap_and_record(a, raw, rlen, out) : ba_bitmap_and_record_count(a, raw, rlen, count);
    if (rc == 1) rc = and_in_place(g, raw, rlen, a, out, count);
    done = rc == BA_OK && !b;
    if (rc == 1) rc = ba_idx_bitmap_decode(raw, rlen, codec, g->f.rows, &b); /* reports what is wrong */
    rec_done(&r);
    if (rc < 0) {
      bitmap_err(g, &e, zstd, rc);
      return rc;
    }
    if (done) return BA_OK;
  }
  if (rc == BA_OK) rc = out ? ba_bitmap_and(a, b, codec, out) : ba_bitmap_and_count(a, b, count);
  ba_bitmap_free(b);
  return rc;
}

int ba_segment_index_and_count_all(ba_segment_t *g, const ba_attr_t *attrs, const uint32_t *values, size_t n,
                                   const ba_bitmap_t *a, uint64_t *count) {
  BA_RETURN_IF(!g || !a || !count || (n && (!attrs || !values)), BA_ERR_INVALID);
  enum { MAXREC = 8 };
  if (n < 1 || n > MAXREC || ba_bitmap_codec(a) != (ba_codec_t)g->h.codec || ba_bitmap_rows(a) != g->f.rows) return 1;
  rec_t r[MAXREC];
  ba_idx_dirent_t e[MAXREC];
  const uint8_t *p[MAXREC];
  size_t len[MAXREC], k = 0;
  int rc = 1;
  /* every record present, large enough to be mapped (each needs a buffer of
   * its own), raw and with its CRC right: else declined, and the records
   * are ANDed one by one (which reports what is wrong) */
  for (; k < n; k++) {
    if ((unsigned)attrs[k] >= BA_ATTR_COUNT || find_entry(g, attrs[k], values[k], &e[k]) != 1 ||
        e[k].len < g_map_min || e[k].len < BA_BM_REC_HDR)
      break;
    if (rec_get(g, &e[k], &r[k]) < 0 || !r[k].map || r[k].p[1] != 0 || ba_crc32c(0, r[k].p, e[k].len) != e[k].crc) {
      rec_done(&r[k]);
      break;
    }
    p[k] = r[k].p;
    len[k] = e[k].len;
  }
  if (k == n) rc = ba_bitmap_and_records_count(a, p, len, n, count);
  for (size_t i = 0; i < k; i++) rec_done(&r[i]);
  return rc;
}

int ba_segment_index_values(ba_segment_t *g, ba_attr_t attr, uint32_t *values, size_t cap,
                            size_t *n) {
  return ba_segment_index_range(g, attr, 0, UINT32_MAX, values, NULL, cap, n);
}

int ba_segment_index_range(ba_segment_t *g, ba_attr_t attr, uint32_t lo_value, uint32_t hi_value,
                           uint32_t *values, uint32_t *bytes, size_t cap, size_t *n) {
  BA_RETURN_IF(!g || !n || (unsigned)attr >= BA_ATTR_COUNT || (cap && !values), BA_ERR_INVALID);
  const uint8_t *ent;
  size_t cnt;
  BA_FORWARD(attr_entries(g, attr, &ent, &cnt));
  if (lo_value > hi_value) {
    *n = 0;
    return BA_OK;
  }
  /* Values are strictly increasing (checked). */
  size_t first = ent_lower(g, ent, cnt, lo_value, 0), k = ent_lower(g, ent, cnt, hi_value, 1) - first;
  for (size_t i = 0; i < k && i < cap; i++) {
    const uint8_t *q = ent + (first + i) * BA_DIRENT_BYTES;
    values[i] = ba_load_le32(q + g->ev);
    if (bytes) bytes[i] = ba_load_le32(q + g->el);
  }
  *n = k;
  return BA_OK;
}

/* ---------- verify ---------- */
void ba_rd_verify_index(ba_segment_t *g, uint64_t *nbad, int *first) {
  char keep[sizeof g->store->errmsg];
  int had = *first != BA_OK;
  if (had) memcpy(keep, g->store->errmsg, sizeof keep);
#define NOTE(rc_)                    \
  do {                               \
    ++*nbad;                         \
    if (*first == BA_OK) {           \
      *first = (rc_);                \
      memcpy(keep, g->store->errmsg, sizeof keep); \
    }                                \
  } while (0)
  int rc = load_dir(g);
  if (rc < 0) {
    NOTE(rc);
  } else if (g->dir_whole) {
    /* Every entry at once, as the writer's directory check does. */
    ba_idx_dirent_t *dir = NULL;
    size_t ndir = 0;
    rc = ba_idx_dir_decode(g->dir, 8 + g->ndir * BA_IDX_DIRENT_BYTES, BA_ATTR_COUNT, g->f.index_off,
                           g->f.dir_off, &dir, &ndir);
    if (rc < 0) {
      ba_rd_serr(g->store, "%s: index directory (IDXDIR block at offset %llu): %s", g->name,
                 (unsigned long long)g->f.dir_off, ba_strerror(rc));
      NOTE(rc);
    }
    for (size_t i = 0; i < ndir; i++) {
      ba_bitmap_t *bm = NULL;
      int zstd = 0;
      rc = read_bitmap(g, &dir[i], &bm, &zstd);
      ba_bitmap_free(bm);
      if (rc < 0) {
        bitmap_err(g, &dir[i], zstd, rc);
        NOTE(rc);
      }
    }
    ba_free(dir);
  } else {
    /* Every DIRENT block of an attribute this reader knows, then its bitmaps. */
    for (unsigned a = 0; a < BA_ATTR_COUNT; a++) {
      const uint8_t *ent;
      size_t n;
      if ((rc = attr_entries(g, (ba_attr_t)a, &ent, &n)) < 0) NOTE(rc);
      for (size_t i = 0; rc == BA_OK && i < n; i++) {
        ba_idx_dirent_t e = ent_get(g, (ba_attr_t)a, ent + i * BA_DIRENT_BYTES);
        ba_bitmap_t *bm = NULL;
        int zstd = 0;
        int r = read_bitmap(g, &e, &bm, &zstd);
        ba_bitmap_free(bm);
        if (r < 0) {
          bitmap_err(g, &e, zstd, r);
          NOTE(r);
        }
      }
    }
  }
#undef NOTE
  if (had || *first != BA_OK) memcpy(g->store->errmsg, keep, sizeof keep);
}
