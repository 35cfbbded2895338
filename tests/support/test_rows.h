/* Records collected from a query or a generator for comparison in tests:
 * a growing array of records whose frames are copied (a sink's frames are
 * borrowed for the call), and a total order to sort two such lists by
 * before comparing them. */
#ifndef BA_TEST_ROWS_H
#define BA_TEST_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/record.h"

typedef struct ba_test_rows {
  ba_record_t *r;
  uint8_t **frames;
  size_t n, cap;
  void (*before)(void *ctx); /* if set, called with before_ctx at each batch, first */
  void *before_ctx;
} ba_test_rows_t;

/* A ba_record_sink_fn: appends recs[0..n) to the ba_test_rows_t at ctx. */
int ba_test_rows_keep(void *ctx, const ba_record_t *recs, size_t n);
void ba_test_rows_free(ba_test_rows_t *v);
/* qsort order of records: first, last, addresses, ports, bytes, kind. */
int ba_test_rec_cmp(const void *a, const void *b);

#endif
