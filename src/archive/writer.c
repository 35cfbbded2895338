/* Store writer: routes records to time slices, cuts each slice into row
 * groups of block_rows records, builds the bitmap index on the fly and
 * compresses the column blocks on worker threads, and appends finished groups
 * to the slice's journal (doc/format.md §5). Closing a slice appends the
 * index, row-group table and footer and renames the journal into a segment.
 *
 * Row groups (filling, building on the worker threads, appending to the
 * journal) are in writer_groups.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/writer_internal.h"
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

void ba_writer_set_err(ba_store_writer_t *w, int rc, const char *fmt, ...) {
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
  o->max_segment_rows = BA_SEG_DEFAULT_ROWS;
}

/* ---------- slices ---------- */
void ba_writer_slice_free(slice_t *sl) {
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
    ba_writer_set_err(w, rc, "%s: create: %s", sl->open_name, strerror(errno));
    goto fail;
  }
  ba_seg_hdr_t h = {.major = BA_SEG_MAJOR, .minor = BA_SEG_MINOR,
                    .flags = (w->o.reorder == BA_REORDER_OLSH ? BA_SEG_FLAG_OLSH : 0) |
                             (w->o.clustered ? BA_SEG_FLAG_CLUSTER : 0),
                    .start_ns = sl->start, .end_ns = sl->end, .block_rows = w->o.block_rows,
                    .time_bin_seconds = w->o.time_bin_seconds, .codec = (uint8_t)w->o.codec,
                    .compress = (uint8_t)w->o.compress, .ncols = BA_NCOLS3};
  uint8_t hb[BA_SEG_HDR_BYTES];
  ba_seg_hdr_encode(&h, hb);
  if ((rc = ba_write_full(sl->fd, hb, sizeof hb)) < 0) {
    ba_writer_set_err(w, rc, "%s: write: %s", sl->open_name, strerror(errno));
    unlinkat(w->dirfd, sl->open_name, 0);
    goto fail;
  }
  sl->off = BA_SEG_HDR_BYTES;
  *out = sl;
  return BA_OK;
fail:
  if (w->err == 0) ba_writer_set_err(w, rc, "%s: cannot open slice: %s", sl->name, ba_strerror(rc));
  ba_writer_slice_free(sl);
  return rc;
}

static int slice_add(ba_store_writer_t *w, slice_t *sl, const ba_record_t *recs, size_t n);

static int olsh_emit(void *ctx, const ba_record_t *recs, size_t n) {
  slice_t *sl = ctx;
  return slice_add(sl->w, sl, recs, n);
}

/* Flushes oLSH, writes every group, then hands the slice over to be
 * finished (writer_finish.c: with worker threads, in the background) and
 * freed. */
static int slice_close(ba_store_writer_t *w, slice_t *sl) {
  int rc = BA_OK;
  if (sl->olsh) rc = ba_olsh_flush(sl->olsh, olsh_emit, sl);
  if (sl->cur && sl->cur->n) {
    job_t *j = sl->cur;
    sl->cur = NULL;
    int r = ba_writer_submit(w, j);
    if (r < 0 && rc == BA_OK) rc = r;
  } else if (sl->cur) {
    ba_writer_job_put(w, sl->cur);
    sl->cur = NULL;
  }
  int r = ba_writer_drain(w);
  if (r < 0 && rc == BA_OK) rc = r;
  if (sl->failed) {
    /* Never publish it: the journal stays for recovery. */
    if (rc == BA_OK) rc = w->err < 0 ? w->err : BA_ERR_IO;
    ba_writer_slice_free(sl);
    return rc;
  }
  if (rc == BA_OK && sl->rows == 0) {
    unlinkat(w->dirfd, sl->open_name, 0);
    ba_writer_slice_free(sl);
    return BA_OK;
  }
  if (rc < 0) {
    if (w->err == 0) ba_writer_set_err(w, rc, "%s: closing slice: %s", sl->name, ba_strerror(rc));
    ba_writer_slice_free(sl); /* the journal stays for recovery */
    return rc;
  }
  return ba_writer_finish(w, sl);
}

static int close_slot(ba_store_writer_t *w, size_t i) {
  slice_t *sl = w->open[i];
  w->open[i] = w->open[--w->nopen];
  return slice_close(w, sl);
}

/* Copies records of one slice into its open group(s). */
static int slice_add(ba_store_writer_t *w, slice_t *sl, const ba_record_t *recs, size_t n) {
  for (size_t i = 0; i < n;) {
    if (!sl->cur) {
      BA_FORWARD(ba_writer_job_get(w, &sl->cur));
      sl->cur->sl = sl;
    }
    size_t k = BA_MIN(n - i, (size_t)(w->o.block_rows - sl->cur->n));
    BA_FORWARD(ba_writer_group_add(w, sl, sl->cur, recs + i, k));
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
  (void)ba_writer_finish_poll(w); /* a segment finished meanwhile: its error sticks in w->err */
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
    /* the run of records in the same slice: [start, start + slice_ns),
     * compared without a division per record */
    uint64_t span = w->slice_ns - 1;
    size_t k = i + 1;
    while (k < n && record_ok(&recs[k]) && recs[k].first_ns >= start && recs[k].first_ns - start <= span) k++;
    slice_t *sl;
    int rc = find_slice(w, start, &sl);
    if (rc < 0) {
      if (w->err == 0) ba_writer_set_err(w, rc, "cannot open a slice: %s", ba_strerror(rc));
      return rc;
    }
    sl->last_use = ++w->use_clock;
    /* Keep every segment within max_segment_rows (the open slice's index
     * stays in memory until its segment is finished). */
    size_t want = k - i, take = want;
    uint64_t held = sl->rows + (sl->olsh ? ba_olsh_buffered(sl->olsh) : 0);
    uint64_t room = w->o.max_segment_rows > held ? w->o.max_segment_rows - held : 0;
    if (take > room) take = (size_t)room;
    if (sl->olsh) {
      rc = ba_olsh_push(sl->olsh, recs + i, take, olsh_emit, sl);
      if (!ba_olsh_buffered(sl->olsh)) sl->olsh_since = 0;
      else if (!sl->olsh_since) sl->olsh_since = ba_writer_mono_ns();
    } else {
      rc = slice_add(w, sl, recs + i, take);
    }
    if (rc < 0) {
      if (w->err == 0) ba_writer_set_err(w, rc, "%s: %s", sl->name, ba_strerror(rc));
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
  BA_FORWARD(ba_writer_drain(w));
  /* A slice being finished: its groups are all in its journal, which is
   * made durable without waiting for the finish (recovery would finish it);
   * a periodic sync must not stall appending for a finish's seconds. */
  BA_FORWARD(ba_writer_finish_fsync(w));
  for (size_t i = 0; i < w->nopen; i++) {
    if (fsync(w->open[i]->fd) != 0) {
      ba_writer_set_err(w, BA_ERR_IO, "%s: fsync: %s", w->open[i]->open_name, strerror(errno));
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
  ba_writer_finish_stop(w); /* finishes and frees a slice handed over */
  /* Jobs still in the ring belong to the ring. */
  for (uint64_t k = w->head; k < w->tail; k++) ba_writer_job_put(w, w->ring[k % RING_JOBS]);
  for (size_t i = 0; i < w->nopen; i++) {
    if (w->open[i]->cur) ba_writer_job_put(w, w->open[i]->cur);
    ba_writer_slice_free(w->open[i]);
  }
  ba_olsh_free(w->spare_olsh);
  while (w->free_jobs) {
    job_t *j = w->free_jobs;
    w->free_jobs = j->next_free;
    ba_writer_job_free(j);
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
  int r = ba_writer_finish_wait(w);
  if (r < 0 && rc == BA_OK) rc = r;
  writer_free(w);
  return rc;
}

int ba_store_writer_flush(ba_store_writer_t *w, uint64_t age_ns) {
  BA_RETURN_IF(!w, BA_ERR_INVALID);
  (void)ba_writer_finish_poll(w);
  BA_RETURN_IF(w->err < 0, w->err);
  /* Rows the oLSH buffer has held for age_ns are released (reordered among
   * themselves, as at a slice's end), so live queries see them too: the
   * reordering window is then at most the live interval. */
  uint64_t now = ba_writer_mono_ns();
  for (size_t i = 0; i < w->nopen; i++) {
    slice_t *sl = w->open[i];
    if (!sl->olsh || !sl->olsh_since || sl->failed || now - sl->olsh_since < age_ns) continue;
    int rc = ba_olsh_flush(sl->olsh, olsh_emit, sl);
    sl->olsh_since = 0;
    if (rc < 0) {
      if (w->err == 0) ba_writer_set_err(w, rc, "%s: %s", sl->name, ba_strerror(rc));
      return rc;
    }
  }
  return ba_writer_live_flush(w, age_ns);
}

void ba_store_writer_live_stats(const ba_store_writer_t *w, uint64_t *blocks, uint64_t *bytes) {
  if (blocks) *blocks = w ? w->live_blocks : 0;
  if (bytes) *bytes = w ? w->live_bytes : 0;
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
  BA_RETURN_IF(o->max_segment_rows < o->block_rows || o->max_segment_rows > BA_SEG_MAX_ROWS, BA_ERR_INVALID);
#if !BA_HAVE_OLSH
  /* src/reorder/olsh.c not built yet. */
  BA_RETURN_IF(o->reorder == BA_REORDER_OLSH, BA_ERR_UNSUPPORTED);
#endif
  return BA_OK;
}

/* Why the calling thread's last ba_store_writer_open failed. */
static _Thread_local char open_err[sizeof(((ba_store_writer_t *)0)->errmsg)];

int ba_store_writer_open(const char *dir, const ba_store_opts_t *opts, ba_store_writer_t **out) {
  open_err[0] = 0;
  BA_RETURN_IF(!dir || !out, BA_ERR_INVALID);
  *out = NULL;
  ba_store_opts_t o;
  if (opts) o = *opts;
  else ba_store_opts_init(&o);
  if (o.threads == 0) o.threads = 2;
  if (o.max_segment_rows == 0) o.max_segment_rows = BA_SEG_DEFAULT_ROWS;
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
    ba_writer_set_err(w, rc, "%s: mkdir: %s", dir, strerror(errno));
    goto fail;
  }
  w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w->dirfd < 0) {
    rc = errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
    ba_writer_set_err(w, rc, "%s: %s", dir, strerror(errno));
    goto fail;
  }
  w->lockfd = openat(w->dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (w->lockfd < 0) {
    rc = BA_ERR_IO;
    ba_writer_set_err(w, rc, "%s/.lock: %s", dir, strerror(errno));
    goto fail;
  }
  if (flock(w->lockfd, LOCK_EX | LOCK_NB) != 0) {
    rc = errno == EWOULDBLOCK ? BA_ERR_BUSY : BA_ERR_IO;
    ba_writer_set_err(w, rc, "%s: %s", dir,
                      rc == BA_ERR_BUSY ? "another writer holds it (a running bitarc collect, ingest or import)"
                                        : strerror(errno));
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
    if (pthread_create(&w->tid[i], NULL, ba_writer_worker_main, ws) != 0) {
      ba_free(ws);
      rc = BA_ERR_NOMEM;
      goto fail;
    }
    w->started++;
    ba_thread_name(w->tid[i], "bitarc-write%d", i + 1);
  }
  if ((rc = ba_writer_finish_init(w)) < 0) goto fail;
  *out = w;
  return BA_OK;
fail:
  snprintf(open_err, sizeof open_err, "%s", w->errmsg);
  writer_free(w);
  return rc;
}

const char *ba_store_writer_open_error(void) { return open_err; }
