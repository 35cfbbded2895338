/* Plain uint64_t bitset: the naive reference the codec tests compare against.
 * Row r is bit r % 64 of word r / 64. */
#ifndef BA_CODEC_REF_H
#define BA_CODEC_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t *w;
  uint64_t n; /* rows */
} ba_ref_t;

int ba_ref_init(ba_ref_t *r, uint64_t nrows);
void ba_ref_free(ba_ref_t *r);
static inline int ba_ref_get(const ba_ref_t *r, uint64_t row) {
  return row < r->n && ((r->w[row >> 6] >> (row & 63)) & 1);
}
static inline void ba_ref_set(ba_ref_t *r, uint64_t row, int v) {
  uint64_t m = UINT64_C(1) << (row & 63);
  if (v)
    r->w[row >> 6] |= m;
  else
    r->w[row >> 6] &= ~m;
}
uint64_t ba_ref_count(const ba_ref_t *r);
/* out = a op b over max(a.n, b.n) rows, the shorter zero-padded; op 0..3 as
 * ba_op_t, 4 = NOT a (b ignored). out must be uninitialised. */
int ba_ref_op(int op, const ba_ref_t *a, const ba_ref_t *b, ba_ref_t *out);
/* Set rows in increasing order into rows[] (cap entries); returns the count. */
size_t ba_ref_rows(const ba_ref_t *r, uint64_t *rows, size_t cap);

#endif
