/* Compressed bitmaps: wah32, wah64, plwah, compax, masc, masc-qt.
 *
 * Bit layouts are specified in doc/codecs.md (from ../shared/specs/codecs.md).
 * A bitmap describes rows 0..n-1. Rows are appended in increasing order
 * (streaming construction, look-back of at most two words), then the bitmap is
 * finished at its final row count. Operations work in the compressed domain and
 * may write the result in any codec.
 *
 * Ownership: ba_bitmap_create/ba_bitmap_free; ba_bitmap_free(NULL) is a no-op.
 * Pointers returned by ba_bitmap_words() stay valid until the next mutating call
 * on the same bitmap. */
#ifndef BITARC_BITMAP_H
#define BITARC_BITMAP_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ba_codec {
  BA_CODEC_WAH32 = 1,
  BA_CODEC_WAH64 = 2,
  BA_CODEC_PLWAH = 3,   /* 32-bit PLWAH, one piggybacked position */
  BA_CODEC_COMPAX = 4,
  BA_CODEC_MASC = 5,
  BA_CODEC_MASC_QT = 6  /* MASC with the query-table word variant */
} ba_codec_t;
#define BA_CODEC_MIN 1
#define BA_CODEC_MAX 6

/* "wah32", "wah64", "plwah", "compax", "masc", "masc-qt"; NULL for an unknown id. */
const char *ba_codec_name(ba_codec_t codec);
/* Parses a codec name; BA_ERR_INVALID if unknown. */
int ba_codec_from_name(const char *name, ba_codec_t *out);
/* 32 or 64; 0 for an unknown id. */
unsigned ba_codec_word_bits(ba_codec_t codec);

typedef struct ba_bitmap ba_bitmap_t;

int ba_bitmap_create(ba_codec_t codec, ba_bitmap_t **out);
void ba_bitmap_free(ba_bitmap_t *bm);
/* Deep copy. */
int ba_bitmap_clone(const ba_bitmap_t *bm, ba_bitmap_t **out);

/* --- streaming construction (rows in increasing order) --- */
/* Appends `nrows` rows all equal to `value` (0 or 1) after the current end. */
int ba_bitmap_append_run(ba_bitmap_t *bm, int value, uint64_t nrows);
/* Appends `nbits` (1..64) rows given MSB-first: the first new row is bit nbits-1. */
int ba_bitmap_append_bits(ba_bitmap_t *bm, uint64_t bits, unsigned nbits);
/* Appends n chunks of G rows each, G = the codec's word bits - 1 (31; 63 for
 * wah64): chunk i is gaps[i] * G zero rows, then the G rows of lits[i]
 * (MSB-first, bits above G ignored). Same result as the matching
 * ba_bitmap_append_run / ba_bitmap_append_bits calls; when the length is a
 * multiple of G (a group codec), whole groups go straight to the encoder. */
int ba_bitmap_append_groups(ba_bitmap_t *bm, const uint32_t *gaps, const uint64_t *lits, size_t n);
/* Sets row `row` (>= the current length): zero-fills the gap, appends a 1. */
int ba_bitmap_set(ba_bitmap_t *bm, uint64_t row);
/* Pads with 0 rows up to `nrows` (>= current length) and closes the encoding.
 * A finished bitmap accepts no more appends. */
int ba_bitmap_finish(ba_bitmap_t *bm, uint64_t nrows);

/* --- access --- */
ba_codec_t ba_bitmap_codec(const ba_bitmap_t *bm);
/* Number of rows described (the current length while building). */
uint64_t ba_bitmap_rows(const ba_bitmap_t *bm);
/* Encoded words of a finished bitmap (uint32_t or uint64_t, host order). */
const void *ba_bitmap_words(const ba_bitmap_t *bm, size_t *nwords);
/* Bytes taken by the encoded words. */
size_t ba_bitmap_size_bytes(const ba_bitmap_t *bm);
/* Wraps (copies) and validates encoded words; BA_ERR_CORRUPT names nothing more
 * than "these words are not a valid `codec` bitmap of `nrows` rows". */
int ba_bitmap_from_words(ba_codec_t codec, const void *words, size_t nwords, uint64_t nrows,
                         ba_bitmap_t **out);
/* As ba_bitmap_from_words, but the bitmap takes words (from ba_malloc, host
 * order) as they are, no copy; they are freed with the bitmap, or at once
 * when this fails. */
int ba_bitmap_adopt_words(ba_codec_t codec, void *words, size_t nwords, uint64_t nrows, ba_bitmap_t **out);
/* Builds a finished bitmap from sorted, distinct row ids all < nrows. */
int ba_bitmap_from_rows(ba_codec_t codec, const uint64_t *rows, size_t n, uint64_t nrows,
                        ba_bitmap_t **out);

/* --- queries --- */
int ba_bitmap_count(const ba_bitmap_t *bm, uint64_t *out);
/* Calls fn with batches of increasing set rows; a non-zero return from fn stops
 * the walk and is returned. */
typedef int (*ba_rows_fn)(void *ctx, const uint64_t *rows, size_t n);
int ba_bitmap_foreach(const ba_bitmap_t *bm, ba_rows_fn fn, void *ctx);
/* As ba_bitmap_foreach, restricted to the set rows in [from, to) (`to` is
 * clipped to the row count): the walk starts at the word holding `from` and
 * stops at `to`, so rows before `from` are never expanded (e.g. the rows of a
 * start-time window of a time-sorted segment). */
int ba_bitmap_foreach_range(const ba_bitmap_t *bm, uint64_t from, uint64_t to, ba_rows_fn fn, void *ctx);
/* Number of set rows in [from, to). */
int ba_bitmap_count_range(const ba_bitmap_t *bm, uint64_t from, uint64_t to, uint64_t *out);
/* Writes up to `cap` set rows; *n gets the total count (may exceed cap). */
int ba_bitmap_to_rows(const ba_bitmap_t *bm, uint64_t *rows, size_t cap, size_t *n);
/* Run view: fn(ctx, value, start_row, nrows) for maximal runs, in order. */
typedef int (*ba_runs_fn)(void *ctx, int value, uint64_t start, uint64_t nrows);
int ba_bitmap_foreach_run(const ba_bitmap_t *bm, ba_runs_fn fn, void *ctx);
/* 1 if both have the same row count and the same bits (any codecs), 0 if
 * not, <0 on error. */
int ba_bitmap_equal(const ba_bitmap_t *a, const ba_bitmap_t *b);

/* --- boolean algebra in the compressed domain --- */
typedef enum ba_op { BA_OP_AND = 0, BA_OP_OR = 1, BA_OP_XOR = 2, BA_OP_ANDNOT = 3 } ba_op_t;
/* Operands may differ in codec and row count (the shorter is zero-padded; the
 * result has the larger row count). Both must be finished. */
int ba_bitmap_op(ba_op_t op, const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t out_codec,
                 ba_bitmap_t **out);
int ba_bitmap_and(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out);
int ba_bitmap_or(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out);
int ba_bitmap_xor(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out);
int ba_bitmap_andnot(const ba_bitmap_t *a, const ba_bitmap_t *b, ba_codec_t c, ba_bitmap_t **out);
/* Complement over the bitmap's own row count. */
int ba_bitmap_not(const ba_bitmap_t *a, ba_codec_t c, ba_bitmap_t **out);
int ba_bitmap_and_count(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t *out);
/* OR of n finished bitmaps (any codecs and row counts); n = 0 gives an empty
 * bitmap of 0 rows. Few or small operands: pairwise tree reduction; many
 * operands (compared with the row count): OR into one plain bitset, encoded
 * once. Same canonical words either way. */
int ba_bitmap_or_many(const ba_bitmap_t *const *bms, size_t n, ba_codec_t out_codec,
                      ba_bitmap_t **out);
/* Re-encodes a finished bitmap in another codec (same rows, same bits). */
int ba_bitmap_convert(const ba_bitmap_t *a, ba_codec_t c, ba_bitmap_t **out);

/* --- serialization: magic-less record [u8 codec][u8 flags][u16 reserved]
 *     [u64 nrows][u64 nwords][words, little-endian] --- */
size_t ba_bitmap_serialized_size(const ba_bitmap_t *bm);
int ba_bitmap_serialize(const ba_bitmap_t *bm, uint8_t *buf, size_t cap, size_t *len);
/* Validates everything (codec id, lengths, word structure, row count). */
int ba_bitmap_deserialize(const uint8_t *buf, size_t len, ba_bitmap_t **out, size_t *consumed);
/* a AND the bitmap of a whole serialized record of len bytes, in a's codec,
 * without deserializing it, when the record is a valid WAH32 or PLWAH bitmap
 * of a's codec and rows with one word per group (a dense literal bitmap):
 * its words are read in place (any alignment) as a table of groups, and only
 * those under a's set groups are combined. Same words as deserializing and
 * ba_bitmap_and(a, b, codec of a). 1 = declined (other records, and invalid
 * ones: deserializing reports them), 0 = done, < 0 = error. */
int ba_bitmap_and_record(const ba_bitmap_t *a, const uint8_t *rec, size_t len, ba_bitmap_t **out);
/* The rows of that AND, counted without building it (same 1 and errors). */
int ba_bitmap_and_record_count(const ba_bitmap_t *a, const uint8_t *rec, size_t len, uint64_t *count);
/* The rows of a AND all n (1..8) records counted in one pass: 1 unless every
 * record qualifies as for ba_bitmap_and_record. */
int ba_bitmap_and_records_count(const ba_bitmap_t *a, const uint8_t *const *recs, const size_t *lens, size_t n,
                                uint64_t *count);
/* a AND the bitmap of codec whose nwords words (host order, aligned to the
 * codec's word size) are read where they lie, not copied: validated as
 * ba_bitmap_from_words does, then ba_bitmap_and into codec c (out), or
 * only its rows counted (out NULL: ba_bitmap_and_count into *count). */
int ba_bitmap_and_words(const ba_bitmap_t *a, ba_codec_t codec, const void *words, size_t nwords, uint64_t nrows,
                        ba_codec_t c, ba_bitmap_t **out, uint64_t *count);

#ifdef __cplusplus
}
#endif
#endif
