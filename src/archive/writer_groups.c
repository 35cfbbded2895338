/* Row groups of the store writer: the caller fills the open group of a
 * slice (records, frames, index values), full groups are built on worker
 * threads (bitmap index appends and column blocks) and appended in order to
 * the slice's journal (doc/format.md §5).
 *
 * Threads: with opts.threads = N >= 2 there are N workers. Worker w owns the
 * index attributes a with a % N == w and the columns c with c % N == w; every
 * worker takes the row groups in submission order, so each attribute's
 * bitmaps see rows in order. The caller copies records into the open group,
 * submits full groups to a ring and writes finished groups (in order) when it
 * needs a free slot. With N <= 1 everything runs in the caller. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "archive/col3.h"
#include "archive/writer_internal.h"
#include "common/common.h"

/* The IPv6 attributes: BA_IDX_NONE in every row that is not IPv6
 * (ba_attr_values). */
#define V6_ATTRS                                                                              \
  ((UINT32_C(1) << BA_ATTR_SRC_V6NET) | (UINT32_C(1) << BA_ATTR_DST_V6NET) |                   \
   (UINT32_C(1) << BA_ATTR_SRC_V6HOST) | (UINT32_C(1) << BA_ATTR_DST_V6HOST))
/* The port bins: filled at the segment finish from the rare ports (§7.4),
 * no value in any row when added (ba_attr_values): added as absent. */
#define BIN_ATTRS ((UINT32_C(1) << BA_ATTR_SRC_PORT_BIN) | (UINT32_C(1) << BA_ATTR_DST_PORT_BIN))
/* What ba_writer_attr_values_fused takes in one pass over the records. */
#define FUSED_ATTRS                                                                                          \
  ((UINT32_C(0xff) << BA_ATTR_SRC_IP0) | (UINT32_C(1) << BA_ATTR_SRC_PORT) | (UINT32_C(1) << BA_ATTR_DST_PORT) | \
   (UINT32_C(1) << BA_ATTR_PROTO) | (UINT32_C(1) << BA_ATTR_TCP_FLAGS) | (UINT32_C(1) << BA_ATTR_IPVER))
_Static_assert(BA_ATTR_SRC_IP0 == 0 && BA_ATTR_DST_IP3 == 7, "the address bytes are attributes 0..7");
_Static_assert(BA_ATTR_COUNT <= 32, "attributes fit a 32-bit mask");
_Static_assert(BA_IDX_NONE == UINT32_MAX, "0xff bytes are BA_IDX_NONE");

void ba_writer_job_free(job_t *j) {
  if (!j) return;
  ba_free(j->recs);
  ba_free(j->vals);
  ba_free(j->frames);
  for (int c = 0; c < BA_NCOLS3; c++) ba_free(j->out[c]);
  ba_free(j);
}

int ba_writer_job_get(ba_store_writer_t *w, job_t **out) {
  job_t *j = w->free_jobs;
  if (j) {
    w->free_jobs = j->next_free;
  } else {
    j = ba_calloc(1, sizeof *j);
    BA_RETURN_IF(!j, BA_ERR_NOMEM);
    j->recs = ba_malloc((size_t)w->o.block_rows * sizeof *j->recs);
    j->vals = ba_malloc((size_t)w->o.block_rows * BA_ATTR_COUNT * sizeof *j->vals);
    if (!j->recs || !j->vals) {
      ba_writer_job_free(j);
      return BA_ERR_NOMEM;
    }
  }
  j->n = 0;
  j->nframes = 0;
  j->absent = V6_ATTRS | BIN_ATTRS;
  memset(&j->any, 0, sizeof j->any);
  memset(&j->all, 0xff, sizeof j->all);
  j->rc = 0;
  j->live_rows = 0;
  j->live_since = 0;
  j->next_free = NULL;
  *out = j;
  return BA_OK;
}

void ba_writer_job_put(ba_store_writer_t *w, job_t *j) {
  j->sl = NULL;
  j->next_free = w->free_jobs;
  w->free_jobs = j;
}

/* Grows a byte buffer to need bytes. */
static int reserve(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return BA_OK;
  void *p = *buf;
  int rc = ba_grow(&p, cap, need, 1);
  *buf = p;
  return rc;
}

/* Column c's block of group j (header + payload) from its gathered fields fv
 * (clobbered); out_len 0 when the column is absent. fmin, fmax: each field's
 * smallest and largest value. */
static int column_block(ba_store_writer_t *w, job_t *j, int c, uint64_t *fv, uint32_t cmask, const uint64_t *cval,
                        tctx_t *tc, uint64_t *fmin, uint64_t *fmax) {
  ba_compress_t cz = w->o.compress;
  size_t raw = ba_col_raw_max(BA_SEG_MAJOR, c, j->n, j->nframes);
  BA_RETURN_IF(raw > UINT32_MAX / 2, BA_ERR_OVERFLOW);
  /* Uncompressed (the 3.0 default): encoded straight into the block. */
  uint8_t *dst;
  if (cz == BA_COMPRESS_NONE) {
    BA_FORWARD(reserve(&j->out[c], &j->out_cap[c], BA_BLK_HDR_BYTES + raw));
    dst = j->out[c] + BA_BLK_HDR_BYTES;
  } else {
    BA_FORWARD(reserve(&tc->raw, &tc->raw_cap, raw));
    dst = tc->raw;
  }
  BA_FORWARD(
      ba_col3_encode_fields_range(c, fv, cmask, cval, j->n, j->frames, j->nframes, dst, &raw, tc->cs, fmin, fmax));
  j->out_len[c] = 0;
  if (raw == 0) return BA_OK; /* absent: every field zero (doc/format.md §7.1) */
  size_t clen = raw;
  if (cz != BA_COMPRESS_NONE) {
    BA_FORWARD(reserve(&j->out[c], &j->out_cap[c], BA_BLK_HDR_BYTES + ba_compress_bound(cz, raw)));
    uint8_t *payload = j->out[c] + BA_BLK_HDR_BYTES;
    BA_FORWARD(ba_compress_block(cz, tc->raw, raw, payload, j->out_cap[c] - BA_BLK_HDR_BYTES, &clen, tc->wrk));
    /* Kept compressed only where it pays (§7.1): a raw block is read
     * without decompression and its rows one by one. */
    if (clen > raw - raw / 8) {
      cz = BA_COMPRESS_NONE;
      memcpy(payload, tc->raw, raw);
      clen = raw;
    }
  }
  const uint8_t *payload = j->out[c] + BA_BLK_HDR_BYTES;
  ba_blk_hdr_t h = {.type = BA_BLK_COLUMN, .col = (uint8_t)c, .compress = (uint8_t)cz,
                    .rows = j->n, .raw_len = (uint32_t)raw, .comp_len = (uint32_t)clen,
                    .group = j->group, .payload_crc = ba_crc32c(0, payload, clen)};
  ba_blk_hdr_encode(&h, j->out[c]);
  j->out_len[c] = BA_BLK_HDR_BYTES + clen;
  return BA_OK;
}

/* The zone fields taken from a column's encoding (ba_zone_col_field): zone
 * field f is field g_zk[f] of column g_zcol[f] (-1: from the records). */
static pthread_once_t g_zmap_once = PTHREAD_ONCE_INIT;
static int g_zcol[BA_ZF_COUNT], g_zk[BA_ZF_COUNT];
static void zmap_init(void) {
  for (int f = 0; f < BA_ZF_COUNT; f++)
    if (ba_zone_col_field((ba_zfield_t)f, &g_zcol[f], &g_zk[f]) < 0) g_zcol[f] = -1;
}

/* The zone fields of column c from its fields' ranges (NULL: absent, 0). */
static void zone_from_column(ba_zone_t *z, int c, const uint64_t *fmin, const uint64_t *fmax) {
  for (int f = 0; f < BA_ZF_COUNT; f++)
    if (g_zcol[f] == c) {
      z->min[f] = fmin ? fmin[g_zk[f]] : 0;
      z->max[f] = fmax ? fmax[g_zk[f]] : 0;
    }
}

/* The work on one row group for worker `wi` of `nw` (nw = 1: everything):
 * its attributes' bitmaps, then its columns, whose fields are gathered from
 * the records in one pass (not one strided pass per field). Fields of one
 * value in every row (told by any and all: IPv4-mapped address words,
 * exporter, engine ids, ...; about half of a NetFlow group's fields) are
 * neither gathered nor scanned. The group's zone fields held by its columns
 * come from their encoding's ranges (each worker writes those of its
 * columns). */
#define COL3_MAXF 16
static int job_columns(ba_store_writer_t *w, job_t *j, int wi, int nw, tctx_t *tc) {
  pthread_once(&g_zmap_once, zmap_init);
  int cols[BA_NCOLS3] = {0};
  uint32_t cmask[BA_NCOLS3] = {0};
  uint64_t cval[BA_NCOLS3][COL3_MAXF];
  size_t nc = 0, nfv = 0;
  for (int c = wi; c < BA_NCOLS3; c += nw) {
    j->out_len[c] = 0;
    if (!ba_col3_maybe_present(c, &j->any)) { /* absent, known without a scan */
      zone_from_column(&j->zone, c, NULL, NULL);
      continue;
    }
    BA_RETURN_IF(ba_col3_nfields(c) > COL3_MAXF, BA_ERR_INVALID);
    cmask[nc] = ba_col3_const_fields(c, &j->any, &j->all, cval[nc]);
    cols[nc++] = c;
    nfv += ba_col3_nfields(c);
  }
  if (nfv * j->n > tc->fv_cap) {
    void *p = tc->fv;
    int rc = ba_grow(&p, &tc->fv_cap, nfv * j->n, sizeof *tc->fv);
    tc->fv = p;
    BA_FORWARD(rc);
  }
  /* Gathered BA_COL3_GATHER_ROWS rows at a time; worker 0 takes the zone's LAST and
   * DURATION from the same rows while they are in cache (a pass of its own
   * over the group's records, 4000 x 344 bytes, missed the cache). */
  ba_zone_t zt;
  for (size_t i0 = 0; i0 < j->n; i0 += BA_COL3_GATHER_ROWS) {
    size_t k = BA_MIN((size_t)BA_COL3_GATHER_ROWS, j->n - i0);
    ba_col3_gather_rows(cols, nc, cmask, j->recs, j->n, i0, k, tc->fv);
    if (wi != 0) continue;
    ba_zone_times(j->recs + i0, k, &zt);
    for (int f = BA_ZF_LAST; f <= BA_ZF_DURATION; f++) {
      if (i0 == 0 || zt.min[f] < j->zone.min[f]) j->zone.min[f] = zt.min[f];
      if (i0 == 0 || zt.max[f] > j->zone.max[f]) j->zone.max[f] = zt.max[f];
    }
  }
  if (wi == 0 && j->n == 0) ba_zone_times(j->recs, 0, &j->zone);
  uint64_t *fv = tc->fv;
  for (size_t q = 0; q < nc; fv += ba_col3_nfields(cols[q]) * j->n, q++) {
    uint64_t fmin[COL3_MAXF], fmax[COL3_MAXF];
    BA_FORWARD(column_block(w, j, cols[q], fv, cmask[q], cval[q], tc, fmin, fmax));
    zone_from_column(&j->zone, cols[q], fmin, fmax);
  }
  return BA_OK;
}

static int job_work(ba_store_writer_t *w, job_t *j, int wi, int nw, tctx_t *tc) {
  slice_t *sl = j->sl;
  for (int a = wi; a < BA_ATTR_COUNT; a += nw) {
    /* oLSH or cluster order: time windows use the zone maps or a check, not TIME_BIN (ba_seg_finish drops it). */
    if (a == BA_ATTR_TIME_BIN && (w->o.reorder == BA_REORDER_OLSH || w->o.clustered)) continue;
    if (j->absent >> a & 1) BA_FORWARD(ba_idx_online_add_absent(sl->idx[a], j->n));
    else BA_FORWARD(ba_idx_online_add(sl->idx[a], j->vals + (size_t)a * w->o.block_rows, j->n));
  }
  return job_columns(w, j, wi, nw, tc);
}

void *ba_writer_worker_main(void *arg) {
  wstart_t *ws = arg;
  ba_store_writer_t *w = ws->w;
  int wi = ws->wi;
  ba_free(ws);
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (w->wpos[wi] == w->tail && !w->stop) pthread_cond_wait(&w->cv_work, &w->mu);
    if (w->wpos[wi] == w->tail) {
      pthread_mutex_unlock(&w->mu);
      break;
    }
    job_t *j = w->ring[w->wpos[wi] % RING_JOBS];
    pthread_mutex_unlock(&w->mu);
    int rc = job_work(w, j, wi, w->nw, &w->tc[wi]);
    pthread_mutex_lock(&w->mu);
    if (rc < 0 && j->rc == 0) j->rc = rc;
    w->wpos[wi]++;
    if (--j->pending == 0) pthread_cond_broadcast(&w->cv_done);
    pthread_mutex_unlock(&w->mu);
  }
  return NULL;
}

/* Appends the GROUP (or LIVE) block of j and its column blocks to the
 * slice's journal at sl->off (one pwritev, continued where a partial write
 * stopped); e gets the group's entry. A failure leaves a torn block at the
 * end of the journal: the slice is then failed. */
static int blocks_write(ba_store_writer_t *w, job_t *j, int type, uint64_t first_row, ba_group_ent_t *e) {
  slice_t *sl = j->sl;
  const uint32_t gpl = ba_group_payload_bytes(BA_NCOLS3);
  uint8_t gb[BA_BLK_HDR_BYTES + 24 + 4 * BA_NCOLS3];
  uint8_t *gp = gb + BA_BLK_HDR_BYTES;
  memset(gp, 0, gpl);
  ba_store_le32(gp, j->group);
  ba_store_le32(gp + 4, j->n);
  ba_store_le32(gp + 8, BA_NCOLS3);
  ba_store_le64(gp + 16, first_row);
  for (int c = 0; c < BA_NCOLS3; c++) ba_store_le32(gp + 24 + 4 * c, (uint32_t)j->out_len[c]);
  ba_blk_hdr_t h = {.type = (uint8_t)type, .col = 0xFF, .compress = BA_COMPRESS_NONE, .rows = j->n,
                    .raw_len = gpl, .comp_len = gpl, .group = j->group, .payload_crc = ba_crc32c(0, gp, gpl)};
  ba_blk_hdr_encode(&h, gb);
  struct iovec iov[1 + BA_NCOLS3];
  iov[0].iov_base = gb;
  iov[0].iov_len = sizeof gb;
  memset(e, 0, sizeof *e);
  e->off = sl->off;
  e->rows = j->n;
  uint64_t len = sizeof gb;
  for (int c = 0; c < BA_NCOLS3; c++) {
    iov[1 + c].iov_base = j->out[c];
    iov[1 + c].iov_len = j->out_len[c];
    e->col_off[c] = j->out_len[c] ? (uint32_t)len : 0;
    len += j->out_len[c];
  }
  if (len > UINT32_MAX) {
    sl->failed = 1;
    ba_writer_set_err(w, BA_ERR_OVERFLOW, "%s: row group %u too large", sl->name, j->group);
    return BA_ERR_OVERFLOW;
  }
  e->len = (uint32_t)len;
  size_t done = 0;
  while (done < len) {
    size_t skip = done;
    int k = 0;
    while (skip >= iov[k].iov_len) skip -= iov[k++].iov_len;
    struct iovec v[1 + BA_NCOLS3];
    int nv = 0;
    for (int i = k; i < 1 + BA_NCOLS3; i++, nv++) {
      v[nv].iov_base = (uint8_t *)iov[i].iov_base + (i == k ? skip : 0);
      v[nv].iov_len = iov[i].iov_len - (i == k ? skip : 0);
    }
    ssize_t r = pwritev(sl->fd, v, nv, (off_t)(sl->off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      sl->failed = 1;
      ba_writer_set_err(w, BA_ERR_IO, "%s: write of row group %u at offset %llu: %s", sl->open_name, j->group,
              (unsigned long long)(sl->off + done), r < 0 ? strerror(errno) : "nothing written");
      return BA_ERR_IO;
    }
    done += (size_t)r;
  }
  sl->off += len;
  return BA_OK;
}

/* Appends a finished row group to its slice's journal and records it. */
static int job_write(ba_store_writer_t *w, job_t *j) {
  slice_t *sl = j->sl;
  if (sl->failed) return w->err < 0 ? w->err : BA_ERR_IO; /* nothing after a hole */
  if (j->rc < 0) {
    sl->failed = 1;
    ba_writer_set_err(w, j->rc, "%s: building row group %u failed: %s", sl->name, j->group,
            ba_strerror(j->rc));
    return j->rc;
  }
  if (sl->ngroups == sl->cap_groups) {
    void *p = sl->groups;
    int rc = ba_grow(&p, &sl->cap_groups, sl->ngroups + 1, sizeof(ba_group_ent_t));
    if (rc < 0) {
      sl->failed = 1;
      ba_writer_set_err(w, rc, "%s: row group %u: %s", sl->name, j->group, ba_strerror(rc));
      return rc;
    }
    sl->groups = p;
  }
  ba_group_ent_t e;
  BA_FORWARD(blocks_write(w, j, BA_BLK_GROUP, (uint64_t)j->group * w->o.block_rows, &e));
  e.zone = j->zone;
  sl->groups[sl->ngroups++] = e;
  w->st.bytes_archive += e.len;
  return BA_OK;
}

/* Writes the oldest in-flight group. */
static int reclaim_one(ba_store_writer_t *w) {
  pthread_mutex_lock(&w->mu);
  if (w->head == w->tail) {
    pthread_mutex_unlock(&w->mu);
    return BA_OK;
  }
  job_t *j = w->ring[w->head % RING_JOBS];
  while (j->pending) pthread_cond_wait(&w->cv_done, &w->mu);
  w->head++;
  pthread_mutex_unlock(&w->mu);
  int rc = job_write(w, j);
  ba_writer_job_put(w, j);
  return rc;
}

int ba_writer_drain(ba_store_writer_t *w) {
  int rc = BA_OK;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int empty = w->head == w->tail;
    pthread_mutex_unlock(&w->mu);
    if (empty) break;
    int r = reclaim_one(w);
    if (r < 0 && rc == BA_OK) rc = r;
  }
  return rc;
}

int ba_writer_submit(ba_store_writer_t *w, job_t *j) {
  slice_t *sl = j->sl;
  j->group = sl->next_group++;
  if (w->nw == 0) {
    int rc = job_work(w, j, 0, 1, &w->tc[0]);
    if (rc < 0) j->rc = rc;
    rc = job_write(w, j);
    ba_writer_job_put(w, j);
    return rc;
  }
  int rc = BA_OK;
  pthread_mutex_lock(&w->mu);
  int full = w->tail - w->head == RING_JOBS;
  pthread_mutex_unlock(&w->mu);
  if (full) rc = reclaim_one(w);
  pthread_mutex_lock(&w->mu);
  j->pending = w->nw;
  w->ring[w->tail % RING_JOBS] = j;
  w->tail++;
  pthread_cond_broadcast(&w->cv_work);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* any |= and all &= each of r[0..k), bytewise: which columns may be present
 * in a group (ba_col3_maybe_present) and which fields hold one value
 * (ba_col3_const_fields). The records are whole words (_Static_assert
 * below); the vector copies (AVX2, AVX-512, chosen once at run time) keep
 * 32-byte lanes in registers, half the record at a time (both accumulators
 * of every lane would not fit), loaded straight from the records. */
_Static_assert(sizeof(ba_record_t) % 8 == 0, "records are whole words");
#define OR_WORDS (sizeof(ba_record_t) / 8)
static inline __attribute__((always_inline)) void acc_span_body(ba_record_t *any, ba_record_t *all, const ba_record_t *r,
                                                                size_t k) {
  uint64_t a[OR_WORDS], c[OR_WORDS];
  memcpy(a, any, sizeof a);
  memcpy(c, all, sizeof c);
  for (size_t i = 0; i < k; i++) {
    const uint8_t *p = (const uint8_t *)&r[i];
    for (size_t q = 0; q < OR_WORDS; q++) {
      uint64_t b;
      memcpy(&b, p + 8 * q, 8);
      a[q] |= b;
      c[q] &= b;
    }
  }
  memcpy(any, a, sizeof a);
  memcpy(all, c, sizeof c);
}
static void acc_span_base(ba_record_t *any, ba_record_t *all, const ba_record_t *r, size_t k) {
  acc_span_body(any, all, r, k);
}
static void copy_acc_base(ba_record_t *dst, ba_record_t *any, ba_record_t *all, const ba_record_t *r, size_t k) {
  memcpy(dst, r, k * sizeof *r);
  acc_span_body(any, all, dst, k);
}
typedef uint64_t or_v4 __attribute__((vector_size(32)));
/* 32-byte lanes covering the record; the last one ends at its end and may
 * overlap the one before (OR and AND do not mind seeing a byte twice). */
#define OR_LANES ((sizeof(ba_record_t) + 31) / 32)
#define OR_HALF ((OR_LANES + 1) / 2)
_Static_assert(sizeof(ba_record_t) >= 32, "a record holds a lane");
static inline __attribute__((always_inline)) size_t lane_off(size_t q) {
  return 32 * q + 32 <= sizeof(ba_record_t) ? 32 * q : sizeof(ba_record_t) - 32;
}
/* Lanes [q0, q0 + nq) (nq <= OR_HALF, a constant at each call) over the
 * rows; with dst (a constant NULL or not at each call) each lane is also
 * stored to dst's record: the copy and the accumulation in one load. */
static inline __attribute__((always_inline)) void acc_lanes(uint8_t *any, uint8_t *all, const ba_record_t *r, size_t k,
                                                            size_t q0, const size_t nq, ba_record_t *dst) {
  or_v4 a[OR_HALF], c[OR_HALF];
  for (size_t q = 0; q < nq; q++) {
    memcpy(&a[q], any + lane_off(q0 + q), 32);
    memcpy(&c[q], all + lane_off(q0 + q), 32);
  }
  for (size_t i = 0; i < k; i++) {
    const uint8_t *p = (const uint8_t *)&r[i];
    for (size_t q = 0; q < nq; q++) {
      or_v4 b;
      memcpy(&b, p + lane_off(q0 + q), 32);
      if (dst) memcpy((uint8_t *)&dst[i] + lane_off(q0 + q), &b, 32);
      a[q] |= b;
      c[q] &= b;
    }
  }
  for (size_t q = 0; q < nq; q++) { /* the overlapping lane last: its bytes agree with the one before */
    memcpy(any + lane_off(q0 + q), &a[q], 32);
    memcpy(all + lane_off(q0 + q), &c[q], 32);
  }
}
static inline __attribute__((always_inline)) void acc_span_vec(ba_record_t *any, ba_record_t *all, const ba_record_t *r,
                                                               size_t k, ba_record_t *dst) {
  uint8_t *pa = (uint8_t *)any, *pc = (uint8_t *)all;
  acc_lanes(pa, pc, r, k, 0, OR_HALF, dst);
  acc_lanes(pa, pc, r, k, OR_HALF, OR_LANES - OR_HALF, dst);
}
#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)
#define VEC_OPT
#else
#define VEC_OPT , optimize("O3")
#endif
__attribute__((target("avx2") VEC_OPT)) static void acc_span_avx2(ba_record_t *any, ba_record_t *all,
                                                                 const ba_record_t *r, size_t k) {
  acc_span_vec(any, all, r, k, NULL);
}
__attribute__((target("avx512f,avx512vl") VEC_OPT)) static void acc_span_avx512(ba_record_t *any, ba_record_t *all,
                                                                               const ba_record_t *r, size_t k) {
  acc_span_vec(any, all, r, k, NULL);
}
__attribute__((target("avx2") VEC_OPT)) static void copy_acc_avx2(ba_record_t *dst, ba_record_t *any, ba_record_t *all,
                                                                 const ba_record_t *r, size_t k) {
  acc_span_vec(any, all, r, k, dst);
}
__attribute__((target("avx512f,avx512vl") VEC_OPT)) static void copy_acc_avx512(ba_record_t *dst, ba_record_t *any,
                                                                               ba_record_t *all, const ba_record_t *r,
                                                                               size_t k) {
  acc_span_vec(any, all, r, k, dst);
}
#undef VEC_OPT
static pthread_once_t g_or_once = PTHREAD_ONCE_INIT;
static void (*g_acc_span)(ba_record_t *, ba_record_t *, const ba_record_t *, size_t) = acc_span_base;
static void (*g_copy_acc)(ba_record_t *, ba_record_t *, ba_record_t *, const ba_record_t *, size_t) = copy_acc_base;
static void or_init(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
    g_acc_span = acc_span_avx512;
    g_copy_acc = copy_acc_avx512;
  } else if (__builtin_cpu_supports("avx2")) {
    g_acc_span = acc_span_avx2;
    g_copy_acc = copy_acc_avx2;
  }
}
static void acc_span(ba_record_t *any, ba_record_t *all, const ba_record_t *r, size_t k) {
  pthread_once(&g_or_once, or_init);
  g_acc_span(any, all, r, k);
}
static void copy_acc(ba_record_t *dst, ba_record_t *any, ba_record_t *all, const ba_record_t *r, size_t k) {
  pthread_once(&g_or_once, or_init);
  g_copy_acc(dst, any, all, r, k);
}
#else
#define acc_span acc_span_base
#define copy_acc copy_acc_base
#endif

/* The copies of r[0..k) at dst, their frame pointers NULL, with any |= and
 * all &= their bytes: acc_span of the copies (the frame pointers' bytes,
 * which no field reads, as those of NULL), from one load of each lane. */
static void copy_span(ba_record_t *dst, ba_record_t *any, ba_record_t *all, const ba_record_t *r, size_t k) {
  if (!k) return;
  copy_acc(dst, any, all, r, k);
  for (size_t i = 0; i < k; i++) dst[i].frame = NULL;
  memset((uint8_t *)any + offsetof(ba_record_t, frame), 0, sizeof any->frame);
  memset((uint8_t *)all + offsetof(ba_record_t, frame), 0, sizeof all->frame);
}

/* ba_attr_values of the FUSED_ATTRS for n records in one pass (each record
 * read once, not once per attribute); out[a] = where attribute a's values
 * go. The same values (test_writer_attrs checks them against
 * ba_attr_values). */
void ba_writer_attr_values_fused(const ba_record_t *r, size_t n, uint32_t *const *out) {
  uint32_t *s0 = out[BA_ATTR_SRC_IP0], *s1 = out[BA_ATTR_SRC_IP1], *s2 = out[BA_ATTR_SRC_IP2],
           *s3 = out[BA_ATTR_SRC_IP3], *d0 = out[BA_ATTR_DST_IP0], *d1 = out[BA_ATTR_DST_IP1],
           *d2 = out[BA_ATTR_DST_IP2], *d3 = out[BA_ATTR_DST_IP3], *sp = out[BA_ATTR_SRC_PORT],
           *dp = out[BA_ATTR_DST_PORT], *pr = out[BA_ATTR_PROTO], *fl = out[BA_ATTR_TCP_FLAGS],
           *iv = out[BA_ATTR_IPVER];
  for (size_t i = 0; i < n; i++) {
    const ba_record_t *x = &r[i];
    uint32_t m = x->ipver == 4 ? 0 : BA_IDX_NONE; /* ORed in: BA_IDX_NONE is all ones */
    s0[i] = x->src[12] | m;
    s1[i] = x->src[13] | m;
    s2[i] = x->src[14] | m;
    s3[i] = x->src[15] | m;
    d0[i] = x->dst[12] | m;
    d1[i] = x->dst[13] | m;
    d2[i] = x->dst[14] | m;
    d3[i] = x->dst[15] | m;
    sp[i] = x->src_port;
    dp[i] = x->dst_port;
    pr[i] = x->proto;
    fl[i] = x->tcp_flags;
    iv[i] = x->ipver;
  }
}

uint64_t ba_writer_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ba_writer_group_add(ba_store_writer_t *w, slice_t *sl, job_t *j, const ba_record_t *recs, size_t k) {
  if (k && j->n == j->live_rows) j->live_since = ba_writer_mono_ns(); /* the first row not in the journal */
  /* The index values are taken here, from the caller's records while they
   * are in cache, one short run per attribute, rather than by the workers
   * from the copies (a strided pass over the whole group per attribute). */
  /* IPv6 attributes of IPv4 rows have no value: while a group has no IPv6
   * row their values are not taken (its rows are added as absent). */
  if (j->absent & V6_ATTRS) {
    int v6 = 0;
    for (size_t i = 0; i < k; i++) v6 |= recs[i].ipver == 6;
    if (v6) { /* the group's earlier rows: no value */
      for (int a = 0; a < BA_ATTR_COUNT; a++)
        if (V6_ATTRS >> a & 1) memset(j->vals + (size_t)a * w->o.block_rows, 0xff, (size_t)j->n * sizeof *j->vals);
      j->absent &= ~V6_ATTRS;
    }
  }
  uint32_t fused = 0;
  if (!(j->absent & FUSED_ATTRS)) { /* never absent; the address bytes, ports, ... in one pass */
    uint32_t *out[BA_ATTR_COUNT] = {0};
    for (int a = 0; a < BA_ATTR_COUNT; a++)
      if (FUSED_ATTRS >> a & 1) out[a] = j->vals + (size_t)a * w->o.block_rows + j->n;
    ba_writer_attr_values_fused(recs, k, out);
    fused = FUSED_ATTRS;
  }
  for (int a = 0; a < BA_ATTR_COUNT; a++)
    if ((a != BA_ATTR_TIME_BIN || (w->o.reorder != BA_REORDER_OLSH && !w->o.clustered)) &&
        !((j->absent | fused) >> a & 1)) /* not built (job_work), or taken above */
      ba_attr_values((ba_attr_t)a, recs, k, sl->start, w->bin_ns, j->vals + (size_t)a * w->o.block_rows + j->n);
  size_t fb = 0; /* the rows' frame bytes, room made once */
  uint64_t mn = sl->min_first, mx = sl->max_first;
  uint32_t kinds = sl->kinds;
  for (size_t i = 0; i < k; i++) {
    const ba_record_t *r = &recs[i];
    fb += r->caplen;
    mn = r->first_ns < mn ? r->first_ns : mn;
    mx = r->first_ns > mx ? r->first_ns : mx;
    kinds |= r->kind == BA_REC_PACKET ? 2u : 1u;
  }
  if (fb) {
    if (j->nframes + fb > j->cap_frames) {
      void *p = j->frames;
      BA_FORWARD(ba_grow(&p, &j->cap_frames, j->nframes + fb, 1));
      j->frames = p;
    }
    for (size_t i = 0; i < k; i++)
      if (recs[i].caplen) {
        memcpy(j->frames + j->nframes, recs[i].frame, recs[i].caplen);
        j->nframes += recs[i].caplen;
      }
  }
  sl->min_first = mn;
  sl->max_first = mx;
  sl->kinds = kinds;
  copy_span(j->recs + j->n, &j->any, &j->all, recs, k);
  j->n += (uint32_t)k;
  sl->rows += k;
  if (j->n == w->o.block_rows) {
    sl->cur = NULL;
    BA_FORWARD(ba_writer_submit(w, j));
  }
  return BA_OK;
}

/* ---------- live flushing ---------- */

/* Appends rows [live_rows, n) of the open group of sl as a LIVE block (its
 * columns built in the caller; the index is built once, from the full
 * group). Every group of sl before it must be written already. */
static int live_write(ba_store_writer_t *w, slice_t *sl) {
  job_t *j = sl->cur, *lj = NULL;
  uint32_t from = j->live_rows, k = j->n - from;
  BA_FORWARD(ba_writer_job_get(w, &lj));
  lj->sl = sl;
  lj->group = sl->next_group;
  size_t foff = 0;
  for (uint32_t i = 0; i < from; i++) foff += j->recs[i].caplen;
  int rc = BA_OK;
  if (j->nframes > foff) {
    size_t fb = j->nframes - foff;
    if (fb > lj->cap_frames) {
      void *p = lj->frames;
      rc = ba_grow(&p, &lj->cap_frames, fb, 1);
      lj->frames = p;
    }
    if (rc == BA_OK) memcpy(lj->frames, j->frames + foff, fb);
    lj->nframes = fb;
  }
  if (rc == BA_OK) {
    memcpy(lj->recs, j->recs + from, (size_t)k * sizeof *lj->recs);
    lj->n = k;
    acc_span(&lj->any, &lj->all, lj->recs, k);
    rc = job_columns(w, lj, 0, 1, &w->tc[w->nw]);
    if (rc < 0) {
      sl->failed = 1;
      ba_writer_set_err(w, rc, "%s: building a live block of group %u failed: %s", sl->name, lj->group,
                        ba_strerror(rc));
    }
  }
  ba_group_ent_t e;
  if (rc == BA_OK) rc = blocks_write(w, lj, BA_BLK_LIVE, (uint64_t)lj->group * w->o.block_rows + from, &e);
  if (rc == BA_OK) {
    j->live_rows = j->n;
    j->live_since = 0;
    w->live_blocks++;
    w->live_bytes += e.len;
  }
  ba_writer_job_put(w, lj);
  return rc;
}

int ba_writer_live_flush(ba_store_writer_t *w, uint64_t age_ns) {
  uint64_t now = ba_writer_mono_ns();
  int due = 0;
  /* Only the caller's thread changes head, tail and live_since. */
  for (uint64_t k = w->head; k < w->tail && !due; k++) {
    const job_t *j = w->ring[k % RING_JOBS];
    due = j->live_since && now - j->live_since >= age_ns;
  }
  int open_due = 0;
  for (size_t i = 0; i < w->nopen; i++) {
    const job_t *j = w->open[i]->cur;
    if (j && !w->open[i]->failed && j->n > j->live_rows && now - j->live_since >= age_ns) open_due = 1;
  }
  if (!due && !open_due) return BA_OK;
  /* In flight first: a LIVE block of group g follows groups 0..g-1. */
  BA_FORWARD(ba_writer_drain(w));
  for (size_t i = 0; i < w->nopen; i++) {
    slice_t *sl = w->open[i];
    job_t *j = sl->cur;
    if (j && !sl->failed && j->n > j->live_rows && now - j->live_since >= age_ns) BA_FORWARD(live_write(w, sl));
  }
  return BA_OK;
}
