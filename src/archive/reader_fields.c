/* Store reader, column vectors (late materialization for aggregates): the
 * asked fields of the asked rows, one vector per field and row group, no
 * record built. 3.0: only those fields are decoded (col3.c
 * ba_col3_field_values); 1.0/2.0: the group's records decoded
 * (ba_rd_decode_group) and the fields taken from them. */
#include <string.h>

#include "archive/col3.h"
#include "archive/reader_int.h"
#include "common/common.h"

enum { C_FIRST = 0, C_LAST = 1 }; /* column ids (col3.c) */

int ba_record_field_ok(size_t off) {
  int c, k;
  unsigned w;
  return ba_col3_field_at(off, &c, &k, &w) == 0 && c != BA_COLID_FRAME;
}

int ba_record_field_info(size_t off, unsigned *width, int *word) {
  int c, k;
  if (ba_col3_field_at(off, &c, &k, width) < 0 || c == BA_COLID_FRAME) return -1;
  *word = (off >= offsetof(ba_record_t, src) && off < offsetof(ba_record_t, packets)) ||
          (off >= offsetof(ba_record_t, next_hop) && off < offsetof(ba_record_t, mpls));
  return 0;
}

uint64_t ba_record_field_get(const ba_record_t *r, size_t off) {
  unsigned w;
  int word;
  if (ba_record_field_info(off, &w, &word) < 0) return 0;
  return ba_record_field_value(r, off, w, word);
}

typedef struct fplan {
  size_t nf;             /* asked fields, then first_ns and kind if not asked */
  int col[BA_FIELDS_MAX + 2], k[BA_FIELDS_MAX + 2];
  uint16_t off[BA_FIELDS_MAX + 2];
  unsigned width[BA_FIELDS_MAX + 2]; /* 1.0/2.0: read from records (ba_record_field_value) */
  int word[BA_FIELDS_MAX + 2];
  int ifirst, ikind;     /* their vectors */
  uint32_t ids, cols;    /* column ids (3.0) and ba_col_t bits */
} fplan_t;

static int make_plan(const uint16_t *fields, size_t nf, fplan_t *p) {
  BA_RETURN_IF(nf > BA_FIELDS_MAX || (nf && !fields), BA_ERR_INVALID);
  memset(p, 0, sizeof *p);
  p->ifirst = p->ikind = -1;
  for (size_t f = 0; f < nf + 2; f++) {
    size_t off = f < nf ? fields[f] : f == nf ? offsetof(ba_record_t, first_ns) : offsetof(ba_record_t, kind);
    if (f == nf && p->ifirst >= 0) continue;
    if (f == nf + 1 && p->ikind >= 0) continue;
    unsigned w;
    size_t i = p->nf;
    BA_RETURN_IF(ba_col3_field_at(off, &p->col[i], &p->k[i], &w) < 0 || p->col[i] == BA_COLID_FRAME,
                 BA_ERR_INVALID);
    p->off[i] = (uint16_t)off;
    BA_FORWARD(ba_record_field_info(off, &p->width[i], &p->word[i]));
    if (off == offsetof(ba_record_t, first_ns) && p->ifirst < 0) p->ifirst = (int)i;
    if (off == offsetof(ba_record_t, kind) && p->ikind < 0) p->ikind = (int)i;
    p->ids |= 1u << p->col[i];
    p->cols |= ba_col_bit(p->col[i]);
    p->nf++;
  }
  return BA_OK;
}

/* 3.0: the fields of rows idx[0..m) (NULL: all n) of group gi into v. */
static int group3(ba_segment_t *g, uint32_t gi, const fplan_t *p, const uint32_t *idx, size_t m, uint64_t *v) {
  const ba_group_ent_t *ge = &g->groups[gi];
  size_t br = g->h.block_rows, n = ge->rows;
  int bad = 0, rc = ba_rd_load_cols(g, gi, p->ids, &bad);
  if (rc < 0) return ba_rd_col_damaged(g, gi, bad, rc);
  for (size_t f = 0; f < p->nf; f++) {
    const colcache_t *cc = &g->cache[p->col[f]];
    rc = ba_col3_field_values(p->col[f], p->k[f], cc->data, cc->len, n, idx, m, v + f * br);
    if (rc < 0) return ba_rd_col_damaged(g, gi, p->col[f], rc);
  }
  const uint64_t *kind = v + (size_t)p->ikind * br, *first = v + (size_t)p->ifirst * br;
  for (size_t j = 0; j < m; j++)
    if (kind[j] != BA_REC_FLOW && kind[j] != BA_REC_PACKET) return ba_rd_col_damaged(g, gi, BA_COLID_META, BA_ERR_CORRUPT);
  for (size_t f = 0; f < p->nf; f++)
    if (p->col[f] == C_LAST) /* stored as the duration */
      for (size_t j = 0; j < m; j++) v[f * br + j] += first[j];
  return BA_OK;
}

/* 1.0/2.0: the group's records, then the fields of rows idx[0..m). */
static int group_recs(ba_segment_t *g, uint32_t gi, const fplan_t *p, const uint32_t *idx, size_t m, uint64_t *v) {
  uint32_t mask = 0, need = ba_rd_cols_needed(g, p->cols, &mask);
  BA_FORWARD(ba_rd_decode_group(g, gi, need, mask));
  size_t br = g->h.block_rows;
  for (size_t f = 0; f < p->nf; f++)
    for (size_t j = 0; j < m; j++)
      v[f * br + j] = ba_record_field_value(&g->recs[idx ? idx[j] : j], p->off[f], p->width[f], p->word[f]);
  return BA_OK;
}

static int read_fields_batch(ba_segment_t *g, const uint64_t *rows, size_t n, const uint16_t *fields, size_t nf,
                             ba_field_sink_fn fn, void *ctx, uint64_t *damaged) {
  fplan_t p;
  BA_FORWARD(make_plan(fields, nf, &p));
  if (damaged) *damaged = 0;
  BA_FORWARD(ba_rd_load_table(g));
  uint64_t br = g->h.block_rows, bad = 0;
  BA_RETURN_IF(br == 0, BA_ERR_CORRUPT);
  for (size_t i = 0; i < n; i++) BA_RETURN_IF(rows[i] >= g->f.rows || (i && rows[i] <= rows[i - 1]), BA_ERR_INVALID);
  if (rows && g->h.major >= 3) ba_rd_hint_set(g, rows, n, p.ids);
  if (g->fldv_n < p.nf) { /* the plan's vectors, then the row list (uint32) */
    ba_free(g->fldv);
    g->fldv_n = 0;
    g->fldv = ba_malloc((size_t)br * (p.nf * sizeof *g->fldv + sizeof(uint32_t)));
    BA_RETURN_IF(!g->fldv, BA_ERR_NOMEM);
    g->fldv_n = p.nf;
  }
  uint64_t *v = g->fldv;
  uint32_t *pick = (uint32_t *)(g->fldv + g->fldv_n * br);
  const uint64_t *vals[BA_FIELDS_MAX];
  for (size_t f = 0; f < nf; f++) vals[f] = v + f * br; /* the asked fields come first in the plan */
  int first_err = BA_OK;
  size_t i = 0;
  uint32_t gi = 0;
  while (rows ? i < n : gi < g->f.ngroups) {
    size_t j = i;
    if (rows) {
      gi = (uint32_t)(rows[i] / br);
      uint64_t end = ((uint64_t)gi + 1) * br;
      while (j < n && rows[j] < end) j++;
    }
    size_t m = rows ? j - i : g->groups[gi].rows;
    const uint32_t *idx = NULL;
    if (rows && m != g->groups[gi].rows) {
      uint64_t base = (uint64_t)gi * br;
      for (size_t x = i; x < j; x++) pick[x - i] = (uint32_t)(rows[x] - base);
      idx = pick;
    }
    int rc = g->h.major >= 3 ? group3(g, gi, &p, idx, m, v) : group_recs(g, gi, &p, idx, m, v);
    if (rc == BA_ERR_NOMEM || rc == BA_ERR_INVALID) return rc;
    if (rc < 0) {
      bad += m;
      if (first_err == BA_OK) first_err = rc;
    } else if (m) {
      int r = fn(ctx, vals, m);
      if (r) return r;
    }
    if (rows) i = j;
    else gi++;
  }
  if (damaged) *damaged = bad;
  else if (first_err < 0) return first_err;
  return BA_OK;
}

/* read_fields_batch; the batch's read-ahead (ba_rd_hint_set) ends with it. */
int ba_segment_read_fields(ba_segment_t *g, const uint64_t *rows, size_t n, const uint16_t *fields, size_t nf,
                           ba_field_sink_fn fn, void *ctx, uint64_t *damaged) {
  BA_RETURN_IF(!g || !fn || (n && !rows) || (rows && !n), BA_ERR_INVALID);
  int rc = read_fields_batch(g, rows, n, fields, nf, fn, ctx, damaged);
  ba_rd_hint_clear(g);
  return rc;
}
