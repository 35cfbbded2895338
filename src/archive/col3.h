/* Column layout 3.0 (doc/format.md §7.1), internal to the archive module.
 * ba_col_encode/ba_col_decode dispatch here for major 3; the reader also
 * decodes single rows of a block (late materialization). */
#ifndef BA_ARCHIVE_COL3_H
#define BA_ARCHIVE_COL3_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"

/* Bit of ba_col_t for column id col (0 for META, always read). */
uint32_t ba_col_bit(int col);
size_t ba_col3_raw_min(int col, size_t n);
size_t ba_col3_raw_max(int col, size_t n, size_t frame_bytes);
/* *len = 0: every field of the column is zero in all n rows (not written;
 * never for META). */
int ba_col3_encode(int col, const ba_record_t *r, size_t n, const uint8_t *frames, size_t frame_bytes,
                   uint8_t *out, size_t *len, ba_col_scratch_t *x);
/* Fields of the column (ba_col3_gather gives each n values). */
size_t ba_col3_nfields(int col);
/* The fields of columns cols[0..ncols) of rows r[0..n), field after field
 * (a column's fields in order, then the next column's), n values each, into
 * fv; one pass over the rows. */
void ba_col3_gather(const int *cols, size_t ncols, const ba_record_t *r, size_t n, uint64_t *fv);
/* ba_col3_gather without the fields in skip[c] (bit k: field k of column
 * cols[c]; skip NULL: none), whose n values in fv are left as they were. */
void ba_col3_gather_skip(const int *cols, size_t ncols, const uint32_t *skip, const ba_record_t *r, size_t n,
                         uint64_t *fv);
/* Rows per gathering step: their records (about 50 KB) stay in cache while
 * every field of every column asked for is taken from them. */
#define BA_COL3_GATHER_ROWS 128
/* One step of ba_col3_gather_skip: rows [i0, i0 + k) of r[0..n). */
void ba_col3_gather_rows(const int *cols, size_t ncols, const uint32_t *skip, const ba_record_t *r, size_t n,
                         size_t i0, size_t k, uint64_t *fv);
/* ba_col3_encode from the column's gathered fields fv (clobbered). */
int ba_col3_encode_fields(int col, uint64_t *fv, size_t n, const uint8_t *frames, size_t frame_bytes,
                          uint8_t *out, size_t *len, ba_col_scratch_t *x);
/* The fields of column col that hold one value in every row of a block,
 * told from `any` and `all`, the bytewise OR and AND of its rows (equal
 * bytes): bit k for field k, its value (as gathered) in vals[k]. LAST (a
 * difference of two fields) is never told. */
uint32_t ba_col3_const_fields(int col, const ba_record_t *any, const ba_record_t *all, uint64_t *vals);
/* ba_col3_encode_fields where each field k in cmask holds cval[k] in every
 * row (its values in fv are not read): the same bytes, without a pass over
 * them. */
int ba_col3_encode_fields_const(int col, uint64_t *fv, uint32_t cmask, const uint64_t *cval, size_t n,
                                const uint8_t *frames, size_t frame_bytes, uint8_t *out, size_t *len,
                                ba_col_scratch_t *x);
/* ba_col3_encode_fields_const that also gives each field k's smallest and
 * largest value in fmin[k], fmax[k] (0 and 0 for no rows), from the
 * encoder's own pass (a constant field: its value; an absent column: 0). */
int ba_col3_encode_fields_range(int col, uint64_t *fv, uint32_t cmask, const uint64_t *cval, size_t n,
                                const uint8_t *frames, size_t frame_bytes, uint8_t *out, size_t *len,
                                ba_col_scratch_t *x, uint64_t *fmin, uint64_t *fmax);
/* 0 when every field of column col is zero in every row of a block, told
 * from `any`, the bytewise OR of its rows (then ba_col3_encode would give
 * *len = 0 and need not run); 1 when it may have a nonzero field. */
int ba_col3_maybe_present(int col, const ba_record_t *any);
/* The fields of a whole block (ba_col_decode checks META and attaches frames
 * after it); *fields gets their bytes (FRAME: the frames follow them).
 * raw_len 0 (not META) is an absent column: every stored value 0, so LAST
 * gives last_ns = first_ns (decode FIRST first). Same in decode_rows. */
int ba_col3_decode(int col, const uint8_t *raw, size_t raw_len, size_t n, ba_record_t *r, size_t *fields);
/* Decodes rows rows[0..k) (ascending, < n) of a block of n rows into
 * out[0..k). LAST needs FIRST decoded into out first. Checks every field
 * header and the payload length, and each value it reads. */
int ba_col3_decode_rows(int col, const uint8_t *raw, size_t raw_len, size_t n, const uint32_t *rows,
                        size_t k, ba_record_t *out);
void ba_col3_clear(int col, ba_record_t *r, size_t n);
/* The 3.0 column, field index and width of the record field at offset off
 * (an address word: the word's offset); -1 if no stored field starts there. */
int ba_col3_field_at(size_t off, int *col, int *k, unsigned *width);
/* Stored values of field k of column col (payload raw[0..raw_len), block of
 * n rows) at rows idx[0..m) (ascending; idx NULL: all n rows) into v, which
 * holds n values (a dense pick decodes the whole field there first). Values
 * as stored: an address word as a number (its bytes big-endian), LAST as the
 * duration. Absent column (raw_len 0): zeros. */
int ba_col3_field_values(int col, int k, const uint8_t *raw, size_t raw_len, size_t n, const uint32_t *idx,
                         size_t m, uint64_t *v);
/* 1 if an absent column decodes to all-zero fields (every column but LAST,
 * whose absent durations give last_ns = first_ns): a reader that zeroed its
 * records need not decode it. */
int ba_col3_absent_is_zero(int col);

#endif
