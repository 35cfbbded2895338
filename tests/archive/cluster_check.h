/* The records of a store as a sorted multiset of hashes, for the clustering
 * tests (test_cluster.c, test_cluster_beside.c): a clustered store must hold
 * exactly the records it held before, whatever their order. */
#ifndef BA_TEST_CLUSTER_CHECK_H
#define BA_TEST_CLUSTER_CHECK_H

#include <stdlib.h>

#include "testsupport.h"
#include "bitarc/bitarc.h"

static inline uint64_t rec_hash(const ba_record_t *r) {
  uint64_t h = r->first_ns * 0x9E3779B97F4A7C15ull ^ r->bytes;
  h = h * 31 + r->src_port * 65537u + r->dst_port + r->proto;
  for (int k = 0; k < 16; k++) h = h * 131 + r->src[k] + 7u * r->dst[k];
  for (uint32_t k = 0; k < r->caplen; k++) h = h * 257 + r->frame[k];
  return h;
}

static inline int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct hashes {
  uint64_t *h;
  size_t n, cap;
} hashes_t;

static inline void hashes_add(hashes_t *x, uint64_t h) {
  if (x->n == x->cap) {
    x->cap = x->cap ? 2 * x->cap : 4096;
    x->h = realloc(x->h, x->cap * sizeof *x->h);
  }
  x->h[x->n++] = h;
}

static inline int hash_sink(void *ctx, const ba_record_t *recs, size_t n) {
  for (size_t i = 0; i < n; i++) hashes_add(ctx, rec_hash(&recs[i]));
  return 0;
}

/* The sorted hashes of every record of the store's segments into *x (the
 * caller frees x->h); *nclustered counts the flagged segments; every segment
 * opens and verifies clean. */
static inline void store_hashes(const char *dir, hashes_t *x, size_t *nclustered) {
  ba_store_t *st;
  assert_int_equal(ba_store_open(dir, &st), BA_OK);
  *x = (hashes_t){0};
  *nclustered = 0;
  for (size_t i = 0; i < ba_store_segment_count(st); i++) {
    ba_segment_t *seg;
    ba_segment_info_t in;
    assert_int_equal(ba_store_segment(st, i, &seg), BA_OK);
    assert_int_equal(ba_segment_info(seg, &in), BA_OK);
    *nclustered += in.clustered;
    uint64_t bad = 99, dmg = 0;
    assert_int_equal(ba_segment_verify(seg, &bad), BA_OK);
    assert_int_equal(bad, 0);
    assert_int_equal(ba_segment_scan(seg, BA_COL_ALL, hash_sink, x, &dmg), BA_OK);
    assert_int_equal(dmg, 0);
    ba_segment_release(seg);
  }
  ba_store_close(st);
  if (x->n) qsort(x->h, x->n, sizeof *x->h, cmp_u64);
}

/* The store's records equal want[0..n) (sorted hashes). */
static inline void expect_records(const char *dir, const uint64_t *want, size_t n, size_t *nclustered) {
  hashes_t x;
  store_hashes(dir, &x, nclustered);
  assert_int_equal(x.n, n);
  if (n) assert_memory_equal(x.h, want, n * sizeof *want);
  free(x.h);
}

#endif
