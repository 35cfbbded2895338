/* Address-clustered segments (doc/format.md §7.9): the order in which
 * `bitarc reindex --cluster` feeds a segment's records to the store writer.
 * Each row's source and destination address become their mid-ranks among
 * the segment's rows (32 bits each), the two ranks are bit-interleaved into a
 * 64-bit Morton key, and rows go out sorted by (key, first_ns, row). The
 * records themselves are never all held: a linear scan per chunk of output
 * positions picks the rows of that chunk (memory bounded by mem_bytes). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "archive/archive.h"
#include "common/common.h"

/* An entry sorted by a stable LSD radix sort. While ranking one side: w[0]
 * and w[1] the address's 16 bytes as big-endian words, w[2] the row and, in
 * bits 32..63, the family (0 IPv4, 1 IPv6). While ordering: w[0] the key,
 * w[1] first_ns, w[2] the row. */
typedef struct e24 {
  uint64_t w[3];
} e24_t;
#define E_ROW(e) ((uint32_t)(e)->w[2])
_Static_assert(sizeof(e24_t) == 3 * sizeof(uint64_t), "ba_radix_sort sorts e24_t as three words");

/* ents[0..n) sorted by bits [lo, hi) of word w (stable; tmp: n entries). */
static void sort_by(e24_t *ents, e24_t *tmp, size_t n, unsigned w, unsigned lo, unsigned hi) {
  ba_radix_sort(&ents[0].w[0], &tmp[0].w[0], n, 3, w, lo, hi);
}

uint64_t ba_cluster_morton(uint32_t src_rank, uint32_t dst_rank) {
  uint64_t s = src_rank, d = dst_rank;
  uint64_t *v[2] = {&s, &d};
  for (int k = 0; k < 2; k++) {
    uint64_t x = *v[k];
    x = (x | x << 16) & 0x0000FFFF0000FFFFull;
    x = (x | x << 8) & 0x00FF00FF00FF00FFull;
    x = (x | x << 4) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | x << 2) & 0x3333333333333333ull;
    x = (x | x << 1) & 0x5555555555555555ull;
    *v[k] = x;
  }
  return s << 1 | d;
}

/* Same family and address. */
static int same_addr(const e24_t *x, const e24_t *y) {
  return x->w[0] == y->w[0] && x->w[1] == y->w[1] && (x->w[2] >> 32) == (y->w[2] >> 32);
}

typedef struct pass1 {
  e24_t *ents;
  uint64_t *first; /* NULL: not collected in this pass */
  uint64_t n, cap;
  int dst;
} pass1_t;

static int pass1_sink(void *ctx, const ba_record_t *recs, size_t n) {
  pass1_t *p = ctx;
  if (p->n + n > p->cap) return BA_ERR_CORRUPT; /* more rows than the segment says */
  for (size_t i = 0; i < n; i++) {
    const uint8_t *a = p->dst ? recs[i].dst : recs[i].src;
    e24_t *e = &p->ents[p->n + i];
    e->w[0] = ba_load_be64(a);
    e->w[1] = ba_load_be64(a + 8);
    e->w[2] = (uint64_t)(recs[i].ipver == 6) << 32 | (p->n + i);
    if (p->first) p->first[p->n + i] = recs[i].first_ns;
  }
  p->n += n;
  return 0;
}

/* rank[row] = the mid-rank of each row's address on one side, 32 bits. */
static int side_ranks(ba_segment_t *seg, uint64_t rows, int dst, e24_t *ents, uint64_t *first, uint32_t *rank,
                      e24_t *tmp, uint64_t *damaged) {
  pass1_t p = {ents, first, 0, rows, dst};
  BA_FORWARD(ba_segment_scan(seg, (dst ? BA_COL_DST : BA_COL_SRC) | (first ? BA_COL_FIRST : 0), pass1_sink, &p,
                             damaged));
  if (*damaged || p.n != rows) return BA_ERR_CORRUPT;
  /* by family, then hi, then lo: least significant first */
  sort_by(ents, tmp, (size_t)rows, 1, 0, 64);
  sort_by(ents, tmp, (size_t)rows, 0, 0, 64);
  sort_by(ents, tmp, (size_t)rows, 2, 32, 64);
  for (uint64_t i = 0; i < rows;) {
    uint64_t j = i + 1;
    while (j < rows && same_addr(&ents[i], &ents[j])) j++;
    uint64_t r = ((2 * i + (j - i)) << 31) / rows; /* < 2^32 unless every row is equal */
    uint32_t r32 = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    for (uint64_t k = i; k < j; k++) rank[E_ROW(&ents[k])] = r32;
    i = j;
  }
  return BA_OK;
}

int ba_cluster_positions(ba_segment_t *seg, uint64_t rows, uint32_t **pos_out) {
  *pos_out = NULL;
  BA_RETURN_IF(rows > UINT32_MAX, BA_ERR_INVALID);
  size_t n = (size_t)(rows ? rows : 1);
  e24_t *ents = ba_malloc(n * sizeof *ents);
  e24_t *tmp = ba_malloc(n * sizeof *tmp);
  uint64_t *first = ba_malloc(n * sizeof *first);
  uint32_t *rs = ba_malloc(n * sizeof *rs), *rd = ba_malloc(n * sizeof *rd);
  uint64_t damaged = 0;
  int rc = ents && tmp && first && rs && rd ? BA_OK : BA_ERR_NOMEM;
  if (rc == BA_OK) rc = side_ranks(seg, rows, 0, ents, first, rs, tmp, &damaged);
  if (rc == BA_OK) rc = side_ranks(seg, rows, 1, ents, NULL, rd, tmp, &damaged);
  if (rc == BA_OK) {
    for (uint64_t r = 0; r < rows; r++) ents[r] = (e24_t){{ba_cluster_morton(rs[r], rd[r]), first[r], r}};
    /* by key, then first time, then row (the entries start in row order; stable) */
    sort_by(ents, tmp, (size_t)rows, 1, 0, 64);
    sort_by(ents, tmp, (size_t)rows, 0, 0, 64);
    for (uint64_t i = 0; i < rows; i++) rs[E_ROW(&ents[i])] = (uint32_t)i; /* rs becomes pos */
  }
  ba_free(ents);
  ba_free(tmp);
  ba_free(first);
  ba_free(rd);
  if (rc < 0) {
    ba_free(rs);
    return rc;
  }
  *pos_out = rs;
  return BA_OK;
}

/* ---------- feeding the records in key order, chunk by chunk ---------- */

typedef struct pass2 {
  const uint32_t *pos;
  uint64_t row, rows, lo, hi; /* the scan's next row; the chunk [lo, hi) of positions */
  ba_record_t *buf;
  uint8_t *frames;
  size_t flen, fcap;
} pass2_t;

static int pass2_sink(void *ctx, const ba_record_t *recs, size_t n) {
  pass2_t *p = ctx;
  if (p->row + n > p->rows) return BA_ERR_CORRUPT;
  for (size_t i = 0; i < n; i++) {
    uint32_t q = p->pos[p->row + i];
    if (q < p->lo || q >= p->hi) continue;
    ba_record_t *d = &p->buf[q - p->lo];
    *d = recs[i];
    if (recs[i].frame && recs[i].caplen) {
      BA_FORWARD(ba_grow((void **)&p->frames, &p->fcap, p->flen + recs[i].caplen, 1));
      memcpy(p->frames + p->flen, recs[i].frame, recs[i].caplen);
      d->frame = (const uint8_t *)(uintptr_t)(p->flen + 1); /* an offset + 1 until the scan ends */
      p->flen += recs[i].caplen;
    } else {
      d->frame = NULL;
    }
  }
  p->row += n;
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int ba_cluster_feed(ba_segment_t *seg, size_t mem_bytes, ba_record_sink_fn fn, void *ctx, ba_cluster_note_fn note,
                    void *nctx) {
  ba_segment_info_t in;
  BA_FORWARD(ba_segment_info(seg, &in));
  char msg[256];
  double t0 = now_s();
  uint32_t *pos = NULL;
  BA_FORWARD(ba_cluster_positions(seg, in.rows, &pos));
  if (!mem_bytes) mem_bytes = BA_CLUSTER_DEFAULT_MEM;
  uint64_t chunk = BA_MAX((uint64_t)mem_bytes / sizeof(ba_record_t), (uint64_t)4096);
  chunk = BA_MIN(chunk, BA_MAX(in.rows, (uint64_t)1));
  uint64_t nchunks = (in.rows + chunk - 1) / chunk;
  if (note) {
    snprintf(msg, sizeof msg, "%s: %" PRIu64 " rows ordered in %.1f s; writing in %" PRIu64 " pass%s", in.name,
             in.rows, now_s() - t0, nchunks, nchunks == 1 ? "" : "es");
    note(nctx, msg);
  }
  pass2_t p = {.pos = pos, .rows = in.rows};
  int rc = (p.buf = ba_malloc((size_t)chunk * sizeof *p.buf)) ? BA_OK : BA_ERR_NOMEM;
  for (uint64_t lo = 0; rc == BA_OK && lo < in.rows; lo += chunk) {
    p.lo = lo;
    p.hi = BA_MIN(lo + chunk, in.rows);
    p.row = 0;
    p.flen = 0;
    uint64_t damaged = 0;
    rc = ba_segment_scan(seg, BA_COL_ALL, pass2_sink, &p, &damaged);
    if (rc == BA_OK && (damaged || p.row != in.rows)) rc = BA_ERR_CORRUPT;
    for (uint64_t i = 0; rc == BA_OK && i < p.hi - lo; i++)
      if (p.buf[i].frame) p.buf[i].frame = p.frames + ((uintptr_t)p.buf[i].frame - 1);
    for (uint64_t i = 0; rc == BA_OK && i < p.hi - lo; i += 4096)
      rc = fn(ctx, p.buf + i, (size_t)BA_MIN((uint64_t)4096, p.hi - lo - i));
    if (rc == BA_OK && note && nchunks > 1) {
      snprintf(msg, sizeof msg, "%s: pass %" PRIu64 "/%" PRIu64 " done, %.1f s", in.name, lo / chunk + 1, nchunks,
               now_s() - t0);
      note(nctx, msg);
    }
  }
  ba_free(p.buf);
  ba_free(p.frames);
  ba_free(pos);
  return rc;
}
