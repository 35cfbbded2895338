/* Store reader, read-ahead of picked row groups: before the groups holding
 * a query's candidate rows are read one pread at a time (reader_rows.c
 * ba_rd_load_cols), the kernel is asked to start reading all of their
 * needed column blocks (POSIX_FADV_WILLNEED), so that from a cold page cache
 * the disk serves them together instead of one request per pread. On a warm
 * cache a hint costs a page-cache lookup (about a microsecond a run). */
#include <fcntl.h>

#include "archive/reader_int.h"

/* The runs of blocks ba_rd_load_cols will read for columns `need` of group gi. */
static void hint_group(ba_segment_t *g, uint32_t gi, uint32_t need) {
  const ba_group_ent_t *ge = &g->groups[gi];
  uint32_t end[BA_NCOLS_MAX], hi, runs[BA_NCOLS_MAX][2];
  size_t nr = ba_rd_col_runs(ge, g->ncols, ba_rd_col_todo(g, gi, need, end, &hi), end, runs);
  for (size_t k = 0; k < nr; k++)
    (void)posix_fadvise(g->fd, (off_t)(ge->off + runs[k][0]), (off_t)(runs[k][1] - runs[k][0]), POSIX_FADV_WILLNEED);
}

void ba_rd_hint_rows(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t need) {
  uint64_t br = g->h.block_rows;
  if (!br || !g->groups) return;
  for (size_t i = 0; i < n;) {
    uint64_t gi = rows[i] / br;
    if (gi >= g->f.ngroups) return; /* the caller names the bad row */
    hint_group(g, (uint32_t)gi, need);
    uint64_t end = (gi + 1) * br;
    while (i < n && rows[i] < end) i++;
  }
}
