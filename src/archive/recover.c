/* Crash recovery (doc/format.md §5.2): every "<segment>.open" journal is cut
 * after its last complete, valid row group (the rows of LIVE blocks after it
 * become one more group); the index is rebuilt from the decompressed groups;
 * the segment is finished and renamed. Leftover
 * reindex temp files are removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

/* Rows of the LIVE blocks after the last GROUP (their group never filled),
 * frames copied out of the reader's buffer. */
typedef struct tail {
  ba_record_t *recs;
  uint8_t *frames;
  size_t n, nframes, fcap;
} tail_t;

static int tail_add(tail_t *t, const ba_record_t *r, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    ba_record_t *d = &t->recs[t->n++];
    *d = r[i];
    d->frame = NULL;
    if (!r[i].caplen) continue;
    if (t->nframes + r[i].caplen > t->fcap) {
      void *q = t->frames;
      BA_FORWARD(ba_grow(&q, &t->fcap, t->nframes + r[i].caplen, 1));
      t->frames = q;
    }
    memcpy(t->frames + t->nframes, r[i].frame, r[i].caplen);
    t->nframes += r[i].caplen;
  }
  return BA_OK;
}

/* The trailing LIVE rows, written at off as group gi, the last (a live
 * reader then sees GROUP gi after the LIVE blocks of gi, as from a writer). */
static int tail_write(int fd, const ba_seg_hdr_t *h, uint32_t gi, tail_t *t, uint64_t off, ba_group_ent_t *e) {
  size_t fo = 0;
  for (size_t i = 0; i < t->n; i++) {
    t->recs[i].frame = t->recs[i].caplen ? t->frames + fo : NULL;
    fo += t->recs[i].caplen;
  }
  return ba_journal_write_group(fd, h, gi, t->recs, (uint32_t)t->n, t->frames, t->nframes, off, e);
}

/* Indexes rows recs[0..n) of the segment (the next rows) and widens its
 * first-time range and kinds. */
typedef struct acc {
  ba_idx_online_t **idx;
  uint32_t *vals;
  uint64_t start_ns, bin_ns, minf, maxf;
  uint32_t kinds;
} acc_t;

static int acc_rows(acc_t *a, const ba_record_t *recs, size_t n) {
  for (int t = 0; t < BA_ATTR_COUNT; t++) {
    ba_attr_values((ba_attr_t)t, recs, n, a->start_ns, a->bin_ns, a->vals);
    BA_FORWARD(ba_idx_online_add(a->idx[t], a->vals, n));
  }
  for (size_t i = 0; i < n; i++) {
    a->minf = BA_MIN(a->minf, recs[i].first_ns);
    a->maxf = BA_MAX(a->maxf, recs[i].first_ns);
    a->kinds |= recs[i].kind == BA_REC_PACKET ? 2u : 1u;
  }
  return BA_OK;
}

/* One journal being recovered: the reader, the rebuilt index, the groups
 * kept. */
typedef struct rec {
  int fd;
  ba_jreader_t st;
  uint32_t *vals;
  tail_t tail;
  ba_idx_online_t *idx[BA_ATTR_COUNT];
  ba_idx_attr_t attrs[BA_ATTR_COUNT];
  ba_group_ent_t *groups;
  size_t ngroups, gcap;
  uint64_t rows, end; /* rows kept; the file offset after the last group kept */
  acc_t acc;
} rec_t;

/* Keeps group e of recs[0..e.rows): indexed, listed. */
static int rec_keep(rec_t *r, const ba_group_ent_t *e, const ba_record_t *recs, size_t n) {
  BA_FORWARD(acc_rows(&r->acc, recs, n));
  if (r->ngroups == r->gcap) {
    void *q = r->groups;
    BA_FORWARD(ba_grow(&q, &r->gcap, r->ngroups + 1, sizeof *r->groups));
    r->groups = q;
  }
  r->groups[r->ngroups] = *e;
  ba_zone_compute(recs, n, &r->groups[r->ngroups++].zone);
  r->rows += n;
  return BA_OK;
}

/* Walks the journal's groups from the header on: complete GROUP blocks are
 * kept up to the first damage; the LIVE rows after the last one become one
 * more group. */
static int rec_scan(rec_t *r, uint64_t fsize) {
  uint64_t off = BA_SEG_HDR_BYTES;
  uint32_t live_rows = 0;
  r->end = off;
  for (uint32_t gi = 0;;) {
    ba_jgroup_t jg;
    if (ba_jreader_group(&r->st, r->fd, fsize, off, gi, live_rows, &jg) < 0) break;
    if (jg.live) {
      /* Rows of group gi written early for live queries: the GROUP block
       * of gi follows with all of them, or, if the writer died first, they
       * become the last group (below). */
      live_rows += jg.rows;
      off += jg.e.len;
      BA_FORWARD(tail_add(&r->tail, r->st.recs, jg.rows));
      continue;
    }
    r->tail.n = r->tail.nframes = 0;
    ba_group_ent_t e = jg.e;
    if (r->rows + e.rows > BA_SEG_MAX_ROWS) break;
    BA_FORWARD(rec_keep(r, &e, r->st.recs, e.rows));
    off += e.len;
    r->end = off;
    gi++;
    live_rows = 0;
    if (e.rows < r->st.h.block_rows) break; /* only the last group is partial */
  }
  if (r->tail.n && r->rows + r->tail.n <= BA_SEG_MAX_ROWS) {
    ba_group_ent_t e;
    BA_FORWARD(tail_write(r->fd, &r->st.h, (uint32_t)r->ngroups, &r->tail, off, &e));
    BA_FORWARD(rec_keep(r, &e, r->tail.recs, r->tail.n));
    r->end = off + e.len;
  }
  return BA_OK;
}

/* Finishes the segment under the journal's own name minus ".open", unless
 * that name was taken meanwhile. */
static int rec_finish(rec_t *r, int dirfd, const char *open_name) {
  for (int a = 0; a < BA_ATTR_COUNT; a++) BA_FORWARD(ba_idx_online_finish(r->idx[a], &r->attrs[a]));
  char final_name[128];
  size_t len = strlen(open_name);
  snprintf(final_name, sizeof final_name, "%.*s", (int)(len - 5), open_name);
  for (unsigned seq = 1; faccessat(dirfd, final_name, F_OK, 0) == 0; seq++)
    BA_FORWARD(ba_seg_name(r->st.h.start_ns, seq, final_name, sizeof final_name));
  ba_seg_finish_t f = {.fd = r->fd, .dirfd = dirfd, .open_name = open_name, .final_name = final_name,
                       .end = r->end, .groups = r->groups, .ngroups = (uint32_t)r->ngroups,
                       .ncols = ba_seg_ncols(r->st.h.major), .rows = r->rows, .min_first = r->acc.minf,
                       .max_first = r->acc.maxf, .kinds = r->acc.kinds, .attrs = r->attrs,
                       .major = r->st.h.major, .minor = r->st.h.minor};
  return ba_seg_finish(&f);
}

static void rec_free(rec_t *r) {
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_idx_online_free(r->idx[a]);
    ba_idx_attr_clear(&r->attrs[a]);
  }
  ba_free(r->groups);
  ba_free(r->vals);
  ba_free(r->tail.recs);
  ba_free(r->tail.frames);
  ba_jreader_close(&r->st);
  close(r->fd);
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
  rec_t r;
  memset(&r, 0, sizeof r);
  r.fd = fd;
  uint64_t fsize = (uint64_t)sb.st_size;
  int rc = ba_jreader_open(&r.st, fd, fsize);
  if (rc < 0) {
    if (rc != BA_ERR_NOMEM) { /* not even a header: nothing to recover */
      rc = BA_OK;
      unlinkat(dirfd, open_name, 0);
    }
    goto done;
  }
  uint64_t bin_ns = (uint64_t)r.st.h.time_bin_seconds * 1000000000ull;
  r.vals = ba_malloc((size_t)r.st.h.block_rows * sizeof *r.vals);
  r.tail.recs = ba_malloc((size_t)r.st.h.block_rows * sizeof *r.tail.recs);
  if (!r.vals || !r.tail.recs) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  for (int a = 0; a < BA_ATTR_COUNT && rc == BA_OK; a++) {
    uint32_t dom = ba_attr_domain((ba_attr_t)a, r.st.h.end_ns - r.st.h.start_ns, bin_ns);
    rc = ba_idx_online_create((ba_codec_t)r.st.h.codec, dom, &r.idx[a]);
  }
  r.acc = (acc_t){.idx = r.idx, .vals = r.vals, .start_ns = r.st.h.start_ns, .bin_ns = bin_ns, .minf = UINT64_MAX};
  if (rc == BA_OK) rc = rec_scan(&r, fsize);
  if (rc == BA_OK && r.ngroups == 0) unlinkat(dirfd, open_name, 0);
  else if (rc == BA_OK && (rc = rec_finish(&r, dirfd, open_name)) == BA_OK) *recovered += r.rows;
done:
  if (rc < 0 && errmsg[0] == 0)
    snprintf(errmsg, errcap, "%s: recovery failed: %s", open_name, ba_strerror(rc));
  rec_free(&r);
  return rc;
}

typedef struct journals {
  char (*names)[256];
  size_t n, cap;
} journals_t;

/* One directory entry: reindex leftovers go, journals are listed. */
static int list_journal(void *ctx, int dfd, const char *name) {
  journals_t *j = ctx;
  if (strncmp(name, "seg-", 4) != 0 || strlen(name) >= 200) return BA_OK;
  if (ba_name_ends_with(name, ".bitarc.tmp")) {
    unlinkat(dfd, name, 0);
    return BA_OK;
  }
  if (!ba_name_ends_with(name, ".bitarc.open")) return BA_OK;
  if (j->n == j->cap) {
    void *q = j->names;
    BA_FORWARD(ba_grow(&q, &j->cap, j->n + 1, sizeof *j->names));
    j->names = q;
  }
  snprintf(j->names[j->n++], 256, "%s", name);
  return BA_OK;
}

int ba_store_recover(int dirfd, const ba_store_opts_t *defaults, uint64_t *recovered, char *errmsg,
                     size_t errcap) {
  (void)defaults;
  journals_t j = {0};
  int rc = ba_dir_each(dirfd, NULL, list_journal, &j);
  for (size_t i = 0; i < j.n && rc == BA_OK; i++) rc = recover_one(dirfd, j.names[i], recovered, errmsg, errcap);
  ba_free(j.names);
  return rc;
}
