/* Store reader, sums per start-time bin (bitarc graph): the rows' first,
 * packets and bytes columns read straight into per-bin sums, no record built
 * (late materialization down to three columns). 3.0: a group whose every row
 * is asked for is decoded whole (ba_if_decode, one pass per column), others
 * value by value (ba_if_get_rows); 1.0/2.0: the group's records decoded
 * (ba_rd_decode_group) and the three fields taken from them. */
#include <string.h>

#include "archive/intfield.h"
#include "archive/reader_int.h"
#include "common/common.h"

enum { C_FIRST = 0, C_PACKETS = 10, C_BYTES = 11 }; /* column ids (3.0, col3.c) */

/* Adds row values (first, packets, bytes; k each) to the bins. Rows come
 * mostly in start-time order: the bin of the previous row is tried before a
 * division. */
static uint64_t add_bins(const ba_bin_sums_t *b, const uint64_t *first, const uint64_t *pk, const uint64_t *by,
                         size_t k) {
  uint64_t added = 0, span = (uint64_t)b->nbins * b->bin_ns; /* no overflow: checked by the caller */
  uint64_t lo = 1, hi = 0; /* the current bin's [lo, hi) offsets: none yet */
  uint64_t *s = b->sums;
  for (size_t i = 0; i < k; i++) {
    uint64_t off = first[i] - b->start_ns;
    if (first[i] < b->start_ns || off >= span) continue;
    if (off < lo || off >= hi) {
      uint64_t bin = off / b->bin_ns;
      lo = bin * b->bin_ns;
      hi = lo + b->bin_ns;
      s = b->sums + 3 * (size_t)bin;
    }
    s[0]++;
    s[1] += pk[i];
    s[2] += by[i];
    added++;
  }
  return added;
}

/* Rows of a group asked for at or above n / SPARSE_DIV: the whole field is
 * decoded (a sequential pass) rather than value by value (ba_if_get_rows,
 * whose cursor costs more per value; measured on bench/graph's store:
 * `proto tcp`, 70 % of the rows in every group, spent 55 % of its time
 * there). */
#define SPARSE_DIV 8

/* One 3.0 column's values of the group's rows idx[0..k) (NULL: all n rows)
 * into v. Absent column (len 0): zeros. */
static int col_values(const colcache_t *cc, size_t n, const uint32_t *idx, size_t k, uint64_t *v) {
  if (cc->len == 0) {
    memset(v, 0, k * sizeof *v);
    return BA_OK;
  }
  size_t used = 0;
  if (!idx || k >= n / SPARSE_DIV) {
    /* Every row, or many: one pass over the field, then the rows asked for
     * moved down in place (idx ascending, so idx[j] >= j). */
    BA_FORWARD(ba_if_decode(cc->data, cc->len, n, 8, 0, v, &used));
    BA_RETURN_IF(used != cc->len, BA_ERR_CORRUPT);
    if (idx)
      for (size_t j = 0; j < k; j++) v[j] = v[idx[j]];
    return BA_OK;
  }
  ba_if_reader_t rd;
  BA_FORWARD(ba_if_open(cc->data, cc->len, n, 8, &rd, &used));
  BA_RETURN_IF(used != cc->len, BA_ERR_CORRUPT);
  return ba_if_get_rows(&rd, idx, k, v);
}

/* 3.0: rows idx[0..k) of group gi (idx NULL: every row). */
static int sum_group3(ba_segment_t *g, uint32_t gi, const uint32_t *idx, size_t k, const ba_bin_sums_t *b,
                      uint64_t *added) {
  const ba_group_ent_t *ge = &g->groups[gi];
  static const int cols[3] = {C_FIRST, C_PACKETS, C_BYTES};
  int bad = 0, rc = ba_rd_load_cols(g, gi, 1u << C_FIRST | 1u << C_PACKETS | 1u << C_BYTES, &bad);
  if (rc < 0) return ba_rd_col_damaged(g, gi, bad, rc);
  size_t br = g->h.block_rows;
  for (int c = 0; c < 3; c++) {
    rc = col_values(&g->cache[cols[c]], ge->rows, idx, idx ? k : ge->rows, g->sumv + (size_t)c * br);
    if (rc < 0) return ba_rd_col_damaged(g, gi, cols[c], rc);
  }
  *added += add_bins(b, g->sumv, g->sumv + br, g->sumv + 2 * br, idx ? k : ge->rows);
  return BA_OK;
}

/* 1.0/2.0: the group's records, then rows idx[0..k) (NULL: every row). */
static int sum_group_recs(ba_segment_t *g, uint32_t gi, const uint32_t *idx, size_t k, const ba_bin_sums_t *b,
                          uint64_t *added) {
  uint32_t mask = 0, need = ba_rd_cols_needed(g, BA_COL_FIRST | BA_COL_PACKETS | BA_COL_BYTES, &mask);
  BA_FORWARD(ba_rd_decode_group(g, gi, need, mask));
  size_t m = idx ? k : g->groups[gi].rows, br = g->h.block_rows;
  for (size_t i = 0; i < m; i++) {
    const ba_record_t *r = &g->recs[idx ? idx[i] : i];
    g->sumv[i] = r->first_ns;
    g->sumv[br + i] = r->packets;
    g->sumv[2 * br + i] = r->bytes;
  }
  *added += add_bins(b, g->sumv, g->sumv + br, g->sumv + 2 * br, m);
  return BA_OK;
}

/* rows[0..n) (ascending), or (rows NULL) every row of groups [g0, g1). */
static int sum_impl(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t g0, uint32_t g1,
                    const ba_bin_sums_t *b, uint64_t *summed, uint64_t *damaged) {
  BA_RETURN_IF(!g || !b || (n && !rows) || b->bin_ns == 0 || (b->nbins && !b->sums), BA_ERR_INVALID);
  BA_RETURN_IF(b->nbins > SIZE_MAX / 3 || (uint64_t)b->nbins > UINT64_MAX / b->bin_ns, BA_ERR_INVALID);
  if (summed) *summed = 0;
  if (damaged) *damaged = 0;
  BA_FORWARD(ba_rd_load_table(g));
  uint64_t br = g->h.block_rows, added = 0, bad = 0;
  BA_RETURN_IF(br == 0, BA_ERR_CORRUPT);
  if (rows) {
    for (size_t i = 0; i < n; i++)
      BA_RETURN_IF(rows[i] >= g->f.rows || (i && rows[i] <= rows[i - 1]), BA_ERR_INVALID);
  } else {
    BA_RETURN_IF(g0 > g1 || g1 > g->f.ngroups, BA_ERR_INVALID);
  }
  if (!g->sumv) { /* three values per row, then the row list (uint32) */
    g->sumv = ba_malloc((size_t)br * (3 * sizeof *g->sumv + sizeof(uint32_t)));
    BA_RETURN_IF(!g->sumv, BA_ERR_NOMEM);
  }
  uint32_t *pick = (uint32_t *)(g->sumv + 3 * br);
  int first_err = BA_OK;
  size_t i = 0;
  uint32_t gi = g0;
  while (rows ? i < n : gi < g1) {
    size_t j = i;
    if (rows) { /* the group's rows: compared with its end, no division per row */
      gi = (uint32_t)(rows[i] / br);
      uint64_t end = ((uint64_t)gi + 1) * br;
      while (j < n && rows[j] < end) j++;
    }
    /* Every row of the group asked for: no row list (a whole-group decode). */
    const uint32_t *idx = NULL;
    if (rows && j - i != g->groups[gi].rows) {
      uint64_t base = (uint64_t)gi * br;
      for (size_t x = i; x < j; x++) pick[x - i] = (uint32_t)(rows[x] - base);
      idx = pick;
    }
    int rc = g->h.major >= 3 ? sum_group3(g, gi, idx, j - i, b, &added)
                             : sum_group_recs(g, gi, idx, j - i, b, &added);
    if (rc == BA_ERR_NOMEM || rc == BA_ERR_INVALID) return rc;
    if (rc < 0) {
      bad += rows ? (j - i) : g->groups[gi].rows;
      if (first_err == BA_OK) first_err = rc;
    }
    if (rows) i = j;
    else gi++;
  }
  if (summed) *summed = added;
  if (damaged) *damaged = bad;
  else if (first_err < 0) return first_err;
  return BA_OK;
}

int ba_segment_sum_bins(ba_segment_t *g, const uint64_t *rows, size_t n, const ba_bin_sums_t *b,
                        uint64_t *summed, uint64_t *damaged) {
  BA_RETURN_IF(!g || (rows && !n), BA_ERR_INVALID);
  if (!rows) {
    BA_FORWARD(ba_rd_load_table(g));
    return sum_impl(g, NULL, 0, 0, g->f.ngroups, b, summed, damaged);
  }
  return sum_impl(g, rows, n, 0, 0, b, summed, damaged);
}

int ba_segment_sum_groups(ba_segment_t *g, uint32_t g0, uint32_t g1, const ba_bin_sums_t *b, uint64_t *summed,
                          uint64_t *damaged) {
  return sum_impl(g, NULL, 0, g0, g1, b, summed, damaged);
}

int ba_segment_sum_group(ba_segment_t *g, uint32_t gi, const uint32_t *idx, size_t k, const ba_bin_sums_t *b,
                         uint64_t *summed, uint64_t *damaged) {
  BA_RETURN_IF(!g || !b || (k && !idx) || (idx && !k) || b->bin_ns == 0 || (b->nbins && !b->sums), BA_ERR_INVALID);
  BA_RETURN_IF(b->nbins > SIZE_MAX / 3 || (uint64_t)b->nbins > UINT64_MAX / b->bin_ns, BA_ERR_INVALID);
  if (summed) *summed = 0;
  if (damaged) *damaged = 0;
  BA_FORWARD(ba_rd_load_table(g));
  BA_RETURN_IF(gi >= g->f.ngroups || g->h.block_rows == 0, BA_ERR_INVALID);
  uint32_t rows = g->groups[gi].rows;
  BA_RETURN_IF(k > rows, BA_ERR_INVALID);
  for (size_t j = 0; j < k; j++) BA_RETURN_IF(idx[j] >= rows || (j && idx[j] <= idx[j - 1]), BA_ERR_INVALID);
  if (!g->sumv) {
    g->sumv = ba_malloc((size_t)g->h.block_rows * (3 * sizeof *g->sumv + sizeof(uint32_t)));
    BA_RETURN_IF(!g->sumv, BA_ERR_NOMEM);
  }
  if (k == rows) idx = NULL; /* every row: decoded whole */
  uint64_t added = 0;
  int rc = g->h.major >= 3 ? sum_group3(g, gi, idx, k, b, &added) : sum_group_recs(g, gi, idx, k, b, &added);
  if (rc == BA_ERR_NOMEM || rc == BA_ERR_INVALID) return rc;
  if (summed) *summed = added;
  if (rc < 0) {
    if (!damaged) return rc;
    *damaged = idx ? k : rows;
  }
  return BA_OK;
}
