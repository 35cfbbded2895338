/* Private to the integer-field encoder (intfield.c: FOR, DELTA, DICT and
 * the choice; intfield_pdict.c: PDICT): its scratch, limits and the
 * arithmetic and bit-packing helpers both use. */
#ifndef BA_ARCHIVE_INTFIELD_ENC_H
#define BA_ARCHIVE_INTFIELD_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "archive/intfield.h"
#include "archive/intfield_int.h"
#include "common/common.h"

#define DICT_MAX 256u   /* largest dictionary the writer builds */
#define DICT_SLOTS 512u /* its hash table */
/* PDICT (a dictionary of the frequent values, the rest as exceptions) is
 * tried on fields with more than DICT_MAX distinct values, up to PD_MAX. */
#define PD_MAX 4096u
#define PD_SLOTS 8192u

/* Scratch of column encoding, reused from block to block. */
struct ba_col_scratch {
  uint64_t *v;                 /* n values */
  size_t vcap;
  uint16_t *hs;                /* DICT: each row's hash slot, from the counting pass */
  size_t hscap;
  uint16_t *ps;                /* PDICT: each row's slot in pd, from pdict_plan's pass */
  size_t pscap;
  uint32_t cur;                /* slot h is in use iff stamp[h] == cur */
  uint32_t stamp[PD_SLOTS];    /* PDICT counting table */
  uint64_t pkey[PD_SLOTS];
  uint32_t pcnt[PD_SLOTS];
  uint16_t ins[PD_MAX + 1];    /* slots in use (pdict_plan stores one past the last) */
  uint16_t rep[PD_MAX + 1];    /* slots whose count reached 2, in that order (the same) */
  size_t pnd;                  /* how many (ins[0..pnd)), from the last pdict_plan */
  uint64_t cand[PD_MAX][2];    /* (count, value) of values seen twice or more */
  uint64_t mn, mx;             /* the last field's smallest and largest value (ba_if_range) */
};
typedef ba_col_scratch_t enc_scratch_t;

/* Zigzag of a w-byte two's-complement difference d (already masked). */
static inline uint64_t zz(uint64_t d, unsigned w, uint64_t m) {
  unsigned sh = 64 - 8 * w;
  int64_t s = (int64_t)(d << sh) >> sh;
  return (((uint64_t)s << 1) ^ (uint64_t)(s >> 63)) & m;
}
static inline unsigned bitlen(uint64_t x) { return x ? 64u - (unsigned)__builtin_clzll(x) : 0u; }

/* Exact division and divisibility by a constant g = odd << shift without a
 * divide instruction (Granlund & Montgomery 1994, §9): for odd o, x * o^-1
 * mod 2^64 is x / o when o divides x, and above UINT64_MAX / o otherwise.
 * Timestamps keep g at their resolution (10^6 for milliseconds in ns), where
 * a 64-bit divide per row was the field encoder's largest cost. */
typedef struct exdiv {
  uint64_t inv, lim;
  unsigned sh;
} exdiv_t;

static inline exdiv_t exdiv_make(uint64_t g) { /* g >= 1 */
  exdiv_t e;
  e.sh = (unsigned)__builtin_ctzll(g);
  uint64_t o = g >> e.sh, x = o; /* x: o^-1 to 3 bits; each step doubles them */
  for (int i = 0; i < 5; i++) x *= 2 - o * x;
  e.inv = x;
  e.lim = UINT64_MAX / o;
  return e;
}
static inline int exdiv_divides(const exdiv_t *e, uint64_t x) {
  return (x & ((((uint64_t)1) << e->sh) - 1)) == 0 && (x >> e->sh) * e->inv <= e->lim;
}
/* x / g for x a multiple of g. */
static inline uint64_t exdiv_div(const exdiv_t *e, uint64_t x) { return (x >> e->sh) * e->inv; }

/* Little-endian bit packing: value i occupies bits [i*b, (i+1)*b). */
typedef struct bitw {
  uint8_t *p;
  uint64_t acc;
  unsigned nacc;
} bitw_t;

static inline void bitw_put(bitw_t *w, uint64_t v, unsigned b) {
  if (!b) return;
  w->acc |= v << w->nacc;
  if (w->nacc + b >= 64) {
    ba_store_le64(w->p, w->acc);
    w->p += 8;
    unsigned rem = w->nacc + b - 64;
    w->acc = rem ? v >> (b - rem) : 0;
    w->nacc = rem;
  } else {
    w->nacc += b;
  }
}

/* Puts the values EXPR (an expression of the row i) of rows [0, n) at b bits
 * each (every value below 2^b): up to 32 bits, g = 64 / b values are
 * combined in a register and put by one bitw_put (the same bits as g puts,
 * in fewer accumulator steps). */
#define BITW_PUT_ROWS(bw, n, b, i, EXPR)                             \
  do {                                                               \
    const unsigned b_ = (b);                                         \
    const size_t n_ = (n);                                           \
    size_t i = 0;                                                    \
    if (b_ == 0) break;                                              \
    if (b_ <= 32) {                                                  \
      const unsigned g_ = 64 / b_;                                   \
      while (i + g_ <= n_) {                                         \
        uint64_t a_ = 0;                                             \
        for (unsigned s_ = 0; s_ < g_ * b_; s_ += b_, i++) a_ |= (uint64_t)(EXPR) << s_; \
        bitw_put((bw), a_, g_ * b_);                                 \
      }                                                              \
    }                                                                \
    for (; i < n_; i++) bitw_put((bw), (EXPR), b_);                  \
  } while (0)

static inline uint8_t *bitw_end(bitw_t *w) {
  for (unsigned k = 0; k < w->nacc; k += 8) *w->p++ = (uint8_t)(w->acc >> k);
  return w->p;
}

/* The sorts take at most SORT_MAX entries (dictionaries and their candidates). */
#define SORT_MAX 256u

/* intfield_pdict.c */
/* Sorts a[0..n) ascending (n <= SORT_MAX; more: qsort). */
void ba_if_sort_u64(uint64_t *a, size_t n);
uint64_t ba_if_pdict_choose(enc_scratch_t *x, const uint16_t *ins, size_t nd, const uint32_t *cnt,
                            const uint64_t *key, size_t n, unsigned w, unsigned exc_bits, unsigned *b_out,
                            size_t *k_out);
uint64_t ba_if_pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
                          unsigned *b_out, size_t *k_out);
/* ba_if_pdict_plan (the same plan) after the dictionary pass gave up at
 * row i0 (>= DICT_MAX): rows [0, i0) hold the DICT_MAX distinct values
 * dv[0..DICT_MAX) (first-seen order), dv[d] in dc[d] rows; row i's value is
 * dv[d_of[hs[i]]]. Only the rows from i0 on are hashed. */
uint64_t ba_if_pdict_plan_from(enc_scratch_t *x, const uint64_t *v, size_t n, size_t i0, const uint64_t *dv,
                               const uint32_t *dc, const uint16_t *hs, const uint8_t *d_of, unsigned w,
                               unsigned exc_bits, unsigned *b_out, size_t *k_out);
void ba_if_pdict_dict(const enc_scratch_t *x, size_t k, uint64_t *dict);
size_t ba_if_pdict_write(uint64_t *v, size_t n, unsigned w, unsigned b, const uint64_t *dict, size_t k,
                         const uint16_t *rs, uint32_t *tab, const uint16_t *ins, size_t nd, const uint64_t *key,
                         uint8_t *out);
size_t ba_if_pdict_write_plan(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, unsigned b, size_t k,
                              uint8_t *out);
uint64_t ba_if_pdict_estimate(const uint64_t *key, const uint8_t *used, const uint32_t *cnt, size_t nd,
                              size_t n, unsigned w, unsigned exc_bits);

#endif
