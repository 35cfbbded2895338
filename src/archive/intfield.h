/* Integer fields of column payloads (internal to the archive module):
 * doc/format.md §3.2 (2.0) and §7.1 (3.0). */
#ifndef BA_ARCHIVE_INTFIELD_H
#define BA_ARCHIVE_INTFIELD_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"

/* Writes the smallest encoding of v[0..n) (w-byte values; v is clobbered)
 * at out (at most BA_COL2_FIELD_HDR + w*n + 8*n bytes); byte planes only if
 * allow_planes (2.0). Returns the bytes written. */
size_t ba_if_encode(ba_col_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes, uint8_t *out);
/* Decodes one whole field at in[0..len) into v[0..n); *used gets its bytes.
 * Byte planes are accepted only if allow_planes. */
int ba_if_decode(const uint8_t *in, size_t len, size_t n, unsigned w, int allow_planes, uint64_t *v,
                 size_t *used);
/* The smallest and largest value of the field ba_if_encode last wrote with
 * x (0 and 0 for no rows): its first pass's, shared with the zone maps. */
void ba_if_range(const ba_col_scratch_t *x, uint64_t *mn, uint64_t *mx);
/* Tests: the encoder's range, scale and rise/fall kernels of level 0
 * (portable C), 1 (AVX2) or 2 (AVX-512), or the best the CPU has below the
 * level asked; returns the level set. Not thread-safe (before any encoding). */
int ba_if_set_kernels(int level);
/* The scratch's value buffer, grown to n + 1 values. */
int ba_if_scratch_values(ba_col_scratch_t *x, size_t n, uint64_t **v);

/* Reads single values of a bit-packed field: FOR and DICT at any row, DELTA
 * and PDICT with a forward cursor (ascending rows are cheapest; a row before
 * the cursor restarts it). ba_if_open checks the header and that every part
 * fits in len; values outside a dictionary are caught by ba_if_get. */
typedef struct ba_if_reader {
  unsigned method, bits, w, eb;
  uint32_t nd;
  uint32_t dict_fast; /* entries below it are read with one 8-byte load (still inside `in`) */
  uint64_t base, scale, mask, ne;
  const uint8_t *dict, *vals, *exc;
  size_t vals_len, exc_len, n;
  size_t cur;   /* the cursor: rows before it are accounted in acc */
  uint64_t acc; /* DELTA: running sum; PDICT: escapes seen */
} ba_if_reader_t;
int ba_if_open(const uint8_t *in, size_t len, size_t n, unsigned w, ba_if_reader_t *r, size_t *used);
int ba_if_get(ba_if_reader_t *r, size_t row, uint64_t *out);
/* Values of rows[0..k) (ascending) into out: ba_if_get for many rows, the
 * method picked once. */
int ba_if_get_rows(ba_if_reader_t *r, const uint32_t *rows, size_t k, uint64_t *out);

#endif
