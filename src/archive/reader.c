/* Store reader: lists complete segments, reads their indexes, clones a
 * segment's reader for another thread and verifies segments; the rows the
 * index selects are read in reader_rows.c (only the row groups and columns
 * needed). Damage (bad CRC, bad lengths, truncation) is reported per segment
 * and block and skipped; nothing read from a file is trusted before it is
 * checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/reader_int.h"
#include "common/common.h"

void ba_rd_serr(ba_store_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
  va_end(ap);
}

/* Frees what was read from the file; it is read again on demand. */
static void seg_release(ba_segment_t *g) {
  ba_free(g->groups);
  g->groups = NULL;
  ba_rd_dir_release(g);
  for (int c = 0; c < BA_NCOLS_MAX; c++) {
    ba_free(g->cache[c].raw);
    g->cache[c] = (colcache_t){.group = -1};
  }
  ba_free(g->cbuf);
  g->cbuf = NULL;
  g->ccap = 0;
  ba_free(g->gbuf);
  g->gbuf = NULL;
  g->gcap = 0;
  ba_free(g->bmbuf);
  g->bmbuf = NULL;
  ba_idxz_free(&g->idxz);
  g->bmcap = 0;
  ba_free(g->recs);
  g->recs = NULL;
  ba_free(g->pick);
  g->pick = NULL;
  ba_free(g->pick_idx);
  g->pick_idx = NULL;
  ba_free(g->sumv);
  g->sumv = NULL;
  ba_free(g->fldv);
  g->fldv = NULL;
  g->fldv_n = 0;
  g->recs_group = -1;
  g->recs_dirty = 0;
  ba_rd_zone_release(g);
  if (g->open_rc == BA_OK) {
    g->table_rc = 1;
    g->dir_rc = 1;
  }
}

static void seg_free(ba_segment_t *g) {
  if (!g) return;
  if (g->fd >= 0) close(g->fd);
  ba_free(g->name);
  seg_release(g);
  ba_free(g);
}

static int seg_validate(ba_segment_t *g) {
  uint8_t hb[BA_SEG_HDR_BYTES], fb[BA_SEG_FOOTER_BYTES];
  BA_RETURN_IF(g->fsize < BA_SEG_HDR_BYTES, BA_ERR_TRUNCATED);
  BA_FORWARD(ba_pread_full(g->fd, hb, sizeof hb, 0));
  BA_FORWARD(ba_seg_hdr_decode(hb, &g->h));
  BA_RETURN_IF(g->fsize < BA_SEG_HDR_BYTES + BA_SEG_FOOTER_BYTES, BA_ERR_TRUNCATED);
  BA_FORWARD(ba_pread_full(g->fd, fb, sizeof fb, g->fsize - BA_SEG_FOOTER_BYTES));
  BA_FORWARD(ba_seg_footer_decode(fb, &g->f));
  const ba_seg_footer_t *f = &g->f;
  uint64_t end = g->fsize - BA_SEG_FOOTER_BYTES;
  BA_RETURN_IF(f->index_off < BA_SEG_HDR_BYTES || f->index_off > f->dir_off ||
                   f->dir_off >= f->table_off || f->table_off > end,
               BA_ERR_CORRUPT);
  uint64_t br = g->h.block_rows;
  BA_RETURN_IF(f->rows > BA_SEG_MAX_ROWS || f->ngroups != (f->rows + br - 1) / br, BA_ERR_CORRUPT);
  BA_RETURN_IF(f->min_first < g->h.start_ns || f->max_first >= g->h.end_ns, BA_ERR_CORRUPT);
  /* Zone maps (§7.2): their directory lies between the index directory and the table. */
  BA_RETURN_IF(f->zone_off != 0 && (f->zone_off <= f->dir_off || f->zone_off >= f->table_off), BA_ERR_CORRUPT);
  g->table_rc = 1;
  g->dir_rc = 1;
  g->recs_group = -1;
  g->ncols = ba_seg_ncols(g->h.major);
  for (int c = 0; c < BA_NCOLS_MAX; c++) g->cache[c].group = -1;
  return BA_OK;
}

int ba_rd_load_table(ba_segment_t *g) {
  if (g->table_rc != 1) return g->table_rc;
  ba_blk_hdr_t h;
  int rc = ba_blk_read(g->fd, g->f.table_off, g->fsize - BA_SEG_FOOTER_BYTES, &h, &g->cbuf, &g->ccap);
  size_t n = g->f.ngroups;
  if (rc == BA_OK && (h.type != BA_BLK_TABLE || h.compress != BA_COMPRESS_NONE ||
                      h.raw_len != (uint64_t)n * ba_table_entry_bytes(g->ncols)))
    rc = BA_ERR_CORRUPT;
  if (rc == BA_OK && !(g->groups = ba_malloc(n * sizeof *g->groups))) rc = BA_ERR_NOMEM;
  uint64_t br = g->h.block_rows;
  for (size_t i = 0; rc == BA_OK && i < n; i++) {
    const uint8_t *e = g->cbuf + i * ba_table_entry_bytes(g->ncols);
    ba_group_ent_t *ge = &g->groups[i];
    ge->off = ba_load_le64(e);
    ge->rows = ba_load_le32(e + 8);
    ge->len = ba_load_le32(e + 12);
    uint64_t want = i + 1 < n ? br : g->f.rows - (uint64_t)(n - 1) * br;
    if (ge->rows != want || ge->off < BA_SEG_HDR_BYTES || ge->off > g->f.index_off ||
        ge->len > g->f.index_off - ge->off)
      rc = BA_ERR_CORRUPT;
    for (unsigned c = 0; rc == BA_OK && c < g->ncols; c++) {
      ge->col_off[c] = ba_load_le32(e + 16 + 4 * c);
      if (ge->col_off[c] == 0 && g->h.major >= 3 && c != BA_COLID_META) continue; /* absent */
      if (ge->col_off[c] < BA_BLK_HDR_BYTES + ba_group_payload_bytes(g->ncols) || ge->col_off[c] > ge->len ||
          BA_BLK_HDR_BYTES > ge->len - ge->col_off[c])
        rc = BA_ERR_CORRUPT;
    }
  }
  if (rc < 0) {
    ba_free(g->groups);
    g->groups = NULL;
    ba_rd_serr(g->store, "%s: block table at offset %llu: %s", g->name,
         (unsigned long long)g->f.table_off, ba_strerror(rc));
  }
  g->table_rc = rc;
  return rc;
}

static int seg_cmp(const void *a, const void *b) {
  const ba_segment_t *x = *(ba_segment_t *const *)a, *y = *(ba_segment_t *const *)b;
  uint64_t sx = x->open_rc == BA_OK ? x->h.start_ns : 0, sy = y->open_rc == BA_OK ? y->h.start_ns : 0;
  if (sx != sy) return sx < sy ? -1 : 1;
  return ba_segment_name_cmp(x->name, y->name);
}

/* One directory entry: a segment the handle does not have yet is opened. */
static int refresh_one(void *ctx, int dfd, const char *name) {
  ba_store_t *s = ctx;
  (void)dfd;
  if (!ba_segment_name_parse(name, NULL, NULL)) return BA_OK;
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->segs[i]->name, name)) return BA_OK;
  ba_segment_t *g = ba_calloc(1, sizeof *g);
  if (!g || !(g->name = ba_malloc(strlen(name) + 1))) {
    ba_free(g);
    return BA_ERR_NOMEM;
  }
  strcpy(g->name, name);
  g->store = s;
  /* O_NOFOLLOW + regular files only: a segment name never leads outside the store. */
  g->fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (g->fd < 0 || fstat(g->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    g->open_rc = BA_ERR_IO;
  } else {
    g->fsize = (uint64_t)st.st_size;
    g->open_rc = seg_validate(g);
  }
  if (g->open_rc < 0) ba_rd_serr(s, "%s: %s", g->name, ba_strerror(g->open_rc));
  if (s->n == s->cap) {
    void *p = s->segs;
    int rc = ba_grow(&p, &s->cap, s->n + 1, sizeof *s->segs);
    if (rc < 0) {
      seg_free(g);
      return rc;
    }
    s->segs = p;
  }
  s->segs[s->n++] = g;
  return BA_OK;
}

int ba_store_refresh(ba_store_t *s) {
  BA_RETURN_IF(!s, BA_ERR_INVALID);
  if (!s->n) ba_rd_prefetch_heads(s);
  int rc = ba_dir_each(s->dirfd, NULL, refresh_one, s);
  if (s->n) qsort(s->segs, s->n, sizeof *s->segs, seg_cmp);
  return rc;
}

static int store_from_dirfd(int dirfd, ba_store_t **out) {
  ba_store_t *s = ba_calloc(1, sizeof *s);
  if (!s) {
    close(dirfd);
    return BA_ERR_NOMEM;
  }
  s->dirfd = dirfd;
  int rc = ba_store_refresh(s);
  if (rc < 0) {
    ba_store_close(s);
    return rc;
  }
  *out = s;
  return BA_OK;
}

int ba_store_open(const char *dir, ba_store_t **out) {
  BA_RETURN_IF(!dir || !out, BA_ERR_INVALID);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  return store_from_dirfd(fd, out);
}

/* Segment p of another handle for store s: the same file (its descriptor
 * duplicated) and the header and footer checked when p was opened (fixed
 * since: read from p while another thread uses p); everything else is
 * read on demand, as for a segment just opened. */
static int seg_copy(const ba_segment_t *p, ba_store_t *s, ba_segment_t **out) {
  ba_segment_t *g = ba_calloc(1, sizeof *g);
  if (!g || !(g->name = ba_malloc(strlen(p->name) + 1))) {
    ba_free(g);
    return BA_ERR_NOMEM;
  }
  strcpy(g->name, p->name);
  g->store = s;
  g->fd = -1;
  g->open_rc = p->open_rc;
  if (g->open_rc == BA_OK && (g->fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0)) < 0) g->open_rc = BA_ERR_IO;
  if (g->open_rc == BA_OK) {
    g->fsize = p->fsize;
    g->h = p->h;
    g->f = p->f;
    g->table_rc = 1;
    g->dir_rc = 1;
    g->recs_group = -1;
    g->ncols = p->ncols;
    for (int c = 0; c < BA_NCOLS_MAX; c++) g->cache[c].group = -1;
  }
  *out = g;
  return BA_OK;
}

/* The segments of s copied (seg_copy): no directory scan, no open, no
 * header or footer read again (about 40 us a segment). */
int ba_store_reopen(const ba_store_t *s, ba_store_t **out) {
  BA_RETURN_IF(!s || !out, BA_ERR_INVALID);
  ba_store_t *d = ba_calloc(1, sizeof *d);
  BA_RETURN_IF(!d, BA_ERR_NOMEM);
  d->dirfd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = d->dirfd < 0 ? BA_ERR_IO : BA_OK;
  if (rc == BA_OK && s->n && !(d->segs = ba_calloc(s->n, sizeof *d->segs))) rc = BA_ERR_NOMEM;
  if (rc == BA_OK) d->cap = s->n;
  for (size_t i = 0; rc == BA_OK && i < s->n; i++) {
    rc = seg_copy(s->segs[i], d, &d->segs[i]);
    if (rc == BA_OK) d->n++;
  }
  if (rc < 0) {
    ba_store_close(d);
    return rc;
  }
  *out = d;
  return BA_OK;
}

void ba_store_close(ba_store_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) seg_free(s->segs[i]);
  ba_free(s->segs);
  if (s->dirfd >= 0) close(s->dirfd);
  ba_free(s);
}

const char *ba_store_errmsg(const ba_store_t *s) { return s ? s->errmsg : "no store"; }
int ba_store_dirfd(const ba_store_t *s) { return s ? s->dirfd : -1; } /* live queries (src/query/live.c) */
size_t ba_store_segment_count(const ba_store_t *s) { return s ? s->n : 0; }

const char *ba_store_segment_name(const ba_store_t *s, size_t i) {
  return (s && i < s->n) ? s->segs[i]->name : NULL;
}

int ba_store_segment(ba_store_t *s, size_t i, ba_segment_t **out) {
  BA_RETURN_IF(!s || !out || i >= s->n, BA_ERR_INVALID);
  ba_segment_t *g = s->segs[i];
  if (g->open_rc < 0) {
    ba_rd_serr(s, "%s: %s", g->name, ba_strerror(g->open_rc));
    return g->open_rc;
  }
  *out = g;
  return BA_OK;
}

int ba_segment_info(const ba_segment_t *g, ba_segment_info_t *o) {
  BA_RETURN_IF(!g || !o, BA_ERR_INVALID);
  memset(o, 0, sizeof *o);
  o->name = g->name;
  o->start_ns = g->h.start_ns;
  o->end_ns = g->h.end_ns;
  o->min_first_ns = g->f.min_first;
  o->max_first_ns = g->f.max_first;
  o->rows = g->f.rows;
  o->block_rows = g->h.block_rows;
  o->nblocks = g->f.ngroups;
  o->time_bin_seconds = g->h.time_bin_seconds;
  o->codec = (ba_codec_t)g->h.codec;
  o->compress = (ba_compress_t)g->h.compress;
  o->reorder = (g->h.flags & BA_SEG_FLAG_OLSH) ? BA_REORDER_OLSH : BA_REORDER_NONE;
  o->clustered = (g->h.flags & BA_SEG_FLAG_CLUSTER) != 0;
  o->kind = (g->f.kinds & 2) && !(g->f.kinds & 1) ? BA_REC_PACKET : BA_REC_FLOW;
  o->version_major = g->h.major;
  o->version_minor = g->h.minor;
  o->bytes_archive = g->f.index_off - BA_SEG_HDR_BYTES;
  o->bytes_index = g->f.table_off - g->f.index_off;
  o->bytes_file = g->fsize;
  ba_rd_index_attr_bytes((ba_segment_t *)g, o->bytes_index_attr);
  return BA_OK;
}

uint32_t ba_segment_kinds(const ba_segment_t *g) { return g ? g->f.kinds : 0; }

void ba_segment_release(ba_segment_t *g) {
  if (g) seg_release(g);
}

/* ---------- per-column bytes ---------- */
const char *ba_segment_column_name(unsigned c) {
  static const char *const names[BA_NCOLS_MAX] = {
      "first", "last", "src", "dst", "ports", "proto", "flags", "tos", "as", "if",
      "packets", "bytes", "exporter", "vlan", "icmp", "frame", "meta", "out", "nexthop", "mask",
      "dsttos", "engine", "sampling", "nat", "fw", "mpls", "mac", "bgpas", "misc"};
  return c < BA_NCOLS_MAX ? names[c] : NULL;
}

int ba_segment_column_bytes(ba_segment_t *g, uint64_t bytes[32], unsigned *ncols) {
  BA_RETURN_IF(!g || !bytes || !ncols, BA_ERR_INVALID);
  BA_FORWARD(ba_rd_load_table(g));
  memset(bytes, 0, 32 * sizeof *bytes);
  *ncols = g->ncols;
  for (uint32_t gi = 0; gi < g->f.ngroups; gi++) {
    const ba_group_ent_t *ge = &g->groups[gi];
    for (unsigned c = 0; c < g->ncols; c++) {
      if (!ge->col_off[c]) continue;
      uint32_t end = ge->len; /* the next present column's block starts where this one ends */
      for (unsigned d = c + 1; d < g->ncols; d++)
        if (ge->col_off[d]) {
          end = ge->col_off[d];
          break;
        }
      bytes[c] += end >= ge->col_off[c] ? end - ge->col_off[c] : 0;
    }
  }
  return BA_OK;
}

int ba_segment_clone(ba_segment_t *g, ba_segment_t **out) {
  BA_RETURN_IF(!g || !out || g->open_rc < 0, BA_ERR_INVALID);
  BA_FORWARD(ba_rd_load_table(g));
  ba_store_t *s = ba_calloc(1, sizeof *s); /* the clone's own error detail */
  ba_segment_t *d = ba_calloc(1, sizeof *d);
  int rc = BA_ERR_NOMEM;
  if (!s || !d) goto fail;
  s->dirfd = -1;
  d->store = s;
  d->fd = -1;
  d->name = ba_malloc(strlen(g->name) + 1);
  d->groups = ba_malloc((size_t)g->f.ngroups * sizeof *d->groups);
  if (!d->name || !d->groups) goto fail;
  strcpy(d->name, g->name);
  memcpy(d->groups, g->groups, (size_t)g->f.ngroups * sizeof *d->groups);
  rc = BA_ERR_IO;
  if ((d->fd = dup(g->fd)) < 0) goto fail;
  d->fsize = g->fsize;
  d->h = g->h;
  d->f = g->f;
  d->ncols = g->ncols;
  d->table_rc = BA_OK;
  d->dir_rc = 1;
  d->recs_group = -1;
  for (int c = 0; c < BA_NCOLS_MAX; c++) d->cache[c].group = -1;
  *out = d;
  return BA_OK;
fail:
  if (d) {
    ba_free(d->name);
    ba_free(d->groups);
    if (d->fd >= 0) close(d->fd);
    ba_free(d);
  }
  ba_free(s);
  return rc;
}

void ba_segment_clone_free(ba_segment_t *d) {
  if (!d) return;
  ba_store_t *s = d->store;
  seg_free(d);
  ba_store_close(s);
}

const char *ba_segment_errmsg(const ba_segment_t *g) { return g ? g->store->errmsg : "no segment"; }

void ba_segment_set_errmsg(ba_segment_t *g, const char *msg) {
  if (g && msg) ba_rd_serr(g->store, "%s", msg);
}

/* ---------- verify ---------- */
static int verify_group(ba_segment_t *g, uint32_t gi) {
  const ba_group_ent_t *ge = &g->groups[gi];
  ba_blk_hdr_t h;
  BA_FORWARD(ba_blk_read(g->fd, ge->off, ge->off + ge->len, &h, &g->cbuf, &g->ccap));
  BA_RETURN_IF(h.type != BA_BLK_GROUP || h.group != gi || h.rows != ge->rows, BA_ERR_CORRUPT);
  uint32_t rows = 0, lens[BA_NCOLS_MAX];
  BA_FORWARD(ba_group_check(g->cbuf, h.raw_len, g->h.major, gi, g->h.block_rows, &rows, lens));
  BA_RETURN_IF(rows != ge->rows, BA_ERR_CORRUPT);
  uint64_t expect = BA_BLK_HDR_BYTES + ba_group_payload_bytes(g->ncols);
  for (unsigned c = 0; c < g->ncols; c++) {
    BA_RETURN_IF(ge->col_off[c] != (lens[c] ? expect : 0), BA_ERR_CORRUPT);
    expect += lens[c];
  }
  BA_RETURN_IF(expect != ge->len, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_segment_verify(ba_segment_t *g, uint64_t *nbad) {
  BA_RETURN_IF(!g, BA_ERR_INVALID);
  uint64_t bad = 0;
  int first = BA_OK;
#define NOTE(rc_, ...)                          \
  do {                                          \
    bad++;                                      \
    if (first == BA_OK) {                       \
      first = (rc_);                            \
      ba_rd_serr(g->store, __VA_ARGS__);        \
    }                                           \
  } while (0)
  int rc = ba_rd_load_table(g);
  if (rc < 0) {
    NOTE(rc, "%s: block table at offset %llu: %s", g->name, (unsigned long long)g->f.table_off,
         ba_strerror(rc));
  } else {
    ba_record_t *tmp = ba_malloc((size_t)g->h.block_rows * sizeof *tmp);
    if (!tmp) return BA_ERR_NOMEM;
    colcache_t cc = {.group = -1};
    for (uint32_t gi = 0; gi < g->f.ngroups; gi++) {
      const ba_group_ent_t *ge = &g->groups[gi];
      rc = verify_group(g, gi);
      if (rc < 0) NOTE(rc, "%s: block %u (group header at offset %llu): %s", g->name, gi,
                       (unsigned long long)ge->off, ba_strerror(rc));
      for (int c = 0; c < (int)g->ncols; c++) {
        rc = ba_rd_read_col_block(g, gi, c, &cc);
        if (rc == BA_OK && ge->col_off[c]) rc = ba_col_decode(g->h.major, c, cc.data, cc.len, ge->rows, tmp);
        if (rc < 0)
          NOTE(rc, "%s: block %u column %d (offset %llu): %s", g->name, gi, c,
               (unsigned long long)(ge->off + ge->col_off[c]), ba_strerror(rc));
      }
    }
    ba_free(cc.raw);
    ba_free(tmp);
  }
  ba_rd_verify_index(g, &bad, &first);
  char zmsg[512];
  uint64_t zbad = 0;
  rc = ba_rd_zone_verify(g, &zbad, zmsg, sizeof zmsg);
  if (zbad) {
    bad += zbad - 1;
    NOTE(rc, "%s", zmsg);
  }
#undef NOTE
  if (nbad) *nbad = bad;
  return first;
}
