/* The generic bitmap layer's internals (bitmap.c, ops.c, validate.c): the
 * bitmap struct and the reference paths tests compare the fast paths with.
 * Codec files may read a bitmap's fields; they never include each other. */
#ifndef BA_CODEC_BITMAP_INTERNAL_H
#define BA_CODEC_BITMAP_INTERNAL_H

#include "codec/codec.h"

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
  int pooled;        /* the struct lives in a bitmap pool (bmpool.c): ba_bitmap_free leaves it */
  /* What a codec's fast paths cache for a finished bitmap (MASC: the query
   * table of masc_qt_table.h, built on the first range selection of a large
   * bitmap), freed by ops->cache_free in ba_bitmap_free; installed with a
   * compare-and-swap so concurrent readers stay safe. Never copied by clone. */
  _Atomic(void *) cache;
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
 * BA_ERR_CORRUPT. generic = 1 decodes through ops' token decoder (the
 * reference), 0 through the codec's word loop (ops->validate; same rules). */
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
