/* nfdump files: the file header (layout 1 or 2), the block sequence and
 * block decompression (LZO, LZ4, BZ2, ZSTD through their libraries). The
 * records inside a block are decoded by nffile_v1.c / nffile_v3.c. */
#include <bzlib.h>
#include <errno.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/common.h"
#include "ingest/nffile_internal.h"

#define NF_BATCH 256

static const char *const g_drop_names[BA_NFDROP_COUNT] = {
  "block-corrupt", "block-type", "no-extension-map", "malformed", "legacy-record", "unknown-record", "store"};
static const char *const g_drop_units[BA_NFDROP_COUNT] = {"blocks", "blocks", "records", "records",
                                                          "records", "records", "records"};

const char *ba_nffile_drop_name(ba_nffile_drop_t r) {
  return (unsigned)r < BA_NFDROP_COUNT ? g_drop_names[r] : "?";
}
const char *ba_nffile_drop_unit(ba_nffile_drop_t r) {
  return (unsigned)r < BA_NFDROP_COUNT ? g_drop_units[r] : "?";
}
const char *ba_nffile_compression_name(unsigned code) {
  static const char *const n[] = {"none", "lzo", "bz2", "lz4", "zstd"};
  return code < 5 ? n[code] : "?";
}
uint64_t ba_nffile_dropped(const ba_nffile_result_t *r) {
  uint64_t t = 0;
  for (int i = 0; i < BA_NFDROP_COUNT; i++) t += r->dropped[i];
  return t;
}

int ba_nffile_detect(const uint8_t *buf, size_t len) {
  if (len < 4 || ba_load_le16(buf) != NF_MAGIC) return 0;
  uint16_t v = ba_load_le16(buf + 2);
  return v == NF_LAYOUT_1 || v == NF_LAYOUT_2;
}

void nff_drop(nf_ctx_t *c, ba_nffile_drop_t why, const char *fmt, ...) {
  c->res->dropped[why]++;
  if (c->res->detail[0]) return;
  int n = snprintf(c->res->detail, sizeof c->res->detail, "%s: block %llu: ", c->name,
                   (unsigned long long)c->block_no);
  if (n < 0 || (size_t)n >= sizeof c->res->detail) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->res->detail + n, sizeof c->res->detail - (size_t)n, fmt, ap);
  va_end(ap);
}

static int nf_flush(nf_ctx_t *c) {
  if (!c->nbatch) return 0;
  int rc = c->fn ? c->fn(c->sink_ctx, c->batch, c->nbatch) : 0;
  if (rc) c->res->dropped[BA_NFDROP_STORE] += c->nbatch;
  else c->res->records += c->nbatch;
  c->nbatch = 0;
  return rc;
}

int nf_emit(nf_ctx_t *c, const ba_record_t *r) {
  c->batch[c->nbatch++] = *r;
  return c->nbatch == c->cap ? nf_flush(c) : 0;
}

void nf_load_v6(const uint8_t *p, uint8_t out[16]) {
  uint64_t hi = ba_load_le64(p), lo = ba_load_le64(p + 8);
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(hi >> (56 - 8 * i));
    out[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
  }
}

void nf_fix_icmp(ba_record_t *r) {
  if (r->proto == 1 || r->proto == 58) {
    r->icmp_type = (uint8_t)(r->dst_port >> 8);
    r->icmp_code = (uint8_t)r->dst_port;
  }
}

void *nf_table_get(nf_table_t *t, uint16_t key, int create, int *nomem) {
  if (t->slot && t->slot[key]) return t->items + (t->slot[key] - 1) * t->elem;
  if (!create) return NULL;
  if (!t->slot && !(t->slot = ba_calloc(65536, sizeof *t->slot))) goto oom;
  if (t->n == t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 8;
    uint8_t *ni = ba_realloc(t->items, nc * t->elem);
    if (!ni) goto oom;
    t->items = ni;
    t->cap = nc;
  }
  uint8_t *e = t->items + t->n * t->elem;
  memset(e, 0, t->elem);
  t->slot[key] = (uint32_t)++t->n;
  return e;
oom:
  *nomem = 1;
  return NULL;
}

void nf_table_free(nf_table_t *t) {
  ba_free(t->slot);
  ba_free(t->items);
}

/* ---------- decompression ---------- */

static pthread_once_t g_lzo_once = PTHREAD_ONCE_INIT;
static int g_lzo_ok;
static void nf_lzo_init(void) { g_lzo_ok = lzo_init() == LZO_E_OK; }

static int nf_bz2(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *got) {
  bz_stream bs;
  memset(&bs, 0, sizeof bs);
  if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) return BA_ERR_NOMEM;
  bs.next_in = (char *)(uintptr_t)in;
  bs.avail_in = (unsigned)n;
  bs.next_out = (char *)out;
  bs.avail_out = (unsigned)cap;
  int r;
  do r = BZ2_bzDecompress(&bs);
  while (r == BZ_OK && bs.avail_in > 0 && bs.avail_out > 0);
  *got = cap - bs.avail_out;
  BZ2_bzDecompressEnd(&bs);
  return r == BZ_STREAM_END ? BA_OK : BA_ERR_CORRUPT;
}

/* Decompresses one block payload into out (cap bytes); *got = its length. */
static int nf_decompress(unsigned comp, const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *got) {
  switch (comp) {
    case NF_COMP_LZO: {
      pthread_once(&g_lzo_once, nf_lzo_init);
      if (!g_lzo_ok) return BA_ERR_UNSUPPORTED;
      lzo_uint ol = cap;
      if (lzo1x_decompress_safe(in, n, out, &ol, NULL) != LZO_E_OK) return BA_ERR_CORRUPT;
      *got = ol;
      return BA_OK;
    }
    case NF_COMP_LZ4: {
      int r = LZ4_decompress_safe((const char *)in, (char *)out, (int)n, (int)cap);
      if (r < 0) return BA_ERR_CORRUPT;
      *got = (size_t)r;
      return BA_OK;
    }
    case NF_COMP_BZ2: return nf_bz2(in, n, out, cap, got);
    case NF_COMP_ZSTD: {
      size_t r = ZSTD_decompress(out, cap, in, n);
      if (ZSTD_isError(r)) return BA_ERR_CORRUPT;
      *got = r;
      return BA_OK;
    }
  }
  return BA_ERR_UNSUPPORTED;
}

/* ---------- file ---------- */

typedef struct nf_file {
  FILE *fp;
  uint64_t off;        /* bytes consumed */
  uint8_t *raw, *plain;
  size_t raw_cap, plain_cap;
  unsigned comp;
  uint16_t layout;
} nf_file_t;

/* Reads exactly n bytes; *got receives how many came (short = end of file). */
static int nf_read(nf_file_t *f, void *buf, size_t n, size_t *got) {
  *got = n ? fread(buf, 1, n, f->fp) : 0;
  f->off += *got;
  return (*got < n && ferror(f->fp)) ? BA_ERR_IO : BA_OK;
}

static int nf_fail(nf_ctx_t *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int nf_fail(nf_ctx_t *c, int rc, const char *fmt, ...) {
  ba_nffile_result_t *r = c->res;
  int n = snprintf(r->errmsg, sizeof r->errmsg, "%s: ", c->name);
  if (n > 0 && (size_t)n < sizeof r->errmsg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errmsg + n, sizeof r->errmsg - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static int nf_header(nf_ctx_t *c, nf_file_t *f) {
  uint8_t h[NF_V1_HEADER_LEN + NF_V1_STAT_LEN];
  size_t got;
  BA_FORWARD(nf_read(f, h, 4, &got));
  if (got < 4 || ba_load_le16(h) != NF_MAGIC) {
    if (got >= 2 && h[0] == 0xA5 && h[1] == 0x0C)
      return nf_fail(c, BA_ERR_VERSION, "written on a big-endian host (magic 0xA50C swapped): not supported");
    return nf_fail(c, BA_ERR_NOT_OURS, "not an nfdump file (no 0xA50C magic)");
  }
  f->layout = ba_load_le16(h + 2);
  c->res->layout = f->layout;
  if (f->layout == NF_LAYOUT_2) {
    BA_FORWARD(nf_read(f, h + 4, NF_V2_HEADER_LEN - 4, &got));
    if (got < NF_V2_HEADER_LEN - 4) return nf_fail(c, BA_ERR_TRUNCATED, "file header cut at byte %zu", got + 4);
    c->res->nfdump_version = ba_load_le32(h + 4);
    f->comp = h[16];
    if (h[17]) return nf_fail(c, BA_ERR_UNSUPPORTED, "encrypted file (encryption %u)", h[17]);
    c->res->blocks_declared = ba_load_le32(h + 36);
  } else if (f->layout == NF_LAYOUT_1) {
    BA_FORWARD(nf_read(f, h + 4, sizeof h - 4, &got));
    if (got < sizeof h - 4) return nf_fail(c, BA_ERR_TRUNCATED, "layout-1 header cut at byte %zu", got + 4);
    uint32_t flags = ba_load_le32(h + 4);
    f->comp = (flags & NF_V1_FLAG_LZO)   ? NF_COMP_LZO
              : (flags & NF_V1_FLAG_BZ2) ? NF_COMP_BZ2
              : (flags & NF_V1_FLAG_LZ4) ? NF_COMP_LZ4
                                         : NF_COMP_NONE;
    c->res->blocks_declared = ba_load_le32(h + 8);
    memcpy(c->res->ident, h + 12, 127);
    c->res->ident[127] = 0;
  } else {
    return nf_fail(c, BA_ERR_VERSION, "unknown nfdump file layout %u (1 and 2 are read)", f->layout);
  }
  if (f->comp > NF_COMP_ZSTD) return nf_fail(c, BA_ERR_UNSUPPORTED, "unknown compression %u", f->comp);
  c->res->compression = (uint8_t)f->comp;
  return BA_OK;
}

/* The ident record of a layout-2 appendix block; other appendix records
 * (statistics) are counted as meta records. */
static void nf_appendix(nf_ctx_t *c, const uint8_t *p, size_t len, uint32_t nrec) {
  size_t off = 0;
  for (uint32_t i = 0; i < nrec && len - off >= 4; i++) {
    uint16_t type = ba_load_le16(p + off), size = ba_load_le16(p + off + 2);
    if (size < 4 || size > len - off) return;
    if (type == NF_REC_IDENT) {
      size_t n = BA_MIN((size_t)size - 4, sizeof c->res->ident - 1);
      memcpy(c->res->ident, p + off + 4, n);
      c->res->ident[n] = 0;
      c->res->ident[strnlen(c->res->ident, n)] = 0;
    }
    c->res->meta_records++;
    off += size;
  }
}

/* The records of a type 2 or 3 block (nfdump 1.7 reads either record
 * layout in either block type). */
static int nf_records(nf_ctx_t *c, const uint8_t *p, size_t len, uint32_t nrec) {
  size_t off = 0;
  for (uint32_t i = 0; i < nrec; i++) {
    uint16_t type = len - off >= 4 ? ba_load_le16(p + off) : 0, size = len - off >= 4 ? ba_load_le16(p + off + 2) : 0;
    if (size < 4 || size > len - off) {
      nff_drop(c, BA_NFDROP_BLOCK_CORRUPT, "record %u of %u: length %u overruns the block (%zu bytes left)", i + 1, nrec,
              size, len - off);
      return BA_OK;
    }
    const uint8_t *r = p + off;
    int rc = 0;
    switch (type) {
      case NF_REC_COMMON: rc = nf_v1_record(c, r, size); break;
      case NF_REC_V3: rc = nf_v3_record(c, r, size); break;
      case NF_REC_EXTMAP: rc = nf_v1_extmap(c, r, size); break;
      case NF_REC_EXPORTER: rc = nf_exporter_record(c, r, size); break;
      case NF_REC_SAMPLER_V0:
      case NF_REC_SAMPLER: rc = nf_sampler_record(c, r, size); break;
      case NF_REC_PORT_HISTO: case NF_REC_BPP_HISTO: case NF_REC_EXPORTER_STAT: case NF_REC_NBAR:
      case NF_REC_IFNAME: case NF_REC_VRFNAME: case NF_REC_IDENT: case NF_REC_STAT:
        c->res->meta_records++;
        break;
      case NF_REC_COMMON_V0: case NF_REC_LEGACY_1: case NF_REC_LEGACY_2:
        nff_drop(c, BA_NFDROP_LEGACY, "record %u: legacy record type %u", i + 1, type);
        break;
      default: nff_drop(c, BA_NFDROP_UNKNOWN_RECORD, "record %u: unknown record type %u", i + 1, type);
    }
    if (rc) return rc;
    off += size;
  }
  return BA_OK;
}

/* Reads and decodes one block. *end = 1 at a clean end of file. */
static int nf_block(nf_ctx_t *c, nf_file_t *f, int *end) {
  uint8_t h[NF_BLOCK_HEADER_LEN];
  size_t got;
  uint64_t at = f->off;
  BA_FORWARD(nf_read(f, h, sizeof h, &got));
  if (got == 0) { *end = 1; return BA_OK; }
  c->block_no++;
  c->res->error_block = c->block_no;
  c->res->error_offset = at;
  if (got < sizeof h)
    return nf_fail(c, BA_ERR_TRUNCATED, "block %llu: header cut at offset %llu", (unsigned long long)c->block_no,
                   (unsigned long long)at);
  uint32_t nrec = ba_load_le32(h), size = ba_load_le32(h + 4);
  uint16_t type = ba_load_le16(h + 8);
  if (size == 0 || size > NF_BLOCK_MAX)
    return nf_fail(c, BA_ERR_CORRUPT, "block %llu at offset %llu: impossible size %u", (unsigned long long)c->block_no,
                   (unsigned long long)at, size);
  if (size > f->raw_cap) {  /* grown as blocks need it */
    uint8_t *nr = ba_realloc(f->raw, size);
    if (!nr) return nf_fail(c, BA_ERR_NOMEM, "out of memory");
    f->raw = nr;
    f->raw_cap = size;
  }
  BA_FORWARD(nf_read(f, f->raw, size, &got));
  if (got < size)
    return nf_fail(c, BA_ERR_TRUNCATED, "block %llu at offset %llu: %u bytes announced, file ends after %zu",
                   (unsigned long long)c->block_no, (unsigned long long)at, size, got);
  c->res->blocks++;
  const uint8_t *plain = f->raw;
  size_t plen = size;
  if (f->comp != NF_COMP_NONE) {
    /* the decompressed size is not stored: start at 8x and grow on failure */
    size_t want = BA_MIN((size_t)NF_BLOCK_MAX, BA_MAX((size_t)64 << 10, (size_t)size * 8));
    int rc;
    for (;;) {
      if (want > f->plain_cap) {
        ba_free(f->plain);
        f->plain_cap = 0;
        if (!(f->plain = ba_malloc(want))) return nf_fail(c, BA_ERR_NOMEM, "out of memory");
        f->plain_cap = want;
      }
      rc = nf_decompress(f->comp, f->raw, size, f->plain, f->plain_cap, &plen);
      if (rc != BA_ERR_CORRUPT || f->plain_cap >= NF_BLOCK_MAX) break;
      want = BA_MIN((size_t)NF_BLOCK_MAX, f->plain_cap * 4);
    }
    if (rc == BA_ERR_UNSUPPORTED) return nf_fail(c, rc, "%s decompressor unavailable", ba_nffile_compression_name(f->comp));
    if (rc) {
      nff_drop(c, BA_NFDROP_BLOCK_CORRUPT, "%s data does not decompress", ba_nffile_compression_name(f->comp));
      return BA_OK;
    }
    plain = f->plain;
  }
  if (c->res->blocks_declared && c->block_no > c->res->blocks_declared) {
    nf_appendix(c, plain, plen, nrec);  /* layout 2: past the data blocks */
    c->res->blocks--;
    return BA_OK;
  }
  if (type == NF_BLOCK_TYPE_2 || type == NF_BLOCK_TYPE_3) return nf_records(c, plain, plen, nrec);
  if (type != NF_BLOCK_TYPE_4) nff_drop(c, BA_NFDROP_BLOCK_TYPE, "block type %u", type);
  else c->res->meta_records += nrec;
  return BA_OK;
}

static int nf_run(nf_ctx_t *c, nf_file_t *f) {
  BA_FORWARD(nf_header(c, f));
  c->cap = NF_BATCH;
  c->batch = ba_malloc(c->cap * sizeof *c->batch);
  if (!c->batch) return nf_fail(c, BA_ERR_NOMEM, "out of memory");
  for (;;) {
    int end = 0, rc = nf_block(c, f, &end);
    if (rc) {
      int frc = nf_flush(c);  /* every flow before the failure is delivered */
      if (!c->res->errmsg[0] && rc < 0)
        nf_fail(c, rc, "block %llu: %s", (unsigned long long)c->block_no, ba_strerror(rc));
      return rc ? rc : frc;
    }
    if (end) break;
  }
  c->res->error_block = c->res->error_offset = 0;
  return nf_flush(c);
}

int ba_nffile_ingest(const char *path, FILE *fp, ba_record_sink_fn fn, void *ctx, ba_nffile_result_t *res) {
  ba_nffile_result_t dummy;
  if (!res) res = &dummy;
  memset(res, 0, sizeof *res);
  nf_ctx_t c = {.name = path ? path : "<stream>", .res = res, .fn = fn, .sink_ctx = ctx};
  c.exporters.elem = sizeof(nf_exporter_t);
  c.maps.elem = sizeof(nf_extmap_t);
  nf_file_t f = {.fp = fp};
  if (!f.fp) {
    if (!path) return BA_ERR_INVALID;
    f.fp = fopen(path, "rb");
    if (!f.fp) return nf_fail(&c, BA_ERR_IO, "cannot open: %s", strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f.fp), &st) == 0 && S_ISREG(st.st_mode)) res->file_bytes = (uint64_t)st.st_size;
  int rc = nf_run(&c, &f);
  if (rc == BA_ERR_IO && !res->errmsg[0]) nf_fail(&c, rc, "read error: %s", strerror(errno));
  fclose(f.fp);
  ba_free(f.raw);
  ba_free(f.plain);
  ba_free(c.batch);
  nf_table_free(&c.exporters);
  nf_table_free(&c.maps);
  return rc;
}
