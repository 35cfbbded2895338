/* Column layout 3.0 (doc/format.md §7.1): 29 columns, every field an
 * integer field of the shared codec (intfield.c) bit-packed without byte
 * planes, addresses as four big-endian 32-bit words, a column whose fields
 * are all zero in a group not written at all, and single rows readable
 * without decoding the block (ba_col3_decode_rows). */
#include <stddef.h>
#include <string.h>

#include "archive/col3.h"
#include "archive/intfield.h"
#include "common/common.h"

enum { K_INT = 0, K_DUR = 1 /* last_ns - first_ns */, K_BE32 = 2 /* address word */ };

typedef struct f3 {
  uint16_t off;  /* offsetof in ba_record_t */
  uint8_t width; /* bytes (K_BE32: 4) */
  uint8_t kind;
} f3_t;

#define BA_COL3_MAXF 12
#define I(field, w) {(uint16_t)offsetof(ba_record_t, field), w, K_INT}
#define W(field, k) {(uint16_t)(offsetof(ba_record_t, field) + 4 * (k)), 4, K_BE32}
#define ADDR(field) W(field, 0), W(field, 1), W(field, 2), W(field, 3)
#define MPLS(k) {(uint16_t)(offsetof(ba_record_t, mpls) + 4 * (k)), 4, K_INT}
static const f3_t g_f3[BA_NCOLS3][BA_COL3_MAXF] = {
    [0] = {I(first_ns, 8)},
    [1] = {{(uint16_t)offsetof(ba_record_t, last_ns), 8, K_DUR}},
    [2] = {ADDR(src)},
    [3] = {ADDR(dst)},
    [4] = {I(src_port, 2), I(dst_port, 2)},
    [5] = {I(proto, 1)},
    [6] = {I(tcp_flags, 1)},
    [7] = {I(tos, 1)},
    [8] = {I(src_as, 4), I(dst_as, 4)},
    [9] = {I(in_if, 4), I(out_if, 4)},
    [10] = {I(packets, 8)},
    [11] = {I(bytes, 8)},
    [12] = {ADDR(exporter)},
    [13] = {I(vlan, 2)},
    [14] = {I(icmp_type, 1), I(icmp_code, 1)},
    [15] = {I(caplen, 4), I(wirelen, 4), I(linktype, 2)},
    [16] = {I(kind, 1), I(ipver, 1)},
    [17] = {I(out_packets, 8), I(out_bytes, 8)},
    [18] = {ADDR(next_hop), ADDR(bgp_next_hop)},
    [19] = {I(src_mask, 1), I(dst_mask, 1)},
    [20] = {I(dst_tos, 1), I(dst_vlan, 2)},
    [21] = {I(obs_domain, 4), I(engine_type, 1), I(engine_id, 1), I(direction, 1)},
    [22] = {I(sampling, 4), I(sampling_algo, 1)},
    [23] = {ADDR(xsrc), ADDR(xdst), I(xsrc_port, 2), I(xdst_port, 2), I(nat_event, 1)},
    [24] = {I(fw_event, 1), I(fw_xevent, 2), I(ingress_vrf, 4), I(egress_vrf, 4)},
    [25] = {MPLS(0), MPLS(1), MPLS(2), MPLS(3), MPLS(4), MPLS(5), MPLS(6), MPLS(7), MPLS(8), MPLS(9)},
    [26] = {I(in_src_mac, 8), I(out_dst_mac, 8), I(in_dst_mac, 8), I(out_src_mac, 8)},
    [27] = {I(prev_as, 4), I(next_as, 4)},
    [28] = {I(received_ns, 8), I(aggr_flows, 4)},
};
#undef I
#undef W
#undef ADDR
#undef MPLS

static size_t nfields(int col) {
  size_t k = 0;
  while (k < BA_COL3_MAXF && g_f3[col][k].width) k++;
  return k;
}

uint32_t ba_col_bit(int col) {
  if (col < BA_COLID_META) return 1u << col;
  return col == BA_COLID_META ? 0u : 1u << (col - 1);
}

/* LAST (K_DUR) needs first_ns set in r already. */
static inline void f3_set(ba_record_t *r, const f3_t *f, uint64_t v) {
  uint8_t *p = (uint8_t *)r + f->off;
  switch (f->kind) {
    case K_BE32:
      p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
      return;
    case K_DUR: r->last_ns = r->first_ns + v; return;
    default: break;
  }
  switch (f->width) {
    case 1: *p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
  }
}

/* f3_set over n records, the field's kind and width picked once. */
static void set_many(ba_record_t *r, const f3_t *f, const uint64_t *v, size_t n) {
  if (f->kind != K_INT) {
    for (size_t i = 0; i < n; i++) f3_set(&r[i], f, v[i]);
    return;
  }
  switch (f->width) {
    case 1:
      for (size_t i = 0; i < n; i++) *((uint8_t *)&r[i] + f->off) = (uint8_t)v[i];
      break;
    case 2:
      for (size_t i = 0; i < n; i++) {
        uint16_t x = (uint16_t)v[i];
        memcpy((uint8_t *)&r[i] + f->off, &x, 2);
      }
      break;
    case 4:
      for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)v[i];
        memcpy((uint8_t *)&r[i] + f->off, &x, 4);
      }
      break;
    default:
      for (size_t i = 0; i < n; i++) memcpy((uint8_t *)&r[i] + f->off, &v[i], 8);
      break;
  }
}

void ba_col3_clear(int col, ba_record_t *r, size_t n) {
  size_t nf = nfields(col);
  for (size_t k = 0; k < nf; k++) {
    const f3_t *f = &g_f3[col][k];
    for (size_t i = 0; i < n; i++) memset((uint8_t *)&r[i] + f->off, 0, f->width);
  }
  if (col == BA_COLID_FRAME)
    for (size_t i = 0; i < n; i++) r[i].frame = NULL;
}

int ba_col3_maybe_present(int col, const ba_record_t *any) {
  if (col == BA_COLID_META) return 1;
  size_t nf = nfields(col);
  for (size_t k = 0; k < nf; k++) {
    const f3_t *f = &g_f3[col][k];
    if (f->kind == K_DUR) return 1; /* a difference of two fields: not told by their bytes */
    const uint8_t *p = (const uint8_t *)any + f->off;
    for (unsigned b = 0; b < f->width; b++)
      if (p[b]) return 1;
  }
  return 0;
}

size_t ba_col3_raw_min(int col, size_t n) {
  (void)n;
  return nfields(col) * BA_COL2_FIELD_HDR;
}

size_t ba_col3_raw_max(int col, size_t n, size_t frame_bytes) {
  size_t s = 0, nf = nfields(col);
  for (size_t k = 0; k < nf; k++) s += BA_COL2_FIELD_HDR + (size_t)g_f3[col][k].width * n + 8 * n;
  return s + (col == BA_COLID_FRAME ? frame_bytes : 0);
}

size_t ba_col3_nfields(int col) { return col >= 0 && col < BA_NCOLS3 ? nfields(col) : 0; }

/* A big-endian 32-bit word loaded in host order, as a number. */
static inline uint32_t be32_host(uint32_t x) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return x;
#else
  return __builtin_bswap32(x);
#endif
}

/* Field f of rows r[0..n) into v, the field's kind and width chosen once. */
static void gather_field(const f3_t *f, const ba_record_t *r, size_t n, uint64_t *v) {
  const uint8_t *b = (const uint8_t *)r + f->off;
  const size_t st = sizeof *r;
  if (f->kind == K_DUR) {
    for (size_t i = 0; i < n; i++) v[i] = r[i].last_ns - r[i].first_ns;
    return;
  }
  if (f->kind == K_BE32) {
    for (size_t i = 0; i < n; i++, b += st) {
      uint32_t x;
      memcpy(&x, b, 4); /* one load and a byte swap, not four byte loads */
      v[i] = be32_host(x);
    }
    return;
  }
  switch (f->width) {
    case 1:
      for (size_t i = 0; i < n; i++, b += st) v[i] = *b;
      break;
    case 2:
      for (size_t i = 0; i < n; i++, b += st) {
        uint16_t x;
        memcpy(&x, b, 2);
        v[i] = x;
      }
      break;
    case 4:
      for (size_t i = 0; i < n; i++, b += st) {
        uint32_t x;
        memcpy(&x, b, 4);
        v[i] = x;
      }
      break;
    default:
      for (size_t i = 0; i < n; i++, b += st) memcpy(&v[i], b, 8);
      break;
  }
}

void ba_col3_gather_rows(const int *cols, size_t ncols, const uint32_t *skip, const ba_record_t *r, size_t n,
                         size_t i0, size_t k, uint64_t *fv) {
  uint64_t *dst = fv;
  for (size_t c = 0; c < ncols; c++) {
    size_t nf = nfields(cols[c]);
    uint32_t sk = skip ? skip[c] : 0;
    for (size_t f = 0; f < nf; f++, dst += n)
      if (!(sk >> f & 1)) gather_field(&g_f3[cols[c]][f], r + i0, k, dst + i0);
  }
}

void ba_col3_gather_skip(const int *cols, size_t ncols, const uint32_t *skip, const ba_record_t *r, size_t n,
                         uint64_t *fv) {
  for (size_t i0 = 0; i0 < n; i0 += BA_COL3_GATHER_ROWS)
    ba_col3_gather_rows(cols, ncols, skip, r, n, i0, BA_MIN((size_t)BA_COL3_GATHER_ROWS, n - i0), fv);
}

void ba_col3_gather(const int *cols, size_t ncols, const ba_record_t *r, size_t n, uint64_t *fv) {
  ba_col3_gather_skip(cols, ncols, NULL, r, n, fv);
}

uint32_t ba_col3_const_fields(int col, const ba_record_t *any, const ba_record_t *all, uint64_t *vals) {
  if (col < 0 || col >= BA_NCOLS3) return 0;
  uint32_t m = 0;
  size_t nf = nfields(col);
  for (size_t k = 0; k < nf; k++) {
    const f3_t *f = &g_f3[col][k];
    if (f->kind == K_DUR) continue; /* a difference of two fields: not told by their bytes */
    if (memcmp((const uint8_t *)any + f->off, (const uint8_t *)all + f->off, f->width) != 0) continue;
    gather_field(f, any, 1, &vals[k]); /* OR = AND: every row's bytes are these */
    m |= UINT32_C(1) << k;
  }
  return m;
}

int ba_col3_encode_fields(int col, uint64_t *fv, size_t n, const uint8_t *frames, size_t frame_bytes,
                          uint8_t *out, size_t *len, ba_col_scratch_t *x) {
  return ba_col3_encode_fields_const(col, fv, 0, NULL, n, frames, frame_bytes, out, len, x);
}

int ba_col3_encode_fields_const(int col, uint64_t *fv, uint32_t cmask, const uint64_t *cval, size_t n,
                                const uint8_t *frames, size_t frame_bytes, uint8_t *out, size_t *len,
                                ba_col_scratch_t *x) {
  return ba_col3_encode_fields_range(col, fv, cmask, cval, n, frames, frame_bytes, out, len, x, NULL, NULL);
}

int ba_col3_encode_fields_range(int col, uint64_t *fv, uint32_t cmask, const uint64_t *cval, size_t n,
                                const uint8_t *frames, size_t frame_bytes, uint8_t *out, size_t *len,
                                ba_col_scratch_t *x, uint64_t *fmin, uint64_t *fmax) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS3 || !len || !x || (cmask && !cval), BA_ERR_INVALID);
  BA_RETURN_IF(!fmin != !fmax, BA_ERR_INVALID);
  size_t nf = nfields(col);
  if (n == 0) cmask = 0; /* (no value to hold) */
  if (fmin)
    for (size_t k = 0; k < nf; k++) fmin[k] = fmax[k] = 0; /* absent, or no rows */
  /* Absent: every field zero in every row (META is always written). */
  int present = col == BA_COLID_META;
  for (size_t k = 0; k < nf && !present; k++) {
    if (cmask >> k & 1) {
      present = cval[k] != 0;
      continue;
    }
    /* blocks of 64 values ORed (vectorised), not a test per value: a
     * present column's first fields are often all zero */
    const uint64_t *v = fv + k * n;
    size_t i = 0;
    for (; i + 64 <= n && !present; i += 64) {
      uint64_t o = 0;
      for (size_t q = 0; q < 64; q++) o |= v[i + q];
      present = o != 0;
    }
    for (; i < n && !present; i++) present = v[i] != 0;
  }
  if (!present) {
    *len = 0;
    return BA_OK;
  }
  uint8_t *p = out;
  for (size_t k = 0; k < nf; k++) {
    if (cmask >> k & 1) { /* what ba_if_encode writes for one value in every row: FOR, no bits */
      memset(p, 0, BA_COL2_FIELD_HDR);
      ba_store_le64(p + 8, cval[k]);
      ba_store_le64(p + 16, 1);
      p += BA_COL2_FIELD_HDR;
      if (fmin) fmin[k] = fmax[k] = cval[k];
      continue;
    }
    p += ba_if_encode(x, fv + k * n, n, g_f3[col][k].width, 0, p);
    if (fmin) ba_if_range(x, &fmin[k], &fmax[k]);
  }
  if (col == BA_COLID_FRAME && frame_bytes) {
    memcpy(p, frames, frame_bytes);
    p += frame_bytes;
  }
  *len = (size_t)(p - out);
  return BA_OK;
}

int ba_col3_encode(int col, const ba_record_t *r, size_t n, const uint8_t *frames, size_t frame_bytes,
                   uint8_t *out, size_t *len, ba_col_scratch_t *x) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS3 || !len, BA_ERR_INVALID);
  ba_col_scratch_t *own = NULL;
  if (!x) {
    BA_FORWARD(ba_col_scratch_create(&own));
    x = own;
  }
  uint64_t *v = NULL;
  int rc = ba_if_scratch_values(x, nfields(col) * n, &v);
  if (rc == BA_OK) {
    ba_col3_gather(&col, 1, r, n, v);
    rc = ba_col3_encode_fields(col, v, n, frames, frame_bytes, out, len, x);
  }
  ba_col_scratch_free(own);
  return rc;
}

/* Opens the readers of every field of the column; *fields gets the bytes of
 * the fields (the FRAME column's frame bytes follow them). */
static int open_fields(int col, const uint8_t *raw, size_t raw_len, size_t n, ba_if_reader_t *rd,
                       size_t *fields) {
  size_t nf = nfields(col), off = 0;
  for (size_t k = 0; k < nf; k++) {
    size_t used = 0;
    BA_FORWARD(ba_if_open(raw + off, raw_len - off, n, g_f3[col][k].width, &rd[k], &used));
    off += used;
  }
  BA_RETURN_IF(col != BA_COLID_FRAME && off != raw_len, BA_ERR_CORRUPT);
  *fields = off;
  return BA_OK;
}

/* FRAME: caplen of every row (bounded, summing to the frame bytes), so a
 * row's frame is found at the prefix sum. */
static int frame_offsets(ba_if_reader_t *caplen, size_t n, size_t frame_bytes, uint64_t *start) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t c;
    BA_FORWARD(ba_if_get(caplen, i, &c));
    BA_RETURN_IF(c > BA_MAX_CAPLEN, BA_ERR_CORRUPT);
    start[i] = sum;
    sum += c;
  }
  BA_RETURN_IF(sum != frame_bytes, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_col3_absent_is_zero(int col) {
  if (col < 0 || col >= BA_NCOLS3) return 0;
  for (size_t k = 0; k < nfields(col); k++)
    if (g_f3[col][k].kind == K_DUR) return 0;
  return 1;
}

/* An absent column: every field's stored value is 0 (LAST: no duration, so
 * last_ns = first_ns; FRAME: no frame). */
static void set_absent(int col, ba_record_t *r, size_t n) {
  size_t nf = nfields(col);
  for (size_t k = 0; k < nf; k++)
    for (size_t i = 0; i < n; i++) f3_set(&r[i], &g_f3[col][k], 0);
  if (col == BA_COLID_FRAME)
    for (size_t i = 0; i < n; i++) r[i].frame = NULL;
}

int ba_col3_decode(int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r, size_t *fields) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS3, BA_ERR_INVALID);
  size_t nf = nfields(col), off = 0;
  if (raw_len == 0 && col != BA_COLID_META) {
    set_absent(col, r, n);
    *fields = 0;
    return BA_OK;
  }
  uint64_t *v = ba_malloc((n ? n : 1) * sizeof *v);
  BA_RETURN_IF(!v, BA_ERR_NOMEM);
  int rc = BA_OK;
  for (size_t k = 0; k < nf && rc == BA_OK; k++) {
    const f3_t *f = &g_f3[col][k];
    size_t used = 0;
    rc = ba_if_decode(raw + off, raw_len - off, n, f->width, 0, v, &used);
    if (rc == BA_OK)
      for (size_t i = 0; i < n; i++) f3_set(&r[i], f, v[i]);
    off += used;
  }
  ba_free(v);
  BA_FORWARD(rc);
  if (col == BA_COLID_FRAME) BA_FORWARD(ba_col_frames_fit(r, n, raw_len - off));
  else BA_RETURN_IF(off != raw_len, BA_ERR_CORRUPT);
  *fields = off;
  return BA_OK;
}

int ba_col3_decode_rows(int col, const uint8_t *raw, size_t raw_len, size_t n, const uint32_t *rows,
                        size_t k, ba_record_t *out) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS3, BA_ERR_INVALID);
  for (size_t j = 0; j < k; j++) BA_RETURN_IF(rows[j] >= n || (j && rows[j] <= rows[j - 1]), BA_ERR_INVALID);
  if (raw_len == 0 && col != BA_COLID_META) {
    set_absent(col, out, k);
    return BA_OK;
  }
  ba_if_reader_t rd[BA_COL3_MAXF];
  size_t nf = nfields(col), fields = 0;
  BA_FORWARD(open_fields(col, raw, raw_len, n, rd, &fields));
  uint64_t v[256];
  for (size_t f = 0; f < nf; f++)
    for (size_t j0 = 0; j0 < k; j0 += BA_ARRAY_LEN(v)) {
      size_t m = BA_MIN(k - j0, BA_ARRAY_LEN(v));
      BA_FORWARD(ba_if_get_rows(&rd[f], rows + j0, m, v));
      set_many(out + j0, &g_f3[col][f], v, m);
    }
  if (col == BA_COLID_META) BA_FORWARD(ba_col_meta_ok(out, k));
  if (col == BA_COLID_FRAME) {
    uint64_t *start = ba_malloc((n ? n : 1) * sizeof *start);
    BA_RETURN_IF(!start, BA_ERR_NOMEM);
    ba_if_reader_t cap = rd[0];
    cap.cur = 0;
    cap.acc = 0;
    int rc = frame_offsets(&cap, n, raw_len - fields, start);
    for (size_t j = 0; j < k && rc == BA_OK; j++)
      out[j].frame = out[j].caplen ? raw + fields + start[rows[j]] : NULL;
    ba_free(start);
    BA_FORWARD(rc);
  }
  return BA_OK;
}

int ba_col3_field_at(size_t off, int *col, int *k, unsigned *width) {
  for (int c = 0; c < BA_NCOLS3; c++)
    for (size_t f = 0; f < nfields(c); f++)
      if (g_f3[c][f].off == off) {
        *col = c;
        *k = (int)f;
        *width = g_f3[c][f].width;
        return 0;
      }
  return -1;
}

/* Below this share of a group's rows (1/8) a field's values are read one by
 * one (ba_if_get_rows); at or above it the whole field is decoded in one
 * sequential pass and the rows picked from it (as reader_sums.c). */
#define FIELD_SPARSE_DIV 8

int ba_col3_field_values(int col, int k, const uint8_t *raw, size_t raw_len, size_t n, const uint32_t *idx,
                         size_t m, uint64_t *v) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS3 || k < 0 || (size_t)k >= nfields(col), BA_ERR_INVALID);
  if (raw_len == 0 && col != BA_COLID_META) { /* absent: every stored value 0 */
    memset(v, 0, (idx ? m : n) * sizeof *v);
    return BA_OK;
  }
  size_t off = 0, used = 0, nf = nfields(col);
  ba_if_reader_t rd;
  for (int f = 0; f < k; f++) { /* skip the fields before k (their headers give their lengths) */
    BA_FORWARD(ba_if_open(raw + off, raw_len - off, n, g_f3[col][f].width, &rd, &used));
    off += used;
  }
  unsigned w = g_f3[col][k].width;
  size_t k_used = 0;
  BA_FORWARD(ba_if_open(raw + off, raw_len - off, n, w, &rd, &k_used));
  if (rd.bits == 0 && n) { /* one value in every row (no bits per value: FOR, DELTA, a 1-entry DICT) */
    uint64_t x = 0;
    BA_FORWARD(ba_if_get(&rd, 0, &x));
    for (size_t j = 0, e = idx ? m : n; j < e; j++) v[j] = x;
    used = k_used;
  } else if (!idx || m >= n / FIELD_SPARSE_DIV) {
    BA_FORWARD(ba_if_decode(raw + off, raw_len - off, n, w, 0, v, &used));
    if (idx)
      for (size_t j = 0; j < m; j++) v[j] = v[idx[j]]; /* idx ascending: idx[j] >= j */
  } else {
    used = k_used;
    BA_FORWARD(ba_if_get_rows(&rd, idx, m, v));
  }
  /* the last field ends the payload (FRAME: the frames follow) */
  BA_RETURN_IF((size_t)k + 1 == nf && col != BA_COLID_FRAME && off + used != raw_len, BA_ERR_CORRUPT);
  return BA_OK;
}
