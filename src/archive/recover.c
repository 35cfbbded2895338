/* Crash recovery (doc/format.md §5): every "<segment>.open" journal is cut
 * after its last complete, valid row group; the index is rebuilt from the
 * decompressed groups; the segment is finished and renamed. Leftover
 * reindex temp files are removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

typedef struct rec_state {
  ba_seg_hdr_t h;
  uint8_t *buf, *raw;
  size_t cap, raw_cap;
  ba_record_t *recs;
  uint32_t *vals;
} rec_state_t;

/* Validates group gi at off; on success fills e and decodes into st->recs. */
static int check_group(int fd, uint64_t fsize, uint64_t off, uint32_t gi, rec_state_t *st,
                       ba_group_ent_t *e) {
  ba_blk_hdr_t h;
  BA_FORWARD(ba_blk_read(fd, off, fsize, &h, &st->buf, &st->cap));
  BA_RETURN_IF(h.type != BA_BLK_GROUP || h.group != gi, BA_ERR_CORRUPT);
  uint32_t rows = 0, lens[BA_NCOLS_MAX];
  BA_FORWARD(ba_group_check(st->buf, h.raw_len, st->h.major, gi, st->h.block_rows, &rows, lens));
  BA_RETURN_IF(rows != h.rows, BA_ERR_CORRUPT);
  unsigned nc = ba_seg_ncols(st->h.major);
  memset(e, 0, sizeof *e);
  e->off = off;
  e->rows = rows;
  uint64_t rel = BA_BLK_HDR_BYTES + ba_group_payload_bytes(nc);
  memset(st->recs, 0, (size_t)rows * sizeof *st->recs);
  for (int c = 0; c < (int)nc; c++) {
    BA_RETURN_IF(rel > UINT32_MAX, BA_ERR_CORRUPT);
    if (lens[c] == 0) { /* absent 3.0 column (ba_group_check): stored values 0 */
      BA_FORWARD(ba_col_decode(st->h.major, c, NULL, 0, rows, st->recs));
      continue;
    }
    e->col_off[c] = (uint32_t)rel;
    BA_FORWARD(ba_blk_read(fd, off + rel, fsize, &h, &st->buf, &st->cap));
    BA_RETURN_IF(h.type != BA_BLK_COLUMN || h.col != c || h.group != gi || h.rows != rows ||
                     (uint64_t)BA_BLK_HDR_BYTES + h.comp_len != lens[c],
                 BA_ERR_CORRUPT);
    uint64_t fixed = ba_col_raw_min(st->h.major, c, rows);
    uint64_t maxraw = ba_col_raw_max(st->h.major, c, rows,
                                     c == BA_COLID_FRAME ? (size_t)rows * BA_MAX_CAPLEN : 0);
    BA_RETURN_IF(h.raw_len < fixed || h.raw_len > maxraw, BA_ERR_CORRUPT);
    if (st->raw_cap < (size_t)h.raw_len + 1) {
      void *q = st->raw;
      BA_FORWARD(ba_grow(&q, &st->raw_cap, (size_t)h.raw_len + 1, 1));
      st->raw = q;
    }
    BA_FORWARD(ba_decompress_block((ba_compress_t)h.compress, st->buf, h.comp_len, st->raw, h.raw_len));
    BA_FORWARD(ba_col_decode(st->h.major, c, st->raw, h.raw_len, rows, st->recs));
    rel += lens[c];
  }
  BA_RETURN_IF(rel > UINT32_MAX, BA_ERR_CORRUPT);
  e->len = (uint32_t)rel;
  for (uint32_t i = 0; i < rows; i++)
    BA_RETURN_IF(st->recs[i].first_ns < st->h.start_ns || st->recs[i].first_ns >= st->h.end_ns,
                 BA_ERR_CORRUPT);
  return BA_OK;
}

static int recover_one(int dirfd, const char *open_name, uint64_t *recovered, char *errmsg,
                       size_t errcap) {
  /* Never follow a symlink out of the store, never rewrite a non-file. */
  int fd = openat(dirfd, open_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    snprintf(errmsg, errcap, "%s: open: %s%s", open_name, strerror(errno),
             errno == ELOOP ? " (a symlink: not followed out of the store)" : "");
    return BA_ERR_IO;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    snprintf(errmsg, errcap, "%s: not a regular file; left alone", open_name);
    close(fd);
    return BA_ERR_IO;
  }
  rec_state_t st;
  memset(&st, 0, sizeof st);
  ba_idx_online_t *idx[BA_ATTR_COUNT] = {0};
  ba_idx_attr_t attrs[BA_ATTR_COUNT];
  memset(attrs, 0, sizeof attrs);
  ba_group_ent_t *groups = NULL;
  size_t ngroups = 0, gcap = 0;
  int rc = BA_OK;
  uint8_t hb[BA_SEG_HDR_BYTES];
  if (fstat(fd, &sb) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  uint64_t fsize = (uint64_t)sb.st_size;
  if (fsize < BA_SEG_HDR_BYTES || ba_pread_full(fd, hb, sizeof hb, 0) < 0 ||
      ba_seg_hdr_decode(hb, &st.h) < 0) {
    /* Not even a header: nothing to recover. */
    unlinkat(dirfd, open_name, 0);
    goto done;
  }
  uint64_t bin_ns = (uint64_t)st.h.time_bin_seconds * 1000000000ull;
  st.recs = ba_malloc((size_t)st.h.block_rows * sizeof *st.recs);
  st.vals = ba_malloc((size_t)st.h.block_rows * sizeof *st.vals);
  if (!st.recs || !st.vals) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    uint32_t dom = ba_attr_domain((ba_attr_t)a, st.h.end_ns - st.h.start_ns, bin_ns);
    if ((rc = ba_idx_online_create((ba_codec_t)st.h.codec, dom, &idx[a])) < 0) goto done;
  }
  uint64_t off = BA_SEG_HDR_BYTES, rows = 0, minf = UINT64_MAX, maxf = 0;
  uint32_t kinds = 0;
  for (uint32_t gi = 0;; gi++) {
    ba_group_ent_t e;
    if (check_group(fd, fsize, off, gi, &st, &e) < 0) break;
    if (rows + e.rows > BA_SEG_MAX_ROWS) break;
    for (int a = 0; a < BA_ATTR_COUNT; a++) {
      ba_attr_values((ba_attr_t)a, st.recs, e.rows, st.h.start_ns, bin_ns, st.vals);
      if ((rc = ba_idx_online_add(idx[a], st.vals, e.rows)) < 0) goto done;
    }
    for (uint32_t i = 0; i < e.rows; i++) {
      minf = BA_MIN(minf, st.recs[i].first_ns);
      maxf = BA_MAX(maxf, st.recs[i].first_ns);
      kinds |= st.recs[i].kind == BA_REC_PACKET ? 2u : 1u;
    }
    if (ngroups == gcap) {
      void *q = groups;
      if ((rc = ba_grow(&q, &gcap, ngroups + 1, sizeof *groups)) < 0) goto done;
      groups = q;
    }
    groups[ngroups++] = e;
    rows += e.rows;
    off += e.len;
    if (e.rows < st.h.block_rows) break; /* only the last group is partial */
  }
  if (ngroups == 0) {
    unlinkat(dirfd, open_name, 0);
    goto done;
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    if ((rc = ba_idx_online_finish(idx[a], &attrs[a])) < 0) goto done;
  /* The journal's own name minus ".open", unless taken meanwhile. */
  char final_name[128];
  size_t len = strlen(open_name);
  snprintf(final_name, sizeof final_name, "%.*s", (int)(len - 5), open_name);
  for (unsigned seq = 1; faccessat(dirfd, final_name, F_OK, 0) == 0; seq++)
    if ((rc = ba_seg_name(st.h.start_ns, seq, final_name, sizeof final_name)) < 0) goto done;
  ba_seg_finish_t f = {.fd = fd, .dirfd = dirfd, .open_name = open_name, .final_name = final_name,
                       .end = off, .groups = groups, .ngroups = (uint32_t)ngroups, .ncols = ba_seg_ncols(st.h.major), .rows = rows,
                       .min_first = minf, .max_first = maxf, .kinds = kinds, .attrs = attrs};
  rc = ba_seg_finish(&f);
  if (rc == BA_OK) *recovered += rows;
done:
  if (rc < 0 && errmsg[0] == 0)
    snprintf(errmsg, errcap, "%s: recovery failed: %s", open_name, ba_strerror(rc));
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_idx_online_free(idx[a]);
    ba_idx_attr_clear(&attrs[a]);
  }
  ba_free(groups);
  ba_free(st.buf);
  ba_free(st.raw);
  ba_free(st.recs);
  ba_free(st.vals);
  close(fd);
  return rc;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a > b && !strcmp(s + a - b, suf);
}

int ba_store_recover(int dirfd, const ba_store_opts_t *defaults, uint64_t *recovered, char *errmsg,
                     size_t errcap) {
  (void)defaults;
  int fd = dup(dirfd);
  BA_RETURN_IF(fd < 0, BA_ERR_IO);
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return BA_ERR_IO;
  }
  char (*names)[256] = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = BA_OK;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "seg-", 4) != 0 || strlen(e->d_name) >= 200) continue;
    if (ends_with(e->d_name, ".bitarc.tmp")) {
      unlinkat(dirfd, e->d_name, 0);
      continue;
    }
    if (!ends_with(e->d_name, ".bitarc.open")) continue;
    if (n == cap) {
      void *q = names;
      if ((rc = ba_grow(&q, &cap, n + 1, sizeof *names)) < 0) break;
      names = q;
    }
    snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < n && rc == BA_OK; i++) rc = recover_one(dirfd, names[i], recovered, errmsg, errcap);
  ba_free(names);
  return rc;
}
