/* Shared test helpers: deterministic random data, paths to real captures. */
#ifndef BA_TESTSUPPORT_H
#define BA_TESTSUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bitarc/bitarc.h"

/* xoshiro256** seeded from `seed`: reproducible across runs and machines. */
typedef struct { uint64_t s[4]; } ba_rng_t;
void ba_rng_seed(ba_rng_t *r, uint64_t seed);
uint64_t ba_rng_next(ba_rng_t *r);
/* Uniform in [0, bound). */
uint64_t ba_rng_below(ba_rng_t *r, uint64_t bound);
/* Zipf-distributed value in [0, n) with exponent s (rejection-free inverse CDF table). */
uint64_t ba_rng_zipf(ba_rng_t *r, uint64_t n, double s);

/* Absolute path of `rel` under ../shared/data, or NULL if that folder is absent. */
const char *ba_test_shared(const char *rel);
/* Absolute path of `rel` under the source tree. */
const char *ba_test_source(const char *rel);
/* Calls fn for every regular file under `dir` (recursively) whose name ends in
 * one of `exts` ("pcap", "pcapng", ...; NULL-terminated); returns the count. */
size_t ba_test_walk(const char *dir, const char *const *exts, void (*fn)(const char *path, void *ctx),
                    void *ctx);
/* A fresh empty temporary directory (removed by ba_test_rmtree). */
char *ba_test_mkdtemp(void);
void ba_test_rmtree(const char *dir);
/* Whole file into a malloc'd buffer (one spare byte); NULL if it cannot be read. */
uint8_t *ba_test_read_file(const char *path, size_t *len);
/* Writes len bytes to path (created or truncated); 0, or -1 on error. */
int ba_test_write_file(const char *path, const uint8_t *b, size_t len);
/* Records a query or reader delivers, copied (frames not): a sink for
 * ba_query_run / ba_segment_read_rows; free v when done. */
typedef struct ba_test_recs {
  ba_record_t *v;
  size_t n, cap;
} ba_test_recs_t;
int ba_test_recs_sink(void *ctx, const ba_record_t *recs, size_t n);
/* Runs filter f on st (every column but frames; threads, force_scan as
 * given), its records appended to *out and its stats in *s; fails the test
 * if it does not compile or run. */
void ba_test_query_recs(ba_store_t *st, const char *f, int threads, int scan, ba_test_recs_t *out,
                        ba_query_stats_t *s);
/* Writes recs[0..n) into the store at `dir` (created if missing) with a
 * writer opened with the default options and `block_rows` rows per group;
 * fails the test if opening, appending or closing fails. */
void ba_test_write_store(const char *dir, const ba_record_t *recs, size_t n, uint32_t block_rows);
/* Damages segment file `path` in place: flips bit 4 of the bytes at lo,
 * lo + step, ... below hi (cut to the file). Fails the test if it cannot. */
void ba_test_flip_bytes(const char *path, uint64_t lo, uint64_t hi, uint64_t step);
/* The offsets a segment file's footer holds (doc/format.md §2): index
 * (bitmaps), directory and block table, and the file's length. */
void ba_test_seg_offsets(const char *path, uint64_t *index_off, uint64_t *dir_off, uint64_t *table_off,
                         uint64_t *len);
/* A fresh store (temporary directory, removed by ba_test_rmtree) holding the
 * committed segment `rel` of the source tree as its one segment; NULL if it
 * cannot be made. */
char *ba_test_fixture_store(const char *rel);

/* The IPv6 index attributes' hash, written out from doc/format.md §7.4
 * (FNV-1a 32: offset basis 2166136261, prime 16777619; then the XOR of its
 * BA_V6_HASH_BITS-bit pieces from the low end), as the reference the
 * library's ba_v6_hash is checked against. */
static inline uint32_t ba_test_v6_hash(const uint8_t *a, unsigned nbytes) {
  uint64_t h = 2166136261u, piece = 1ull << BA_V6_HASH_BITS;
  for (unsigned i = 0; i < nbytes; i++) h = ((h ^ a[i]) * 16777619u) % 4294967296u;
  uint32_t v = 0;
  while (h) {
    v ^= (uint32_t)(h % piece);
    h /= piece;
  }
  return v;
}

#endif
