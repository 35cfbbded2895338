/* The codec interface: what a codec implements and the generic bitmap layer
 * calls. One `static const ba_codec_ops_t` per codec (wah32.c, wah64.c,
 * plwah.c, compax.c, masc.c); the generic layer (bitmap.c, ops.c,
 * validate.c) reaches a codec only through its table. Depends on nothing
 * codec-specific.
 *
 * Tokens: group codecs (wah32, plwah, compax: G = 31; wah64: G = 63): FILL n
 * = n whole groups (n >= 1), LIT = one G-bit group payload `lit`, the first
 * row being the MSB of the G bits (D-1). Bit-run codecs (masc, masc-qt;
 * group_bits = 0): FILL n = n bits; no LIT. */
#ifndef BA_CODEC_CODEC_H
#define BA_CODEC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"
#include "bitarc/errors.h"
#include "common/common.h"

typedef enum { BA_TOK_FILL0 = 0, BA_TOK_FILL1 = 1, BA_TOK_LIT = 2 } ba_tok_kind_t;

typedef struct {
  uint64_t n;   /* FILL: groups (group codecs) or bits (bit-run codecs) */
  uint64_t lit; /* LIT: G-bit payload, first row = MSB */
  uint8_t kind; /* ba_tok_kind_t */
} ba_tok_t;

/* Growable vector of words of ops->word_bytes each, host order. fixed: w is
 * not the vector's own (a bitmap pool's room, bmpool.c): never reallocated
 * or freed; growing past cap moves the words to the heap. */
typedef struct {
  void *w;
  size_t n, cap;
  int fixed;
} ba_wordvec_t;

/* Ensures room for `extra` more words of `word_bytes` each (codec.c). */
int ba_wordvec_reserve(ba_wordvec_t *v, size_t extra, unsigned word_bytes);
void ba_wordvec_free(ba_wordvec_t *v);
/* Appends one word (inline fast path; grows through ba_wordvec_reserve). */
static inline int ba_wordvec_push32(ba_wordvec_t *v, uint32_t w) {
  if (v->n == v->cap) {
    int rc = ba_wordvec_reserve(v, 1, 4);
    if (rc < 0) return rc;
  }
  ((uint32_t *)v->w)[v->n++] = w;
  return 0;
}
static inline int ba_wordvec_push64(ba_wordvec_t *v, uint64_t w) {
  if (v->n == v->cap) {
    int rc = ba_wordvec_reserve(v, 1, 8);
    if (rc < 0) return rc;
  }
  ((uint64_t *)v->w)[v->n++] = w;
  return 0;
}

/* Codec-private encoder look-back (zeroed at start). */
typedef struct {
  uint64_t s[8];
} ba_enc_state_t;

/* Decoder cursor; s[] is codec-private (set by dec_init). */
typedef struct {
  const void *words;
  size_t nwords, pos;
  uint64_t s[6];
} ba_dec_t;

/* Where a pair kernel sends its result (kernel.h). */
struct ba_op_sink;
/* A pair kernel: a op b over N rows into the sink (kernel.h). */
typedef int (*ba_pair_kernel_fn)(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N,
                                 struct ba_op_sink *s);

typedef struct ba_codec_ops {
  ba_codec_t id;
  const char *name;
  unsigned word_bytes; /* 4 or 8 */
  unsigned group_bits; /* 31, 63, or 0 for bit-run codecs */
  /* Encoder. Tokens arrive in row order and are NOT canonical: a LIT may be 0
   * or all-ones, consecutive FILLs may share a value, bit-run FILLs may be any
   * length. The encoder must emit exactly the canonical encoding of the spec,
   * keeping a look-back of at most two words (COMPAX LFL/FLF, PLWAH piggyback,
   * MASC carrier). Returns 0 or a negative ba_status. */
  int (*put)(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok);
  /* Flushes open/pending tokens. */
  int (*end)(ba_wordvec_t *out, ba_enc_state_t *st);
  void (*dec_init)(ba_dec_t *d, const void *words, size_t nwords);
  /* 1 = a token in *tok, 0 = end of words, BA_ERR_CORRUPT = invalid word (the
   * spec's "reject" rules). Never reads past nwords. */
  int (*dec_next)(ba_dec_t *d, ba_tok_t *tok);

  /* ---- fast paths; NULL = the generic layer's token loops ---- */
  /* Word-loop validation with the same accept set as the token loop of
   * validate.c (tests and the bitmap_deserialize fuzzer check both agree):
   * BA_OK or BA_ERR_CORRUPT. Called for at most 2^32 words. */
  int (*validate)(const void *words, size_t nwords, uint64_t nrows);
  /* Set rows of validated words: 1 = counted into *out, 0 = leave it to the
   * token loop (which reports what is wrong). */
  int (*count)(const void *words, size_t nwords, uint64_t *out);
  /* Pair kernels by operation (0..3 = ba_op_t, 4 = NOT, 5 = COPY, kernel.h).
   * Group codecs: used when both operands and the output are of this codec.
   * Bit-run codecs: ops 0..3 only, for two operands of any bit-run codecs
   * and any output. */
  const ba_pair_kernel_fn *kernels;
  /* ORs a finished bitmap of this codec into a plain bitset (kernel.h). */
  int (*bitset_or)(uint64_t *bs, const ba_bitmap_t *bm);
  /* Feeds rows [0, N) of a bitset into an empty bitmap of this codec. */
  int (*bitset_put)(const uint64_t *bs, uint64_t N, ba_bitmap_t *o);
  /* Group codecs (required for them): per entry gaps[i] zero groups then the
   * group lits[i] & all as put would get them, token by token (groups_put in
   * kernel.h); ba_bitmap_append_groups calls it. */
  int (*put_groups)(ba_wordvec_t *out, ba_enc_state_t *st, const uint32_t *gaps, const uint64_t *lits, size_t n,
                    uint64_t all);
  /* Range selection and count of a finished bitmap; *done = 0 leaves the
   * call to the generic walk (e.g. a bitmap too small to gain). */
  int (*range_rows)(const ba_bitmap_t *bm, uint64_t from, uint64_t to, ba_rows_fn fn, void *ctx,
                    int *done);
  int (*range_count)(const ba_bitmap_t *bm, uint64_t from, uint64_t to, uint64_t *out, int *done);
  /* Frees what the fast paths cached in a bitmap (ba_bitmap.cache). */
  void (*cache_free)(void *cache);
} ba_codec_ops_t;

extern const ba_codec_ops_t ba_wah32_ops, ba_wah64_ops, ba_plwah_ops, ba_compax_ops, ba_masc_ops,
    ba_masc_qt_ops;

/* The ops of a codec id; NULL if unknown or not built (codec.c). */
const ba_codec_ops_t *ba_codec_ops(ba_codec_t id);

/* As ba_bitmap_adopt_words (bitmap.c), for words the library's own encoder
 * code has just written (the online index builder's PLWAH words,
 * index/online_small.c): not validated again in release builds (NDEBUG),
 * where that was ~0.6 % of an ingest's instructions; debug builds (the
 * tests) still validate them, so an encoder bug fails there as corrupt
 * words. Words read from anywhere else go through ba_bitmap_adopt_words. */
int ba_bitmap_adopt_built(ba_codec_t codec, void *words, size_t nwords, uint64_t nrows, ba_bitmap_t **out);

/* Population count without a libgcc call: the default x86-64 target has no
 * POPCNT instruction, and __builtin_popcountll then calls __popcountdi2. */
static inline unsigned ba_bm_popcnt(uint64_t x) {
#if defined(__POPCNT__) || !defined(__x86_64__)
  return ba_popcount64(x);
#else
  x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
  x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
  x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
  return (unsigned)((x * UINT64_C(0x0101010101010101)) >> 56);
#endif
}

/* The end of a codec's word-loop validation (validate.c): `bad` or a total
 * of groups (bits) other than `expect` is corrupt; otherwise the last word's
 * tokens must leave the padded rows of the last group 0. */
int ba_bm_validate_end(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
                       uint64_t expect, uint64_t total, int bad);

#endif
