/* MASC query table (MASC §III.D; specs/codecs.md §5.5, D-13): an in-memory
 * acceleration structure rebuilt from the words on load, never stored.
 *
 * One entry per word: its type tag (1 = the word holds ones: a 1-fill or a
 * 1-carried 0-fill; MASC-QT's bit 30) and its start row (the paper's
 * "chunk offset * 31 + bit offset", here absolute instead of per window).
 * Selection of the set rows in [a, b) binary-searches the first word and then
 * visits only tagged words, skipping pure 0-fills without decoding them: the
 * paper's "B = 1.5Wa + 2Wb drops to Wa + Wb". Works for MASC and MASC-QT words. */
#ifndef BA_CODEC_MASC_QT_TABLE_H
#define BA_CODEC_MASC_QT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"

typedef struct ba_masc_qt_table ba_masc_qt_table_t;

/* Builds the table of `nwords` words of `codec` (BA_CODEC_MASC or
 * BA_CODEC_MASC_QT); validates every word (BA_ERR_CORRUPT) and the total row
 * count (BA_ERR_OVERFLOW if it does not fit 64 bits). The words are not kept:
 * pass the same words to the calls below. */
int ba_masc_qt_table_build(ba_codec_t codec, const uint32_t *words, size_t nwords,
                           ba_masc_qt_table_t **out);
void ba_masc_qt_table_free(ba_masc_qt_table_t *t);
/* Rows described by the words (sum of all runs). */
uint64_t ba_masc_qt_table_rows(const ba_masc_qt_table_t *t);
/* Index of the word whose runs contain `row`; the word count if row >= rows. */
size_t ba_masc_qt_table_seek(const ba_masc_qt_table_t *t, uint64_t row);
/* Calls fn with batches of the increasing set rows in [a, b) (b is clipped to
 * the row count); a non-zero return from fn stops and is returned. */
int ba_masc_qt_table_select(const ba_masc_qt_table_t *t, const uint32_t *words, uint64_t a, uint64_t b,
                            ba_rows_fn fn, void *ctx);
/* Number of set rows in [a, b). */
uint64_t ba_masc_qt_table_count(const ba_masc_qt_table_t *t, const uint32_t *words, uint64_t a, uint64_t b);

/* ops->range_rows, range_count and cache_free of MASC and MASC-QT: a finished
 * bitmap of at least BA_MASC_QT_MIN_WORDS words answers through its table,
 * built on first use and kept in the bitmap's cache; *done = 0 for smaller
 * bitmaps (or when the table cannot be built): the caller walks the words. */
#define BA_MASC_QT_MIN_WORDS 1024
int ba_masc_range_rows(const ba_bitmap_t *bm, uint64_t from, uint64_t to, ba_rows_fn fn, void *ctx,
                       int *done);
int ba_masc_range_count(const ba_bitmap_t *bm, uint64_t from, uint64_t to, uint64_t *out, int *done);
void ba_masc_cache_free(void *cache);

#endif
