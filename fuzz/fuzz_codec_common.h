/* Shared body of the codec fuzz targets (fuzz_codec_<codec>.c define FUZZ_CODEC
 * and include this; fuzz_bitmap_deserialize.c uses the checks directly).
 *
 * Input: [u32 LE nrows][u8 seed][words, LE, 4 or 8 bytes each]. The words go
 * through ba_bitmap_from_words(). Independently of the library, a naive decoder
 * written from doc/codecs.md expands the same words to a plain bitset (or
 * rejects them); the two must agree on validity and on every bit. A valid
 * bitmap then goes through count/foreach/to_rows/runs, NOT, and AND/OR/XOR/
 * ANDNOT with itself and with a second bitmap (derived from the first, other
 * length) encoded in its own codec and one other (picked by the seed byte); every result's words are expanded by the naive
 * decoder again and compared with naive bitset algebra, and must be the
 * canonical encoding (equal to ba_bitmap_from_rows of the expected rows).
 * Any mismatch aborts. */
#ifndef BA_FUZZ_CODEC_COMMON_H
#define BA_FUZZ_CODEC_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitmap.h"

/* The oracle below (naive decoder, bitset algebra, per-row checks) is not
 * what is being fuzzed: compiling it without coverage instrumentation keeps
 * libFuzzer's comparison tracing out of its per-row loops (they were over half
 * of the run time) and its features out of the corpus. */
#if defined(__clang__)
#define FZ_ORACLE __attribute__((no_sanitize("coverage")))
#else
#define FZ_ORACLE
#endif

/* Keeps one input's naive expansion small enough for fast fuzzing (8192 rows
 * still reach every word form: COMPAX's 8-bit fill fields top out at 7905 rows,
 * WAH fills of up to 264 groups; the seeds use at most 5000 rows). Larger
 * bitmaps are covered by the CTest differential tests. */
#define FZ_MAX_ROWS (1u << 13)

#define FZ_CHECK(cond, ...)                                                         \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "fuzz_codec: check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* Plain bitset, bit r = bit (r % 64) of w[r / 64]. */
typedef struct {
  uint64_t *w;
  uint64_t n;    /* rows written so far */
  uint64_t cap;  /* rows the buffer can hold */
} fz_bits_t;

FZ_ORACLE static inline int fz_bits_init(fz_bits_t *b, uint64_t cap) {
  b->n = 0;
  b->cap = cap;
  b->w = calloc((size_t)(cap / 64 + 2), sizeof(uint64_t));
  return b->w ? 0 : -1;
}
FZ_ORACLE static inline void fz_bits_free(fz_bits_t *b) { free(b->w); b->w = NULL; }
FZ_ORACLE static inline int fz_get(const fz_bits_t *b, uint64_t r) { return r < b->n ? (int)((b->w[r / 64] >> (r % 64)) & 1) : 0; }

/* Appends `k` rows of value v; -1 if they do not fit. */
FZ_ORACLE static inline int fz_run(fz_bits_t *b, int v, uint64_t k) {
  if (k > b->cap - b->n) return -1;
  if (v) {
    uint64_t r = b->n, end = b->n + k;
    for (; r < end && r % 64; r++) b->w[r / 64] |= 1ull << (r % 64);
    for (; r + 64 <= end; r += 64) b->w[r / 64] = ~0ull;
    for (; r < end; r++) b->w[r / 64] |= 1ull << (r % 64);
  }
  b->n += k;
  return 0;
}
/* Appends a G-bit group, its first row being the MSB (D-1). */
FZ_ORACLE static inline int fz_group(fz_bits_t *b, uint64_t payload, unsigned g) {
  if (g > b->cap - b->n) return -1;
  for (unsigned i = 0; i < g; i++)
    if ((payload >> (g - 1 - i)) & 1) b->w[(b->n + i) / 64] |= 1ull << ((b->n + i) % 64);
  b->n += g;
  return 0;
}

/* Naive decoders. Return 0 = valid, -1 = invalid; *doubt = 1 if validity hinges
 * on a point the spec leaves open (then only accepted bits are compared). */
FZ_ORACLE static inline int fz_finish_groups(fz_bits_t *b, uint64_t nrows, unsigned g) {
  uint64_t groups = nrows / g + (nrows % g != 0);
  if (b->n != groups * g) return -1;
  for (uint64_t r = nrows; r < b->n; r++)
    if (fz_get(b, r)) return -1;
  b->n = nrows;
  return 0;
}

FZ_ORACLE static inline uint64_t fz_word(const uint8_t *p, unsigned wb) {
  uint64_t v = 0;
  for (unsigned i = 0; i < wb; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

FZ_ORACLE static inline int fz_naive_decode(ba_codec_t codec, const uint8_t *words, size_t nwords, uint64_t nrows,
                           fz_bits_t *b, int *doubt) {
  unsigned wb = ba_codec_word_bits(codec) / 8;
  unsigned g = wb == 8 ? 63 : 31;
  uint64_t padded = (nrows / g + (nrows % g != 0)) * (uint64_t)g;
  *doubt = 0;
  if (fz_bits_init(b, codec == BA_CODEC_MASC || codec == BA_CODEC_MASC_QT ? nrows : padded) < 0)
    abort();
  for (size_t i = 0; i < nwords; i++) {
    uint64_t x = fz_word(words + i * wb, wb);
    switch (codec) {
      case BA_CODEC_WAH32:
      case BA_CODEC_WAH64: {
        unsigned w = wb * 8;
        if (!(x >> (w - 1))) {
          if (fz_group(b, x, g) < 0) return -1;
        } else {
          uint64_t k = x & ((1ull << (w - 2)) - 1);
          int v = (int)((x >> (w - 2)) & 1);
          if (k == 0 || k > (b->cap - b->n) / g) return -1;
          if (fz_run(b, v, k * g) < 0) return -1;
        }
        break;
      }
      case BA_CODEC_PLWAH: {
        if (!(x >> 31)) {
          if (fz_group(b, x, 31) < 0) return -1;
        } else {
          int v = (int)((x >> 30) & 1);
          unsigned p = (unsigned)((x >> 25) & 31);
          uint64_t k = x & 0x1FFFFFFu;
          if (k == 0 || k > (b->cap - b->n) / 31) return -1;
          if (fz_run(b, v, k * 31) < 0) return -1;
          if (p) {
            uint64_t bit = 1ull << (31 - p);
            if (fz_group(b, v ? (0x7FFFFFFFu ^ bit) : bit, 31) < 0) return -1;
          }
        }
        break;
      }
      case BA_CODEC_COMPAX: {
        unsigned top = (unsigned)(x >> 29);
        if (top >= 4) { /* [L] */
          if ((x & 0x7FFFFFFFu) == 0 || fz_group(b, x & 0x7FFFFFFFu, 31) < 0) return -1;
        } else if (top == 0) { /* [0F] */
          uint64_t k = x & 0x1FFFFFFFu;
          if (k == 0 || k > (b->cap - b->n) / 31) return -1;
          if (fz_run(b, 0, k * 31) < 0) return -1;
        } else if (top == 1) { /* [LFL] */
          unsigned q1 = (unsigned)((x >> 27) & 3), q2 = (unsigned)((x >> 25) & 3);
          unsigned d1 = (unsigned)((x >> 16) & 0xFF), f = (unsigned)((x >> 8) & 0xFF);
          unsigned d2 = (unsigned)(x & 0xFF);
          if ((x >> 24) & 1) return -1;
          if (!f || !d1 || !d2 || (q1 == 3 && d1 > 0x7F) || (q2 == 3 && d2 > 0x7F)) return -1;
          if (fz_group(b, (uint64_t)d1 << (8 * q1), 31) < 0 || fz_run(b, 0, 31ull * f) < 0 ||
              fz_group(b, (uint64_t)d2 << (8 * q2), 31) < 0)
            return -1;
        } else if (top == 2) { /* [FLF] */
          unsigned q = (unsigned)((x >> 27) & 3), f1 = (unsigned)((x >> 16) & 0xFF);
          unsigned d = (unsigned)((x >> 8) & 0xFF), f2 = (unsigned)(x & 0xFF);
          if ((x >> 24) & 7) return -1;
          if (!f1 || !f2 || !d || (q == 3 && d > 0x7F)) return -1;
          if (fz_run(b, 0, 31ull * f1) < 0 || fz_group(b, (uint64_t)d << (8 * q), 31) < 0 ||
              fz_run(b, 0, 31ull * f2) < 0)
            return -1;
        } else {
          return -1; /* 011: reserved */
        }
        break;
      }
      case BA_CODEC_MASC:
      case BA_CODEC_MASC_QT: {
        unsigned t1 = (unsigned)(x >> 31), f2 = (unsigned)((x >> 30) & 1);
        unsigned c = (unsigned)((x >> 25) & 31), add = (unsigned)(x & 31);
        uint64_t cnt = (x >> 5) & 0xFFFFF, len = cnt * 31 + add;
        if (add == 31 || len == 0) return -1;
        if (!t1) {
          if (!f2) {
            if (c) return -1;
            if (fz_run(b, 0, len) < 0) return -1;
          } else {
            if (c == 0 || c == 31) return -1;
            if (fz_run(b, 0, len) < 0 || fz_run(b, 1, c) < 0) return -1;
          }
        } else {
          if (c) return -1;
          /* Plain: bit 30 must be 0. QT: bit 30 is the type tag (1); whether a
           * QT decoder must reject a 1-fill without it is not spelled out. */
          if (codec == BA_CODEC_MASC && f2) return -1;
          if (codec == BA_CODEC_MASC_QT && !f2) *doubt = 1;
          if (fz_run(b, 1, len) < 0) return -1;
        }
        break;
      }
      default:
        abort();
    }
  }
  if (codec == BA_CODEC_MASC || codec == BA_CODEC_MASC_QT) return b->n == nrows ? 0 : -1;
  return fz_finish_groups(b, nrows, g);
}

/* Words of a bitmap as LE bytes (for the naive decoder). */
FZ_ORACLE static uint8_t *fz_words_le(const ba_bitmap_t *bm, size_t *nwords) {
  const void *w = ba_bitmap_words(bm, nwords);
  unsigned wb = ba_codec_word_bits(ba_bitmap_codec(bm)) / 8;
  uint8_t *out = malloc(*nwords * wb + 1);
  if (!out) abort();
  for (size_t i = 0; i < *nwords; i++) {
    uint64_t v = wb == 8 ? ((const uint64_t *)w)[i] : ((const uint32_t *)w)[i];
    for (unsigned j = 0; j < wb; j++) out[i * wb + j] = (uint8_t)(v >> (8 * j));
  }
  return out;
}

FZ_ORACLE static inline uint64_t fz_popcount(const fz_bits_t *b) {
  uint64_t c = 0;
  for (uint64_t i = 0; i < b->n / 64; i++) c += (uint64_t)__builtin_popcountll(b->w[i]);
  for (uint64_t r = b->n / 64 * 64; r < b->n; r++) c += (uint64_t)fz_get(b, r);
  return c;
}

typedef struct {
  const fz_bits_t *ref;
  uint64_t seen, last;
  int first;
} fz_walk_t;

FZ_ORACLE static inline int fz_rows_cb(void *ctx, const uint64_t *rows, size_t n) {
  fz_walk_t *w = ctx;
  for (size_t i = 0; i < n; i++) {
    FZ_CHECK(w->first || rows[i] > w->last, "foreach rows not increasing at %llu",
             (unsigned long long)rows[i]);
    FZ_CHECK(fz_get(w->ref, rows[i]), "foreach gave unset row %llu", (unsigned long long)rows[i]);
    w->first = 0;
    w->last = rows[i];
    w->seen++;
  }
  return 0;
}

FZ_ORACLE static inline int fz_runs_cb(void *ctx, int value, uint64_t start, uint64_t nrows) {
  fz_walk_t *w = ctx;
  FZ_CHECK(start == w->seen, "run starts at %llu, expected %llu", (unsigned long long)start,
           (unsigned long long)w->seen);
  FZ_CHECK(nrows > 0, "empty run");
  FZ_CHECK(w->first || value != (int)w->last, "runs not maximal at %llu", (unsigned long long)start);
  for (uint64_t r = start; r < start + nrows; r++)
    FZ_CHECK(fz_get(w->ref, r) == value, "run value wrong at row %llu", (unsigned long long)r);
  w->seen += nrows;
  w->last = (uint64_t)value;
  w->first = 0;
  return 0;
}

/* 1 if a and b hold the same first n rows (bits past n are never set). */
FZ_ORACLE static inline int fz_same_bits(const fz_bits_t *a, const fz_bits_t *b, uint64_t n) {
  return memcmp(a->w, b->w, (size_t)((n + 63) / 64) * 8) == 0;
}

/* Set rows of a naive bitset (caller frees). */
FZ_ORACLE static uint64_t *fz_rows_of(const fz_bits_t *b, size_t *n) {
  uint64_t *rows = malloc((size_t)(fz_popcount(b) + 1) * sizeof(uint64_t));
  if (!rows) abort();
  *n = 0;
  for (uint64_t i = 0; i < (b->n + 63) / 64; i++)
    for (uint64_t w = b->w[i]; w; w &= w - 1) rows[(*n)++] = i * 64 + (uint64_t)__builtin_ctzll(w);
  return rows;
}

/* `bm` must describe exactly `ref`: queries, and its words expand (naively) to ref. */
FZ_ORACLE static inline void fz_check_same(const ba_bitmap_t *bm, const fz_bits_t *ref, const char *what) {
  FZ_CHECK(ba_bitmap_rows(bm) == ref->n, "%s: rows %llu, expected %llu", what,
           (unsigned long long)ba_bitmap_rows(bm), (unsigned long long)ref->n);
  uint64_t cnt = 0, want = fz_popcount(ref);
  FZ_CHECK(ba_bitmap_count(bm, &cnt) == 0 && cnt == want, "%s: count %llu, expected %llu", what,
           (unsigned long long)cnt, (unsigned long long)want);
  fz_walk_t w = {ref, 0, 0, 1};
  FZ_CHECK(ba_bitmap_foreach(bm, fz_rows_cb, &w) == 0 && w.seen == want, "%s: foreach saw %llu",
           what, (unsigned long long)w.seen);
  fz_walk_t rw = {ref, 0, 0, 1};
  FZ_CHECK(ba_bitmap_foreach_run(bm, fz_runs_cb, &rw) == 0 && rw.seen == ref->n,
           "%s: runs cover %llu rows", what, (unsigned long long)rw.seen);
  /* The words themselves, through the independent decoder. */
  size_t nw;
  uint8_t *le = fz_words_le(bm, &nw);
  fz_bits_t back;
  int doubt;
  int ok = fz_naive_decode(ba_bitmap_codec(bm), le, nw, ref->n, &back, &doubt);
  FZ_CHECK(ok == 0 && !doubt, "%s: library produced %s words the spec rejects", what,
           ba_codec_name(ba_bitmap_codec(bm)));
  FZ_CHECK(back.n == ref->n && fz_same_bits(&back, ref, ref->n), "%s: bits differ", what);
  fz_bits_free(&back);
  free(le);
}

/* Result of an op must be `ref` and canonical (== from_rows in that codec). */
FZ_ORACLE static inline void fz_check_result(const ba_bitmap_t *bm, const fz_bits_t *ref, const char *what) {
  fz_check_same(bm, ref, what);
  /* The canonical encoding, built from the reference's maximal runs through
   * the streaming encoder (from_rows, a second encoder path, builds the
   * second operand in fz_exercise). */
  ba_bitmap_t *canon = NULL;
  FZ_CHECK(ba_bitmap_create(ba_bitmap_codec(bm), &canon) == 0, "%s: create", what);
  for (uint64_t r = 0; r < ref->n;) {
    int v = fz_get(ref, r);
    uint64_t e = r + 1;
    while (e < ref->n && fz_get(ref, e) == v) e++;
    FZ_CHECK(ba_bitmap_append_run(canon, v, e - r) == 0, "%s: append_run", what);
    r = e;
  }
  FZ_CHECK(ba_bitmap_finish(canon, ref->n) == 0, "%s: finish", what);
  size_t na, nb;
  const void *wa = ba_bitmap_words(bm, &na);
  const void *wb = ba_bitmap_words(canon, &nb);
  unsigned bytes = ba_codec_word_bits(ba_bitmap_codec(bm)) / 8;
  FZ_CHECK(na == nb && (na == 0 || memcmp(wa, wb, na * bytes) == 0),
           "%s: %s result is not canonical (%zu words, canonical %zu)", what,
           ba_codec_name(ba_bitmap_codec(bm)), na, nb);
  ba_bitmap_free(canon);
}

FZ_ORACLE static inline void fz_naive_op(int op, const fz_bits_t *a, const fz_bits_t *b, fz_bits_t *out) {
  uint64_t n = a->n > b->n ? a->n : b->n, nw = (n + 63) / 64;
  if (fz_bits_init(out, n) < 0) abort();
  out->n = n;
  /* Buffers hold cap/64+2 words, zero past their rows: word-wise is exact. */
  for (uint64_t i = 0; i < nw; i++) {
    uint64_t x = i <= a->cap / 64 ? a->w[i] : 0, y = i <= b->cap / 64 ? b->w[i] : 0, v;
    switch (op) {
      case BA_OP_AND: v = x & y; break;
      case BA_OP_OR: v = x | y; break;
      case BA_OP_XOR: v = x ^ y; break;
      case BA_OP_ANDNOT: v = x & ~y; break;
      default: v = ~x; break; /* NOT */
    }
    out->w[i] = v;
  }
  if (n % 64) out->w[nw - 1] &= (1ull << (n % 64)) - 1;
}

/* Everything a valid bitmap `a` (naive expansion `ra`) must satisfy. */
FZ_ORACLE static inline void fz_exercise(const ba_bitmap_t *a, const fz_bits_t *ra, unsigned seed) {
  static const char *opn[] = {"AND", "OR", "XOR", "ANDNOT"};
  fz_check_same(a, ra, "input");
  /* to_rows with a small buffer reports the full count. */
  uint64_t few[4];
  size_t total = 0;
  FZ_CHECK(ba_bitmap_to_rows(a, few, 4, &total) == 0 && total == fz_popcount(ra), "to_rows count");
  /* Second bitmap: the first shifted by k rows, with sparse extra flips. */
  unsigned k = seed % 67;
  fz_bits_t rb;
  if (fz_bits_init(&rb, ra->n + k) < 0) abort();
  rb.n = ra->n + k;
  uint64_t h = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (uint64_t r = 0; r < rb.n; r++) {
    int v = r >= k ? fz_get(ra, r - k) : 0;
    h ^= h << 13; h ^= h >> 7; h ^= h << 17;
    if ((h & 63) == 0) v ^= 1;
    if (v) rb.w[r / 64] |= 1ull << (r % 64);
  }
  size_t nbrows;
  uint64_t *brows = fz_rows_of(&rb, &nbrows);
  ba_codec_t self = ba_bitmap_codec(a);
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    ba_codec_t out = (ba_codec_t)(BA_CODEC_MIN + (c + seed) % 6);
    ba_bitmap_t *b = NULL, *res = NULL;
    /* Per input, the second bitmap comes in its own codec and one picked by the
     * seed (every pair within a few inputs), to keep executions fast. A codec
     * left out of this build is skipped (and never used as output). */
    int other = BA_CODEC_MIN + (int)(seed % 6);
    if (other == (int)self) other = BA_CODEC_MIN + (int)((seed / 6 + 1 + seed % 6) % 6);
    if (c != (int)self && c != other) continue;
    if (ba_bitmap_create((ba_codec_t)c, &b) < 0) continue;
    ba_bitmap_free(b);
    b = NULL;
    if (ba_bitmap_create(out, &res) < 0) out = (ba_codec_t)c;
    ba_bitmap_free(res);
    res = NULL;
    FZ_CHECK(ba_bitmap_from_rows((ba_codec_t)c, brows, nbrows, rb.n, &b) == 0, "from_rows");
    fz_check_same(b, &rb, "second bitmap");
    /* Self: A op A, and A in codec c equals A. */
    FZ_CHECK(ba_bitmap_and(a, a, (ba_codec_t)c, &res) == 0, "A AND A");
    fz_check_result(res, ra, "A AND A");
    FZ_CHECK(ba_bitmap_equal(res, a) == 1, "equal(A AND A, A)");
    ba_bitmap_free(res);
    FZ_CHECK(ba_bitmap_or(a, a, out, &res) == 0, "A OR A");
    fz_check_result(res, ra, "A OR A");
    ba_bitmap_free(res);
    /* NOT A in codec c. */
    fz_bits_t rn;
    fz_naive_op(-1, ra, ra, &rn);
    FZ_CHECK(ba_bitmap_not(a, (ba_codec_t)c, &res) == 0, "NOT A");
    fz_check_result(res, &rn, "NOT A");
    ba_bitmap_free(res);
    fz_bits_free(&rn);
    /* A op B and B op A. */
    for (int op = BA_OP_AND; op <= BA_OP_ANDNOT; op++) {
      for (int swap = 0; swap < 2; swap++) {
        fz_bits_t want;
        fz_naive_op(op, swap ? &rb : ra, swap ? ra : &rb, &want);
        FZ_CHECK(ba_bitmap_op((ba_op_t)op, swap ? b : a, swap ? a : b, out, &res) == 0, "%s",
                 opn[op]);
        char what[64];
        snprintf(what, sizeof what, "%s %s(%s,%s)->%s", swap ? "B,A" : "A,B", opn[op],
                 ba_codec_name(self), ba_codec_name((ba_codec_t)c), ba_codec_name(out));
        fz_check_result(res, &want, what);
        if (op == BA_OP_AND) {
          uint64_t ac = 0;
          FZ_CHECK(ba_bitmap_and_count(a, b, &ac) == 0 && ac == fz_popcount(&want), "and_count");
        }
        ba_bitmap_free(res);
        fz_bits_free(&want);
      }
    }
    ba_bitmap_free(b);
  }
  free(brows);
  fz_bits_free(&rb);
}

/* FZ_STATS=1 in the environment: print how many inputs were valid bitmaps at exit. */
static unsigned long long fz_nvalid, fz_ninputs;
FZ_ORACLE static inline void fz_stats_print(void) {
  fprintf(stderr, "fuzz_codec: %llu of %llu inputs were valid bitmaps\n", fz_nvalid, fz_ninputs);
}
FZ_ORACLE static inline void fz_stats(int valid) {
  static int init;
  if (!init) {
    init = 1;
    const char *e = getenv("FZ_STATS");
    if (e && *e == '1') atexit(fz_stats_print);
  }
  fz_ninputs++;
  fz_nvalid += (unsigned long long)valid;
}

/* Codec fuzz body: validity agreement, then fz_exercise. */
FZ_ORACLE static inline int fz_codec_input(ba_codec_t codec, const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  uint64_t nrows = (uint64_t)data[0] | ((uint64_t)data[1] << 8) | ((uint64_t)data[2] << 16) |
                   ((uint64_t)data[3] << 24);
  if (nrows > FZ_MAX_ROWS) return 0;
  unsigned seed = data[4];
  unsigned wb = ba_codec_word_bits(codec) / 8;
  size_t nwords = (size - 5) / wb;
  const uint8_t *p = data + 5;
  /* Host-order copy for the library. */
  void *words = malloc(nwords * wb + 1);
  if (!words) abort();
  for (size_t i = 0; i < nwords; i++) {
    uint64_t v = fz_word(p + i * wb, wb);
    if (wb == 8) ((uint64_t *)words)[i] = v;
    else ((uint32_t *)words)[i] = (uint32_t)v;
  }
  ba_bitmap_t *bm = NULL;
  int rc = ba_bitmap_from_words(codec, words, nwords, nrows, &bm);
  fz_bits_t ref;
  int doubt = 0;
  int ok = fz_naive_decode(codec, p, nwords, nrows, &ref, &doubt);
  FZ_CHECK(rc == 0 || rc == BA_ERR_CORRUPT, "from_words returned %d (%s)", rc, ba_strerror(rc));
  if (!doubt)
    FZ_CHECK((rc == 0) == (ok == 0), "%s: library says %s, spec says %s (%zu words, %llu rows)",
             ba_codec_name(codec), rc == 0 ? "valid" : "corrupt", ok == 0 ? "valid" : "corrupt",
             nwords, (unsigned long long)nrows);
  if (rc == 0 && ok == 0) fz_exercise(bm, &ref, seed);
  fz_stats(rc == 0 && ok == 0);
  ba_bitmap_free(bm);
  fz_bits_free(&ref);
  free(words);
  return 0;
}

#endif
