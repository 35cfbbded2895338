/* Upgrading 1.0 and 2.0 segments to format 3.0 in place (doc/format.md
 * §7.5), and clustering segments (§7.9, the records fed in cluster.c's
 * order by a writer that flags the header): each old segment's records are
 * read in row order and written by a store writer into a scratch directory
 * inside the store (not seen by readers, emptied first: a crash leaves only
 * scratch there), and the new segment is renamed over the old one (atomic;
 * the directory is fsynced). A crash at any point leaves either the old
 * segment or the new one.
 *
 * The upgrade takes the writer lock (DIR/.lock) and uses DIR/.upgrade.
 * Clustering runs beside a writer (a collector): it rewrites only complete
 * segments (a writer's open slices are journals, *.open, never listed), takes
 * DIR/.cluster.lock (one clustering at a time; the writer-locked rewrites,
 * upgrade and reindex, take it too) and uses DIR/.cluster. Each swap happens
 * under the expire lock (expire.c) and only if the name still holds the file
 * that was read, so a segment expired (and perhaps written anew under its
 * name) meanwhile is never brought back or overwritten. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/reader_int.h"
#include "common/common.h"

#define SCRATCH_UPGRADE ".upgrade"
#define SCRATCH_CLUSTER ".cluster"
#define EXPIRE_WAIT_MS 30000 /* a swap waits this long for a running expire */

static int unlink_one(void *ctx, int dfd, const char *name) {
  (void)ctx;
  return unlinkat(dfd, name, 0) == 0 ? BA_OK : BA_ERR_IO;
}

/* Removes every file in the scratch directory (it holds only files). */
static int scratch_clear(int dirfd, const char *scratch) {
  int rc = ba_dir_each(dirfd, scratch, unlink_one, NULL);
  return rc == BA_ERR_NOT_FOUND ? BA_OK : rc;
}

typedef struct up_sink {
  ba_store_writer_t *w;
  uint64_t rows;
} up_sink_t;

static int up_append(void *ctx, const ba_record_t *recs, size_t n) {
  up_sink_t *u = ctx;
  u->rows += n;
  return ba_store_writer_append(u->w, recs, n);
}

typedef struct scratch_seg {
  char *name;
  size_t cap;
  int found;
} scratch_seg_t;

static int find_seg(void *ctx, int dfd, const char *name) {
  scratch_seg_t *f = ctx;
  (void)dfd;
  if (!ba_segment_name_parse(name, NULL, NULL)) return BA_OK;
  f->found++;
  snprintf(f->name, f->cap, "%s", name);
  return BA_OK;
}

/* The new segment's name in the scratch directory (the only one). */
static int scratch_segment(int dirfd, const char *scratch, char *name, size_t cap) {
  scratch_seg_t f = {name, cap, 0};
  int rc = ba_dir_each(dirfd, scratch, find_seg, &f);
  if (rc < 0) return rc == BA_ERR_NOT_FOUND ? BA_ERR_IO : rc;
  return f.found == 1 ? BA_OK : BA_ERR_CORRUPT;
}

typedef struct upgrade_ctx {
  const char *dir;
  const char *scratch; /* SCRATCH_UPGRADE or SCRATCH_CLUSTER */
  int threads;
  int cluster;         /* feed the records in cluster order and flag the segment (§7.9) */
  size_t mem_bytes;    /* cluster: records held at once */
  const char *only;    /* cluster: this segment only (NULL: every one) */
  size_t changed;      /* segments deleted or replaced while they were rewritten (left alone) */
  ba_cluster_note_fn note;
  void *note_ctx;
} upgrade_ctx_t;

/* Renames the scratch segment `fresh` over `name` if `name` is still the
 * file seg was read from (same inode), under the expire lock: 1 when it was
 * not (deleted, or replaced meanwhile: the scratch segment is dropped). */
static int swap_guarded(int dirfd, int sfd, const char *fresh, const char *name, const ba_segment_t *seg) {
  int lockfd;
  BA_FORWARD(ba_store_expire_lock(dirfd, EXPIRE_WAIT_MS, &lockfd));
  struct stat was, now;
  int rc = BA_OK;
  if (fstat(seg->fd, &was) != 0) rc = BA_ERR_IO;
  else if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0) rc = errno == ENOENT ? 1 : BA_ERR_IO;
  else if (now.st_dev != was.st_dev || now.st_ino != was.st_ino) rc = 1;
  if (rc == BA_OK && renameat(sfd, fresh, dirfd, name) != 0) rc = BA_ERR_IO;
  close(lockfd);
  if (rc == 1) unlinkat(sfd, fresh, 0);
  return rc;
}

static int upgrade_one(upgrade_ctx_t *x, int dirfd, ba_segment_t *seg, const char *name, char *err,
                       size_t errcap) {
  const char *dir = x->dir;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (scratch_clear(dirfd, x->scratch) < 0) {
    snprintf(err, errcap, "%s/%s: cannot empty the scratch directory", dir, x->scratch);
    return BA_ERR_IO;
  }
  char sdir[4096];
  snprintf(sdir, sizeof sdir, "%s/%s", dir, x->scratch);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.codec = in.codec;
  o.block_rows = in.block_rows;
  o.max_segment_rows = BA_SEG_MAX_ROWS; /* one segment in, one out: it is renamed over the old one */
  o.time_bin_seconds = in.time_bin_seconds;
  o.slice_seconds = (uint32_t)((in.end_ns - in.start_ns) / 1000000000ull);
  o.threads = x->threads;
  o.clustered = x->cluster; /* the header says so; no TIME_BIN (format.md §7.9) */
  up_sink_t u = {0};
  int rc = ba_store_writer_open(sdir, &o, &u.w);
  if (rc < 0) {
    snprintf(err, errcap, "%s: the scratch store %s: %s", name, x->scratch, ba_strerror(rc));
    return rc;
  }
  uint64_t damaged = 0;
  if (x->cluster) rc = ba_cluster_feed(seg, x->mem_bytes, up_append, &u, x->note, x->note_ctx);
  else rc = ba_segment_scan(seg, BA_COL_ALL, up_append, &u, &damaged);
  int rc2 = ba_store_writer_close(u.w);
  if (rc == BA_OK) rc = rc2;
  if (rc == BA_OK && (damaged || u.rows != in.rows)) rc = BA_ERR_CORRUPT;
  if (rc < 0) {
    snprintf(err, errcap, "%s: %s%s", name, ba_strerror(rc), damaged ? " (damaged blocks: left as it is)" : "");
    scratch_clear(dirfd, x->scratch);
    return rc;
  }
  char fresh[256];
  int sfd = openat(dirfd, x->scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  rc = sfd < 0 ? BA_ERR_IO : scratch_segment(dirfd, x->scratch, fresh, sizeof fresh);
  if (rc == BA_OK) {
    /* Beside a writer (clustering): only over the very file read, never over one expired meanwhile. */
    if (x->cluster) rc = swap_guarded(dirfd, sfd, fresh, name, seg);
    else if (renameat(sfd, fresh, dirfd, name) != 0) rc = BA_ERR_IO;
  }
  if (rc == BA_OK && fsync(dirfd) != 0) rc = BA_ERR_IO;
  if (sfd >= 0) close(sfd);
  if (rc == 1) {
    x->changed++;
    if (x->note) {
      char msg[320];
      snprintf(msg, sizeof msg, "%s: deleted or replaced meanwhile (expired?); left as it is", name);
      x->note(x->note_ctx, msg);
    }
  }
  if (rc < 0) snprintf(err, errcap, "%s: replacing it failed: %s", name, ba_strerror(rc));
  return rc;
}

/* Segments of the current version are left alone (1: skipped, not counted). */
static int upgrade_seg(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err, size_t errcap) {
  upgrade_ctx_t *x = ctx;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (in.version_major > BA_SEG_MAJOR || (in.version_major == BA_SEG_MAJOR && in.version_minor >= BA_SEG_MINOR))
    return 1;
  return upgrade_one(x, dirfd, seg, name, err, errcap);
}

/* Segments already clustered are left alone (1: skipped, not counted). */
static int cluster_seg(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err, size_t errcap) {
  upgrade_ctx_t *x = ctx;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (in.clustered) return 1;
  return upgrade_one(x, dirfd, seg, name, err, errcap);
}

/* x->only alone (a damaged segment elsewhere in the store is none of its
 * business); BA_ERR_NOT_FOUND if the store has no such segment. */
static int cluster_only(const char *dir, int dirfd, upgrade_ctx_t *x, size_t *nsegs, char *errbuf, size_t errcap) {
  ba_store_t *s = NULL;
  int rc = ba_store_open(dir, &s);
  if (rc < 0) {
    snprintf(errbuf, errcap, "%s: %s", dir, ba_strerror(rc));
    return rc;
  }
  size_t i = 0, n = ba_store_segment_count(s);
  while (i < n && strcmp(ba_store_segment_name(s, i), x->only)) i++;
  ba_segment_t *seg;
  if (i == n) {
    snprintf(errbuf, errcap, "%s: no segment '%s'", dir, x->only);
    rc = BA_ERR_NOT_FOUND;
  } else if ((rc = ba_store_segment(s, i, &seg)) < 0) {
    snprintf(errbuf, errcap, "%s", ba_store_errmsg(s));
  } else {
    rc = cluster_seg(x, dirfd, seg, x->only, errbuf, errcap);
    ba_segment_release(seg);
    if (rc == BA_OK && nsegs) (*nsegs)++;
  }
  ba_store_close(s);
  return rc < 0 ? rc : BA_OK;
}

int ba_store_cluster_lock(int dirfd, int *lockfd) {
  *lockfd = openat(dirfd, ".cluster.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (*lockfd < 0) return BA_ERR_IO;
  if (flock(*lockfd, LOCK_EX | LOCK_NB) == 0) return BA_OK;
  int rc = errno == EWOULDBLOCK ? BA_ERR_BUSY : BA_ERR_IO;
  close(*lockfd);
  *lockfd = -1;
  return rc;
}

/* The locks of x's kind of rewrite: *wlockfd the writer lock (upgrade; -1
 * when clustering), *clockfd the cluster lock (both). */
static int rewrite_locks(const char *dir, const upgrade_ctx_t *x, int *dirfd, int *wlockfd, int *clockfd,
                         char *errbuf, size_t errcap) {
  *wlockfd = *clockfd = -1;
  if (!x->cluster) {
    BA_FORWARD(ba_store_lock(dir, dirfd, wlockfd, errbuf, errcap));
  } else if ((*dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    snprintf(errbuf, errcap, "%s: %s", dir, strerror(errno));
    return errno == ENOENT || errno == ENOTDIR ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  }
  int rc = ba_store_cluster_lock(*dirfd, clockfd);
  if (rc < 0) {
    snprintf(errbuf, errcap, "%s: %s", dir,
             rc == BA_ERR_BUSY ? "a clustering (reindex --cluster, collect --cluster) is running on it"
                               : "cannot open .cluster.lock");
    if (*wlockfd >= 0) close(*wlockfd);
    close(*dirfd);
  }
  return rc;
}

static int rewrite_store(const char *dir, upgrade_ctx_t *x, size_t *nsegs, char *errbuf, size_t errcap) {
  char dummy[8];
  if (!errbuf || errcap == 0) {
    errbuf = dummy;
    errcap = sizeof dummy;
  }
  errbuf[0] = 0;
  if (nsegs) *nsegs = 0;
  BA_RETURN_IF(!dir, BA_ERR_INVALID);
  int dirfd, wlockfd, clockfd;
  BA_FORWARD(rewrite_locks(dir, x, &dirfd, &wlockfd, &clockfd, errbuf, errcap));
  int first = x->only ? cluster_only(dir, dirfd, x, nsegs, errbuf, errcap)
                      : ba_store_each_segment(dir, dirfd, x->cluster ? cluster_seg : upgrade_seg, x, nsegs, errbuf,
                                              errcap);
  scratch_clear(dirfd, x->scratch);
  unlinkat(dirfd, x->scratch, AT_REMOVEDIR);
  close(clockfd);
  if (wlockfd >= 0) close(wlockfd);
  close(dirfd);
  return first;
}

int ba_store_upgrade(const char *dir, int threads, size_t *nsegs, char *errbuf, size_t errcap) {
  upgrade_ctx_t x = {.dir = dir, .scratch = SCRATCH_UPGRADE, .threads = threads};
  return rewrite_store(dir, &x, nsegs, errbuf, errcap);
}

int ba_store_cluster(const char *dir, int threads, size_t mem_bytes, void (*note)(void *ctx, const char *msg),
                     void *note_ctx, size_t *nsegs, char *errbuf, size_t errcap) {
  upgrade_ctx_t x = {.dir = dir, .scratch = SCRATCH_CLUSTER, .threads = threads, .cluster = 1,
                     .mem_bytes = mem_bytes, .note = note, .note_ctx = note_ctx};
  return rewrite_store(dir, &x, nsegs, errbuf, errcap);
}

int ba_store_cluster_segment(const char *dir, const char *name, int threads, size_t mem_bytes,
                             void (*note)(void *ctx, const char *msg), void *note_ctx, char *errbuf, size_t errcap) {
  BA_RETURN_IF(!name, BA_ERR_INVALID);
  upgrade_ctx_t x = {.dir = dir, .scratch = SCRATCH_CLUSTER, .threads = threads, .cluster = 1,
                     .mem_bytes = mem_bytes, .only = name, .note = note, .note_ctx = note_ctx};
  size_t n = 0;
  int rc = rewrite_store(dir, &x, &n, errbuf, errcap);
  return rc < 0 ? rc : n == 1 ? BA_OK : 1;
}

int ba_store_cluster_scratch_clear(const char *dir) {
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), lockfd;
  if (dirfd < 0) return errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  int rc = ba_store_cluster_lock(dirfd, &lockfd);
  if (rc == BA_OK) {
    rc = scratch_clear(dirfd, SCRATCH_CLUSTER);
    unlinkat(dirfd, SCRATCH_CLUSTER, AT_REMOVEDIR);
    close(lockfd);
  }
  close(dirfd);
  return rc;
}
