/* Records collected for comparison in tests (test_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "test_rows.h"

int ba_test_rows_keep(void *ctx, const ba_record_t *recs, size_t n) {
  ba_test_rows_t *v = ctx;
  if (v->before) v->before(v->before_ctx);
  for (size_t i = 0; i < n; i++) {
    if (v->n == v->cap) {
      v->cap = v->cap ? 2 * v->cap : 256;
      v->r = realloc(v->r, v->cap * sizeof(*v->r));
      v->frames = realloc(v->frames, v->cap * sizeof(*v->frames));
    }
    v->r[v->n] = recs[i];
    v->frames[v->n] = NULL;
    if (recs[i].caplen) {
      v->frames[v->n] = malloc(recs[i].caplen);
      memcpy(v->frames[v->n], recs[i].frame, recs[i].caplen);
      v->r[v->n].frame = v->frames[v->n];
    }
    v->n++;
  }
  return 0;
}

void ba_test_rows_free(ba_test_rows_t *v) {
  for (size_t i = 0; i < v->n; i++) free(v->frames[i]);
  free(v->r);
  free(v->frames);
  memset(v, 0, sizeof *v);
}

int ba_test_rec_cmp(const void *a, const void *b) {
  const ba_record_t *x = a, *y = b;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  if (x->last_ns != y->last_ns) return x->last_ns < y->last_ns ? -1 : 1;
  int c = memcmp(x->src, y->src, 16);
  if (!c) c = memcmp(x->dst, y->dst, 16);
  if (!c) c = (int)x->src_port - (int)y->src_port;
  if (!c) c = (int)x->dst_port - (int)y->dst_port;
  if (!c) c = x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
  if (!c) c = (int)x->kind - (int)y->kind;
  return c;
}
