/* Store writer: routes records to time slices, cuts each slice into row
 * groups of block_rows records, builds the bitmap index on the fly and
 * compresses the column blocks on worker threads, and appends finished groups
 * to the slice's journal (doc/format.md §5). Closing a slice appends the
 * index, row-group table and footer and renames the journal into a segment.
 *
 * Threads: with opts.threads = N >= 2 there are N workers. Worker w owns the
 * index attributes a with a % N == w and the columns c with c % N == w; every
 * worker takes the row groups in submission order, so each attribute's
 * bitmaps see rows in order. The caller copies records into the open group,
 * submits full groups to a ring and writes finished groups (in order) when it
 * needs a free slot. With N <= 1 everything runs in the caller. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/col3.h"
#include "common/common.h"
#include "reorder/olsh.h"

#if !BA_HAVE_OLSH
/* src/reorder/olsh.c has not landed: the call path stays compiled against
 * these, and check_opts refuses BA_REORDER_OLSH with BA_ERR_UNSUPPORTED. */
static void olsh_stub_opts_init(ba_olsh_opts_t *o) { memset(o, 0, sizeof *o); }
static int olsh_stub_create(const ba_olsh_opts_t *o, ba_olsh_t **h) {
  (void)o;
  *h = NULL;
  return BA_ERR_UNSUPPORTED;
}
static void olsh_stub_free(ba_olsh_t *h) { (void)h; }
static int olsh_stub_push(ba_olsh_t *h, const ba_record_t *r, size_t n, ba_record_sink_fn f, void *c) {
  (void)h, (void)r, (void)n, (void)f, (void)c;
  return BA_ERR_UNSUPPORTED;
}
static int olsh_stub_flush(ba_olsh_t *h, ba_record_sink_fn f, void *c) {
  (void)h, (void)f, (void)c;
  return BA_ERR_UNSUPPORTED;
}
static size_t olsh_stub_buffered(const ba_olsh_t *h) { (void)h; return 0; }
static uint64_t olsh_stub_buffered_frame_bytes(const ba_olsh_t *h) { (void)h; return 0; }
#define ba_olsh_opts_init olsh_stub_opts_init
#define ba_olsh_create olsh_stub_create
#define ba_olsh_free olsh_stub_free
#define ba_olsh_push olsh_stub_push
#define ba_olsh_flush olsh_stub_flush
#define ba_olsh_buffered olsh_stub_buffered
#define ba_olsh_buffered_frame_bytes olsh_stub_buffered_frame_bytes
#endif

#define MAX_OPEN_SLICES 4
#define MAX_WORKERS 16
#define RING_JOBS 4

typedef struct slice slice_t;

typedef struct job {
  slice_t *sl;
  uint32_t group, n;
  ba_record_t *recs;
  uint32_t *vals; /* index values: attribute a of row i at [a * block_rows + i] */
  uint8_t *frames;
  size_t nframes, cap_frames;
  ba_record_t any; /* bytewise OR of recs[0..n): columns all zero are skipped */
  uint8_t *out[BA_NCOLS3]; /* block header + payload; out_len 0: absent column */
  size_t out_len[BA_NCOLS3], out_cap[BA_NCOLS3];
  int rc, pending;
  struct job *next_free;
} job_t;

struct slice {
  ba_store_writer_t *w;
  uint64_t start, end;
  char name[96], open_name[104];
  int fd;
  uint64_t off;           /* end of the journal */
  uint64_t rows;          /* rows given to groups */
  uint64_t min_first, max_first;
  uint32_t kinds;
  ba_group_ent_t *groups;
  size_t ngroups, cap_groups;
  uint32_t next_group;
  ba_idx_online_t *idx[BA_ATTR_COUNT];
  job_t *cur;
  ba_olsh_t *olsh;
  uint64_t last_use;
  /* A group of this slice failed to be built or written: the journal may end
   * in a torn group and misses rows the slice counted, so nothing more is
   * appended and the slice is never finished; the journal is left for
   * recovery, which keeps its complete groups (doc/format.md §5). */
  int failed;
};

typedef struct tctx {
  void *wrk;
  ba_col_scratch_t *cs;
  uint8_t *raw;
  size_t raw_cap;
  uint64_t *fv; /* gathered fields of the worker's columns */
  size_t fv_cap;
} tctx_t;

struct ba_store_writer {
  int dirfd, lockfd;
  ba_store_opts_t o;
  uint64_t slice_ns, bin_ns;
  slice_t *open[MAX_OPEN_SLICES];
  size_t nopen;
  uint64_t use_clock;
  int nw;
  pthread_t tid[MAX_WORKERS];
  int started;
  tctx_t tc[MAX_WORKERS + 1]; /* [nw] = the caller */
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  job_t *ring[RING_JOBS];
  uint64_t head, tail, wpos[MAX_WORKERS];
  int stop;
  job_t *free_jobs;
  /* An emptied oLSH buffer kept for the next slice: its slots, chunks and
   * frame arena stay allocated (and paged in) instead of growing again. */
  ba_olsh_t *spare_olsh;
  ba_store_writer_stats_t st;
  uint64_t recovered;
  int err;
  char errmsg[512];
};

static void set_err(ba_store_writer_t *w, int rc, const char *fmt, ...) {
  if (w->err == 0) w->err = rc;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
  va_end(ap);
}

void ba_store_opts_init(ba_store_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->codec = BA_CODEC_PLWAH; /* smallest index at equal speed: bench/RESULTS.md, "Store writer" */
  o->compress = BA_COMPRESS_NONE; /* 3.0: bit-packed, addressable (doc/format.md §7.6) */
  o->block_rows = 4000;
  o->slice_seconds = 3600;
  o->time_bin_seconds = 60;
  o->reorder = BA_REORDER_NONE;
  o->threads = 2;
}

/* ---------- jobs ---------- */
static void job_free(job_t *j) {
  if (!j) return;
  ba_free(j->recs);
  ba_free(j->vals);
  ba_free(j->frames);
  for (int c = 0; c < BA_NCOLS3; c++) ba_free(j->out[c]);
  ba_free(j);
}

static int job_get(ba_store_writer_t *w, job_t **out) {
  job_t *j = w->free_jobs;
  if (j) {
    w->free_jobs = j->next_free;
  } else {
    j = ba_calloc(1, sizeof *j);
    BA_RETURN_IF(!j, BA_ERR_NOMEM);
    j->recs = ba_malloc((size_t)w->o.block_rows * sizeof *j->recs);
    j->vals = ba_malloc((size_t)w->o.block_rows * BA_ATTR_COUNT * sizeof *j->vals);
    if (!j->recs || !j->vals) {
      job_free(j);
      return BA_ERR_NOMEM;
    }
  }
  j->n = 0;
  j->nframes = 0;
  memset(&j->any, 0, sizeof j->any);
  j->rc = 0;
  j->next_free = NULL;
  *out = j;
  return BA_OK;
}

static void job_put(ba_store_writer_t *w, job_t *j) {
  j->sl = NULL;
  j->next_free = w->free_jobs;
  w->free_jobs = j;
}

/* Grows a byte buffer to need bytes. */
static int reserve(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return BA_OK;
  void *p = *buf;
  int rc = ba_grow(&p, cap, need, 1);
  *buf = p;
  return rc;
}

/* Column c's block of group j (header + payload) from its gathered fields fv
 * (clobbered); out_len 0 when the column is absent. */
static int column_block(ba_store_writer_t *w, job_t *j, int c, uint64_t *fv, tctx_t *tc) {
  ba_compress_t cz = w->o.compress;
  size_t raw = ba_col_raw_max(BA_SEG_MAJOR, c, j->n, j->nframes);
  BA_RETURN_IF(raw > UINT32_MAX / 2, BA_ERR_OVERFLOW);
  /* Uncompressed (the 3.0 default): encoded straight into the block. */
  uint8_t *dst;
  if (cz == BA_COMPRESS_NONE) {
    BA_FORWARD(reserve(&j->out[c], &j->out_cap[c], BA_BLK_HDR_BYTES + raw));
    dst = j->out[c] + BA_BLK_HDR_BYTES;
  } else {
    BA_FORWARD(reserve(&tc->raw, &tc->raw_cap, raw));
    dst = tc->raw;
  }
  BA_FORWARD(ba_col3_encode_fields(c, fv, j->n, j->frames, j->nframes, dst, &raw, tc->cs));
  j->out_len[c] = 0;
  if (raw == 0) return BA_OK; /* absent: every field zero (doc/format.md §7.1) */
  size_t clen = raw;
  if (cz != BA_COMPRESS_NONE) {
    BA_FORWARD(reserve(&j->out[c], &j->out_cap[c], BA_BLK_HDR_BYTES + ba_compress_bound(cz, raw)));
    uint8_t *payload = j->out[c] + BA_BLK_HDR_BYTES;
    BA_FORWARD(ba_compress_block(cz, tc->raw, raw, payload, j->out_cap[c] - BA_BLK_HDR_BYTES, &clen, tc->wrk));
    /* Kept compressed only where it pays (§7.1): a raw block is read
     * without decompression and its rows one by one. */
    if (clen > raw - raw / 8) {
      cz = BA_COMPRESS_NONE;
      memcpy(payload, tc->raw, raw);
      clen = raw;
    }
  }
  const uint8_t *payload = j->out[c] + BA_BLK_HDR_BYTES;
  ba_blk_hdr_t h = {.type = BA_BLK_COLUMN, .col = (uint8_t)c, .compress = (uint8_t)cz,
                    .rows = j->n, .raw_len = (uint32_t)raw, .comp_len = (uint32_t)clen,
                    .group = j->group, .payload_crc = ba_crc32c(0, payload, clen)};
  ba_blk_hdr_encode(&h, j->out[c]);
  j->out_len[c] = BA_BLK_HDR_BYTES + clen;
  return BA_OK;
}

/* The work on one row group for worker `wi` of `nw` (nw = 1: everything):
 * its attributes' bitmaps, then its columns, whose fields are gathered from
 * the records in one pass (not one strided pass per field). */
static int job_work(ba_store_writer_t *w, job_t *j, int wi, int nw, tctx_t *tc) {
  slice_t *sl = j->sl;
  for (int a = wi; a < BA_ATTR_COUNT; a += nw)
    BA_FORWARD(ba_idx_online_add(sl->idx[a], j->vals + (size_t)a * w->o.block_rows, j->n));
  int cols[BA_NCOLS3];
  size_t nc = 0, nfv = 0;
  for (int c = wi; c < BA_NCOLS3; c += nw) {
    j->out_len[c] = 0;
    if (!ba_col3_maybe_present(c, &j->any)) continue; /* absent, known without a scan */
    cols[nc++] = c;
    nfv += ba_col3_nfields(c);
  }
  if (nfv * j->n > tc->fv_cap) {
    void *p = tc->fv;
    int rc = ba_grow(&p, &tc->fv_cap, nfv * j->n, sizeof *tc->fv);
    tc->fv = p;
    BA_FORWARD(rc);
  }
  ba_col3_gather(cols, nc, j->recs, j->n, tc->fv);
  uint64_t *fv = tc->fv;
  for (size_t q = 0; q < nc; fv += ba_col3_nfields(cols[q]) * j->n, q++)
    BA_FORWARD(column_block(w, j, cols[q], fv, tc));
  return BA_OK;
}

typedef struct wstart {
  ba_store_writer_t *w;
  int wi;
} wstart_t;

static void *worker_run(void *arg) {
  wstart_t *ws = arg;
  ba_store_writer_t *w = ws->w;
  int wi = ws->wi;
  ba_free(ws);
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (w->wpos[wi] == w->tail && !w->stop) pthread_cond_wait(&w->cv_work, &w->mu);
    if (w->wpos[wi] == w->tail) {
      pthread_mutex_unlock(&w->mu);
      break;
    }
    job_t *j = w->ring[w->wpos[wi] % RING_JOBS];
    pthread_mutex_unlock(&w->mu);
    int rc = job_work(w, j, wi, w->nw, &w->tc[wi]);
    pthread_mutex_lock(&w->mu);
    if (rc < 0 && j->rc == 0) j->rc = rc;
    w->wpos[wi]++;
    if (--j->pending == 0) pthread_cond_broadcast(&w->cv_done);
    pthread_mutex_unlock(&w->mu);
  }
  return NULL;
}

/* Appends a finished row group to its slice's journal at sl->off (one
 * pwritev; the offset recorded for the group is where its bytes go). */
static int job_write(ba_store_writer_t *w, job_t *j) {
  slice_t *sl = j->sl;
  if (sl->failed) return w->err < 0 ? w->err : BA_ERR_IO; /* nothing after a hole */
  if (j->rc < 0) {
    sl->failed = 1;
    set_err(w, j->rc, "%s: building row group %u failed: %s", sl->name, j->group,
            ba_strerror(j->rc));
    return j->rc;
  }
  const uint32_t gpl = ba_group_payload_bytes(BA_NCOLS3);
  uint8_t gb[BA_BLK_HDR_BYTES + 24 + 4 * BA_NCOLS3];
  uint8_t *gp = gb + BA_BLK_HDR_BYTES;
  memset(gp, 0, gpl);
  ba_store_le32(gp, j->group);
  ba_store_le32(gp + 4, j->n);
  ba_store_le32(gp + 8, BA_NCOLS3);
  uint64_t first_row = (uint64_t)j->group * w->o.block_rows;
  ba_store_le64(gp + 16, first_row);
  for (int c = 0; c < BA_NCOLS3; c++) ba_store_le32(gp + 24 + 4 * c, (uint32_t)j->out_len[c]);
  ba_blk_hdr_t h = {.type = BA_BLK_GROUP, .col = 0xFF, .compress = BA_COMPRESS_NONE, .rows = j->n,
                    .raw_len = gpl, .comp_len = gpl, .group = j->group, .payload_crc = ba_crc32c(0, gp, gpl)};
  ba_blk_hdr_encode(&h, gb);
  struct iovec iov[1 + BA_NCOLS3];
  iov[0].iov_base = gb;
  iov[0].iov_len = sizeof gb;
  ba_group_ent_t e = {.off = sl->off, .rows = j->n};
  uint64_t len = sizeof gb;
  for (int c = 0; c < BA_NCOLS3; c++) {
    iov[1 + c].iov_base = j->out[c];
    iov[1 + c].iov_len = j->out_len[c];
    e.col_off[c] = j->out_len[c] ? (uint32_t)len : 0;
    len += j->out_len[c];
  }
  if (len > UINT32_MAX) {
    sl->failed = 1;
    set_err(w, BA_ERR_OVERFLOW, "%s: row group %u too large", sl->name, j->group);
    return BA_ERR_OVERFLOW;
  }
  e.len = (uint32_t)len;
  /* pwritev may be partial: continue where it stopped. A failure leaves a
   * torn group at the end of the journal: the slice is then failed. */
  size_t done = 0;
  while (done < len) {
    size_t skip = done;
    int k = 0;
    while (skip >= iov[k].iov_len) skip -= iov[k++].iov_len;
    struct iovec v[1 + BA_NCOLS3];
    int nv = 0;
    for (int i = k; i < 1 + BA_NCOLS3; i++, nv++) {
      v[nv].iov_base = (uint8_t *)iov[i].iov_base + (i == k ? skip : 0);
      v[nv].iov_len = iov[i].iov_len - (i == k ? skip : 0);
    }
    ssize_t r = pwritev(sl->fd, v, nv, (off_t)(sl->off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      sl->failed = 1;
      set_err(w, BA_ERR_IO, "%s: write of row group %u at offset %llu: %s", sl->open_name, j->group,
              (unsigned long long)(sl->off + done), r < 0 ? strerror(errno) : "nothing written");
      return BA_ERR_IO;
    }
    done += (size_t)r;
  }
  if (sl->ngroups == sl->cap_groups) {
    void *p = sl->groups;
    int rc = ba_grow(&p, &sl->cap_groups, sl->ngroups + 1, sizeof(ba_group_ent_t));
    if (rc < 0) {
      sl->failed = 1;
      set_err(w, rc, "%s: row group %u: %s", sl->name, j->group, ba_strerror(rc));
      return rc;
    }
    sl->groups = p;
  }
  sl->groups[sl->ngroups++] = e;
  sl->off += len;
  w->st.bytes_archive += len;
  return BA_OK;
}

/* Writes the oldest in-flight group. */
static int reclaim_one(ba_store_writer_t *w) {
  pthread_mutex_lock(&w->mu);
  if (w->head == w->tail) {
    pthread_mutex_unlock(&w->mu);
    return BA_OK;
  }
  job_t *j = w->ring[w->head % RING_JOBS];
  while (j->pending) pthread_cond_wait(&w->cv_done, &w->mu);
  w->head++;
  pthread_mutex_unlock(&w->mu);
  int rc = job_write(w, j);
  job_put(w, j);
  return rc;
}

static int drain(ba_store_writer_t *w) {
  int rc = BA_OK;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int empty = w->head == w->tail;
    pthread_mutex_unlock(&w->mu);
    if (empty) break;
    int r = reclaim_one(w);
    if (r < 0 && rc == BA_OK) rc = r;
  }
  return rc;
}

static int submit(ba_store_writer_t *w, job_t *j) {
  slice_t *sl = j->sl;
  j->group = sl->next_group++;
  if (w->nw == 0) {
    int rc = job_work(w, j, 0, 1, &w->tc[0]);
    if (rc < 0) j->rc = rc;
    rc = job_write(w, j);
    job_put(w, j);
    return rc;
  }
  int rc = BA_OK;
  pthread_mutex_lock(&w->mu);
  int full = w->tail - w->head == RING_JOBS;
  pthread_mutex_unlock(&w->mu);
  if (full) rc = reclaim_one(w);
  pthread_mutex_lock(&w->mu);
  j->pending = w->nw;
  w->ring[w->tail % RING_JOBS] = j;
  w->tail++;
  pthread_cond_broadcast(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* ---------- slices ---------- */
static void slice_free(slice_t *sl) {
  if (!sl) return;
  for (int a = 0; a < BA_ATTR_COUNT; a++) ba_idx_online_free(sl->idx[a]);
  if (sl->fd >= 0) close(sl->fd);
  if (sl->olsh && !sl->w->spare_olsh && ba_olsh_buffered(sl->olsh) == 0 &&
      ba_olsh_buffered_frame_bytes(sl->olsh) == 0) {
    sl->w->spare_olsh = sl->olsh; /* flushed: empty, reusable as is */
  } else if (sl->olsh) {
    ba_olsh_free(sl->olsh);
  }
  ba_free(sl->groups);
  ba_free(sl);
}

static int name_taken(int dirfd, const char *name) {
  char open_name[128];
  snprintf(open_name, sizeof open_name, "%s.open", name);
  return faccessat(dirfd, name, F_OK, 0) == 0 || faccessat(dirfd, open_name, F_OK, 0) == 0;
}

static int slice_open(ba_store_writer_t *w, uint64_t start, slice_t **out) {
  slice_t *sl = ba_calloc(1, sizeof *sl);
  BA_RETURN_IF(!sl, BA_ERR_NOMEM);
  sl->w = w;
  sl->fd = -1;
  sl->start = start;
  sl->end = start + w->slice_ns;
  if (sl->end < start) sl->end = UINT64_MAX; /* the last slice of time */
  sl->min_first = UINT64_MAX;
  int rc = BA_OK;
  for (unsigned seq = 0;; seq++) {
    if ((rc = ba_seg_name(start, seq, sl->name, sizeof sl->name)) < 0) goto fail;
    if (!name_taken(w->dirfd, sl->name)) break;
    if (seq > 100000) {
      rc = BA_ERR_EXISTS;
      goto fail;
    }
  }
  snprintf(sl->open_name, sizeof sl->open_name, "%s.open", sl->name);
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    uint32_t dom = ba_attr_domain((ba_attr_t)a, sl->end - sl->start, w->bin_ns);
    if ((rc = ba_idx_online_create(w->o.codec, dom, &sl->idx[a])) < 0) goto fail;
  }
  if (w->o.reorder == BA_REORDER_OLSH) {
    ba_olsh_opts_t oo;
    ba_olsh_opts_init(&oo);
    if (w->o.olsh_mem_records) {
      oo.mmax = w->o.olsh_mem_records;
      if (oo.mmin >= oo.mmax) oo.mmin = oo.mmax / 2;
    }
    if (w->spare_olsh) {
      sl->olsh = w->spare_olsh;
      w->spare_olsh = NULL;
    } else if ((rc = ba_olsh_create(&oo, &sl->olsh)) < 0) {
      goto fail;
    }
  }
  sl->fd = openat(w->dirfd, sl->open_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (sl->fd < 0) {
    rc = BA_ERR_IO;
    set_err(w, rc, "%s: create: %s", sl->open_name, strerror(errno));
    goto fail;
  }
  ba_seg_hdr_t h = {.major = BA_SEG_MAJOR, .minor = BA_SEG_MINOR,
                    .flags = w->o.reorder == BA_REORDER_OLSH ? BA_SEG_FLAG_OLSH : 0,
                    .start_ns = sl->start, .end_ns = sl->end, .block_rows = w->o.block_rows,
                    .time_bin_seconds = w->o.time_bin_seconds, .codec = (uint8_t)w->o.codec,
                    .compress = (uint8_t)w->o.compress, .ncols = BA_NCOLS3};
  uint8_t hb[BA_SEG_HDR_BYTES];
  ba_seg_hdr_encode(&h, hb);
  if ((rc = ba_write_full(sl->fd, hb, sizeof hb)) < 0) {
    set_err(w, rc, "%s: write: %s", sl->open_name, strerror(errno));
    unlinkat(w->dirfd, sl->open_name, 0);
    goto fail;
  }
  sl->off = BA_SEG_HDR_BYTES;
  *out = sl;
  return BA_OK;
fail:
  if (w->err == 0) set_err(w, rc, "%s: cannot open slice: %s", sl->name, ba_strerror(rc));
  slice_free(sl);
  return rc;
}

static int slice_add(ba_store_writer_t *w, slice_t *sl, const ba_record_t *recs, size_t n);

static int olsh_emit(void *ctx, const ba_record_t *recs, size_t n) {
  slice_t *sl = ctx;
  return slice_add(sl->w, sl, recs, n);
}

/* Flushes oLSH, writes every group, finishes the segment, frees the slice. */
static int slice_close(ba_store_writer_t *w, slice_t *sl) {
  int rc = BA_OK;
  if (sl->olsh) rc = ba_olsh_flush(sl->olsh, olsh_emit, sl);
  if (sl->cur && sl->cur->n) {
    job_t *j = sl->cur;
    sl->cur = NULL;
    int r = submit(w, j);
    if (r < 0 && rc == BA_OK) rc = r;
  } else if (sl->cur) {
    job_put(w, sl->cur);
    sl->cur = NULL;
  }
  int r = drain(w);
  if (r < 0 && rc == BA_OK) rc = r;
  if (sl->failed) {
    /* Never publish it: the journal stays for recovery. */
    if (rc == BA_OK) rc = w->err < 0 ? w->err : BA_ERR_IO;
    slice_free(sl);
    return rc;
  }
  if (rc == BA_OK && sl->rows == 0) {
    unlinkat(w->dirfd, sl->open_name, 0);
    slice_free(sl);
    return BA_OK;
  }
  ba_idx_attr_t attrs[BA_ATTR_COUNT];
  memset(attrs, 0, sizeof attrs);
  for (int a = 0; a < BA_ATTR_COUNT && rc == BA_OK; a++) rc = ba_idx_online_finish(sl->idx[a], &attrs[a]);
  if (rc == BA_OK) {
    ba_seg_finish_t f = {.fd = sl->fd, .dirfd = w->dirfd, .open_name = sl->open_name,
                         .final_name = sl->name, .end = sl->off, .groups = sl->groups,
                         .ngroups = (uint32_t)sl->ngroups, .ncols = BA_NCOLS3, .rows = sl->rows,
                         .min_first = sl->min_first, .max_first = sl->max_first,
                         .kinds = sl->kinds, .attrs = attrs};
    rc = ba_seg_finish(&f);
    if (rc == BA_OK) {
      w->st.segments_written++;
      w->st.bytes_index += f.bytes_index;
      w->st.records_stored += sl->rows;
    } else {
      set_err(w, rc, "%s: finishing segment: %s (%s)", sl->name, ba_strerror(rc), strerror(errno));
    }
  } else if (w->err == 0) {
    set_err(w, rc, "%s: closing slice: %s", sl->name, ba_strerror(rc));
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++) ba_idx_attr_clear(&attrs[a]);
  slice_free(sl);
  return rc;
}

static int close_slot(ba_store_writer_t *w, size_t i) {
  slice_t *sl = w->open[i];
  w->open[i] = w->open[--w->nopen];
  return slice_close(w, sl);
}

static inline void or_record(ba_record_t *acc, const ba_record_t *r) {
  unsigned char *a = (unsigned char *)acc;
  const unsigned char *b = (const unsigned char *)r;
  for (size_t i = 0; i < sizeof *r; i++) a[i] |= b[i];
}

/* Appends k records (k <= the room left in j) to the open group j of sl;
 * submits j when it is full. */
static int group_add(ba_store_writer_t *w, slice_t *sl, job_t *j, const ba_record_t *recs, size_t k) {
  /* The index values are taken here, from the caller's records while they
   * are in cache, one short run per attribute, rather than by the workers
   * from the copies (a strided pass over the whole group per attribute). */
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    ba_attr_values((ba_attr_t)a, recs, k, sl->start, w->bin_ns, j->vals + (size_t)a * w->o.block_rows + j->n);
  for (size_t i = 0; i < k; i++) {
    const ba_record_t *r = &recs[i];
    if (r->caplen) {
      if (j->nframes + r->caplen > j->cap_frames) {
        void *p = j->frames;
        BA_FORWARD(ba_grow(&p, &j->cap_frames, j->nframes + r->caplen, 1));
        j->frames = p;
      }
      memcpy(j->frames + j->nframes, r->frame, r->caplen);
      j->nframes += r->caplen;
    }
    j->recs[j->n] = *r;
    j->recs[j->n].frame = NULL;
    or_record(&j->any, &j->recs[j->n]);
    j->n++;
    sl->rows++;
    if (r->first_ns < sl->min_first) sl->min_first = r->first_ns;
    if (r->first_ns > sl->max_first) sl->max_first = r->first_ns;
    sl->kinds |= r->kind == BA_REC_PACKET ? 2u : 1u;
  }
  if (j->n == w->o.block_rows) {
    sl->cur = NULL;
    BA_FORWARD(submit(w, j));
  }
  return BA_OK;
}

/* Copies records of one slice into its open group(s). */
static int slice_add(ba_store_writer_t *w, slice_t *sl, const ba_record_t *recs, size_t n) {
  for (size_t i = 0; i < n;) {
    if (!sl->cur) {
      BA_FORWARD(job_get(w, &sl->cur));
      sl->cur->sl = sl;
    }
    size_t k = BA_MIN(n - i, (size_t)(w->o.block_rows - sl->cur->n));
    BA_FORWARD(group_add(w, sl, sl->cur, recs + i, k));
    i += k;
  }
  return BA_OK;
}

static int find_slice(ba_store_writer_t *w, uint64_t start, slice_t **out) {
  for (size_t i = 0; i < w->nopen; i++)
    if (w->open[i]->start == start) {
      *out = w->open[i];
      return BA_OK;
    }
  /* A newer slice closes those more than one slice older (late records up to
   * one slice behind still join their slice). */
  for (size_t i = 0; i < w->nopen;) {
    if (start > w->slice_ns && w->open[i]->start < start - w->slice_ns) {
      BA_FORWARD(close_slot(w, i));
    } else {
      i++;
    }
  }
  if (w->nopen == MAX_OPEN_SLICES) {
    size_t lru = 0;
    for (size_t i = 1; i < w->nopen; i++)
      if (w->open[i]->last_use < w->open[lru]->last_use) lru = i;
    BA_FORWARD(close_slot(w, lru));
  }
  BA_FORWARD(slice_open(w, start, out));
  w->open[w->nopen++] = *out;
  return BA_OK;
}

static int record_ok(const ba_record_t *r) {
  if (r->kind != BA_REC_FLOW && r->kind != BA_REC_PACKET) return 0;
  if (r->caplen > BA_MAX_CAPLEN || (r->caplen && !r->frame)) return 0;
  return 1;
}

int ba_store_writer_append(ba_store_writer_t *w, const ba_record_t *recs, size_t n) {
  BA_RETURN_IF(!w || (n && !recs), BA_ERR_INVALID);
  BA_RETURN_IF(w->err < 0, w->err);
  w->st.records_in += n;
  size_t i = 0;
  while (i < n) {
    if (!record_ok(&recs[i])) {
      w->st.records_dropped++;
      i++;
      continue;
    }
    uint64_t start = recs[i].first_ns - recs[i].first_ns % w->slice_ns;
    size_t k = i + 1;
    while (k < n && record_ok(&recs[k]) && recs[k].first_ns - recs[k].first_ns % w->slice_ns == start)
      k++;
    slice_t *sl;
    int rc = find_slice(w, start, &sl);
    if (rc < 0) {
      if (w->err == 0) set_err(w, rc, "cannot open a slice: %s", ba_strerror(rc));
      return rc;
    }
    sl->last_use = ++w->use_clock;
    /* Keep every segment below BA_SEG_MAX_ROWS rows. */
    size_t want = k - i, take = want;
    uint64_t room = BA_SEG_MAX_ROWS - sl->rows - (sl->olsh ? ba_olsh_buffered(sl->olsh) : 0);
    if (take > room) take = (size_t)room;
    if (sl->olsh) rc = ba_olsh_push(sl->olsh, recs + i, take, olsh_emit, sl);
    else rc = slice_add(w, sl, recs + i, take);
    if (rc < 0) {
      if (w->err == 0) set_err(w, rc, "%s: %s", sl->name, ba_strerror(rc));
      return rc;
    }
    i += take;
    if (take < want) {
      for (size_t s = 0; s < w->nopen; s++)
        if (w->open[s] == sl) {
          BA_FORWARD(close_slot(w, s));
          break;
        }
    }
  }
  return BA_OK;
}

int ba_store_writer_sync(ba_store_writer_t *w) {
  BA_RETURN_IF(!w, BA_ERR_INVALID);
  BA_RETURN_IF(w->err < 0, w->err);
  BA_FORWARD(drain(w));
  for (size_t i = 0; i < w->nopen; i++) {
    if (fsync(w->open[i]->fd) != 0) {
      set_err(w, BA_ERR_IO, "%s: fsync: %s", w->open[i]->open_name, strerror(errno));
      return BA_ERR_IO;
    }
  }
  if (fsync(w->dirfd) != 0) return BA_ERR_IO;
  return BA_OK;
}

static void writer_free(ba_store_writer_t *w) {
  if (w->started) {
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv_work);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->started; i++) pthread_join(w->tid[i], NULL);
  }
  /* Jobs still in the ring belong to the ring. */
  for (uint64_t k = w->head; k < w->tail; k++) job_put(w, w->ring[k % RING_JOBS]);
  for (size_t i = 0; i < w->nopen; i++) {
    if (w->open[i]->cur) job_put(w, w->open[i]->cur);
    slice_free(w->open[i]);
  }
  ba_olsh_free(w->spare_olsh);
  while (w->free_jobs) {
    job_t *j = w->free_jobs;
    w->free_jobs = j->next_free;
    job_free(j);
  }
  for (int i = 0; i <= MAX_WORKERS; i++) {
    ba_free(w->tc[i].wrk);
    ba_free(w->tc[i].raw);
    ba_free(w->tc[i].fv);
    ba_col_scratch_free(w->tc[i].cs);
  }
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv_work);
  pthread_cond_destroy(&w->cv_done);
  if (w->lockfd >= 0) close(w->lockfd);
  if (w->dirfd >= 0) close(w->dirfd);
  ba_free(w);
}

int ba_store_writer_close(ba_store_writer_t *w) {
  if (!w) return BA_OK;
  int rc = w->err < 0 ? w->err : BA_OK;
  while (w->nopen > 0) {
    /* Oldest first, so segments appear in time order. */
    size_t o = 0;
    for (size_t i = 1; i < w->nopen; i++)
      if (w->open[i]->start < w->open[o]->start) o = i;
    int r = close_slot(w, o);
    if (r < 0 && rc == BA_OK) rc = r;
  }
  writer_free(w);
  return rc;
}

void ba_store_writer_get_stats(const ba_store_writer_t *w, ba_store_writer_stats_t *st) {
  if (w && st) *st = w->st;
}

uint64_t ba_store_writer_recovered(const ba_store_writer_t *w) { return w ? w->recovered : 0; }

const char *ba_store_writer_errmsg(const ba_store_writer_t *w) {
  return w ? w->errmsg : "no writer";
}

static int check_opts(const ba_store_opts_t *o) {
  BA_RETURN_IF(!ba_codec_name(o->codec), BA_ERR_INVALID);
  BA_RETURN_IF(o->compress < BA_COMPRESS_LZO || o->compress > BA_COMPRESS_NONE, BA_ERR_INVALID);
  BA_RETURN_IF(o->block_rows == 0 || o->block_rows > BA_MAX_BLOCK_ROWS, BA_ERR_INVALID);
  BA_RETURN_IF(o->slice_seconds == 0 || o->time_bin_seconds == 0, BA_ERR_INVALID);
  BA_RETURN_IF(ba_attr_domain(BA_ATTR_TIME_BIN, (uint64_t)o->slice_seconds * 1000000000ull,
                              (uint64_t)o->time_bin_seconds * 1000000000ull) == 0,
               BA_ERR_INVALID);
  BA_RETURN_IF(o->reorder != BA_REORDER_NONE && o->reorder != BA_REORDER_OLSH, BA_ERR_INVALID);
  BA_RETURN_IF(o->threads < 0 || o->threads > MAX_WORKERS, BA_ERR_INVALID);
#if !BA_HAVE_OLSH
  /* src/reorder/olsh.c not built yet. */
  BA_RETURN_IF(o->reorder == BA_REORDER_OLSH, BA_ERR_UNSUPPORTED);
#endif
  return BA_OK;
}

int ba_store_writer_open(const char *dir, const ba_store_opts_t *opts, ba_store_writer_t **out) {
  BA_RETURN_IF(!dir || !out, BA_ERR_INVALID);
  *out = NULL;
  ba_store_opts_t o;
  if (opts) o = *opts;
  else ba_store_opts_init(&o);
  if (o.threads == 0) o.threads = 2;
  BA_FORWARD(check_opts(&o));
  ba_store_writer_t *w = ba_calloc(1, sizeof *w);
  BA_RETURN_IF(!w, BA_ERR_NOMEM);
  w->o = o;
  w->dirfd = w->lockfd = -1;
  w->slice_ns = (uint64_t)o.slice_seconds * 1000000000ull;
  w->bin_ns = (uint64_t)o.time_bin_seconds * 1000000000ull;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv_work, NULL);
  pthread_cond_init(&w->cv_done, NULL);
  int rc = BA_OK;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    rc = BA_ERR_IO;
    set_err(w, rc, "%s: mkdir: %s", dir, strerror(errno));
    goto fail;
  }
  w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w->dirfd < 0) {
    rc = errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
    goto fail;
  }
  w->lockfd = openat(w->dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (w->lockfd < 0) {
    rc = BA_ERR_IO;
    goto fail;
  }
  if (flock(w->lockfd, LOCK_EX | LOCK_NB) != 0) {
    rc = errno == EWOULDBLOCK ? BA_ERR_BUSY : BA_ERR_IO;
    goto fail;
  }
  if ((rc = ba_store_recover(w->dirfd, &o, &w->recovered, w->errmsg, sizeof w->errmsg)) < 0) goto fail;
  w->nw = o.threads >= 2 ? o.threads : 0;
  for (int i = 0; i <= (w->nw ? w->nw : 0); i++) {
    w->tc[i].wrk = ba_malloc(ba_compress_wrkmem());
    if (!w->tc[i].wrk || ba_col_scratch_create(&w->tc[i].cs) < 0) {
      rc = BA_ERR_NOMEM;
      goto fail;
    }
  }
  for (int i = 0; i < w->nw; i++) {
    wstart_t *ws = ba_malloc(sizeof *ws);
    if (!ws) {
      rc = BA_ERR_NOMEM;
      goto fail;
    }
    ws->w = w;
    ws->wi = i;
    if (pthread_create(&w->tid[i], NULL, worker_run, ws) != 0) {
      ba_free(ws);
      rc = BA_ERR_NOMEM;
      goto fail;
    }
    w->started++;
  }
  *out = w;
  return BA_OK;
fail:
  writer_free(w);
  return rc;
}
