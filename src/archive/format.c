/* Segment format pieces shared by writer, reader and recovery: headers,
 * footers, compressors, column (de)transposition, attribute values. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "archive/archive.h"
#include "archive/col3.h"
#include "archive/intfield.h"
#include "common/common.h"

/* ---------- names ---------- */
static const char *const g_attr_names[BA_ATTR_COUNT] = {
    "src_ip0", "src_ip1", "src_ip2", "src_ip3", "dst_ip0", "dst_ip1", "dst_ip2",
    "dst_ip3", "src_port", "dst_port", "proto", "tcp_flags", "time_bin", "ipver", "src_port_bin",
    "dst_port_bin", "src_v6net", "dst_v6net", "src_v6host", "dst_v6host"};

const char *ba_attr_name(ba_attr_t a) {
  return ((unsigned)a < BA_ATTR_COUNT) ? g_attr_names[a] : "unknown";
}

static const char *const g_compress_names[] = {NULL, "lzo", "lz4", "zstd", "none"};

const char *ba_compress_name(ba_compress_t c) {
  return (c >= BA_COMPRESS_LZO && c <= BA_COMPRESS_NONE) ? g_compress_names[c] : "unknown";
}

int ba_compress_from_name(const char *name, ba_compress_t *out) {
  BA_RETURN_IF(!name || !out, BA_ERR_INVALID);
  for (int c = BA_COMPRESS_LZO; c <= BA_COMPRESS_NONE; c++)
    if (!strcmp(name, g_compress_names[c])) {
      *out = (ba_compress_t)c;
      return BA_OK;
    }
  return BA_ERR_INVALID;
}

/* ---------- block header ---------- */
void ba_blk_hdr_encode(const ba_blk_hdr_t *h, uint8_t out[BA_BLK_HDR_BYTES]) {
  memcpy(out, BA_BLK_MAGIC, 4);
  out[4] = h->type;
  out[5] = h->col;
  out[6] = h->compress;
  out[7] = 0;
  ba_store_le32(out + 8, h->rows);
  ba_store_le32(out + 12, h->raw_len);
  ba_store_le32(out + 16, h->comp_len);
  ba_store_le32(out + 20, h->group);
  ba_store_le32(out + 24, h->payload_crc);
  ba_store_le32(out + 28, ba_crc32c(0, out, 28));
}

int ba_blk_hdr_decode(const uint8_t in[BA_BLK_HDR_BYTES], ba_blk_hdr_t *h) {
  BA_RETURN_IF(ba_crc32c(0, in, 28) != ba_load_le32(in + 28), BA_ERR_CHECKSUM);
  BA_RETURN_IF(memcmp(in, BA_BLK_MAGIC, 4) != 0, BA_ERR_CORRUPT);
  BA_RETURN_IF(in[7] != 0, BA_ERR_CORRUPT);
  h->type = in[4];
  h->col = in[5];
  h->compress = in[6];
  h->rows = ba_load_le32(in + 8);
  h->raw_len = ba_load_le32(in + 12);
  h->comp_len = ba_load_le32(in + 16);
  h->group = ba_load_le32(in + 20);
  h->payload_crc = ba_load_le32(in + 24);
  BA_RETURN_IF(h->compress < BA_COMPRESS_LZO || h->compress > BA_COMPRESS_NONE, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->compress == BA_COMPRESS_NONE && h->raw_len != h->comp_len, BA_ERR_CORRUPT);
  return BA_OK;
}

/* ---------- segment header and footer ---------- */
void ba_seg_hdr_encode(const ba_seg_hdr_t *h, uint8_t out[BA_SEG_HDR_BYTES]) {
  memset(out, 0, BA_SEG_HDR_BYTES);
  memcpy(out, BA_SEG_MAGIC, 8);
  /* A rewritten segment (reindex) keeps the version its row groups were
   * written in; a zero major means "the current version". */
  ba_store_le16(out + 8, h->major ? h->major : BA_SEG_MAJOR);
  ba_store_le16(out + 10, h->major ? h->minor : BA_SEG_MINOR);
  ba_store_le32(out + 12, h->flags);
  ba_store_le64(out + 16, h->start_ns);
  ba_store_le64(out + 24, h->end_ns);
  ba_store_le32(out + 32, h->block_rows);
  ba_store_le32(out + 36, h->time_bin_seconds);
  out[40] = h->codec;
  out[41] = h->compress;
  ba_store_le16(out + 42, h->ncols);
  ba_store_le32(out + 60, ba_crc32c(0, out, 60));
}

int ba_seg_hdr_decode(const uint8_t in[BA_SEG_HDR_BYTES], ba_seg_hdr_t *h) {
  BA_RETURN_IF(memcmp(in, BA_SEG_MAGIC, 8) != 0, BA_ERR_NOT_OURS);
  BA_RETURN_IF(ba_crc32c(0, in, 60) != ba_load_le32(in + 60), BA_ERR_CHECKSUM);
  BA_RETURN_IF(ba_load_le16(in + 8) > BA_SEG_MAJOR, BA_ERR_VERSION);
  BA_RETURN_IF(ba_load_le16(in + 8) < 1, BA_ERR_CORRUPT);
  h->major = ba_load_le16(in + 8);
  h->minor = ba_load_le16(in + 10);
  for (int i = 44; i < 60; i++) BA_RETURN_IF(in[i] != 0, BA_ERR_CORRUPT);
  h->flags = ba_load_le32(in + 12);
  h->start_ns = ba_load_le64(in + 16);
  h->end_ns = ba_load_le64(in + 24);
  h->block_rows = ba_load_le32(in + 32);
  h->time_bin_seconds = ba_load_le32(in + 36);
  h->codec = in[40];
  h->compress = in[41];
  h->ncols = ba_load_le16(in + 42);
  BA_RETURN_IF(h->flags & ~(BA_SEG_FLAG_OLSH | BA_SEG_FLAG_CLUSTER), BA_ERR_CORRUPT);
  BA_RETURN_IF(h->end_ns <= h->start_ns, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->block_rows == 0 || h->block_rows > BA_MAX_BLOCK_ROWS, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->time_bin_seconds == 0, BA_ERR_CORRUPT);
  BA_RETURN_IF(ba_attr_domain(BA_ATTR_TIME_BIN, h->end_ns - h->start_ns,
                              (uint64_t)h->time_bin_seconds * 1000000000ull) == 0,
               BA_ERR_CORRUPT);
  BA_RETURN_IF(!ba_codec_name((ba_codec_t)h->codec), BA_ERR_UNSUPPORTED);
  BA_RETURN_IF(h->compress < BA_COMPRESS_LZO || h->compress > BA_COMPRESS_NONE, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->ncols < ba_seg_ncols(h->major), BA_ERR_CORRUPT);
  BA_RETURN_IF(h->ncols > ba_seg_ncols(h->major), BA_ERR_UNSUPPORTED);
  return BA_OK;
}

void ba_seg_footer_encode(const ba_seg_footer_t *f, uint8_t out[BA_SEG_FOOTER_BYTES]) {
  memset(out, 0, BA_SEG_FOOTER_BYTES);
  ba_store_le64(out, f->rows);
  ba_store_le64(out + 8, f->min_first);
  ba_store_le64(out + 16, f->max_first);
  ba_store_le64(out + 24, f->table_off);
  ba_store_le64(out + 32, f->dir_off);
  ba_store_le64(out + 40, f->index_off);
  ba_store_le32(out + 48, f->ngroups);
  ba_store_le32(out + 52, f->kinds);
  ba_store_le64(out + 56, f->zone_off);
  ba_store_le32(out + 64, ba_crc32c(0, out, 64));
  memcpy(out + 72, BA_SEG_END_MAGIC, 8);
}

int ba_seg_footer_decode(const uint8_t in[BA_SEG_FOOTER_BYTES], ba_seg_footer_t *f) {
  BA_RETURN_IF(memcmp(in + 72, BA_SEG_END_MAGIC, 8) != 0, BA_ERR_TRUNCATED);
  BA_RETURN_IF(ba_crc32c(0, in, 64) != ba_load_le32(in + 64), BA_ERR_CHECKSUM);
  for (int i = 68; i < 72; i++) BA_RETURN_IF(in[i] != 0, BA_ERR_CORRUPT);
  f->rows = ba_load_le64(in);
  f->min_first = ba_load_le64(in + 8);
  f->max_first = ba_load_le64(in + 16);
  f->table_off = ba_load_le64(in + 24);
  f->dir_off = ba_load_le64(in + 32);
  f->index_off = ba_load_le64(in + 40);
  f->ngroups = ba_load_le32(in + 48);
  f->kinds = ba_load_le32(in + 52);
  f->zone_off = ba_load_le64(in + 56); /* 0: no zone maps; checked against the layout by the reader */
  BA_RETURN_IF(f->rows == 0 || f->ngroups == 0 || f->kinds == 0 || f->kinds > 3, BA_ERR_CORRUPT);
  BA_RETURN_IF(f->min_first > f->max_first, BA_ERR_CORRUPT);
  return BA_OK;
}

/* ---------- compressors ---------- */
size_t ba_compress_wrkmem(void) { return LZO1X_1_MEM_COMPRESS; }

size_t ba_compress_bound(ba_compress_t c, size_t raw) {
  switch (c) {
    case BA_COMPRESS_LZO: return raw + raw / 16 + 64 + 3;
    case BA_COMPRESS_LZ4: return (size_t)LZ4_compressBound((int)raw);
    case BA_COMPRESS_ZSTD: return ZSTD_compressBound(raw);
    default: return raw;
  }
}

static pthread_once_t g_lzo_once = PTHREAD_ONCE_INIT;
static int g_lzo_ok;
static void lzo_init_once(void) { g_lzo_ok = lzo_init() == LZO_E_OK; }

int ba_compress_block(ba_compress_t c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                      size_t *out, void *wrk) {
  BA_RETURN_IF(n > 0x7F000000u, BA_ERR_OVERFLOW);
  switch (c) {
    case BA_COMPRESS_LZO: {
      pthread_once(&g_lzo_once, lzo_init_once);
      BA_RETURN_IF(!g_lzo_ok || !wrk, BA_ERR_UNSUPPORTED);
      BA_RETURN_IF(cap < ba_compress_bound(c, n), BA_ERR_OVERFLOW);
      lzo_uint ol = cap;
      BA_RETURN_IF(lzo1x_1_compress(src, n, dst, &ol, wrk) != LZO_E_OK, BA_ERR_INVALID);
      *out = ol;
      return BA_OK;
    }
    case BA_COMPRESS_LZ4: {
      int r = LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)BA_MIN(cap, 0x7FFFFFFFu));
      BA_RETURN_IF(r <= 0 && n > 0, BA_ERR_OVERFLOW);
      *out = (size_t)(r < 0 ? 0 : r);
      return BA_OK;
    }
    case BA_COMPRESS_ZSTD: {
      size_t r = ZSTD_compress(dst, cap, src, n, 1);
      BA_RETURN_IF(ZSTD_isError(r), BA_ERR_OVERFLOW);
      *out = r;
      return BA_OK;
    }
    case BA_COMPRESS_NONE:
      BA_RETURN_IF(cap < n, BA_ERR_OVERFLOW);
      if (n) memcpy(dst, src, n);
      *out = n;
      return BA_OK;
  }
  return BA_ERR_INVALID;
}

int ba_decompress_block(ba_compress_t c, const uint8_t *src, size_t n, uint8_t *dst, size_t raw) {
  switch (c) {
    case BA_COMPRESS_LZO: {
      pthread_once(&g_lzo_once, lzo_init_once);
      BA_RETURN_IF(!g_lzo_ok, BA_ERR_UNSUPPORTED);
      lzo_uint ol = raw;
      int r = lzo1x_decompress_safe(src, n, dst, &ol, NULL);
      BA_RETURN_IF(r != LZO_E_OK || ol != raw, BA_ERR_CORRUPT);
      return BA_OK;
    }
    case BA_COMPRESS_LZ4: {
      BA_RETURN_IF(n > 0x7FFFFFFFu || raw > 0x7FFFFFFFu, BA_ERR_CORRUPT);
      int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)raw);
      BA_RETURN_IF(r < 0 || (size_t)r != raw, BA_ERR_CORRUPT);
      return BA_OK;
    }
    case BA_COMPRESS_ZSTD: {
      size_t r = ZSTD_decompress(dst, raw, src, n);
      BA_RETURN_IF(ZSTD_isError(r) || r != raw, BA_ERR_CORRUPT);
      return BA_OK;
    }
    case BA_COMPRESS_NONE:
      BA_RETURN_IF(n != raw, BA_ERR_CORRUPT);
      if (n) memcpy(dst, src, n);
      return BA_OK;
  }
  return BA_ERR_CORRUPT;
}

/* ---------- columns ---------- */
/* 1.0: every multi-byte field is stored as byte planes (byte 0 of every row,
 * then byte 1, ...): constant high bytes become long runs that LZO
 * compresses. 2.0 (doc/format.md §3.2): every integer field is transformed
 * per block (frame of reference with a common scale, row-to-row deltas, or a
 * dictionary) and bit-packed at the width its values need, LAST is stored
 * relative to FIRST, addresses keep byte planes. LZO has no entropy coder:
 * a field with four values in random order costs it a byte per row as a
 * byte plane, two bits packed. */
static const uint8_t g_col_width[BA_NCOLS2] = {8, 8, 16, 16, 4, 1, 1, 1, 8, 8, 8, 8, 16, 2, 2, 10, 2};

enum { FK_INT = 0, FK_ADDR = 1, FK_DUR = 2 /* last_ns: relative to first_ns in 2.0 */ };

typedef struct colfield {
  uint16_t off;   /* offsetof in ba_record_t */
  uint8_t width;  /* bytes */
  uint8_t kind;   /* FK_* */
} colfield_t;

#define F(field, w) {(uint16_t)offsetof(ba_record_t, field), w, FK_INT}
#define A(field) {(uint16_t)offsetof(ba_record_t, field), 16, FK_ADDR}
static const colfield_t g_fields[BA_NCOLS2][3] = {
    {F(first_ns, 8)}, {{(uint16_t)offsetof(ba_record_t, last_ns), 8, FK_DUR}}, {A(src)}, {A(dst)},
    {F(src_port, 2), F(dst_port, 2)}, {F(proto, 1)}, {F(tcp_flags, 1)}, {F(tos, 1)},
    {F(src_as, 4), F(dst_as, 4)}, {F(in_if, 4), F(out_if, 4)}, {F(packets, 8)}, {F(bytes, 8)},
    {A(exporter)}, {F(vlan, 2)}, {F(icmp_type, 1), F(icmp_code, 1)},
    {F(caplen, 4), F(wirelen, 4), F(linktype, 2)}, {F(kind, 1), F(ipver, 1)}};
#undef F
#undef A

static void field_set(ba_record_t *r, const colfield_t *f, uint64_t v) {
  uint8_t *p = (uint8_t *)r + f->off;
  switch (f->width) {
    case 1: *p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
  }
}

static inline uint64_t field_get(const ba_record_t *r, unsigned off, unsigned w) {
  const uint8_t *p = (const uint8_t *)r + off;
  if (w == 1) return *p;
  if (w == 2) {
    uint16_t x;
    memcpy(&x, p, 2);
    return x;
  }
  if (w == 4) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
  }
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The 3.0 table holds every field of 1.0 and 2.0 columns too. */
void ba_col_clear(int col, ba_record_t *r, size_t n) { ba_col3_clear(col, r, n); }

static int major_ok(int major) { return major >= 1 && major <= 3; }

size_t ba_col_raw_min(int major, int col, size_t n) {
  if (major >= 3) return ba_col3_raw_min(col, n);
  if (major < 2) return (size_t)g_col_width[col] * n;
  size_t s = 0;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++)
    s += g_fields[col][k].kind == FK_ADDR ? 16 * n : BA_COL2_FIELD_HDR;
  return s;
}

size_t ba_col_raw_max(int major, int col, size_t n, size_t frame_bytes) {
  if (major >= 3) return ba_col3_raw_max(col, n, frame_bytes);
  size_t s = major < 2 ? (size_t)g_col_width[col] * n : 0;
  if (major >= 2)
    for (int k = 0; k < 3 && g_fields[col][k].width; k++) {
      const colfield_t *f = &g_fields[col][k];
      /* header, a dictionary of up to n entries, n packed values of <= 64 bits */
      s += f->kind == FK_ADDR ? 16 * n : BA_COL2_FIELD_HDR + (size_t)f->width * n + 8 * n;
    }
  return s + (col == BA_COLID_FRAME ? frame_bytes : 0);
}

uint32_t ba_col_deps(int major, int col) {
  return major >= 2 && col == 1 ? 1u : 0u; /* 2.0 LAST needs FIRST */
}

/* Byte planes of an integer field of constant width W (inlined per width so
 * the inner loop unrolls). */
static inline void planes_int(const ba_record_t *r, size_t n, size_t off, unsigned W,
                              uint8_t *out) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = field_get(&r[i], (unsigned)off, W);
    for (unsigned b = 0; b < W; b++) out[b * n + i] = (uint8_t)(v >> (8 * b));
  }
}

/* 16 byte planes of an address field. */
static void addr_planes_put(const ba_record_t *r, size_t n, unsigned off, uint8_t *out) {
  for (size_t i = 0; i < n; i++) {
    const uint8_t *p = (const uint8_t *)&r[i] + off;
    for (unsigned b = 0; b < 16; b++) out[b * n + i] = p[b];
  }
}
static void addr_planes_get(const uint8_t *in, size_t n, unsigned off, ba_record_t *r) {
  for (size_t i = 0; i < n; i++) {
    uint8_t *p = (uint8_t *)&r[i] + off;
    for (unsigned b = 0; b < 16; b++) p[b] = in[b * n + i];
  }
}

static size_t encode_v1(int col, const ba_record_t *r, size_t n, const uint8_t *frames,
                        size_t frame_bytes, uint8_t *out) {
  uint8_t *start = out;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++) {
    const colfield_t *f = &g_fields[col][k];
    if (f->kind == FK_ADDR) {
      addr_planes_put(r, n, f->off, out);
    } else if (f->width == 1) {
      for (size_t i = 0; i < n; i++) out[i] = *((const uint8_t *)&r[i] + f->off);
    } else if (f->width == 2) {
      planes_int(r, n, f->off, 2, out);
    } else if (f->width == 4) {
      planes_int(r, n, f->off, 4, out);
    } else {
      planes_int(r, n, f->off, 8, out);
    }
    out += (size_t)f->width * n;
  }
  if (col == BA_COLID_FRAME && frame_bytes) memcpy(out, frames, frame_bytes);
  return (size_t)(out - start) + (col == BA_COLID_FRAME ? frame_bytes : 0);
}

/* The field's values of rows [0, n) (LAST: minus first_ns), one loop per width. */
static void field_load(const ba_record_t *r, size_t n, const colfield_t *f, uint64_t *v) {
  unsigned off = f->off;
  switch (f->width) {
    case 1: for (size_t i = 0; i < n; i++) v[i] = field_get(&r[i], off, 1); break;
    case 2: for (size_t i = 0; i < n; i++) v[i] = field_get(&r[i], off, 2); break;
    case 4: for (size_t i = 0; i < n; i++) v[i] = field_get(&r[i], off, 4); break;
    default: for (size_t i = 0; i < n; i++) v[i] = field_get(&r[i], off, 8); break;
  }
  if (f->kind == FK_DUR)
    for (size_t i = 0; i < n; i++) v[i] -= r[i].first_ns;
}

/* The inverse (LAST: plus first_ns, which must be decoded already). */
static void field_store(ba_record_t *r, size_t n, const colfield_t *f, const uint64_t *v) {
  uint8_t *base = (uint8_t *)r + f->off;
  int dur = f->kind == FK_DUR;
  switch (f->width) {
    case 1: for (size_t i = 0; i < n; i++) base[i * sizeof *r] = (uint8_t)v[i]; break;
    case 2:
      for (size_t i = 0; i < n; i++) {
        uint16_t x = (uint16_t)v[i];
        memcpy(base + i * sizeof *r, &x, 2);
      }
      break;
    case 4:
      for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)v[i];
        memcpy(base + i * sizeof *r, &x, 4);
      }
      break;
    default:
      for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i] + (dur ? r[i].first_ns : 0);
        memcpy(base + i * sizeof *r, &x, 8);
      }
      break;
  }
}

static int encode_v2(int col, const ba_record_t *r, size_t n, const uint8_t *frames,
                     size_t frame_bytes, uint8_t *out, size_t *len, ba_col_scratch_t *x) {
  ba_col_scratch_t *own = NULL;
  if (!x) {
    BA_FORWARD(ba_col_scratch_create(&own));
    x = own;
  }
  uint64_t *v = NULL;
  int vrc = ba_if_scratch_values(x, n, &v);
  if (vrc < 0) {
    ba_col_scratch_free(own);
    return vrc;
  }
  uint8_t *p = out;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++) {
    const colfield_t *f = &g_fields[col][k];
    if (f->kind == FK_ADDR) {
      addr_planes_put(r, n, f->off, p);
      p += 16 * n;
    } else {
      field_load(r, n, f, v);
      p += ba_if_encode(x, v, n, f->width, 1, p);
    }
  }
  ba_col_scratch_free(own);
  if (col == BA_COLID_FRAME && frame_bytes) {
    memcpy(p, frames, frame_bytes);
    p += frame_bytes;
  }
  *len = (size_t)(p - out);
  return BA_OK;
}

int ba_col_encode(int major, int col, const ba_record_t *r, size_t n, const uint8_t *frames,
                  size_t frame_bytes, uint8_t *out, size_t *len, ba_col_scratch_t *x) {
  BA_RETURN_IF(col < 0 || col >= (int)ba_seg_ncols(major) || !major_ok(major) || !len, BA_ERR_INVALID);
  if (major >= 3) return ba_col3_encode(col, r, n, frames, frame_bytes, out, len, x);
  if (major >= 2) return encode_v2(col, r, n, frames, frame_bytes, out, len, x);
  *len = encode_v1(col, r, n, frames, frame_bytes, out);
  return BA_OK;
}

/* Returns the bytes of fixed-layout fields consumed (frames follow them). */
static int decode_v1(int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r,
                     size_t *fields) {
  size_t fixed = (size_t)g_col_width[col] * n;
  BA_RETURN_IF(col != BA_COLID_FRAME && raw_len != fixed, BA_ERR_CORRUPT);
  BA_RETURN_IF(raw_len < fixed, BA_ERR_CORRUPT);
  if (col == BA_COLID_FRAME) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
      uint32_t cl = (uint32_t)raw[i] | (uint32_t)raw[n + i] << 8 | (uint32_t)raw[2 * n + i] << 16 |
                    (uint32_t)raw[3 * n + i] << 24;
      BA_RETURN_IF(cl > BA_MAX_CAPLEN, BA_ERR_CORRUPT);
      sum += cl;
    }
    BA_RETURN_IF(sum != raw_len - fixed, BA_ERR_CORRUPT);
  }
  const uint8_t *in = raw;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++) {
    const colfield_t *f = &g_fields[col][k];
    if (f->kind == FK_ADDR) {
      addr_planes_get(in, n, f->off, r);
    } else if (f->width == 1) {
      for (size_t i = 0; i < n; i++) *((uint8_t *)&r[i] + f->off) = in[i];
    } else {
      for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (unsigned b = 0; b < f->width; b++) v |= (uint64_t)in[b * n + i] << (8 * b);
        field_set(&r[i], f, v);
      }
    }
    in += (size_t)f->width * n;
  }
  *fields = fixed;
  return BA_OK;
}

static int decode_v2(int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r,
                     size_t *fields) {
  uint64_t *v = NULL;
  size_t off = 0;
  int rc = BA_OK;
  for (int k = 0; k < 3 && g_fields[col][k].width && rc == BA_OK; k++) {
    const colfield_t *f = &g_fields[col][k];
    if (f->kind == FK_ADDR) {
      if (16 * n > raw_len - off) {
        rc = BA_ERR_CORRUPT;
        break;
      }
      addr_planes_get(raw + off, n, f->off, r);
      off += 16 * n;
      continue;
    }
    if (!v && !(v = ba_malloc((n ? n : 1) * sizeof *v))) {
      rc = BA_ERR_NOMEM;
      break;
    }
    size_t used = 0;
    rc = ba_if_decode(raw + off, raw_len - off, n, f->width, 1, v, &used);
    if (rc == BA_OK) field_store(r, n, f, v);
    off += used;
  }
  ba_free(v);
  BA_FORWARD(rc);
  if (col == BA_COLID_FRAME) BA_FORWARD(ba_col_frames_fit(r, n, raw_len - off));
  else BA_RETURN_IF(off != raw_len, BA_ERR_CORRUPT);
  *fields = off;
  return BA_OK;
}

int ba_col_frames_fit(const ba_record_t *r, size_t n, size_t frame_bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    BA_RETURN_IF(r[i].caplen > BA_MAX_CAPLEN, BA_ERR_CORRUPT);
    sum += r[i].caplen;
  }
  BA_RETURN_IF(sum != frame_bytes, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_col_meta_ok(const ba_record_t *r, size_t n) {
  for (size_t i = 0; i < n; i++) BA_RETURN_IF(r[i].kind != BA_REC_FLOW && r[i].kind != BA_REC_PACKET, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_col_decode(int major, int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r) {
  BA_RETURN_IF(col < 0 || col >= (int)ba_seg_ncols(major) || !major_ok(major), BA_ERR_INVALID);
  size_t fields = 0;
  BA_FORWARD(major >= 3   ? ba_col3_decode(col, raw, raw_len, n, r, &fields)
             : major >= 2 ? decode_v2(col, raw, raw_len, n, r, &fields)
                          : decode_v1(col, raw, raw_len, n, r, &fields));
  if (col == BA_COLID_META) BA_FORWARD(ba_col_meta_ok(r, n));
  if (col == BA_COLID_FRAME) {
    const uint8_t *fp = raw ? raw + fields : NULL; /* NULL: an absent 3.0 column */
    for (size_t i = 0; i < n; i++) {
      r[i].frame = r[i].caplen ? fp : NULL;
      if (fp) fp += r[i].caplen; /* no arithmetic on NULL (absent: every caplen is 0) */
    }
  }
  return BA_OK;
}

int ba_col_decode_rows(int major, int col, const uint8_t *raw, size_t raw_len, size_t n,
                       const uint32_t *rows, size_t k, ba_record_t *out) {
  BA_RETURN_IF(major != 3, BA_ERR_INVALID);
  return ba_col3_decode_rows(col, raw, raw_len, n, rows, k, out);
}

int ba_group_check(const uint8_t *p, uint32_t raw_len, int major, uint32_t gi, uint32_t block_rows,
                   uint32_t *rows, uint32_t lens[BA_NCOLS_MAX]) {
  unsigned nc = ba_seg_ncols(major);
  BA_RETURN_IF(raw_len != ba_group_payload_bytes(nc), BA_ERR_CORRUPT);
  *rows = ba_load_le32(p + 4);
  BA_RETURN_IF(ba_load_le32(p) != gi || *rows == 0 || *rows > block_rows || ba_load_le32(p + 8) != nc ||
                   ba_load_le32(p + 12) != 0 || ba_load_le64(p + 16) != (uint64_t)gi * block_rows,
               BA_ERR_CORRUPT);
  for (unsigned c = 0; c < nc; c++) {
    lens[c] = ba_load_le32(p + 24 + 4 * c);
    /* Only 3.0 has absent columns, and never META. */
    BA_RETURN_IF(lens[c] == 0 && (major < 3 || c == BA_COLID_META), BA_ERR_CORRUPT);
    BA_RETURN_IF(lens[c] != 0 && lens[c] < BA_BLK_HDR_BYTES, BA_ERR_CORRUPT);
  }
  return BA_OK;
}

/* ---------- index attribute values ---------- */
uint32_t ba_attr_domain(ba_attr_t a, uint64_t slice_ns, uint64_t bin_ns) {
  switch (a) {
    case BA_ATTR_SRC_PORT:
    case BA_ATTR_DST_PORT: return 65536;
    case BA_ATTR_SRC_V6NET:
    case BA_ATTR_DST_V6NET:
    case BA_ATTR_SRC_V6HOST:
    case BA_ATTR_DST_V6HOST: return 1u << BA_V6_HASH_BITS;
    case BA_ATTR_SRC_PORT_BIN:
    case BA_ATTR_DST_PORT_BIN: return BA_PORT_NBINS;
    case BA_ATTR_TIME_BIN: {
      if (!bin_ns) return 0;
      uint64_t nb = (slice_ns + bin_ns - 1) / bin_ns;
      return (nb == 0 || nb > BA_IDX_MAX_DOMAIN) ? 0 : (uint32_t)nb;
    }
    case BA_ATTR_IPVER: return 256;
    default: return 256;
  }
}

void ba_attr_values(ba_attr_t a, const ba_record_t *r, size_t n, uint64_t slice_start,
                    uint64_t bin_ns, uint32_t *out) {
  size_t i;
  switch (a) {
    case BA_ATTR_SRC_IP0: case BA_ATTR_SRC_IP1: case BA_ATTR_SRC_IP2: case BA_ATTR_SRC_IP3: {
      int b = 12 + (int)(a - BA_ATTR_SRC_IP0);
      for (i = 0; i < n; i++) out[i] = r[i].ipver == 4 ? r[i].src[b] : BA_IDX_NONE;
      break;
    }
    case BA_ATTR_DST_IP0: case BA_ATTR_DST_IP1: case BA_ATTR_DST_IP2: case BA_ATTR_DST_IP3: {
      int b = 12 + (int)(a - BA_ATTR_DST_IP0);
      for (i = 0; i < n; i++) out[i] = r[i].ipver == 4 ? r[i].dst[b] : BA_IDX_NONE;
      break;
    }
    case BA_ATTR_SRC_PORT: for (i = 0; i < n; i++) out[i] = r[i].src_port; break;
    case BA_ATTR_DST_PORT: for (i = 0; i < n; i++) out[i] = r[i].dst_port; break;
    case BA_ATTR_PROTO: for (i = 0; i < n; i++) out[i] = r[i].proto; break;
    case BA_ATTR_TCP_FLAGS: for (i = 0; i < n; i++) out[i] = r[i].tcp_flags; break;
    case BA_ATTR_TIME_BIN:
      for (i = 0; i < n; i++) out[i] = (uint32_t)((r[i].first_ns - slice_start) / bin_ns);
      break;
    case BA_ATTR_IPVER: for (i = 0; i < n; i++) out[i] = r[i].ipver; break;
    case BA_ATTR_SRC_V6NET: case BA_ATTR_DST_V6NET: case BA_ATTR_SRC_V6HOST: case BA_ATTR_DST_V6HOST: {
      int dst = a == BA_ATTR_DST_V6NET || a == BA_ATTR_DST_V6HOST;
      unsigned nb = a == BA_ATTR_SRC_V6NET || a == BA_ATTR_DST_V6NET ? 6 : 16;
      for (i = 0; i < n; i++) out[i] = r[i].ipver == 6 ? ba_v6_hash(dst ? r[i].dst : r[i].src, nb) : BA_IDX_NONE;
      break;
    }
    default: for (i = 0; i < n; i++) out[i] = BA_IDX_NONE; break;
  }
}

uint32_t ba_v6_hash(const uint8_t *addr, unsigned nbytes) {
  uint32_t h = 2166136261u;
  for (unsigned i = 0; i < nbytes; i++) h = (h ^ addr[i]) * 16777619u;
  uint32_t v = 0;
  for (; h; h >>= BA_V6_HASH_BITS) v ^= h & ((1u << BA_V6_HASH_BITS) - 1);
  return v;
}

/* ---------- I/O helpers ---------- */
int ba_pread_full(int fd, void *buf, size_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    BA_RETURN_IF(r < 0, BA_ERR_IO);
    BA_RETURN_IF(r == 0, BA_ERR_TRUNCATED);
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return BA_OK;
}

int ba_write_full(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    BA_RETURN_IF(r <= 0, BA_ERR_IO);
    p += r;
    n -= (size_t)r;
  }
  return BA_OK;
}

int ba_blk_read(int fd, uint64_t off, uint64_t fsize, ba_blk_hdr_t *h, uint8_t **buf,
                size_t *cap) {
  uint8_t hb[BA_BLK_HDR_BYTES];
  BA_RETURN_IF(off > fsize || BA_BLK_HDR_BYTES > fsize - off, BA_ERR_TRUNCATED);
  BA_FORWARD(ba_pread_full(fd, hb, sizeof hb, off));
  BA_FORWARD(ba_blk_hdr_decode(hb, h));
  off += BA_BLK_HDR_BYTES;
  BA_RETURN_IF(h->comp_len > fsize - off, BA_ERR_TRUNCATED);
  if (*cap < (size_t)h->comp_len + 1) {
    void *p = *buf;
    BA_FORWARD(ba_grow(&p, cap, (size_t)h->comp_len + 1, 1));
    *buf = p;
  }
  BA_FORWARD(ba_pread_full(fd, *buf, h->comp_len, off));
  BA_RETURN_IF(ba_crc32c(0, *buf, h->comp_len) != h->payload_crc, BA_ERR_CHECKSUM);
  return BA_OK;
}
