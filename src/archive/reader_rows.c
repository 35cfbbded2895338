/* Store reader, row groups: the needed column blocks of a group read with
 * few preads (load_cols), checked, and the requested rows decoded (3.0: only
 * those rows, pick_rows; 1.0/2.0: the whole group, decode_group). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/col3.h"
#include "archive/reader_int.h"
#include "common/common.h"

/* Checks a column block's header against the table: column c of group gi. */
static int col_hdr_ok(const ba_segment_t *g, uint32_t gi, int c, const ba_blk_hdr_t *h) {
  const ba_group_ent_t *ge = &g->groups[gi];
  BA_RETURN_IF(h->type != BA_BLK_COLUMN || h->col != c || h->group != gi || h->rows != ge->rows, BA_ERR_CORRUPT);
  uint64_t fixed = ba_col_raw_min(g->h.major, c, ge->rows);
  uint64_t maxraw = ba_col_raw_max(g->h.major, c, ge->rows,
                                   c == BA_COLID_FRAME ? (size_t)ge->rows * BA_MAX_CAPLEN : 0);
  BA_RETURN_IF(h->raw_len < fixed || h->raw_len > maxraw, BA_ERR_CORRUPT);
  return BA_OK;
}

/* The payload src[0..h->comp_len) (CRC-checked) of a checked header into
 * cc: kept in place when uncompressed (cc->data = src), else decompressed
 * into cc->raw. */
static int col_payload(const ba_blk_hdr_t *h, const uint8_t *src, int in_place, colcache_t *cc) {
  if (in_place && h->compress == BA_COMPRESS_NONE) {
    cc->data = src;
    cc->len = h->raw_len;
    return BA_OK;
  }
  if (cc->cap < (size_t)h->raw_len + 1) {
    void *p = cc->raw;
    BA_FORWARD(ba_grow(&p, &cc->cap, (size_t)h->raw_len + 1, 1));
    cc->raw = p;
  }
  BA_FORWARD(ba_decompress_block((ba_compress_t)h->compress, src, h->comp_len, cc->raw, h->raw_len));
  cc->data = cc->raw;
  cc->len = h->raw_len;
  return BA_OK;
}

int ba_rd_read_col_block(ba_segment_t *g, uint32_t gi, int c, colcache_t *cc) {
  const ba_group_ent_t *ge = &g->groups[gi];
  cc->in_gbuf = 0;
  cc->data = NULL;
  if (ge->col_off[c] == 0) { /* absent (load_table allows it in 3.0 only) */
    cc->len = 0;
    return BA_OK;
  }
  ba_blk_hdr_t h;
  uint64_t gend = ge->off + ge->len;
  BA_FORWARD(ba_blk_read(g->fd, ge->off + ge->col_off[c], gend, &h, &g->cbuf, &g->ccap));
  BA_FORWARD(col_hdr_ok(g, gi, c, &h));
  return col_payload(&h, g->cbuf, 0, cc);
}

/* End (relative to the group) of the block of present column c: where the
 * next present column's block starts, or the group's end. The table gives
 * it; the block's own header decides what is read from it (col_from_gbuf). */
uint32_t ba_rd_col_end(const ba_group_ent_t *ge, unsigned ncols, unsigned c) {
  for (unsigned d = c + 1; d < ncols; d++)
    if (ge->col_off[d]) return ge->col_off[d];
  return ge->len;
}

/* Column c of group gi from the group buffer, where [off, end) was read:
 * the same checks as read_col_block, then the payload's CRC. */
static int col_from_gbuf(ba_segment_t *g, uint32_t gi, int c, uint32_t end, colcache_t *cc) {
  uint32_t off = g->groups[gi].col_off[c];
  ba_blk_hdr_t h;
  BA_FORWARD(ba_blk_hdr_decode(g->gbuf + off, &h));
  BA_RETURN_IF(h.comp_len > end - off - BA_BLK_HDR_BYTES, BA_ERR_TRUNCATED);
  const uint8_t *p = g->gbuf + off + BA_BLK_HDR_BYTES;
  BA_RETURN_IF(ba_crc32c(0, p, h.comp_len) != h.payload_crc, BA_ERR_CHECKSUM);
  BA_FORWARD(col_hdr_ok(g, gi, c, &h));
  BA_FORWARD(col_payload(&h, p, 1, cc));
  cc->in_gbuf = cc->data != cc->raw;
  return BA_OK;
}

uint32_t ba_rd_col_todo(const ba_segment_t *g, uint32_t gi, uint32_t need, uint32_t *end, uint32_t *hi) {
  const ba_group_ent_t *ge = &g->groups[gi];
  uint32_t todo = 0;
  *hi = 0;
  for (unsigned c = 0; c < g->ncols; c++) {
    if (!(need & (1u << c)) || g->cache[c].group == (int64_t)gi) continue;
    end[c] = ba_rd_col_end(ge, g->ncols, c);
    if (ge->col_off[c] && end[c] > ge->col_off[c] && end[c] - ge->col_off[c] >= BA_BLK_HDR_BYTES) {
      todo |= 1u << c;
      *hi = BA_MAX(*hi, end[c]);
    }
  }
  return todo;
}

/* In file order (ids ascending = offsets ascending in a well-formed group;
 * a block out of order starts a run of its own). */
size_t ba_rd_col_runs(const ba_group_ent_t *ge, unsigned ncols, uint32_t todo, const uint32_t *end,
                      uint32_t runs[][2]) {
  size_t nr = 0;
  for (unsigned c = 0; c < ncols; c++) {
    if (!(todo & (1u << c))) continue;
    if (nr && ge->col_off[c] >= runs[nr - 1][1] && ge->col_off[c] - runs[nr - 1][1] <= BA_RD_READ_GAP) {
      runs[nr - 1][1] = BA_MAX(runs[nr - 1][1], end[c]);
      continue;
    }
    runs[nr][0] = ge->col_off[c];
    runs[nr][1] = end[c];
    nr++;
  }
  return nr;
}

/* Loads the columns `need` (column ids) of group gi into the cache, reading
 * runs of neighbouring blocks with one pread each (header and payload
 * together) instead of two preads per block. *bad gets the first column
 * that failed (its error is returned). */
int ba_rd_load_cols(ba_segment_t *g, uint32_t gi, uint32_t need, int *bad) {
  const ba_group_ent_t *ge = &g->groups[gi];
  uint32_t end[BA_NCOLS_MAX], hi;
  uint32_t todo = ba_rd_col_todo(g, gi, need, end, &hi);
  if (todo) {
    /* The buffer is about to be overwritten: no cached column may point
     * into it any more. */
    for (unsigned c = 0; c < g->ncols; c++)
      if (g->cache[c].in_gbuf && g->cache[c].group != (int64_t)gi) g->cache[c].group = -1;
    if (g->gcap < hi) {
      /* Columns of this group already in the buffer move with it. */
      size_t at[BA_NCOLS_MAX];
      for (unsigned c = 0; c < g->ncols; c++)
        if (g->cache[c].in_gbuf) at[c] = (size_t)(g->cache[c].data - g->gbuf);
      void *p = g->gbuf;
      BA_FORWARD(ba_grow(&p, &g->gcap, hi, 1));
      g->gbuf = p;
      for (unsigned c = 0; c < g->ncols; c++)
        if (g->cache[c].in_gbuf) g->cache[c].data = g->gbuf + at[c];
    }
    uint32_t runs[BA_NCOLS_MAX][2];
    size_t nr = ba_rd_col_runs(ge, g->ncols, todo, end, runs);
    for (size_t k = 0; k < nr; k++) {
      uint32_t rs = runs[k][0], re = runs[k][1];
      if (ba_rd_pread_run(g, gi, g->gbuf + rs, re - rs, ge->off + rs) < 0) /* each block of the run is read alone below */
        for (unsigned d = 0; d < g->ncols; d++)
          if ((todo & (1u << d)) && ge->col_off[d] >= rs && end[d] <= re) todo &= ~(1u << d);
    }
  }
  for (unsigned c = 0; c < g->ncols; c++) {
    colcache_t *cc = &g->cache[c];
    if (!(need & (1u << c)) || cc->group == (int64_t)gi) {
      if ((need & (1u << c)) && cc->rc < 0) {
        *bad = (int)c;
        return cc->rc;
      }
      continue;
    }
    cc->group = gi;
    cc->in_gbuf = 0;
    cc->rc = (todo & (1u << c)) ? col_from_gbuf(g, gi, (int)c, end[c], cc) : ba_rd_read_col_block(g, gi, (int)c, cc);
    if (cc->rc < 0) {
      *bad = (int)c;
      return cc->rc;
    }
  }
  return BA_OK;
}

int ba_rd_col_damaged(ba_segment_t *g, uint32_t gi, int c, int rc) {
  const ba_group_ent_t *ge = &g->groups[gi];
  g->cache[c].group = gi;
  g->cache[c].rc = rc;
  ba_rd_serr(g->store, "%s: block %u column %d (offset %llu): %s", g->name, gi, c,
       (unsigned long long)(ge->off + ge->col_off[c]), ba_strerror(rc));
  return rc;
}

/* Column ids (bit c = column c) holding the fields of ba_col_t mask cols,
 * plus META and the columns they are stored relative to. */
uint32_t ba_rd_cols_needed(const ba_segment_t *g, uint32_t cols, uint32_t *asked) {
  uint32_t ids = 1u << BA_COLID_META;
  for (unsigned c = 0; c < g->ncols; c++)
    if (cols & ba_col_bit((int)c)) ids |= 1u << c;
  *asked = ids;
  for (unsigned c = 0; c < g->ncols; c++)
    if (ids & (1u << c)) ids |= ba_col_deps(g->h.major, (int)c);
  return ids;
}

/* Decodes the columns `mask` (column ids, with META) of group gi into
 * g->recs; fields of other columns are zero. On damage returns the error
 * and names the block in the store's errmsg. */
int ba_rd_decode_group(ba_segment_t *g, uint32_t gi, uint32_t need, uint32_t mask) {
  if (g->recs_group == (int64_t)gi && g->recs_mask == mask) return BA_OK;
  g->recs_group = -1;
  const ba_group_ent_t *ge = &g->groups[gi];
  if (!g->recs) {
    g->recs = ba_calloc(g->h.block_rows, sizeof *g->recs);
    BA_RETURN_IF(!g->recs, BA_ERR_NOMEM);
    g->recs_dirty = 0;
  }
  /* Only what an earlier group left behind is cleared: records are large
   * (every extended field) and most columns are rewritten below. */
  for (unsigned c = 0; c < g->ncols; c++)
    if ((g->recs_dirty & ~need) & (1u << c)) ba_col_clear((int)c, g->recs, g->h.block_rows);
  g->recs_dirty |= need;
  int bad = 0, rc = ba_rd_load_cols(g, gi, need, &bad);
  if (rc < 0) return ba_rd_col_damaged(g, gi, bad, rc);
  for (unsigned c = 0; c < g->ncols; c++) {
    if (!(need & (1u << c))) continue;
    rc = ba_col_decode(g->h.major, (int)c, g->cache[c].data, g->cache[c].len, ge->rows, g->recs);
    if (rc < 0) return ba_rd_col_damaged(g, gi, (int)c, rc);
  }
  for (unsigned c = 0; c < g->ncols; c++)
    if ((need & ~mask) & (1u << c)) ba_col_clear((int)c, g->recs, ge->rows); /* unasked */
  g->recs_dirty = mask;
  g->recs_group = gi;
  g->recs_mask = mask;
  return BA_OK;
}

static int deliver(ba_segment_t *g, uint32_t gi, const uint64_t *rows, size_t n,
                   ba_record_sink_fn fn, void *ctx) {
  uint64_t base = (uint64_t)gi * g->h.block_rows;
  ba_record_t batch[64];
  size_t k = 0;
  size_t total = rows ? n : g->groups[gi].rows;
  for (size_t i = 0; i < total; i++) {
    size_t idx = rows ? (size_t)(rows[i] - base) : i;
    batch[k++] = g->recs[idx];
    if (k == BA_ARRAY_LEN(batch)) {
      int r = fn(ctx, batch, k);
      if (r) return r;
      k = 0;
    }
  }
  if (k) return fn(ctx, batch, k);
  return 0;
}

/* 3.0: the requested rows of group gi, decoded value by value from each
 * needed column (late materialization: no other row is decoded). All of the
 * group's rows in one call: a column's readers walk the group once (DELTA
 * sums and PDICT escapes run forward from the group's first row). */
static int pick_rows(ba_segment_t *g, uint32_t gi, const uint64_t *rows, size_t n, uint32_t need,
                     uint32_t mask, ba_record_sink_fn fn, void *ctx, int *damaged) {
  const ba_group_ent_t *ge = &g->groups[gi];
  uint64_t base = (uint64_t)gi * g->h.block_rows;
  *damaged = 0;
  BA_RETURN_IF(n > g->h.block_rows, BA_ERR_INVALID);
  if (!g->pick) {
    g->pick = ba_malloc((size_t)g->h.block_rows * sizeof *g->pick);
    g->pick_idx = ba_malloc((size_t)g->h.block_rows * sizeof *g->pick_idx);
    if (!g->pick || !g->pick_idx) {
      ba_free(g->pick);
      ba_free(g->pick_idx);
      g->pick = NULL;
      g->pick_idx = NULL;
      return BA_ERR_NOMEM;
    }
  }
  ba_record_t *batch = g->pick;
  uint32_t *idx = g->pick_idx;
  int bad = 0, lrc = ba_rd_load_cols(g, gi, need, &bad);
  if (lrc < 0) {
    *damaged = 1;
    return ba_rd_col_damaged(g, gi, bad, lrc);
  }
  memset(batch, 0, n * sizeof *batch);
  for (size_t j = 0; j < n; j++) idx[j] = (uint32_t)(rows[j] - base);
  for (unsigned c = 0; c < g->ncols; c++) {
    if (!(need & (1u << c))) continue; /* len 0: an absent column (ba_col3_decode_rows) */
    if (g->cache[c].len == 0 && c != BA_COLID_META && ba_col3_absent_is_zero((int)c)) continue; /* zeroed */
    int rc = ba_col_decode_rows(g->h.major, (int)c, g->cache[c].data, g->cache[c].len, ge->rows, idx, n, batch);
    if (rc < 0) {
      *damaged = 1;
      return ba_rd_col_damaged(g, gi, (int)c, rc);
    }
  }
  for (unsigned c = 0; c < g->ncols; c++)
    if ((need & ~mask) & (1u << c)) ba_col_clear((int)c, batch, n); /* unasked */
  return fn(ctx, batch, n);
}

static int read_groups_batch(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t cols,
                             ba_record_sink_fn fn, void *ctx, uint64_t *damaged) {
  BA_RETURN_IF(!g || !fn, BA_ERR_INVALID);
  if (damaged) *damaged = 0;
  BA_FORWARD(ba_rd_load_table(g));
  uint32_t mask = 0, need = ba_rd_cols_needed(g, cols, &mask);
  uint64_t br = g->h.block_rows, bad = 0;
  int first_err = BA_OK;
  if (rows) {
    for (size_t i = 0; i < n; i++)
      BA_RETURN_IF(rows[i] >= g->f.rows || (i && rows[i] <= rows[i - 1]), BA_ERR_INVALID);
  }
  if (rows) ba_rd_hint_set(g, rows, n, need);
  size_t i = 0;
  uint32_t gi = 0;
  while (rows ? i < n : gi < g->f.ngroups) {
    if (rows) gi = (uint32_t)(rows[i] / br);
    size_t j = i;
    if (rows)
      while (j < n && rows[j] / br == gi) j++;
    int rc, r = 0;
    if (rows && g->h.major >= 3) {
      int dmg = 0;
      r = pick_rows(g, gi, rows + i, j - i, need, mask, fn, ctx, &dmg);
      rc = dmg ? r : BA_OK;
      if (dmg) r = 0;
    } else {
      rc = ba_rd_decode_group(g, gi, need, mask);
      if (rc == BA_OK) r = deliver(g, gi, rows ? rows + i : NULL, j - i, fn, ctx);
    }
    if (rc < 0) {
      bad += rows ? (j - i) : g->groups[gi].rows;
      if (first_err == BA_OK) first_err = rc;
    } else if (r) {
      return r;
    }
    if (rows) i = j;
    else gi++;
  }
  if (damaged) *damaged = bad;
  else if (first_err < 0) return first_err;
  return BA_OK;
}

/* read_groups_batch; the batch's read-ahead (ba_rd_hint_set) ends with it. */
static int read_groups(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t cols,
                       ba_record_sink_fn fn, void *ctx, uint64_t *damaged) {
  int rc = read_groups_batch(g, rows, n, cols, fn, ctx, damaged);
  if (g) ba_rd_hint_clear(g);
  return rc;
}

int ba_segment_read_rows(ba_segment_t *g, const uint64_t *rows, size_t n, uint32_t cols,
                         ba_record_sink_fn fn, void *ctx, uint64_t *damaged) {
  BA_RETURN_IF(n && !rows, BA_ERR_INVALID);
  if (n == 0) {
    if (damaged) *damaged = 0;
    return BA_OK;
  }
  return read_groups(g, rows, n, cols, fn, ctx, damaged);
}

int ba_segment_scan(ba_segment_t *g, uint32_t cols, ba_record_sink_fn fn, void *ctx,
                    uint64_t *damaged) {
  return read_groups(g, NULL, 0, cols, fn, ctx, damaged);
}
