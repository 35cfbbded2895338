/* Internal codec interface: token streams between the generic bitmap layer
 * (bitmap.c, ops.c) and the per-codec word encoders/decoders.
 *
 * Group codecs (wah32, plwah, compax: G = 31; wah64: G = 63): FILL n = n whole
 * groups (n >= 1), LIT = one G-bit group payload `lit`, the first row being the
 * MSB of the G bits (D-1). Bit-run codecs (masc, masc-qt; group_bits = 0):
 * FILL n = n bits; no LIT. */
#ifndef BA_CODEC_INTERNAL_H
#define BA_CODEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"
#include "bitarc/errors.h"

typedef enum { BA_TOK_FILL0 = 0, BA_TOK_FILL1 = 1, BA_TOK_LIT = 2 } ba_tok_kind_t;

typedef struct {
  uint64_t n;   /* FILL: groups (group codecs) or bits (bit-run codecs) */
  uint64_t lit; /* LIT: G-bit payload, first row = MSB */
  uint8_t kind; /* ba_tok_kind_t */
} ba_tok_t;

/* Growable vector of words of ops->word_bytes each, host order. */
typedef struct {
  void *w;
  size_t n, cap;
} ba_wordvec_t;

/* Ensures room for `extra` more words of `word_bytes` each. */
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
} ba_codec_ops_t;

extern const ba_codec_ops_t ba_wah32_ops, ba_wah64_ops, ba_plwah_ops, ba_compax_ops, ba_masc_ops,
    ba_masc_qt_ops;

/* The ops of a codec id; NULL if unknown or not built. */
const ba_codec_ops_t *ba_codec_ops(ba_codec_t id);


/* ---- generic layer internals (bitmap.c, ops.c; tests may use them) ---- */

/* Largest row count a bitmap may describe: keeps groups*G and run sums inside
 * uint64_t for every codec. */
#define BA_BITMAP_MAX_ROWS (UINT64_C(1) << 62)

struct ba_bitmap {
  const ba_codec_ops_t *ops;
  ba_wordvec_t vec;
  ba_enc_state_t st;
  uint64_t rows;     /* rows appended so far (the final count once finished) */
  uint64_t pend;     /* group codecs: rows of the open group, right-aligned, oldest highest */
  uint64_t run_len;  /* bit-run codecs: length of the open run */
  unsigned pend_n;   /* group codecs: rows in `pend` */
  unsigned group;    /* ops->group_bits */
  int run_val;       /* bit-run codecs: value of the open run */
  int finished;
  /* MASC/MASC-QT query table (masc_qt_table.h), built on the first range
   * selection of a large finished bitmap and kept until ba_bitmap_free;
   * installed with a compare-and-swap so concurrent readers stay safe. Never
   * copied by clone. */
  _Atomic(struct ba_masc_qt_table *) qt;
};

/* A fresh, empty, unfinished bitmap for `ops`. */
int ba_bm_new(const ba_codec_ops_t *ops, ba_bitmap_t **out);
/* Pads to `nrows` if short, closes the open group or run and the encoder.
 * Ops that feed whole-group tokens straight into bm->ops->put set bm->rows
 * themselves first. */
int ba_bm_close(ba_bitmap_t *bm, uint64_t nrows);

/* The bit-granular path of ba_bitmap_op / ba_bitmap_not, without the
 * same-group-size fast path (tests compare the two). op: 0..3 = ba_op_t,
 * BA_OPX_NOT = complement of a (b ignored), BA_OPX_COPY = a in another codec. */
#define BA_OPX_NOT 4
#define BA_OPX_COPY 5
int ba_bitmap_op_generic(int op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t out_codec,
                         ba_bitmap_t **out);

/* Checks foreign words as ba_bitmap_from_words does (validate.c): BA_OK or
 * BA_ERR_CORRUPT. generic = 1 decodes through ops' function pointers (the
 * reference), 0 through the codec's inlined decoder (same rules, same code). */
int ba_bm_validate(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
                   int generic);

/* ba_bitmap_count through the codec's token decoder (the per-codec word
 * loops of ba_bitmap_count are checked against it). */
int ba_bitmap_count_generic(const ba_bitmap_t *bm, uint64_t *out);

/* ba_bitmap_or_many with a forced strategy (tests compare them):
 * BA_ORMANY_AUTO as the public call, BA_ORMANY_TREE = pairwise tree of
 * two-way ORs, BA_ORMANY_BITSET = OR every operand into one plain bitset and
 * encode it once. */
#define BA_ORMANY_AUTO 0
#define BA_ORMANY_TREE 1
#define BA_ORMANY_BITSET 2
int ba_bitmap_or_many_with(const ba_bitmap_t *const *bms, size_t n, ba_codec_t out_codec, int strategy,
                           ba_bitmap_t **out);

#endif
