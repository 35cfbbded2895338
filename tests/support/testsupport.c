#include "testsupport.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ba_rng_seed(ba_rng_t *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    seed += 0x9E3779B97F4A7C15ull;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    r->s[i] = z ^ (z >> 31);
  }
}

uint64_t ba_rng_next(ba_rng_t *r) {
  uint64_t *s = r->s;
  uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
  return res;
}

uint64_t ba_rng_below(ba_rng_t *r, uint64_t bound) { return bound ? ba_rng_next(r) % bound : 0; }

uint64_t ba_rng_zipf(ba_rng_t *r, uint64_t n, double s) {
  /* Inverse-CDF approximation of a continuous Zipf; good enough for skewed test data. */
  double u = (double)(ba_rng_next(r) >> 11) / 9007199254740992.0;
  if (n <= 1) return 0;
  double v;
  if (fabs(s - 1.0) < 1e-9) v = exp(u * log((double)n + 1.0)) - 1.0;
  else v = pow(u * (pow((double)n + 1.0, 1.0 - s) - 1.0) + 1.0, 1.0 / (1.0 - s)) - 1.0;
  uint64_t k = (uint64_t)v;
  return k >= n ? n - 1 : k;
}

static char g_path[8][4096];
static int g_next;

const char *ba_test_shared(const char *rel) {
  struct stat st;
  if (stat(BA_SHARED_DATA, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
  char *p = g_path[g_next++ & 7];
  snprintf(p, 4096, "%s/%s", BA_SHARED_DATA, rel);
  return p;
}

const char *ba_test_source(const char *rel) {
  char *p = g_path[g_next++ & 7];
  snprintf(p, 4096, "%s/%s", BA_SOURCE_DIR, rel);
  return p;
}

static int has_ext(const char *name, const char *const *exts) {
  const char *dot = strrchr(name, '.');
  if (!dot) return 0;
  for (; *exts; exts++)
    if (!strcmp(dot + 1, *exts)) return 1;
  return 0;
}

size_t ba_test_walk(const char *dir, const char *const *exts, void (*fn)(const char *, void *), void *ctx) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t count = 0;
  struct dirent *e;
  /* Sorted order would be nicer, but the walk order does not affect results. */
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) count += ba_test_walk(path, exts, fn, ctx);
    else if (S_ISREG(st.st_mode) && has_ext(e->d_name, exts)) {
      fn(path, ctx);
      count++;
    }
  }
  closedir(d);
  return count;
}

char *ba_test_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/bitarc-test-XXXXXX", base ? base : "/tmp");
  char *p = mkdtemp(tmpl);
  return p ? strdup(p) : NULL;
}

void ba_test_rmtree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      struct stat st;
      if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) ba_test_rmtree(path);
      else unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

uint8_t *ba_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) != NULL &&
      fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) *len = (size_t)n;
  return b;
}

int ba_test_write_file(const char *path, const uint8_t *b, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(b, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

int ba_test_recs_sink(void *ctx, const ba_record_t *recs, size_t n) {
  ba_test_recs_t *l = ctx;
  if (l->n + n > l->cap) {
    l->cap = 2 * (l->n + n);
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    assert_non_null(l->v);
  }
  memcpy(l->v + l->n, recs, n * sizeof *recs);
  l->n += n;
  return 0;
}

void ba_test_query_recs(ba_store_t *st, const char *f, int threads, int scan, ba_test_recs_t *out,
                        ba_query_stats_t *s) {
  ba_query_t *q;
  assert_int_equal(ba_query_create(&q), 0);
  assert_int_equal(ba_query_compile(q, f), 0);
  ba_query_exec_opts_t o;
  ba_query_exec_opts_init(&o);
  o.out_cols = BA_COL_ALL & ~BA_COL_FRAME;
  o.threads = threads;
  o.force_scan = scan;
  assert_int_equal(ba_query_run(q, st, &o, ba_test_recs_sink, out, s), 0);
  ba_query_free(q);
}

void ba_test_write_store(const char *dir, const ba_record_t *recs, size_t n, uint32_t block_rows) {
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = block_rows;
  ba_store_writer_t *w;
  assert_int_equal(ba_store_writer_open(dir, &o, &w), BA_OK);
  assert_int_equal(ba_store_writer_append(w, recs, n), BA_OK);
  assert_int_equal(ba_store_writer_close(w), BA_OK);
}

void ba_test_flip_bytes(const char *path, uint64_t lo, uint64_t hi, uint64_t step) {
  size_t len = 0;
  uint8_t *b = ba_test_read_file(path, &len);
  assert_non_null(b);
  assert_true(step > 0);
  for (uint64_t pos = lo; pos < hi && pos < len; pos += step) b[pos] ^= 0x10;
  assert_int_equal(ba_test_write_file(path, b, len), 0);
  free(b);
}

void ba_test_seg_offsets(const char *path, uint64_t *index_off, uint64_t *dir_off, uint64_t *table_off,
                         uint64_t *len) {
  size_t n = 0;
  uint8_t *b = ba_test_read_file(path, &n);
  assert_non_null(b);
  assert_true(n >= 64 + 80);
  const uint8_t *foot = b + n - 80;
  uint64_t v[3] = {0, 0, 0}; /* table, directory, index: footer bytes 24, 32, 40 */
  for (int k = 0; k < 3; k++)
    for (int i = 7; i >= 0; i--) v[k] = v[k] << 8 | foot[24 + 8 * k + i];
  *table_off = v[0], *dir_off = v[1], *index_off = v[2], *len = n;
  free(b);
}

char *ba_test_fixture_store(const char *rel) {
  const char *src = ba_test_source(rel);
  char *dir = src ? ba_test_mkdtemp() : NULL;
  if (!dir) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/seg-20251122T000000Z.bitarc", dir);
  size_t len = 0;
  uint8_t *b = ba_test_read_file(src, &len);
  int rc = b ? ba_test_write_file(path, b, len) : -1;
  free(b);
  if (rc == 0) return dir;
  ba_test_rmtree(dir);
  free(dir);
  return NULL;
}
