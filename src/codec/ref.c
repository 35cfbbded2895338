/* Plain bitset reference: row by row, no cleverness (see ref.h). */
#include "codec/ref.h"

#include "bitarc/errors.h"
#include "common/common.h"

int ba_ref_init(ba_ref_t *r, uint64_t nrows) {
  r->n = nrows;
  r->w = (uint64_t *)ba_calloc((size_t)(nrows / 64 + 1), sizeof(uint64_t));
  return r->w ? BA_OK : BA_ERR_NOMEM;
}

void ba_ref_free(ba_ref_t *r) {
  ba_free(r->w);
  r->w = NULL;
  r->n = 0;
}

uint64_t ba_ref_count(const ba_ref_t *r) {
  uint64_t c = 0;
  for (uint64_t i = 0; i < r->n; i++) c += (uint64_t)ba_ref_get(r, i);
  return c;
}

int ba_ref_op(int op, const ba_ref_t *a, const ba_ref_t *b, ba_ref_t *out) {
  uint64_t n = op == 4 ? a->n : BA_MAX(a->n, b->n);
  BA_FORWARD(ba_ref_init(out, n));
  for (uint64_t i = 0; i < n; i++) {
    int x = ba_ref_get(a, i), y = op == 4 ? 0 : ba_ref_get(b, i), v;
    switch (op) {
      case 0: v = x && y; break;
      case 1: v = x || y; break;
      case 2: v = x != y; break;
      case 3: v = x && !y; break;
      default: v = !x; break;
    }
    ba_ref_set(out, i, v);
  }
  return BA_OK;
}

size_t ba_ref_rows(const ba_ref_t *r, uint64_t *rows, size_t cap) {
  size_t k = 0;
  for (uint64_t i = 0; i < r->n; i++)
    if (ba_ref_get(r, i)) {
      if (k < cap) rows[k] = i;
      k++;
    }
  return k;
}
