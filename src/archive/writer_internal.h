/* Internals of the store writer (writer.c: options, slices, segments;
 * writer_groups.c: row groups on the worker threads). */
#ifndef BA_ARCHIVE_WRITER_INTERNAL_H
#define BA_ARCHIVE_WRITER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"
#include "reorder/olsh.h"

#define MAX_OPEN_SLICES 4
#define MAX_WORKERS 16
#define RING_JOBS 4

typedef struct slice slice_t;

/* A segment finish's outcome (writer_finish.c). */
typedef struct ba_writer_fin {
  int rc, err;   /* err: errno after a failed ba_seg_finish */
  int in_finish; /* rc is ba_seg_finish's (else the index builders') */
  uint64_t bytes_index;
} ba_writer_fin_t;

typedef struct job {
  slice_t *sl;
  uint32_t group, n;
  ba_record_t *recs;
  uint32_t *vals; /* index values: attribute a of row i at [a * block_rows + i] */
  uint32_t absent; /* bit a: attribute a has no value in any row (its vals not written) */
  uint8_t *frames;
  size_t nframes, cap_frames;
  ba_record_t any; /* bytewise OR of recs[0..n): columns all zero are skipped */
  ba_record_t all; /* bytewise AND of recs[0..n): with any, the fields of one value (not gathered) */
  ba_zone_t zone;  /* of recs[0..n), computed by worker 0 */
  uint8_t *out[BA_NCOLS3]; /* block header + payload; out_len 0: absent column */
  size_t out_len[BA_NCOLS3], out_cap[BA_NCOLS3];
  int rc, pending;
  /* Live flushing (ba_store_writer_flush): rows [0, live_rows) are already
   * in the journal as LIVE blocks; live_since is when the first row after
   * them was added (CLOCK_MONOTONIC ns; 0 = none waiting). */
  uint32_t live_rows;
  uint64_t live_since;
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
  uint64_t olsh_since; /* monotonic ns the oLSH buffer last became non-empty; 0: empty */
  uint64_t last_use;
  /* A group of this slice failed to be built or written: the journal may end
   * in a torn group and misses rows the slice counted, so nothing more is
   * appended and the slice is never finished; the journal is left for
   * recovery, which keeps its complete groups (doc/format.md §5). */
  int failed;
};

/* One thread's scratch (workers, and the caller when there are none). */
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
  uint64_t live_blocks, live_bytes; /* LIVE blocks written (ba_store_writer_live_stats) */
  int err;
  char errmsg[512];
  /* The finisher (writer_finish.c): fin_sl is the slice being finished
   * (NULL: none), fin_done once fin_task holds its outcome. */
  pthread_t fin_tid;
  int fin_inited, fin_started, fin_stop, fin_hold, fin_done;
  pthread_mutex_t fin_mu;
  pthread_cond_t fin_cv;
  slice_t *fin_sl;
  ba_writer_fin_t fin_task;
  _Atomic int fin_busy; /* a task was handed over and not reaped (the caller's hint) */
  uint64_t fin_rows;
};

typedef struct wstart {
  ba_store_writer_t *w;
  int wi;
} wstart_t;

/* The first error sticks (w->err); errmsg gets the detail. */
void ba_writer_set_err(ba_store_writer_t *w, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Frees a slice (its journal fd closed; its emptied oLSH buffer kept as the
 * writer's spare). The caller's thread only. */
void ba_writer_slice_free(slice_t *sl);

/* ---- finishing segments (writer_finish.c) ---- */
/* Starts the finisher thread (with worker threads; without, segments are
 * finished in the caller). */
int ba_writer_finish_init(ba_store_writer_t *w);
/* Finishes the segment of sl, whose groups are all in its journal: hands it
 * to the finisher (after waiting for the one in flight) or finishes it here.
 * Takes sl. Returns an error of this finish or of the previous one. */
int ba_writer_finish(ba_store_writer_t *w, slice_t *sl);
/* Reaps the finish in flight if it is done (no waiting) / waits for it. */
int ba_writer_finish_poll(ba_store_writer_t *w);
int ba_writer_finish_wait(ba_store_writer_t *w);
/* Ends the finisher (finishing what it holds). */
void ba_writer_finish_stop(ba_store_writer_t *w);
/* fsyncs the journal of the slice being finished, if any (its groups are
 * all written; the finish itself may still be running). */
int ba_writer_finish_fsync(ba_store_writer_t *w);
/* Rows of the segment being finished (0: none). */
uint64_t ba_writer_finish_rows(const ba_store_writer_t *w);
/* Tests: hold = 1 keeps the finisher from starting a handed-over segment
 * (its journal stays complete but unfinished) until hold = 0 or the writer
 * closes; pending tells whether one is handed over and not finished. */
void ba_writer_finish_hold(ba_store_writer_t *w, int hold);
int ba_writer_finish_pending(ba_store_writer_t *w);

/* ---- row groups (writer_groups.c) ---- */
/* A free group (recycled or new, with block_rows rows of room). */
int ba_writer_job_get(ba_store_writer_t *w, job_t **out);
void ba_writer_job_put(ba_store_writer_t *w, job_t *j);
void ba_writer_job_free(job_t *j);
/* Appends k records (k <= the room left in j) to the open group j of sl;
 * submits j when it is full. */
int ba_writer_group_add(ba_store_writer_t *w, slice_t *sl, job_t *j, const ba_record_t *recs, size_t k);
/* Numbers a full (or a slice's last) group and hands it to the workers (or,
 * without workers, builds and writes it in the caller). */
int ba_writer_submit(ba_store_writer_t *w, job_t *j);
/* Writes every group in flight, in order. */
int ba_writer_drain(ba_store_writer_t *w);
/* Writes in-flight groups and LIVE blocks so that rows added at least age_ns
 * ago are in the journals (ba_store_writer_flush). */
int ba_writer_live_flush(ba_store_writer_t *w, uint64_t age_ns);
/* ba_attr_values of the address bytes, ports, protocol, flags and IP
 * version for n records in one pass; out[a]: attribute a's values (the
 * others are not used). For tests too. */
void ba_writer_attr_values_fused(const ba_record_t *r, size_t n, uint32_t *const *out);
/* CLOCK_MONOTONIC in ns (live ages). */
uint64_t ba_writer_mono_ns(void);
/* A worker thread's body; arg: a wstart_t from ba_malloc, freed by it. */
void *ba_writer_worker_main(void *arg);

#endif
