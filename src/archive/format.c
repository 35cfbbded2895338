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
#include "common/common.h"

/* ---------- names ---------- */
static const char *const g_attr_names[BA_ATTR_COUNT] = {
    "src_ip0", "src_ip1", "src_ip2", "src_ip3", "dst_ip0", "dst_ip1", "dst_ip2",
    "dst_ip3", "src_port", "dst_port", "proto", "tcp_flags", "time_bin", "ipver"};

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

int ba_seg_name(uint64_t start_ns, unsigned seq, char *out, size_t cap) {
  time_t t = (time_t)(start_ns / 1000000000ull);
  struct tm tm;
  BA_RETURN_IF(!gmtime_r(&t, &tm), BA_ERR_INVALID);
  char suffix[16] = "";
  if (seq) snprintf(suffix, sizeof suffix, "-%u", seq);
  int n = snprintf(out, cap, "seg-%04d%02d%02dT%02d%02d%02dZ%s.bitarc", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, suffix);
  BA_RETURN_IF(n < 0 || (size_t)n >= cap, BA_ERR_OVERFLOW);
  return BA_OK;
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
  BA_RETURN_IF(h->flags & ~BA_SEG_FLAG_OLSH, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->end_ns <= h->start_ns, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->block_rows == 0 || h->block_rows > BA_MAX_BLOCK_ROWS, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->time_bin_seconds == 0, BA_ERR_CORRUPT);
  BA_RETURN_IF(ba_attr_domain(BA_ATTR_TIME_BIN, h->end_ns - h->start_ns,
                              (uint64_t)h->time_bin_seconds * 1000000000ull) == 0,
               BA_ERR_CORRUPT);
  BA_RETURN_IF(!ba_codec_name((ba_codec_t)h->codec), BA_ERR_UNSUPPORTED);
  BA_RETURN_IF(h->compress < BA_COMPRESS_LZO || h->compress > BA_COMPRESS_NONE, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->ncols < BA_NCOLS, BA_ERR_CORRUPT);
  BA_RETURN_IF(h->ncols > BA_NCOLS, BA_ERR_UNSUPPORTED);
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
  ba_store_le32(out + 64, ba_crc32c(0, out, 64));
  memcpy(out + 72, BA_SEG_END_MAGIC, 8);
}

int ba_seg_footer_decode(const uint8_t in[BA_SEG_FOOTER_BYTES], ba_seg_footer_t *f) {
  BA_RETURN_IF(memcmp(in + 72, BA_SEG_END_MAGIC, 8) != 0, BA_ERR_TRUNCATED);
  BA_RETURN_IF(ba_crc32c(0, in, 64) != ba_load_le32(in + 64), BA_ERR_CHECKSUM);
  for (int i = 56; i < 64; i++) BA_RETURN_IF(in[i] != 0, BA_ERR_CORRUPT);
  for (int i = 68; i < 72; i++) BA_RETURN_IF(in[i] != 0, BA_ERR_CORRUPT);
  f->rows = ba_load_le64(in);
  f->min_first = ba_load_le64(in + 8);
  f->max_first = ba_load_le64(in + 16);
  f->table_off = ba_load_le64(in + 24);
  f->dir_off = ba_load_le64(in + 32);
  f->index_off = ba_load_le64(in + 40);
  f->ngroups = ba_load_le32(in + 48);
  f->kinds = ba_load_le32(in + 52);
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
static const uint8_t g_col_width[BA_NCOLS] = {8, 8, 16, 16, 4, 1, 1, 1, 8, 8, 8, 8, 16, 2, 2, 10, 2};

enum { FK_INT = 0, FK_ADDR = 1, FK_DUR = 2 /* last_ns: relative to first_ns in 2.0 */ };

typedef struct colfield {
  uint16_t off;   /* offsetof in ba_record_t */
  uint8_t width;  /* bytes */
  uint8_t kind;   /* FK_* */
} colfield_t;

#define F(field, w) {(uint16_t)offsetof(ba_record_t, field), w, FK_INT}
#define A(field) {(uint16_t)offsetof(ba_record_t, field), 16, FK_ADDR}
static const colfield_t g_fields[BA_NCOLS][3] = {
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

void ba_col_clear(int col, ba_record_t *r, size_t n) {
  for (int k = 0; k < 3 && g_fields[col][k].width; k++)
    for (size_t i = 0; i < n; i++) memset((uint8_t *)&r[i] + g_fields[col][k].off, 0, g_fields[col][k].width);
  if (col == BA_COLID_FRAME)
    for (size_t i = 0; i < n; i++) r[i].frame = NULL;
}

static int major_ok(int major) { return major == 1 || major == 2; }

size_t ba_col_raw_min(int major, int col, size_t n) {
  if (major < 2) return (size_t)g_col_width[col] * n;
  size_t s = 0;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++)
    s += g_fields[col][k].kind == FK_ADDR ? 16 * n : BA_COL2_FIELD_HDR;
  return s;
}

size_t ba_col_raw_max(int major, int col, size_t n, size_t frame_bytes) {
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

/* ---- 2.0 integer fields ---- */
enum { XF_FOR = 0, XF_DELTA = 1, XF_DICT = 2, XF_PDICT = 3 };
#define DICT_MAX 256u   /* largest dictionary the writer builds */
#define DICT_SLOTS 512u /* its hash table */
/* PDICT (a dictionary of the frequent values, the rest as exceptions) is
 * tried on fields with more than DICT_MAX distinct values, up to PD_MAX. */
#define PD_MAX 4096u
#define PD_SLOTS 8192u

/* Scratch of column encoding, reused from block to block. */
struct ba_col_scratch {
  uint64_t *v;                 /* n values */
  size_t vcap;
  uint32_t cur;                /* slot h is in use iff stamp[h] == cur */
  uint32_t stamp[PD_SLOTS];    /* PDICT counting table */
  uint64_t pkey[PD_SLOTS];
  uint32_t pcnt[PD_SLOTS];
  uint16_t ins[PD_MAX];        /* slots in use */
  uint64_t cand[PD_MAX][2];    /* (count, value) of values seen twice or more */
};
typedef ba_col_scratch_t enc_scratch_t;

int ba_col_scratch_create(ba_col_scratch_t **out) {
  *out = ba_calloc(1, sizeof **out);
  return *out ? BA_OK : BA_ERR_NOMEM;
}

void ba_col_scratch_free(ba_col_scratch_t *x) {
  if (!x) return;
  ba_free(x->v);
  ba_free(x);
}

static inline uint64_t wmask(unsigned w) { return w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1; }
static inline uint64_t bmask(unsigned b) { return b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1; }

static uint64_t gcd64(uint64_t a, uint64_t b) {
  if (!a) return b;
  if (!b) return a;
  int sh = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) {
      uint64_t t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b);
  return a << sh;
}

/* Zigzag of a w-byte two's-complement difference d (already masked). */
static inline uint64_t zz(uint64_t d, unsigned w, uint64_t m) {
  unsigned sh = 64 - 8 * w;
  int64_t s = (int64_t)(d << sh) >> sh;
  return (((uint64_t)s << 1) ^ (uint64_t)(s >> 63)) & m;
}
static inline uint64_t unzz(uint64_t z, uint64_t m) { return ((z >> 1) ^ (0 - (z & 1))) & m; }
static inline unsigned bitlen(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

static inline uint64_t div_sc(uint64_t x, uint64_t sc) { return sc == 1 ? x : x / sc; }

/* Little-endian bit packing: value i occupies bits [i*b, (i+1)*b). */
typedef struct bitw {
  uint8_t *p;
  uint64_t acc;
  unsigned nacc;
} bitw_t;

static inline void bitw_put(bitw_t *w, uint64_t v, unsigned b) {
  if (!b) return;
  w->acc |= v << w->nacc;
  if (w->nacc + b >= 64) {
    ba_store_le64(w->p, w->acc);
    w->p += 8;
    unsigned rem = w->nacc + b - 64;
    w->acc = rem ? v >> (b - rem) : 0;
    w->nacc = rem;
  } else {
    w->nacc += b;
  }
}

static inline uint8_t *bitw_end(bitw_t *w) {
  for (unsigned k = 0; k < w->nacc; k += 8) *w->p++ = (uint8_t)(w->acc >> k);
  return w->p;
}

/* Value at bit pos of p[0..len) (pos + b <= 8 * len). */
static inline uint64_t bit_get(const uint8_t *p, size_t len, uint64_t pos, unsigned b) {
  if (!b) return 0;
  size_t byte = (size_t)(pos >> 3);
  unsigned off = (unsigned)(pos & 7);
  if (off + b <= 64 && len >= 8 && byte <= len - 8) return (ba_load_le64(p + byte) >> off) & bmask(b);
  uint64_t v = 0;
  for (unsigned got = 0; got < b; byte++) {
    unsigned take = BA_MIN(8 - off, b - got);
    v |= (uint64_t)((p[byte] >> off) & ((1u << take) - 1)) << got;
    got += take;
    off = 0;
  }
  return v;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
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

static inline size_t dict_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 55) & (DICT_SLOTS - 1); }

static inline size_t pd_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 51) & (PD_SLOTS - 1); }
static inline size_t pd_find(const enc_scratch_t *x, uint64_t v) {
  size_t h = pd_hash(v);
  while (x->stamp[h] == x->cur && x->pkey[h] != v) h = (h + 1) & (PD_SLOTS - 1);
  return h;
}

static int cmp_cand(const void *a, const void *b) {
  const uint64_t *x = a, *y = b; /* count descending, then value */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* PDICT plan: counts the values (gives up past PD_MAX distinct), sorts
 * those seen twice or more by frequency and picks the index width b (1..8)
 * that minimises n*b + dictionary + exceptions (estimated at exc_bits each).
 * Returns the cost in bits (UINT64_MAX: not worth trying). */
static uint64_t pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
                           unsigned *b_out, size_t *k_out) {
  if (++x->cur == 0) { /* stamps wrapped: clear once every 2^32 uses */
    memset(x->stamp, 0, sizeof x->stamp);
    x->cur = 1;
  }
  size_t nd = 0, nc = 0;
  for (size_t i = 0; i < n; i++) {
    size_t h = pd_find(x, v[i]);
    if (x->stamp[h] == x->cur) {
      x->pcnt[h]++;
      continue;
    }
    if (nd == PD_MAX) return UINT64_MAX;
    /* All of the first 256 rows distinct (timestamps): give up early. */
    if (i == 255 && nd == 255) return UINT64_MAX;
    x->stamp[h] = x->cur;
    x->pkey[h] = v[i];
    x->pcnt[h] = 1;
    x->ins[nd++] = (uint16_t)h;
  }
  /* Only the 255 most frequent can enter the dictionary: find the count
   * threshold from a histogram, so at most 255 candidates get sorted. */
  uint32_t hist[256] = {0};
  for (size_t d = 0; d < nd; d++) hist[BA_MIN(x->pcnt[x->ins[d]], 255u)]++;
  uint32_t thr = 255, above = 0;
  while (thr > 2 && above + hist[thr] < 255) above += hist[thr--];
  uint32_t eq = 0; /* taken with count == thr: up to 255 - above */
  for (size_t d = 0; d < nd; d++) {
    size_t h = x->ins[d];
    uint32_t c = x->pcnt[h];
    if (c < 2 || c < thr || (c == thr && eq++ >= 255 - above)) continue;
    x->cand[nc][0] = c;
    x->cand[nc][1] = x->pkey[h];
    nc++;
  }
  if (!nc) return UINT64_MAX;
  qsort(x->cand, nc, sizeof x->cand[0], cmp_cand);
  uint64_t best = UINT64_MAX, covered = 0;
  size_t k = 0;
  for (unsigned b = 1; b <= 8; b++) {
    size_t kb = BA_MIN(((size_t)1 << b) - 1, nc);
    for (; k < kb; k++) covered += x->cand[k][0];
    uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * exc_bits;
    if (cost < best) {
      best = cost;
      *b_out = b;
      *k_out = kb;
    }
  }
  return best;
}

/* Writes a PDICT field (plan from pdict_plan) at out; returns its bytes. */
static size_t pdict_write(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned b, size_t k,
                          uint8_t *out) {
  uint64_t dict[256];
  for (size_t d = 0; d < k; d++) dict[d] = x->cand[d][1];
  qsort(dict, k, sizeof *dict, cmp_u64);
  /* pcnt now: index + 1 of dictionary values, 0 for the others. */
  for (size_t d = 0; d < PD_MAX && x->stamp[x->ins[d]] == x->cur; d++) x->pcnt[x->ins[d]] = 0;
  for (size_t d = 0; d < k; d++) x->pcnt[pd_find(x, dict[d])] = (uint32_t)d + 1;
  uint64_t emin = UINT64_MAX, emax = 0, ne = 0;
  for (size_t i = 0; i < n; i++)
    if (!x->pcnt[pd_find(x, v[i])]) {
      ne++;
      if (v[i] < emin) emin = v[i];
      if (v[i] > emax) emax = v[i];
    }
  if (!ne) emin = emax = 0;
  unsigned eb = bitlen(emax - emin);
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR);
  p[0] = XF_PDICT;
  p[1] = (uint8_t)b;
  p[3] = (uint8_t)eb;
  ba_store_le32(p + 4, (uint32_t)k);
  ba_store_le64(p + 8, emin);
  ba_store_le64(p + 16, ne);
  p += BA_COL2_FIELD_HDR;
  for (size_t d = 0; d < k; d++)
    for (unsigned q = 0; q < w; q++) *p++ = (uint8_t)(dict[d] >> (8 * q));
  uint64_t esc = ((uint64_t)1 << b) - 1;
  bitw_t bw = {p, 0, 0};
  for (size_t i = 0; i < n; i++) {
    uint32_t ix = x->pcnt[pd_find(x, v[i])];
    bitw_put(&bw, ix ? ix - 1 : esc, b);
  }
  bitw_t be = {bitw_end(&bw), 0, 0};
  if (eb)
    for (size_t i = 0; i < n; i++)
      if (!x->pcnt[pd_find(x, v[i])]) bitw_put(&be, v[i] - emin, eb);
  return (size_t)(bitw_end(&be) - out);
}

/* The smallest of FOR, DELTA, DICT and PDICT, bit-packed or in byte planes.
 * v: the n values (clobbered). Returns the field's bytes. */
static size_t encode2_int(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, uint8_t *out) {
  uint64_t m = wmask(w);
  uint64_t mn = UINT64_MAX, g = 0, v0 = n ? v[0] : 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < mn) mn = v[i];
    uint64_t d = v[i] >= v0 ? v[i] - v0 : v0 - v[i];
    if (g != 1 && (g == 0 || d % g != 0)) g = gcd64(g, d);
  }
  if (!n) mn = 0;
  uint64_t sc = g ? g : 1;
  /* Distinct values, up to DICT_MAX. */
  uint64_t key[DICT_SLOTS];
  uint16_t slot_of[DICT_SLOTS];
  uint8_t used[DICT_SLOTS];
  uint64_t dict[DICT_MAX];
  size_t nd = 0;
  int dict_ok = 1;
  memset(used, 0, sizeof used);
  for (size_t i = 0; i < n && dict_ok; i++) {
    size_t h = dict_hash(v[i]);
    while (used[h] && key[h] != v[i]) h = (h + 1) & (DICT_SLOTS - 1);
    if (used[h]) continue;
    if (nd == DICT_MAX) {
      dict_ok = 0;
    } else {
      used[h] = 1;
      key[h] = v[i];
      dict[nd++] = v[i];
    }
  }
  /* Sizes in bits: packed = n * width. Byte planes: LZO has no entropy
   * coder, so a plane costs a byte a row unless it is mostly zero, where
   * each nonzero byte costs about three (a literal between two matches):
   * skewed values, a few large among many small, favour planes. */
  uint64_t maxk = 0, maxz = 0, prev = 0, nzk[8] = {0}, nzz[8] = {0};
  for (size_t i = 0; i < n; i++) {
    uint64_t k = div_sc(v[i] - mn, sc);
    uint64_t z = zz((k - prev) & m, w, m);
    if (k > maxk) maxk = k;
    if (z > maxz) maxz = z;
    for (unsigned b = 0; b < w; b++) {
      nzk[b] += ((k >> (8 * b)) & 0xff) != 0;
      nzz[b] += ((z >> (8 * b)) & 0xff) != 0;
    }
    prev = k;
  }
  unsigned b_for = bitlen(maxk), b_delta = bitlen(maxz), b_dict = nd > 1 ? bitlen(nd - 1) : 0;
  uint64_t pl_k = 0, pl_z = 0;
  for (unsigned b = 0; b < w; b++) {
    pl_k += BA_MIN(8ull * n, 24 * nzk[b]);
    pl_z += BA_MIN(8ull * n, 24 * nzz[b]);
  }
  uint64_t cost[5] = {(uint64_t)n * b_for, pl_k, (uint64_t)n * b_delta, pl_z,
                      dict_ok && nd ? (uint64_t)n * b_dict + 8ull * w * nd : UINT64_MAX};
  int best = 0;
  for (int c = 1; c < 5; c++)
    if (cost[c] < cost[best]) best = c;
  /* Many distinct values, some frequent (ports: a few services among
   * ephemeral ports): a dictionary of the frequent ones may win. */
  if (!dict_ok && b_for >= 6) {
    unsigned pb = 0;
    size_t pk = 0;
    uint64_t pc = pdict_plan(x, v, n, w, b_for, &pb, &pk);
    if (pc < cost[best]) return pdict_write(x, v, n, w, pb, pk, out);
  }
  int method = best < 2 ? XF_FOR : best < 4 ? XF_DELTA : XF_DICT;
  int planes = best == 1 || best == 3;
  unsigned bits = method == XF_FOR ? b_for : method == XF_DELTA ? b_delta : b_dict;
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR);
  p[0] = (uint8_t)method;
  p[1] = (uint8_t)bits;
  p[2] = (uint8_t)planes;
  if (method == XF_DICT) {
    ba_store_le32(p + 4, (uint32_t)nd);
    ba_store_le64(p + 16, 1);
    p += BA_COL2_FIELD_HDR;
    qsort(dict, nd, sizeof *dict, cmp_u64);
    for (size_t d = 0; d < nd; d++) {
      for (unsigned b = 0; b < w; b++) *p++ = (uint8_t)(dict[d] >> (8 * b));
      size_t h = dict_hash(dict[d]);
      while (key[h] != dict[d]) h = (h + 1) & (DICT_SLOTS - 1);
      slot_of[h] = (uint16_t)d;
    }
    for (size_t i = 0; i < n; i++) {
      size_t h = dict_hash(v[i]);
      while (key[h] != v[i]) h = (h + 1) & (DICT_SLOTS - 1);
      v[i] = slot_of[h];
    }
  } else {
    ba_store_le64(p + 8, mn);
    ba_store_le64(p + 16, sc);
    p += BA_COL2_FIELD_HDR;
    prev = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t k = div_sc(v[i] - mn, sc);
      v[i] = method == XF_DELTA ? zz((k - prev) & m, w, m) : k;
      prev = k;
    }
  }
  if (planes) {
    unsigned nb = (bits + 7) / 8;
    for (unsigned b = 0; b < nb; b++)
      for (size_t i = 0; i < n; i++) p[(size_t)b * n + i] = (uint8_t)(v[i] >> (8 * b));
    return (size_t)(p - out) + (size_t)nb * n;
  }
  bitw_t bw = {p, 0, 0};
  if (bits)
    for (size_t i = 0; i < n; i++) bitw_put(&bw, v[i], bits);
  return (size_t)(bitw_end(&bw) - out);
}

/* Unpacks n values of b bits (1..64) from p[0..len) (len >= ceil(n*b/8)). */
static void unpack_bits(const uint8_t *p, size_t len, size_t n, unsigned bits, uint64_t *v) {
  uint64_t pos = 0, bm = bmask(bits);
  size_t i = 0;
  if (bits <= 57 && len >= 8)
    for (; i < n && (pos >> 3) <= len - 8; i++, pos += bits) v[i] = (ba_load_le64(p + (pos >> 3)) >> (pos & 7)) & bm;
  for (; i < n; i++, pos += bits) v[i] = bit_get(p, len, pos, bits);
}

static int decode2_pdict(const uint8_t *in, size_t len, size_t n, unsigned w, uint64_t *v, size_t *used) {
  uint64_t m = wmask(w);
  unsigned b = in[1], eb = in[3];
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t ebase = ba_load_le64(in + 8), ne = ba_load_le64(in + 16);
  BA_RETURN_IF(in[2] != 0 || b < 1 || b > 8 || nd == 0 || nd >= (1u << b), BA_ERR_CORRUPT);
  BA_RETURN_IF(eb > 8 * w || ebase > m || ne > n, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  BA_RETURN_IF((size_t)nd * w > len - off, BA_ERR_CORRUPT);
  off += (size_t)nd * w;
  size_t ib = (size_t)(((uint64_t)n * b + 7) / 8);
  BA_RETURN_IF(ib > len - off, BA_ERR_CORRUPT);
  const uint8_t *idx = in + off;
  off += ib;
  size_t eby = (size_t)((ne * eb + 7) / 8);
  BA_RETURN_IF(eby > len - off, BA_ERR_CORRUPT);
  const uint8_t *exc = in + off;
  off += eby;
  unpack_bits(idx, ib, n, b, v);
  uint64_t esc = ((uint64_t)1 << b) - 1, e = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] == esc) {
      BA_RETURN_IF(e >= ne, BA_ERR_CORRUPT);
      v[i] = (ebase + bit_get(exc, eby, e * eb, eb)) & m;
      e++;
    } else {
      BA_RETURN_IF(v[i] >= nd, BA_ERR_CORRUPT);
      uint64_t x = 0;
      for (unsigned q = 0; q < w; q++) x |= (uint64_t)dict[v[i] * w + q] << (8 * q);
      v[i] = x;
    }
  }
  BA_RETURN_IF(e != ne, BA_ERR_CORRUPT);
  *used = off;
  return BA_OK;
}

/* Decodes one field at in[0..len) into v[0..n); *used gets its bytes. */
static int decode2_int(const uint8_t *in, size_t len, size_t n, unsigned w, uint64_t *v, size_t *used) {
  uint64_t m = wmask(w);
  BA_RETURN_IF(len < BA_COL2_FIELD_HDR, BA_ERR_CORRUPT);
  int method = in[0], planes = in[2];
  unsigned bits = in[1], nb = (bits + 7) / 8;
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t base = ba_load_le64(in + 8), sc = ba_load_le64(in + 16);
  if (method == XF_PDICT) return decode2_pdict(in, len, n, w, v, used);
  BA_RETURN_IF(planes > 1 || in[3] != 0 || (planes && method == XF_DICT), BA_ERR_CORRUPT);
  BA_RETURN_IF(method != XF_FOR && method != XF_DELTA && method != XF_DICT, BA_ERR_CORRUPT);
  BA_RETURN_IF(bits > 8 * w || base > m || sc == 0 || sc > m, BA_ERR_CORRUPT);
  BA_RETURN_IF(method == XF_DICT ? (nd == 0 || nd > n || base != 0 || sc != 1) : nd != 0, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  size_t dict_bytes = (size_t)nd * w;
  BA_RETURN_IF(dict_bytes > len - off, BA_ERR_CORRUPT);
  off += dict_bytes;
  size_t packed = planes ? (size_t)nb * n : (size_t)(((uint64_t)n * bits + 7) / 8);
  BA_RETURN_IF(packed > len - off, BA_ERR_CORRUPT);
  const uint8_t *p = in + off;
  /* The stored values. */
  if (!bits) {
    memset(v, 0, n * sizeof *v);
  } else if (planes) {
    for (size_t i = 0; i < n; i++) v[i] = p[i];
    for (unsigned b = 1; b < nb; b++)
      for (size_t i = 0; i < n; i++) v[i] |= (uint64_t)p[(size_t)b * n + i] << (8 * b);
  } else {
    unpack_bits(p, packed, n, bits, v);
  }
  /* The values they stand for. */
  if (method == XF_DICT) {
    for (size_t i = 0; i < n; i++) {
      BA_RETURN_IF(v[i] >= nd, BA_ERR_CORRUPT);
      uint64_t x = 0;
      for (unsigned b = 0; b < w; b++) x |= (uint64_t)dict[v[i] * w + b] << (8 * b);
      v[i] = x;
    }
  } else {
    if (method == XF_DELTA) {
      uint64_t acc = 0;
      for (size_t i = 0; i < n; i++) v[i] = acc = (acc + unzz(v[i], m)) & m;
    }
    if (sc == 1) {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i]) & m;
    } else {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i] * sc) & m;
    }
  }
  *used = off + packed;
  return BA_OK;
}

static int encode_v2(int col, const ba_record_t *r, size_t n, const uint8_t *frames,
                     size_t frame_bytes, uint8_t *out, size_t *len, enc_scratch_t *x) {
  enc_scratch_t *own = NULL;
  if (!x) {
    BA_FORWARD(ba_col_scratch_create(&own));
    x = own;
  }
  if (x->vcap < n + 1) {
    void *q = x->v;
    int rc = ba_grow(&q, &x->vcap, n + 1, sizeof *x->v);
    x->v = q;
    if (rc < 0) {
      ba_col_scratch_free(own);
      return rc;
    }
  }
  uint64_t *v = x->v;
  uint8_t *p = out;
  for (int k = 0; k < 3 && g_fields[col][k].width; k++) {
    const colfield_t *f = &g_fields[col][k];
    if (f->kind == FK_ADDR) {
      addr_planes_put(r, n, f->off, p);
      p += 16 * n;
    } else {
      field_load(r, n, f, v);
      p += encode2_int(x, v, n, f->width, p);
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
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS || !major_ok(major) || !len, BA_ERR_INVALID);
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
    rc = decode2_int(raw + off, raw_len - off, n, f->width, v, &used);
    if (rc == BA_OK) field_store(r, n, f, v);
    off += used;
  }
  ba_free(v);
  BA_FORWARD(rc);
  if (col == BA_COLID_FRAME) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
      BA_RETURN_IF(r[i].caplen > BA_MAX_CAPLEN, BA_ERR_CORRUPT);
      sum += r[i].caplen;
    }
    BA_RETURN_IF(sum != raw_len - off, BA_ERR_CORRUPT);
  } else {
    BA_RETURN_IF(off != raw_len, BA_ERR_CORRUPT);
  }
  *fields = off;
  return BA_OK;
}

int ba_col_decode(int major, int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r) {
  BA_RETURN_IF(col < 0 || col >= BA_NCOLS || !major_ok(major), BA_ERR_INVALID);
  size_t fields = 0;
  BA_FORWARD(major >= 2 ? decode_v2(col, raw, raw_len, n, r, &fields)
                        : decode_v1(col, raw, raw_len, n, r, &fields));
  if (col == BA_COLID_META)
    for (size_t i = 0; i < n; i++)
      BA_RETURN_IF(r[i].kind != BA_REC_FLOW && r[i].kind != BA_REC_PACKET, BA_ERR_CORRUPT);
  if (col == BA_COLID_FRAME) {
    const uint8_t *fp = raw + fields;
    for (size_t i = 0; i < n; i++) {
      r[i].frame = r[i].caplen ? fp : NULL;
      fp += r[i].caplen;
    }
  }
  return BA_OK;
}

/* ---------- index attribute values ---------- */
uint32_t ba_attr_domain(ba_attr_t a, uint64_t slice_ns, uint64_t bin_ns) {
  switch (a) {
    case BA_ATTR_SRC_PORT:
    case BA_ATTR_DST_PORT: return 65536;
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
    default: for (i = 0; i < n; i++) out[i] = BA_IDX_NONE; break;
  }
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

/* ---------- finishing a segment ---------- */
typedef struct wbuf {
  int fd;
  uint8_t *p;
  size_t n, cap;
  uint64_t off;
} wbuf_t;

static int wbuf_flush(wbuf_t *w) {
  if (w->n) BA_FORWARD(ba_write_full(w->fd, w->p, w->n));
  w->n = 0;
  return BA_OK;
}

static int wbuf_put(void *ctx, const void *p, size_t n) {
  wbuf_t *w = ctx;
  if (w->n + n > w->cap) BA_FORWARD(wbuf_flush(w));
  if (n >= w->cap) {
    BA_FORWARD(ba_write_full(w->fd, p, n));
  } else {
    memcpy(w->p + w->n, p, n);
    w->n += n;
  }
  w->off += n;
  return BA_OK;
}

static int put_block(wbuf_t *w, uint8_t type, const uint8_t *payload, size_t len) {
  BA_RETURN_IF(len > UINT32_MAX, BA_ERR_OVERFLOW);
  ba_blk_hdr_t h = {.type = type, .col = 0xFF, .compress = BA_COMPRESS_NONE, .rows = 0,
                    .raw_len = (uint32_t)len, .comp_len = (uint32_t)len, .group = 0,
                    .payload_crc = ba_crc32c(0, payload, len)};
  uint8_t hb[BA_BLK_HDR_BYTES];
  ba_blk_hdr_encode(&h, hb);
  BA_FORWARD(wbuf_put(w, hb, sizeof hb));
  return wbuf_put(w, payload, len);
}

int ba_seg_finish(ba_seg_finish_t *f) {
  int rc = BA_OK;
  wbuf_t w = {.fd = f->fd, .cap = 4u << 20, .off = f->end};
  ba_idx_dirent_t *dir = NULL;
  size_t ndir = 0;
  uint8_t *tmp = NULL;
  w.p = ba_malloc(w.cap);
  if (!w.p) return BA_ERR_NOMEM;
  if (lseek(f->fd, (off_t)f->end, SEEK_SET) < 0 || ftruncate(f->fd, (off_t)f->end) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  uint64_t index_off = w.off;
  if ((rc = ba_idx_write(f->attrs, BA_ATTR_COUNT, index_off, wbuf_put, &w, &dir, &ndir, NULL)) < 0)
    goto done;
  f->bytes_index = w.off - index_off;
  uint64_t dir_off = w.off;
  size_t dlen = ba_idx_dir_size(ndir);
  size_t tlen = (size_t)f->ngroups * BA_TABLE_ENTRY_BYTES;
  tmp = ba_malloc(BA_MAX(dlen, tlen) + 1);
  if (!tmp) {
    rc = BA_ERR_NOMEM;
    goto done;
  }
  ba_idx_dir_encode(dir, ndir, tmp);
  if ((rc = put_block(&w, BA_BLK_IDXDIR, tmp, dlen)) < 0) goto done;
  f->bytes_index += w.off - dir_off;
  uint64_t table_off = w.off;
  for (uint32_t g = 0; g < f->ngroups; g++) {
    uint8_t *e = tmp + (size_t)g * BA_TABLE_ENTRY_BYTES;
    ba_store_le64(e, f->groups[g].off);
    ba_store_le32(e + 8, f->groups[g].rows);
    ba_store_le32(e + 12, f->groups[g].len);
    for (int c = 0; c < BA_NCOLS; c++) ba_store_le32(e + 16 + 4 * c, f->groups[g].col_off[c]);
  }
  if ((rc = put_block(&w, BA_BLK_TABLE, tmp, tlen)) < 0) goto done;
  ba_seg_footer_t ft = {.rows = f->rows, .min_first = f->min_first, .max_first = f->max_first,
                        .table_off = table_off, .dir_off = dir_off, .index_off = index_off,
                        .ngroups = f->ngroups, .kinds = f->kinds};
  uint8_t fb[BA_SEG_FOOTER_BYTES];
  ba_seg_footer_encode(&ft, fb);
  if ((rc = wbuf_put(&w, fb, sizeof fb)) < 0 || (rc = wbuf_flush(&w)) < 0) goto done;
  if (fsync(f->fd) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
  if (renameat(f->dirfd, f->open_name, f->dirfd, f->final_name) != 0 || fsync(f->dirfd) != 0) {
    rc = BA_ERR_IO;
    goto done;
  }
done:
  ba_free(w.p);
  ba_free(dir);
  ba_free(tmp);
  return rc;
}
