/* Upgrading 1.0 and 2.0 segments to format 3.0 in place (doc/format.md
 * §7.5), and clustering segments (§7.9, the records fed in cluster.c's
 * order by a writer that flags the header): each old segment's records are read in row order and written by a
 * store writer into a scratch directory inside the store (DIR/.upgrade, not
 * seen by readers, emptied first: a crash leaves only scratch there), and the
 * new segment is renamed over the old one (atomic; the directory is fsynced).
 * A crash at any point leaves either the old segment or the new one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

#define SCRATCH ".upgrade"

static int unlink_one(void *ctx, int dfd, const char *name) {
  (void)ctx;
  return unlinkat(dfd, name, 0) == 0 ? BA_OK : BA_ERR_IO;
}

/* Removes every file in the scratch directory (it holds only files). */
static int scratch_clear(int dirfd) {
  int rc = ba_dir_each(dirfd, SCRATCH, unlink_one, NULL);
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
  if (strncmp(name, "seg-", 4) || !ba_name_ends_with(name, ".bitarc")) return BA_OK;
  f->found++;
  snprintf(f->name, f->cap, "%s", name);
  return BA_OK;
}

/* The new segment's name in the scratch directory (the only one). */
static int scratch_segment(int dirfd, char *name, size_t cap) {
  scratch_seg_t f = {name, cap, 0};
  int rc = ba_dir_each(dirfd, SCRATCH, find_seg, &f);
  if (rc < 0) return rc == BA_ERR_NOT_FOUND ? BA_ERR_IO : rc;
  return f.found == 1 ? BA_OK : BA_ERR_CORRUPT;
}

typedef struct upgrade_ctx {
  const char *dir;
  int threads;
  int cluster;       /* feed the records in cluster order and flag the segment (§7.9) */
  size_t mem_bytes;  /* cluster: records held at once */
  ba_cluster_note_fn note;
  void *note_ctx;
} upgrade_ctx_t;

static int upgrade_one(const upgrade_ctx_t *x, int dirfd, ba_segment_t *seg, const char *name, char *err,
                       size_t errcap) {
  const char *dir = x->dir;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (scratch_clear(dirfd) < 0) {
    snprintf(err, errcap, "%s/%s: cannot empty the scratch directory", dir, SCRATCH);
    return BA_ERR_IO;
  }
  char sdir[4096];
  snprintf(sdir, sizeof sdir, "%s/%s", dir, SCRATCH);
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
    snprintf(err, errcap, "%s: the scratch store %s: %s", name, SCRATCH, ba_strerror(rc));
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
    scratch_clear(dirfd);
    return rc;
  }
  char fresh[256];
  int sfd = openat(dirfd, SCRATCH, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  rc = sfd < 0 ? BA_ERR_IO : scratch_segment(dirfd, fresh, sizeof fresh);
  if (rc == BA_OK && (renameat(sfd, fresh, dirfd, name) != 0 || fsync(dirfd) != 0)) rc = BA_ERR_IO;
  if (sfd >= 0) close(sfd);
  if (rc < 0) snprintf(err, errcap, "%s: replacing it failed: %s", name, ba_strerror(rc));
  return rc;
}

/* Segments of the current version are left alone (1: skipped, not counted). */
static int upgrade_seg(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err, size_t errcap) {
  const upgrade_ctx_t *x = ctx;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (in.version_major > BA_SEG_MAJOR || (in.version_major == BA_SEG_MAJOR && in.version_minor >= BA_SEG_MINOR))
    return 1;
  return upgrade_one(x, dirfd, seg, name, err, errcap);
}

/* Segments already clustered are left alone (1: skipped, not counted). */
static int cluster_seg(void *ctx, int dirfd, ba_segment_t *seg, const char *name, char *err, size_t errcap) {
  const upgrade_ctx_t *x = ctx;
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  if (in.clustered) return 1;
  return upgrade_one(x, dirfd, seg, name, err, errcap);
}

static int rewrite_store(const char *dir, const upgrade_ctx_t *x, size_t *nsegs, char *errbuf, size_t errcap) {
  char dummy[8];
  if (!errbuf || errcap == 0) {
    errbuf = dummy;
    errcap = sizeof dummy;
  }
  errbuf[0] = 0;
  if (nsegs) *nsegs = 0;
  BA_RETURN_IF(!dir, BA_ERR_INVALID);
  int dirfd, lockfd;
  BA_FORWARD(ba_store_lock(dir, &dirfd, &lockfd, errbuf, errcap));
  int first = ba_store_each_segment(dir, dirfd, x->cluster ? cluster_seg : upgrade_seg, (void *)x, nsegs, errbuf,
                                    errcap);
  scratch_clear(dirfd);
  unlinkat(dirfd, SCRATCH, AT_REMOVEDIR);
  close(lockfd);
  close(dirfd);
  return first;
}

int ba_store_upgrade(const char *dir, int threads, size_t *nsegs, char *errbuf, size_t errcap) {
  upgrade_ctx_t x = {.dir = dir, .threads = threads};
  return rewrite_store(dir, &x, nsegs, errbuf, errcap);
}

int ba_store_cluster(const char *dir, int threads, size_t mem_bytes, void (*note)(void *ctx, const char *msg),
                     void *note_ctx, size_t *nsegs, char *errbuf, size_t errcap) {
  upgrade_ctx_t x = {.dir = dir, .threads = threads, .cluster = 1, .mem_bytes = mem_bytes, .note = note,
                     .note_ctx = note_ctx};
  return rewrite_store(dir, &x, nsegs, errbuf, errcap);
}
