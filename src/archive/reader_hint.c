/* Store reader, read-ahead of picked row groups. A batch of picked rows
 * (ba_segment_read_rows, ba_segment_read_fields) reads its groups' column
 * blocks one run at a time (reader_rows.c ba_rd_load_cols), first without
 * waiting (preadv2 RWF_NOWAIT: served from the page cache or not at all).
 * At the first run the page cache does not hold, the kernel is asked to
 * start reading all the needed blocks of the batch's remaining groups
 * (POSIX_FADV_WILLNEED), so that from a cold cache the disk serves them
 * together instead of one request per pread; on a warm cache no hint is
 * made (before: one fadvise call per group, about a microsecond each and a
 * page-cache walk of its bytes). */
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>

#include "archive/reader_int.h"

#ifdef RWF_NOWAIT
static int g_nowait_off; /* the kernel refused RWF_NOWAIT once: hint at once, as before */
#endif

/* The runs of blocks ba_rd_load_cols will read for columns `need` of group gi. */
static void hint_group(ba_segment_t *g, uint32_t gi, uint32_t need) {
  const ba_group_ent_t *ge = &g->groups[gi];
  uint32_t end[BA_NCOLS_MAX], hi, runs[BA_NCOLS_MAX][2];
  size_t nr = ba_rd_col_runs(ge, g->ncols, ba_rd_col_todo(g, gi, need, end, &hi), end, runs);
  for (size_t k = 0; k < nr; k++)
    (void)posix_fadvise(g->fd, (off_t)(ge->off + runs[k][0]), (off_t)(runs[k][1] - runs[k][0]), POSIX_FADV_WILLNEED);
}

/* Hints the groups of rows[0..n) (ascending) from group g0 on. */
static void hint_rows(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t need, uint64_t g0) {
  uint64_t br = g->h.block_rows;
  if (!br || !g->groups) return;
  for (size_t i = 0; i < n;) {
    uint64_t gi = rows[i] / br;
    if (gi >= g->f.ngroups) return; /* the caller names the bad row */
    if (gi >= g0) hint_group(g, (uint32_t)gi, need);
    uint64_t end = (gi + 1) * br;
    while (i < n && rows[i] < end) i++;
  }
}

void ba_rd_hint_set(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t need) {
  g->hint_rows = rows;
  g->hint_n = n;
  g->hint_need = need;
#ifdef RWF_NOWAIT
  if (!__atomic_load_n(&g_nowait_off, __ATOMIC_RELAXED)) return;
#endif
  ba_rd_hint_clear(g); /* no read without waiting: hint the whole batch now */
  hint_rows(g, rows, n, need, 0);
}

void ba_rd_hint_clear(ba_segment_t *g) {
  g->hint_rows = NULL;
  g->hint_n = 0;
}

int ba_rd_pread_run(ba_segment_t *g, uint32_t gi, uint8_t *buf, size_t len, uint64_t off) {
#ifdef RWF_NOWAIT
  if (g->hint_rows) {
    struct iovec v = {buf, len};
    ssize_t r = preadv2(g->fd, &v, 1, (off_t)off, RWF_NOWAIT);
    if (r == (ssize_t)len) return BA_OK;
    if (r < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS))
      __atomic_store_n(&g_nowait_off, 1, __ATOMIC_RELAXED);
    if (r > 0) { /* the rest is read below, waiting */
      buf += r;
      len -= (size_t)r;
      off += (uint64_t)r;
    }
    /* Not all cached (or an error the plain read reports): hint the rest
     * of the batch once. */
    const uint64_t *rows = g->hint_rows;
    size_t n = g->hint_n;
    ba_rd_hint_clear(g);
    hint_rows(g, rows, n, g->hint_need, gi);
  }
#else
  (void)gi;
#endif
  return ba_pread_full(g->fd, buf, len, off);
}
