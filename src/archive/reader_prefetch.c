/* Store reader, cold start. At open, every segment's header and footer pages
 * asked for before the first is read (ba_rd_prefetch_heads). Then what a
 * query reads first of each segment asked
 * of the kernel for all segments at once (POSIX_FADV_WILLNEED; a segment of
 * at most 1 MB whole), before the
 * query reads it one pread after another: the attribute table at the
 * footer's dir_off with the DIRENT blocks just before it (doc/format.md
 * §7.3), and for a query that reads rows the zone maps and row-group table
 * from there to the footer. From a dropped page cache the disk then serves
 * them for every segment together instead of one round trip per read; on a
 * warm cache a one-byte RWF_NOWAIT read finds the pages and no more is done.
 * And the index bitmaps a segment's plan will AND, asked for together
 * before the first is read (ba_segment_index_prefetch, src/query/plan.c). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "archive/reader_int.h"
#include "index/index.h"

/* DIRENT blocks asked for before the attribute table: those of the last
 * attributes (8 address octets, 6 KB each, and the small ones in 10 M flows). */
#define PF_DIRENT_BYTES (256u << 10)
#define PF_ATTRDIR_BYTES (4u << 10)
/* A segment this small (the hour being written) is asked for whole: its
 * index and blocks would be a few round trips more than one request of its
 * size; at most PF_SMALL_TOTAL bytes of such segments a call (a store of
 * many small segments, a broad window). */
#define PF_SMALL_SEG (1u << 20)
#define PF_SMALL_TOTAL (8u << 20)

static void willneed(int fd, uint64_t a, uint64_t b) {
  if (b > a) (void)posix_fadvise(fd, (off_t)a, (off_t)(b - a), POSIX_FADV_WILLNEED);
}

/* 1 if byte `at` of fd is not in the page cache (or this cannot be told). */
static int cold_at(int fd, uint64_t at) {
#ifdef RWF_NOWAIT
  uint8_t b;
  struct iovec v = {&b, 1};
  return preadv2(fd, &v, 1, (off_t)at, RWF_NOWAIT) != 1;
#else
  (void)fd;
  (void)at;
  return 1;
#endif
}

typedef struct heads {
  int cold; /* -1 until the first segment tells */
} heads_t;

/* One directory entry: a segment's header and footer pages asked for. */
static int head_one(void *ctx, int dfd, const char *name) {
  heads_t *h = ctx;
  if (!ba_segment_name_parse(name, NULL, NULL)) return BA_OK;
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0) return BA_OK;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    uint64_t z = (uint64_t)st.st_size;
    if (h->cold < 0) h->cold = cold_at(fd, 0);
    if (h->cold) {
      willneed(fd, 0, z < 4096 ? z : 4096);
      willneed(fd, z > 4096 ? z - 4096 : 0, z);
    }
  }
  close(fd);
  return h->cold == 0 ? 1 : BA_OK; /* warm: the rest are too, stop */
}

void ba_rd_prefetch_heads(ba_store_t *s) {
  heads_t h = {-1};
  (void)ba_dir_each(s->dirfd, NULL, head_one, &h);
}

size_t ba_store_prefetch_index(ba_store_t *s, uint64_t start_ns, uint64_t end_ns, int rows) {
  size_t n = 0;
  uint64_t small = PF_SMALL_TOTAL;
  for (size_t i = 0; s && i < s->n; i++) {
    const ba_segment_t *g = s->segs[i];
    if (g->open_rc < 0 || g->f.max_first < start_ns || g->f.min_first >= end_ns) continue;
    const ba_seg_footer_t *f = &g->f;
    uint64_t end = g->fsize - BA_SEG_FOOTER_BYTES;
    uint64_t lo = f->dir_off - f->index_off > PF_DIRENT_BYTES ? f->dir_off - PF_DIRENT_BYTES : f->index_off;
    if (g->fsize <= PF_SMALL_SEG && g->fsize <= small) {
      /* probed at the index's start: the footer page (read at open) may
       * hold the directory of so small a segment */
      if (!cold_at(g->fd, lo)) continue;
      willneed(g->fd, 0, g->fsize);
      small -= g->fsize;
      n++;
      continue;
    }
    if (!cold_at(g->fd, f->dir_off)) continue; /* in the page cache */
    uint64_t tail = f->zone_off ? f->zone_off : f->table_off;
    if (rows) {
      willneed(g->fd, lo, end);
    } else {
      willneed(g->fd, lo, f->dir_off + PF_ATTRDIR_BYTES < tail ? f->dir_off + PF_ATTRDIR_BYTES : tail);
    }
    n++;
  }
  return n;
}

int ba_segment_index_prefetch(ba_segment_t *g, const ba_attr_t *attrs, const uint32_t *values, size_t n,
                              uint64_t max_bytes, uint64_t (*ranges)[2]) {
  if (!g || (n && (!attrs || !values))) return BA_ERR_INVALID;
  int m = 0;
  for (size_t k = 0; k < n; k++) {
    ba_idx_dirent_t e;
    int rc = (unsigned)attrs[k] < BA_ATTR_COUNT ? ba_rd_find_entry(g, attrs[k], values[k], &e) : 0;
    if (rc < 0) return rc;
    if (rc == 0 || e.len == 0 || e.len > max_bytes || e.off + e.len > g->fsize || !cold_at(g->fd, e.off)) continue;
    willneed(g->fd, e.off, e.off + e.len);
    if (ranges) ranges[m][0] = e.off, ranges[m][1] = e.off + e.len;
    m++;
  }
  return m;
}
