/* Bitmap index over one column of uint32 values (internal API of the index
 * module). Knows codecs, not files or records: the archive module maps record
 * fields to values and places the serialized bitmaps in segment files.
 *
 * Two builders give byte-identical bitmaps (same bit strings through the
 * codec's canonical encoder):
 *   online  - Lemire's chunk algorithm (codecs.md §8): rows arrive in order,
 *             each present value keeps one pending G-bit literal;
 *   batch   - IMC'13 §3: (value,row) pairs radix-sorted by value, one bitmap
 *             per value built from its sorted rows; attributes over threads. */
#ifndef BA_INDEX_H
#define BA_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/bitmap.h"

/* A row with this value has no bit in any bitmap of the attribute. */
#define BA_IDX_NONE UINT32_MAX
/* Largest value domain an attribute may have (values < domain). */
#define BA_IDX_MAX_DOMAIN (1u << 24)

/* One attribute's finished index: the present values ascending, their
 * finished bitmaps (all of `rows` rows). */
typedef struct ba_idx_attr {
  size_t n;
  uint32_t *values;
  ba_bitmap_t **bms;
  struct ba_bmpool *pool; /* where bms were made (codec/bmpool.h), or NULL: freed after them */
  uint64_t *counts;       /* set rows of bms[i], or NULL: not known (ba_idx_fold counts them) */
} ba_idx_attr_t;
void ba_idx_attr_clear(ba_idx_attr_t *a);
/* Room in a (cleared) for n values and their bitmaps (all NULL), and their
 * row counts if counts; a->n stays 0 (it counts the slots filled). */
int ba_idx_attr_alloc(ba_idx_attr_t *a, size_t n, int counts);
/* Rows per chunk for a codec: its group size (31 or 63). */
unsigned ba_idx_chunk_rows(ba_codec_t codec);

/* ---- online builder ---- */
typedef struct ba_idx_online ba_idx_online_t;
int ba_idx_online_create(ba_codec_t codec, uint32_t domain, ba_idx_online_t **out);
void ba_idx_online_free(ba_idx_online_t *b);
/* The next n rows; each value < domain or BA_IDX_NONE. */
int ba_idx_online_add(ba_idx_online_t *b, const uint32_t *vals, size_t n);
/* The next n rows, none with a value (as n times BA_IDX_NONE, without the
 * values: IPv6 attributes of IPv4 rows). */
int ba_idx_online_add_absent(ba_idx_online_t *b, size_t n);
uint64_t ba_idx_online_rows(const ba_idx_online_t *b);
/* Present values so far in the rows applied; rows are buffered and applied
 * in batches, so this may lag ba_idx_online_rows until finish. */
size_t ba_idx_online_values(const ba_idx_online_t *b);
/* Finishes every bitmap at the rows added so far; the builder is spent. */
int ba_idx_online_finish(ba_idx_online_t *b, ba_idx_attr_t *out);

/* ---- batch builder ---- */
/* One attribute, single-threaded. */
int ba_idx_batch_build(ba_codec_t codec, uint32_t domain, const uint32_t *vals, size_t n,
                       ba_idx_attr_t *out);
/* A bitmap from sorted distinct rows, by the same appends as the online
 * builder (chunk literals, zero runs between them). */
int ba_idx_bitmap_from_rows(ba_codec_t codec, const uint32_t *rows, size_t n, uint64_t nrows,
                            ba_bitmap_t **out);

/* Builds nattr attributes of nrows rows each on a device. vals[i] may be NULL
 * (that attribute is skipped and left empty). "cpu" = pthreads with `threads`
 * workers; other names go through the device table below. */
typedef int (*ba_idx_device_fn)(ba_codec_t codec, const uint32_t *const *vals,
                                const uint32_t *domains, size_t nattr, size_t nrows, int threads,
                                ba_idx_attr_t *out);
int ba_idx_batch_build_many(const char *device, ba_codec_t codec, const uint32_t *const *vals,
                            const uint32_t *domains, size_t nattr, size_t nrows, int threads,
                            ba_idx_attr_t *out);
/* Hook for other devices (the gpu module: "omp", "gpu"): registers fn under name.
 * Until registered, such a device answers BA_ERR_NODEVICE ("device not
 * built"). Not thread-safe; call at startup. */
int ba_idx_register_device(const char *name, ba_idx_device_fn fn);

/* ---- folding rare values into bins (doc/format.md §7.4) ---- */
/* Every value of `exact` whose bitmap has fewer than min_rows rows is
 * removed from it, and its rows are ORed into the bins bitmap of value
 * bin_of(value) (non-decreasing in value); bins must be empty. Nothing is
 * folded for min_rows < 2. exact + bins still cover every row. */
typedef uint32_t (*ba_idx_bin_fn)(uint32_t value);
int ba_idx_fold(ba_idx_attr_t *exact, ba_idx_attr_t *bins, uint64_t min_rows, ba_idx_bin_fn bin_of,
                ba_codec_t codec);
/* The PLWAH bitmap of nrows rows (nrows / 31 <= UINT32_MAX) whose 31-row
 * groups are acc[0..ceil(nrows / 31)), MSB-first literals (row 31 g + o is
 * bit 30 - o of acc[g]), the rows past nrows clear: the words ba_idx_fold
 * gives a bin of these rows. acc is left zeroed when it succeeds. */
int ba_idx_fold_encode(uint32_t *acc, uint64_t nrows, ba_bitmap_t **out);
/* ORs the rows of a finished PLWAH bitmap of ceil(rows / 31) = ngroups
 * groups into acc[0..ngroups) (as ba_idx_fold_encode reads them). */
int ba_idx_fold_or(uint32_t *acc, uint64_t ngroups, const ba_bitmap_t *bm);
/* ba_idx_online_finish into exact, then ba_idx_fold(exact, bins, min_rows,
 * bin_of, the builder's codec): the same two attributes, bins cleared first.
 * PLWAH, domains of online_dense.c: a rare value's rows go straight to its
 * bin where the builder has them (all rows in its last batch, or the value
 * kept as a row list), without an exact bitmap ever built; a rare value
 * already built as a bitmap has its words ORed in. The builder is spent. */
int ba_idx_online_finish_fold(ba_idx_online_t *b, uint64_t min_rows, ba_idx_bin_fn bin_of, ba_idx_attr_t *exact,
                              ba_idx_attr_t *bins);

/* ---- serialization (bitmaps + directory; see doc/format.md §4) ---- */
typedef struct ba_idx_dirent {
  uint16_t attr;
  uint32_t value;
  uint64_t off;
  uint32_t len, crc;
} ba_idx_dirent_t;
#define BA_IDX_DIRENT_BYTES 24u

/* Sink for serialized bytes. */
typedef int (*ba_idx_write_fn)(void *ctx, const void *p, size_t n);
/* Optional transform of one serialized bitmap record before it is written
 * (the archive's compressed records, format.md §7.8): sets *out and *olen to the
 * record to store (rec itself, or bytes owned by ctx, valid until the next
 * call). */
typedef int (*ba_idx_pack_fn)(void *ctx, const uint8_t *rec, size_t len, const uint8_t **out,
                              size_t *olen);
/* Writes every bitmap of attrs[0..nattr) in (attr, value) order through fn,
 * the first byte being at file offset base; *dir and *ndir get the entries
 * (caller frees *dir). *bytes_attr (nattr entries, may be NULL) gets the
 * bytes per attribute. pack (may be NULL) transforms each record first;
 * lengths and CRCs are those of the stored bytes. */
int ba_idx_write(const ba_idx_attr_t *attrs, size_t nattr, uint64_t base, ba_idx_write_fn fn,
                 void *ctx, ba_idx_pack_fn pack, void *pctx, ba_idx_dirent_t **dir, size_t *ndir,
                 uint64_t *bytes_attr);
/* Directory payload: u32 n, u32 0, entries. */
size_t ba_idx_dir_size(size_t n);
void ba_idx_dir_encode(const ba_idx_dirent_t *d, size_t n, uint8_t *out);
/* Parses and validates (strictly increasing (attr,value), attr < nattr,
 * bitmaps inside [lo, hi)). Caller frees *d. */
int ba_idx_dir_decode(const uint8_t *p, size_t len, size_t nattr, uint64_t lo, uint64_t hi,
                      ba_idx_dirent_t **d, size_t *n);
/* Index of (attr, value) in d, or -1. */
long ba_idx_dir_find(const ba_idx_dirent_t *d, size_t n, uint16_t attr, uint32_t value);
/* Checks crc and decodes one bitmap record; must have `codec` and `rows`. */
int ba_idx_bitmap_load(const uint8_t *p, size_t len, uint32_t crc, ba_codec_t codec, uint64_t rows,
                       ba_bitmap_t **out);
/* Decodes one bitmap record (no CRC check): exactly len bytes, `codec` and
 * `rows`, flags 0. */
int ba_idx_bitmap_decode(const uint8_t *p, size_t len, ba_codec_t codec, uint64_t rows,
                         ba_bitmap_t **out);

#endif
