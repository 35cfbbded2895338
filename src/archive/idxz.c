/* Compressed index bitmap records (doc/format.md §7.8, format 3.2): a
 * bitmap record whose words shrink to at most 7/8 of the record with zstd
 * (Huffman-coded literals, ba_idxz_pack) is stored with flag bit 0 set and its words replaced by one zstd
 * frame; nrows and nwords keep the decoded values. Sparse bitmaps (address
 * bytes, rare ports), whose PLWAH words are mostly isolated set bits, halve;
 * dense literal bitmaps gain less than 1/8 and stay raw. Reading checks the
 * CRC of the stored bytes, bounds the decoded size by the segment's rows
 * before decompressing into a buffer of exactly that size, and then
 * validates the words as for a raw record. */
#include <pthread.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>

#include "archive/archive.h"
#include "common/common.h"

/* One decompression context and output buffer per thread, kept until the
 * thread ends: making a context touches about 100 KB of fresh pages, and a
 * fresh buffer costs a page fault per 4 KB it decodes, together as much as
 * the decompression of a count's bitmaps (a context and buffer per segment
 * added 0.2 ms to a 1.4 ms count over three segments). */
typedef struct tstate {
  ZSTD_DCtx *dctx;
  uint8_t *buf;
  size_t cap;
} tstate_t;
static pthread_key_t g_dkey;
static pthread_once_t g_donce = PTHREAD_ONCE_INIT;
static int g_dkey_ok;

static void tstate_free(void *p) {
  tstate_t *t = p;
  ZSTD_freeDCtx(t->dctx);
  ba_free(t->buf);
  ba_free(t);
}
static void dkey_init(void) { g_dkey_ok = pthread_key_create(&g_dkey, tstate_free) == 0; }

static tstate_t *thread_state(void) {
  pthread_once(&g_donce, dkey_init);
  if (!g_dkey_ok) return NULL;
  tstate_t *t = pthread_getspecific(g_dkey);
  if (t) return t;
  if (!(t = ba_calloc(1, sizeof *t))) return NULL;
  if (!(t->dctx = ZSTD_createDCtx()) || pthread_setspecific(g_dkey, t) != 0) {
    tstate_free(t);
    return NULL;
  }
  return t;
}

void ba_idxz_free(ba_idxz_t *z) {
  if (!z) return;
  ZSTD_freeCCtx(z->cctx);
  ba_free(z->buf);
  memset(z, 0, sizeof *z);
}

uint64_t ba_idxz_max_raw(ba_codec_t codec, uint64_t rows) {
  unsigned bits = ba_codec_word_bits(codec);
  if (bits < 8) return 0;
  /* every word of every codec covers at least one group of bits - 1 rows;
   * twice that, plus slack, bounds a valid bitmap's words */
  return (2 * (rows / (bits - 1) + 1) + 64) * (bits / 8);
}

static int grow(ba_idxz_t *z, size_t need) {
  if (need <= z->cap) return BA_OK;
  void *p = z->buf;
  BA_FORWARD(ba_grow(&p, &z->cap, need, 1));
  z->buf = p;
  return BA_OK;
}

/* Stored frames leave out zstd's 4-byte magic number (always the same) and
 * the content size (the record's nwords gives it), and have no checksum (the
 * directory's CRC covers the stored bytes) and no dictionary id. */
#define ZMAGIC_BYTES 4u

/* Records shorter than this stay raw: a frame's Huffman table takes most of
 * what so few words could gain (CTU-13: the 687 records under 128 bytes
 * gained 980 bytes together), and each attempt costs ~15,000 instructions. */
#define IDXZ_MIN_BYTES 128u

#if ZSTD_VERSION_NUMBER >= 10501
#define IDXZ_LITERALS_HUFFMAN ZSTD_ps_enable
#else
#define IDXZ_LITERALS_HUFFMAN ZSTD_lcm_huffman
#endif

int ba_idxz_pack(void *ctx, const uint8_t *rec, size_t len, const uint8_t **out, size_t *olen) {
  ba_idxz_t *z = ctx;
  *out = rec;
  *olen = len;
  if (len < IDXZ_MIN_BYTES) return BA_OK;
  ba_codec_t codec = (ba_codec_t)rec[0];
  size_t raw = len - BA_BM_REC_HDR;
  if (raw > ba_idxz_max_raw(codec, ba_load_le64(rec + 4))) return BA_OK; /* a reader would refuse it */
  if (!z->cctx) {
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (!c) return BA_ERR_NOMEM;
    z->cctx = c;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0)))
      return BA_ERR_INVALID;
    /* Huffman-coded literals and (almost) no match search: the fastest
     * level skips ahead ZSTD_TARGETLENGTH_MAX bytes after each miss, so a
     * record's bytes become literals, and literal compression, which
     * negative levels turn off, is turned back on. On PLWAH words this is
     * where the gain is (the gaps between set bits: byte entropy, few
     * repeats): the records come out 3-4 % smaller than at level 1 (v9
     * and CTU-13 flows; 0.9 % larger on bench_query_gen's) at half its
     * instructions.
     * A zstd without the parameter gets level 1 (the same frames as before;
     * either is a plain frame for every reader). */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, ZSTD_minCLevel())) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_literalCompressionMode, IDXZ_LITERALS_HUFFMAN)))
      if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, BA_IDXZ_LEVEL))) return BA_ERR_INVALID;
  }
  size_t bound = ZSTD_compressBound(raw);
  BA_FORWARD(grow(z, BA_BM_REC_HDR + bound));
  /* the frame at buf + HDR - 4, so that its magic number falls on the header
   * and the header, copied over it afterwards, is followed by the rest */
  uint8_t *dst = z->buf + BA_BM_REC_HDR - ZMAGIC_BYTES;
  size_t c = ZSTD_compress2(z->cctx, dst, bound, rec + BA_BM_REC_HDR, raw);
  if (ZSTD_isError(c) || c <= ZMAGIC_BYTES || ba_load_le32(dst) != ZSTD_MAGICNUMBER ||
      BA_BM_REC_HDR + c - ZMAGIC_BYTES > len - len / 8)
    return BA_OK;
  memcpy(z->buf, rec, BA_BM_REC_HDR);
  z->buf[1] = BA_BM_FLAG_ZSTD;
  *out = z->buf;
  *olen = BA_BM_REC_HDR + c - ZMAGIC_BYTES;
  return BA_OK;
}

/* The checks of a compressed record's header and frame: raw = its words'
 * bytes, clen and frame = the frame (magic number put back). */
static int zhead(uint8_t *p, size_t len, int allow, ba_codec_t codec, uint64_t rows, size_t *raw, uint8_t **frame,
                 size_t *clen) {
  BA_RETURN_IF(!allow || p[1] != BA_BM_FLAG_ZSTD || p[0] != (uint8_t)codec || ba_load_le16(p + 2) != 0,
               BA_ERR_CORRUPT);
  uint64_t nrows = ba_load_le64(p + 4), nwords = ba_load_le64(p + 12), wb = ba_codec_word_bits(codec) / 8;
  BA_RETURN_IF(nrows != rows || wb == 0 || nwords > ba_idxz_max_raw(codec, rows) / wb, BA_ERR_CORRUPT);
  *raw = (size_t)(nwords * wb);
  *clen = len - BA_BM_REC_HDR + ZMAGIC_BYTES;
  /* the frame's magic number put back in place of the header's last 4 bytes
   * (read above), so the frame is whole where it was read */
  *frame = p + BA_BM_REC_HDR - ZMAGIC_BYTES;
  ba_store_le32(*frame, ZSTD_MAGICNUMBER);
  /* exactly one frame, the whole record */
  BA_RETURN_IF(ZSTD_findFrameCompressedSize(*frame, *clen) != *clen, BA_ERR_CORRUPT);
  return BA_OK;
}

/* The frame decoded into exactly raw bytes at dst. */
static int zdecode(tstate_t *t, void *dst, size_t raw, const uint8_t *frame, size_t clen) {
  size_t d = ZSTD_decompressDCtx(t->dctx, dst, raw, frame, clen);
  BA_RETURN_IF(ZSTD_isError(d) || d != raw, BA_ERR_CORRUPT);
  return BA_OK;
}

int ba_idxz_unpack(uint8_t *p, size_t len, int allow, ba_codec_t codec, uint64_t rows, const uint8_t **rec,
                   size_t *rlen) {
  BA_RETURN_IF(!p || !rec || !rlen, BA_ERR_INVALID);
  if (len < BA_BM_REC_HDR || p[1] == 0) {
    *rec = p;
    *rlen = len;
    return BA_OK;
  }
  size_t raw, clen;
  uint8_t *frame;
  uint8_t hdr[BA_BM_REC_HDR];
  memcpy(hdr, p, BA_BM_REC_HDR);
  BA_FORWARD(zhead(p, len, allow, codec, rows, &raw, &frame, &clen));
  tstate_t *t = thread_state();
  if (!t) return BA_ERR_NOMEM;
  /* t->buf: the record header, then the words */
  if (BA_BM_REC_HDR + raw > t->cap) {
    void *q = t->buf;
    BA_FORWARD(ba_grow(&q, &t->cap, BA_BM_REC_HDR + raw, 1));
    t->buf = q;
  }
  memcpy(t->buf, hdr, BA_BM_REC_HDR);
  t->buf[1] = 0;
  BA_FORWARD(zdecode(t, t->buf + BA_BM_REC_HDR, raw, frame, clen));
  *rec = t->buf;
  *rlen = BA_BM_REC_HDR + raw;
  return BA_OK;
}

int ba_idxz_load(ba_idxz_t *z, uint8_t *p, size_t len, uint32_t crc, int allow, ba_codec_t codec, uint64_t rows,
                 ba_bitmap_t **out) {
  BA_RETURN_IF(!z || !p || !out, BA_ERR_INVALID);
  BA_RETURN_IF(ba_crc32c(0, p, len) != crc, BA_ERR_CHECKSUM);
  if (len < BA_BM_REC_HDR || p[1] == 0) return ba_idx_bitmap_decode(p, len, codec, rows, out);
  const uint16_t one = 1;
  if (*(const uint8_t *)&one != 1) { /* big-endian host: words converted by the decoder */
    const uint8_t *rec;
    size_t rlen;
    BA_FORWARD(ba_idxz_unpack(p, len, allow, codec, rows, &rec, &rlen));
    return ba_idx_bitmap_decode(rec, rlen, codec, rows, out);
  }
  /* little-endian: the frame decoded straight into the bitmap's words (no
   * buffer in between, no copy) */
  size_t raw, clen;
  uint8_t *frame;
  uint64_t nwords = ba_load_le64(p + 12);
  BA_FORWARD(zhead(p, len, allow, codec, rows, &raw, &frame, &clen));
  tstate_t *t = thread_state();
  void *w = t ? ba_malloc(raw ? raw : 1) : NULL;
  if (!w) return BA_ERR_NOMEM;
  int rc = zdecode(t, w, raw, frame, clen);
  if (rc < 0) {
    ba_free(w);
    return rc;
  }
  return ba_bitmap_adopt_words(codec, w, (size_t)nwords, rows, out);
}
