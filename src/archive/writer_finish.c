/* Finishing segments off the append path: once a slice's row groups are all
 * in its journal, the index bitmaps are serialized and the segment finished
 * (ba_seg_finish: index, TABLE, footer, fsync, rename, directory fsync) by
 * one finisher thread, while the caller goes on appending to other slices or
 * to the next segment of the same slice.
 *
 * Bounded: at most one segment is being finished; handing over the next one
 * first waits for it. Its memory (the closed slice's online index builders,
 * at most max_segment_rows rows, and its group table) is freed by the
 * finisher as soon as the segment is written; ba_writer_finish_rows tells
 * the rows in flight. So the writer holds at most its open slices' indexes
 * plus one finishing segment's.
 *
 * Crash safety is that of a finish in the caller: the finisher performs the
 * same steps on the same journal in the same order (doc/format.md §5), after
 * every group of the slice is in the journal; the caller meanwhile writes
 * only to other journals, whose names are taken after this one's
 * (slice_open skips names with a journal or segment), so a crash at any
 * point leaves journals that recovery finishes as before. Segments are
 * finished one at a time in hand-over order, so they still appear in the
 * order the slices were closed. ba_store_writer_sync does not wait for a
 * finish: it fsyncs the finishing slice's journal (all of its groups are
 * written), which recovery would finish after a crash.
 *
 * Only the caller's thread touches the writer's error, stats and open slices (the
 * finisher owns the slice it finishes, whose fd the caller may fsync); the
 * finisher reports through the task, which the caller reaps (poll, wait). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "archive/writer_internal.h"
#include "common/common.h"

/* The finish itself (either thread): index bitmaps, then the segment's tail.
 * The slice's builders are freed here (their memory is the bulk of it). */
static void finish_run(ba_store_writer_t *w, slice_t *sl, ba_writer_fin_t *t) {
  ba_idx_attr_t attrs[BA_ATTR_COUNT];
  memset(attrs, 0, sizeof attrs);
  int rc = BA_OK;
  /* Rare ports fold into their bins as the port builders finish (their
   * bitmaps never built where the builder can tell); the bin attributes'
   * own builders hold nothing (ba_attr_values). As ba_seg_finish's fold. */
  for (int a = 0; a < BA_ATTR_COUNT && rc == BA_OK; a++) {
    if (a == BA_ATTR_SRC_PORT_BIN || a == BA_ATTR_DST_PORT_BIN) continue;
    if (a == BA_ATTR_SRC_PORT || a == BA_ATTR_DST_PORT)
      rc = ba_idx_online_finish_fold(sl->idx[a], sl->rows >> BA_PORT_FOLD_SHIFT, ba_port_bin, &attrs[a],
                                     &attrs[a == BA_ATTR_SRC_PORT ? BA_ATTR_SRC_PORT_BIN : BA_ATTR_DST_PORT_BIN]);
    else
      rc = ba_idx_online_finish(sl->idx[a], &attrs[a]);
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++) {
    ba_idx_online_free(sl->idx[a]);
    sl->idx[a] = NULL;
  }
  t->in_finish = rc == BA_OK;
  t->bytes_index = 0;
  t->err = 0;
  if (rc == BA_OK) {
    ba_seg_finish_t f = {.fd = sl->fd, .dirfd = w->dirfd, .open_name = sl->open_name,
                         .final_name = sl->name, .end = sl->off, .groups = sl->groups,
                         .ngroups = (uint32_t)sl->ngroups, .ncols = BA_NCOLS3, .rows = sl->rows,
                         .min_first = sl->min_first, .max_first = sl->max_first,
                         .kinds = sl->kinds, .attrs = attrs, .folded = 1};
    rc = ba_seg_finish(&f);
    t->err = rc < 0 ? errno : 0;
    t->bytes_index = f.bytes_index;
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++) ba_idx_attr_clear(&attrs[a]);
  t->rc = rc;
}

/* The caller's side of a finished task: stats, error, the slice freed. */
static int finish_reap(ba_store_writer_t *w, slice_t *sl, const ba_writer_fin_t *t) {
  if (t->rc == BA_OK) {
    w->st.segments_written++;
    w->st.bytes_index += t->bytes_index;
    w->st.records_stored += sl->rows;
  } else if (t->in_finish) {
    ba_writer_set_err(w, t->rc, "%s: finishing segment: %s (%s)", sl->name, ba_strerror(t->rc), strerror(t->err));
  } else if (w->err == 0) {
    ba_writer_set_err(w, t->rc, "%s: closing slice: %s", sl->name, ba_strerror(t->rc));
  }
  int rc = t->rc;
  ba_writer_slice_free(sl);
  return rc;
}

static void *finisher_main(void *arg) {
  ba_store_writer_t *w = arg;
  pthread_mutex_lock(&w->fin_mu);
  for (;;) {
    while ((!w->fin_sl || w->fin_done || w->fin_hold) && !w->fin_stop) pthread_cond_wait(&w->fin_cv, &w->fin_mu);
    if (w->fin_stop && (!w->fin_sl || w->fin_done)) break;
    if (w->fin_stop && w->fin_hold) w->fin_hold = 0; /* closing: never left unfinished */
    slice_t *sl = w->fin_sl;
    pthread_mutex_unlock(&w->fin_mu);
    ba_writer_fin_t t;
    finish_run(w, sl, &t);
    pthread_mutex_lock(&w->fin_mu);
    w->fin_task = t;
    w->fin_done = 1;
    pthread_cond_broadcast(&w->fin_cv);
  }
  pthread_mutex_unlock(&w->fin_mu);
  return NULL;
}

int ba_writer_finish_init(ba_store_writer_t *w) {
  pthread_mutex_init(&w->fin_mu, NULL);
  pthread_cond_init(&w->fin_cv, NULL);
  w->fin_inited = 1;
  if (w->nw == 0) return BA_OK; /* threads <= 1: finished in the caller */
  if (pthread_create(&w->fin_tid, NULL, finisher_main, w) != 0) return BA_ERR_NOMEM;
  w->fin_started = 1;
  ba_thread_name(w->fin_tid, "bitarc-finish");
  return BA_OK;
}

/* Reaps the task in flight: waits for it when `block`, else only if done. */
static int finish_collect(ba_store_writer_t *w, int block) {
  if (!w->fin_inited) return BA_OK;
  pthread_mutex_lock(&w->fin_mu);
  if (!w->fin_sl || (!block && !w->fin_done)) {
    pthread_mutex_unlock(&w->fin_mu);
    return BA_OK;
  }
  while (!w->fin_done) pthread_cond_wait(&w->fin_cv, &w->fin_mu);
  slice_t *sl = w->fin_sl;
  ba_writer_fin_t t = w->fin_task;
  w->fin_sl = NULL;
  w->fin_done = 0;
  pthread_mutex_unlock(&w->fin_mu);
  atomic_store_explicit(&w->fin_busy, 0, memory_order_relaxed);
  w->fin_rows = 0;
  return finish_reap(w, sl, &t);
}

int ba_writer_finish_wait(ba_store_writer_t *w) { return finish_collect(w, 1); }

int ba_writer_finish_poll(ba_store_writer_t *w) {
  if (!atomic_load_explicit(&w->fin_busy, memory_order_relaxed)) return BA_OK;
  return finish_collect(w, 0);
}

int ba_writer_finish(ba_store_writer_t *w, slice_t *sl) {
  if (!w->fin_started) {
    ba_writer_fin_t t;
    finish_run(w, sl, &t);
    return finish_reap(w, sl, &t);
  }
  int rc = finish_collect(w, 1); /* at most one in flight */
  w->fin_rows = sl->rows;
  pthread_mutex_lock(&w->fin_mu);
  w->fin_sl = sl;
  w->fin_done = 0;
  pthread_cond_broadcast(&w->fin_cv);
  pthread_mutex_unlock(&w->fin_mu);
  atomic_store_explicit(&w->fin_busy, 1, memory_order_relaxed);
  return rc;
}

void ba_writer_finish_stop(ba_store_writer_t *w) {
  if (!w->fin_inited) return;
  if (w->fin_started) {
    pthread_mutex_lock(&w->fin_mu);
    w->fin_stop = 1;
    pthread_cond_broadcast(&w->fin_cv);
    pthread_mutex_unlock(&w->fin_mu);
    pthread_join(w->fin_tid, NULL);
    w->fin_started = 0;
  }
  (void)finish_collect(w, 1); /* a task the thread finished, not reaped yet */
  pthread_mutex_destroy(&w->fin_mu);
  pthread_cond_destroy(&w->fin_cv);
  w->fin_inited = 0;
}

void ba_writer_finish_hold(ba_store_writer_t *w, int hold) {
  if (!w || !w->fin_inited) return;
  pthread_mutex_lock(&w->fin_mu);
  w->fin_hold = hold;
  pthread_cond_broadcast(&w->fin_cv);
  pthread_mutex_unlock(&w->fin_mu);
}

int ba_writer_finish_fsync(ba_store_writer_t *w) {
  BA_FORWARD(ba_writer_finish_poll(w));
  if (w->err < 0) return w->err;
  if (!w->fin_inited) return BA_OK;
  /* fin_sl is set and cleared by this (the caller's) thread only, and its fd
   * stays open until the caller reaps it. */
  pthread_mutex_lock(&w->fin_mu);
  slice_t *sl = w->fin_sl;
  pthread_mutex_unlock(&w->fin_mu);
  if (sl && fsync(sl->fd) != 0) {
    ba_writer_set_err(w, BA_ERR_IO, "%s: fsync: %s", sl->open_name, strerror(errno));
    return BA_ERR_IO;
  }
  return BA_OK;
}

uint64_t ba_writer_finish_rows(const ba_store_writer_t *w) { return w ? w->fin_rows : 0; }

int ba_writer_finish_pending(ba_store_writer_t *w) {
  if (!w || !w->fin_inited) return 0;
  pthread_mutex_lock(&w->fin_mu);
  int p = w->fin_sl != NULL && !w->fin_done;
  pthread_mutex_unlock(&w->fin_mu);
  return p;
}
