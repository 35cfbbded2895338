/* Retention: delete a store's oldest complete segments beyond an age and a
 * size limit (nfexpire's job). Journals (*.open) are never touched; see
 * ba_store_expire in store.h for the rules beside writers and readers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

typedef struct seg_ent {
  char *name;
  uint64_t start_ns, end_ns, bytes;
  unsigned seq;
  int reason; /* 0 = kept */
} seg_ent_t;

typedef struct listing {
  seg_ent_t *v;
  size_t n, cap;
  uint64_t journals, journal_bytes;
} listing_t;

static int eerr(char *err, size_t cap, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int eerr(char *err, size_t cap, int code, const char *fmt, ...) {
  if (err && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return code;
}

void ba_expire_opts_init(ba_expire_opts_t *o) { memset(o, 0, sizeof *o); }

/* The slice end from the segment header; the start when it cannot be read
 * (a damaged segment then ages by its start). */
static uint64_t header_end(int dirfd, const char *name, uint64_t start_ns) {
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return start_ns;
  uint8_t b[BA_SEG_HDR_BYTES];
  ba_seg_hdr_t h;
  ssize_t k = pread(fd, b, sizeof b, 0);
  close(fd);
  if (k != (ssize_t)sizeof b || ba_seg_hdr_decode(b, &h) < 0 || h.end_ns < h.start_ns) return start_ns;
  return h.end_ns;
}

static int add_seg(listing_t *l, int dirfd, const char *name, uint64_t start, unsigned seq, uint64_t bytes) {
  void *p = l->v;
  BA_FORWARD(ba_grow(&p, &l->cap, l->n + 1, sizeof *l->v));
  l->v = p;
  seg_ent_t *e = &l->v[l->n];
  memset(e, 0, sizeof *e);
  BA_RETURN_IF(!(e->name = ba_malloc(strlen(name) + 1)), BA_ERR_NOMEM);
  strcpy(e->name, name);
  e->start_ns = start;
  e->seq = seq;
  e->bytes = bytes;
  e->end_ns = header_end(dirfd, name, start);
  l->n++;
  return BA_OK;
}

/* One directory entry: a complete segment is listed, a journal counted. */
static int list_one(void *ctx, int dfd, const char *name) {
  listing_t *l = ctx;
  struct stat st;
  uint64_t start;
  unsigned seq;
  int journal = ba_name_ends_with(name, ".bitarc.open");
  int seg = !journal && ba_segment_name_parse(name, &start, &seq);
  if (!journal && !seg) return BA_OK;
  /* Vanished since readdir (a writer renamed its journal): skip it. */
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return BA_OK;
  if (!journal) return add_seg(l, dfd, name, start, seq, (uint64_t)st.st_size);
  l->journals++;
  l->journal_bytes += (uint64_t)st.st_size;
  return BA_OK;
}

static int list_store(int dirfd, listing_t *l) { return ba_dir_each(dirfd, NULL, list_one, l); }

static int ent_cmp(const void *a, const void *b) {
  const seg_ent_t *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Marks what goes: every segment past the age, then the oldest until the
 * size fits. */
static void choose(listing_t *l, const ba_expire_opts_t *o, uint64_t now, ba_expire_stats_t *st) {
  uint64_t total = l->journal_bytes;
  for (size_t i = 0; i < l->n; i++) total += l->v[i].bytes;
  if (o->max_age_ns) {
    uint64_t cutoff = now > o->max_age_ns ? now - o->max_age_ns : 0;
    for (size_t i = 0; i < l->n; i++)
      if (l->v[i].end_ns <= cutoff) {
        l->v[i].reason = BA_EXPIRE_AGE;
        total -= l->v[i].bytes;
      }
  }
  if (o->max_bytes)
    for (size_t i = 0; i < l->n && total > o->max_bytes; i++)
      if (!l->v[i].reason) {
        l->v[i].reason = BA_EXPIRE_SIZE;
        total -= l->v[i].bytes;
      }
  st->bytes_after = total;
  st->size_unmet = o->max_bytes && total > o->max_bytes;
}

static int delete_chosen(int dirfd, listing_t *l, const ba_expire_opts_t *o, ba_expire_stats_t *st,
                         const char *dir, char *err, size_t errcap) {
  int rc = BA_OK;
  for (size_t i = 0; i < l->n && rc == BA_OK; i++) {
    seg_ent_t *e = &l->v[i];
    if (!e->reason) continue;
    if (!o->dry_run && unlinkat(dirfd, e->name, 0) != 0) {
      if (errno == ENOENT) continue; /* deleted by someone else meanwhile: not ours to report */
      rc = eerr(err, errcap, BA_ERR_IO, "%s/%s: cannot delete: %s", dir, e->name, strerror(errno));
      break;
    }
    st->segments_deleted++;
    st->bytes_deleted += e->bytes;
    if (o->report) {
      ba_expire_item_t it = {.name = e->name, .start_ns = e->start_ns, .end_ns = e->end_ns,
                             .bytes = e->bytes, .reason = (ba_expire_reason_t)e->reason};
      o->report(o->report_ctx, &it);
    }
  }
  if (!o->dry_run && st->segments_deleted && fsync(dirfd) != 0 && rc == BA_OK)
    rc = eerr(err, errcap, BA_ERR_IO, "%s: fsync: %s", dir, strerror(errno));
  return rc;
}

int ba_store_expire_lock(int dirfd, int wait_ms, int *lockfd) {
  *lockfd = openat(dirfd, ".expire.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (*lockfd < 0) return BA_ERR_IO;
  for (int waited = 0;; waited += 10) {
    if (flock(*lockfd, LOCK_EX | LOCK_NB) == 0) return BA_OK;
    if (errno != EWOULDBLOCK || waited >= wait_ms) break;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  int e = errno, rc = e == EWOULDBLOCK ? BA_ERR_BUSY : BA_ERR_IO;
  close(*lockfd);
  *lockfd = -1;
  errno = e;
  return rc;
}

/* The expire lock: one expire at a time per store (not the writer's lock).
 * A clustering (upgrade.c) holds it for a moment at each segment it swaps:
 * waited for, up to LOCK_WAIT_MS. */
#define LOCK_WAIT_MS 2000
static int take_lock(int dirfd, const char *dir, int *lockfd, char *err, size_t errcap) {
  int rc = ba_store_expire_lock(dirfd, LOCK_WAIT_MS, lockfd);
  if (rc == BA_ERR_BUSY) return eerr(err, errcap, rc, "%s: another expire is running on this store", dir);
  if (rc < 0) return eerr(err, errcap, rc, "%s/.expire.lock: %s", dir, strerror(errno));
  return BA_OK;
}

int ba_store_expire(const char *dir, const ba_expire_opts_t *o, ba_expire_stats_t *st, char *err,
                    size_t errcap) {
  if (err && errcap) err[0] = 0;
  if (!dir || !o || !st) return eerr(err, errcap, BA_ERR_INVALID, "expire: missing argument");
  memset(st, 0, sizeof *st);
  if (!o->max_age_ns && !o->max_bytes)
    return eerr(err, errcap, BA_ERR_INVALID, "expire: no limit given (max age or max size)");
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return eerr(err, errcap, errno == ENOENT || errno == ENOTDIR ? BA_ERR_NOT_FOUND : BA_ERR_IO,
                "%s: %s", dir, strerror(errno));
  int lockfd = -1, rc = o->dry_run ? BA_OK : take_lock(dirfd, dir, &lockfd, err, errcap);
  listing_t l = {0};
  if (rc == BA_OK && (rc = list_store(dirfd, &l)) < 0)
    eerr(err, errcap, rc, "%s: cannot list the store: %s", dir, ba_strerror(rc));
  if (rc == BA_OK) {
    if (l.n) qsort(l.v, l.n, sizeof *l.v, ent_cmp);
    st->segments = l.n;
    for (size_t i = 0; i < l.n; i++) st->bytes += l.v[i].bytes;
    st->journals = l.journals;
    st->journal_bytes = l.journal_bytes;
    choose(&l, o, o->now_ns ? o->now_ns : ba_now_ns(), st);
    rc = delete_chosen(dirfd, &l, o, st, dir, err, errcap);
  }
  for (size_t i = 0; i < l.n; i++) ba_free(l.v[i].name);
  ba_free(l.v);
  if (lockfd >= 0) close(lockfd);
  close(dirfd);
  return rc;
}
