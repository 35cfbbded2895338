/* Integer fields of column payloads (doc/format.md §3.2, §7.1): one field of
 * n values of w bytes, transformed per block (frame of reference with a
 * common scale, row-to-row deltas, a dictionary, or a dictionary of the
 * frequent values with exceptions) and bit-packed at the width its values
 * need (2.0 may also use byte planes). Shared by the 2.0 and 3.0 column
 * layouts. The 3.0 reader's single values (ba_if_reader_t): intfield_get.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
  uint16_t ins[PD_MAX];        /* slots in use */
  uint16_t rep[PD_MAX];        /* slots whose count reached 2, in that order */
  size_t pnd;                  /* how many (ins[0..pnd)), from the last pdict_plan */
  uint64_t cand[PD_MAX][2];    /* (count, value) of values seen twice or more */
};
typedef ba_col_scratch_t enc_scratch_t;

int ba_col_scratch_create(ba_col_scratch_t **out) {
  *out = ba_calloc(1, sizeof **out);
  return *out ? BA_OK : BA_ERR_NOMEM;
}

void ba_col_scratch_free(ba_col_scratch_t *x) {
  if (!x) return;
  ba_free(x->v);
  ba_free(x->hs);
  ba_free(x->ps);
  ba_free(x);
}


static uint64_t gcd64(uint64_t a, uint64_t b) {
  if (!a) return b;
  if (!b) return a;
  int sh = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) {
      uint64_t t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b);
  return a << sh;
}

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

/* The sorts below take at most SORT_MAX entries (dictionaries and their
 * candidates): bottom-up merge sorts with a merge step without a branch on
 * the comparison (a conditional move), inline, where qsort's indirect
 * comparisons and mispredicted branches cost ~3 % of a group's encoding.
 * Ascending u64 keys; the order of equal keys is immaterial to callers. */
#define SORT_MAX 256u

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void sort_u64(uint64_t *a, size_t n) {
  if (n > SORT_MAX) { /* not reached by the callers; kept correct */
    qsort(a, n, sizeof *a, cmp_u64);
    return;
  }
  uint64_t tmp[SORT_MAX];
  uint64_t *src = a, *dst = tmp;
  for (size_t wd = 1; wd < n; wd *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * wd) {
      size_t mid = BA_MIN(lo + wd, n), hi = BA_MIN(lo + 2 * wd, n), i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        uint64_t x = src[i], y = src[j];
        int t = y < x;
        dst[k++] = t ? y : x;
        j += (size_t)t;
        i += (size_t)!t;
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    uint64_t *q = src;
    src = dst;
    dst = q;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}


static inline size_t dict_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 55) & (DICT_SLOTS - 1); }

/* Where the dictionary pass keeps value v: hashed (linear probing over
 * key), or, when the field's values span fewer than DICT_SLOTS multiples of
 * its scale above its minimum, at slot (v - mn) / scale, no hash and no
 * probe. Which slot holds a value matters to nothing written (the
 * dictionary is sorted, counts are per value, first sights keep their
 * order): only the look-ups below must agree with the pass. */
typedef struct dmap {
  int direct;
  uint64_t mn;
  exdiv_t esc;
} dmap_t;
static inline size_t dmap_slot(const dmap_t *m, uint64_t v) { return (size_t)exdiv_div(&m->esc, v - m->mn); }
/* The slot of v, which the pass saw (its key is there). */
static inline size_t dmap_find(const dmap_t *m, const uint64_t *key, uint64_t v) {
  if (m->direct) return dmap_slot(m, v);
  size_t h = dict_hash(v);
  while (key[h] != v) h = (h + 1) & (DICT_SLOTS - 1);
  return h;
}

static inline size_t pd_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 51) & (PD_SLOTS - 1); }
static inline size_t pd_find(const enc_scratch_t *x, uint64_t v) {
  size_t h = pd_hash(v);
  while (x->stamp[h] == x->cur && x->pkey[h] != v) h = (h + 1) & (PD_SLOTS - 1);
  return h;
}

/* Sorts (count, value) pairs by count descending, then value ascending (the
 * values are distinct: a total order). n <= SORT_MAX. */
static int cmp_cand(const void *a, const void *b) {
  const uint64_t *x = a, *y = b; /* count descending, then value */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

static void sort_cand(uint64_t (*a)[2], size_t n) {
  if (n > SORT_MAX) { /* more than 255 values seen over 255 times (row groups of 65,280 rows or more) */
    qsort(a, n, sizeof a[0], cmp_cand);
    return;
  }
  uint64_t tmp[SORT_MAX][2];
  uint64_t(*src)[2] = a, (*dst)[2] = tmp;
  for (size_t wd = 1; wd < n; wd *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * wd) {
      size_t mid = BA_MIN(lo + wd, n), hi = BA_MIN(lo + 2 * wd, n), i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        uint64_t xc = src[i][0], xv = src[i][1], yc = src[j][0], yv = src[j][1];
        int t = (yc > xc) | ((yc == xc) & (yv < xv)); /* y goes first */
        dst[k][0] = t ? yc : xc;
        dst[k][1] = t ? yv : xv;
        k++;
        j += (size_t)t;
        i += (size_t)!t;
      }
      for (; i < mid; i++, k++) dst[k][0] = src[i][0], dst[k][1] = src[i][1];
      for (; j < hi; j++, k++) dst[k][0] = src[j][0], dst[k][1] = src[j][1];
    }
    uint64_t(*q)[2] = src;
    src = dst;
    dst = q;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

/* The PDICT width b (1..8) and dictionary size that minimise n*b +
 * dictionary + exceptions (estimated at exc_bits each), from the nc
 * candidates in x->cand, which it sorts by frequency. Returns the cost in
 * bits (UINT64_MAX: not worth trying). */
static uint64_t pdict_best(enc_scratch_t *x, size_t nc, size_t n, unsigned w, unsigned exc_bits, unsigned *b_out,
                           size_t *k_out) {
  if (!nc) return UINT64_MAX;
  sort_cand(x->cand, nc);
  uint64_t best = UINT64_MAX, covered = 0;
  size_t k = 0;
  for (unsigned b = 1; b <= 8; b++) {
    size_t kb = BA_MIN(((size_t)1 << b) - 1, nc);
    for (; k < kb; k++) covered += x->cand[k][0];
    uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * exc_bits;
    if (cost < best) {
      best = cost;
      *b_out = b;
      *k_out = kb;
    }
  }
  return best;
}

/* PDICT choice from the counts of nd distinct values (ins[d]: the d-th
 * value's slot in cnt and key, in order of first sight): the candidates are
 * those seen twice or more, at most the 255 most frequent; then
 * pdict_best. */
static uint64_t pdict_choose(enc_scratch_t *x, const uint16_t *ins, size_t nd, const uint32_t *cnt,
                             const uint64_t *key, size_t n, unsigned w, unsigned exc_bits, unsigned *b_out,
                             size_t *k_out) {
  size_t nc = 0;
  /* Only the 255 most frequent can enter the dictionary: find the count
   * threshold from a histogram, so at most 255 candidates get sorted. */
  uint32_t hist[256] = {0};
  for (size_t d = 0; d < nd; d++) hist[BA_MIN(cnt[ins[d]], 255u)]++;
  uint32_t thr = 255, above = 0;
  while (thr > 2 && above + hist[thr] < 255) above += hist[thr--];
  uint32_t eq = 0; /* taken with count == thr: up to 255 - above */
  for (size_t d = 0; d < nd; d++) {
    size_t h = ins[d];
    uint32_t c = cnt[h];
    if (c < 2 || c < thr || (c == thr && eq++ >= 255 - above)) continue;
    x->cand[nc][0] = c;
    x->cand[nc][1] = key[h];
    nc++;
  }
  return pdict_best(x, nc, n, w, exc_bits, b_out, k_out);
}

/* PDICT plan of a field with more than DICT_MAX distinct values: counts
 * them (gives up past PD_MAX distinct), each row's slot into x->ps, then
 * pdict_choose. */
static uint64_t pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
                           unsigned *b_out, size_t *k_out) {
  if (x->pscap < n) {
    void *q = x->ps;
    if (ba_grow(&q, &x->pscap, n, sizeof *x->ps) < 0) return UINT64_MAX;
    x->ps = q;
  }
  uint16_t *ps = x->ps; /* each row's slot, for pdict_write (PD_SLOTS <= 65536) */
  if (++x->cur == 0) { /* stamps wrapped: clear once every 2^32 uses */
    memset(x->stamp, 0, sizeof x->stamp);
    x->cur = 1;
  }
  size_t nd = 0, nrep = 0;
  for (size_t i = 0; i < n; i++) {
    size_t h = pd_find(x, v[i]);
    ps[i] = (uint16_t)h;
    if (x->stamp[h] == x->cur) {
      if (++x->pcnt[h] == 2) x->rep[nrep++] = (uint16_t)h;
      continue;
    }
    if (nd == PD_MAX) return UINT64_MAX;
    /* All of the first 256 rows distinct (timestamps): give up early. */
    if (i == 255 && nd == 255) return UINT64_MAX;
    x->stamp[h] = x->cur;
    x->pkey[h] = v[i];
    x->pcnt[h] = 1;
    x->ins[nd++] = (uint16_t)h;
  }
  x->pnd = nd;
  if (nrep > 255) return pdict_choose(x, x->ins, nd, x->pcnt, x->pkey, n, w, exc_bits, b_out, k_out);
  /* At most 255 values repeat (most rows distinct: times, addresses):
   * every one is a candidate, as pdict_choose would find after two passes
   * over all nd values (the sort's order is total, so theirs is too). */
  for (size_t r = 0; r < nrep; r++) {
    x->cand[r][0] = x->pcnt[x->rep[r]];
    x->cand[r][1] = x->pkey[x->rep[r]];
  }
  return pdict_best(x, nrep, n, w, exc_bits, b_out, k_out);
}

/* The k most frequent values of the plan (x->cand), ascending, into dict. */
static void pdict_dict(const enc_scratch_t *x, size_t k, uint64_t *dict) {
  for (size_t d = 0; d < k; d++) dict[d] = x->cand[d][1];
  sort_u64(dict, k); /* k <= 255 */
}

/* Writes a PDICT field of dictionary dict[0..k) at out; row i's index + 1
 * is (uint8_t)tab[rs[i]] (0: an exception). Returns its bytes. v is
 * clobbered (the exceptions gathered at its front). */
static size_t pdict_write(uint64_t *v, size_t n, unsigned w, unsigned b, const uint64_t *dict, size_t k,
                          const uint16_t *rs, const uint32_t *tab, uint8_t *out) {
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR); /* emin, the exceptions and their width: after the rows */
  p[0] = XF_PDICT;
  p[1] = (uint8_t)b;
  ba_store_le32(p + 4, (uint32_t)k);
  p += BA_COL2_FIELD_HDR;
  for (size_t d = 0; d < k; d++)
    for (unsigned q = 0; q < w; q++) *p++ = (uint8_t)(dict[d] >> (8 * q));
  /* One table look-up per row, its index packed at once: dictionary index
   * ix - 1, or the escape (all b bits set) for an exception (ix = 0):
   * (ix - 1) & esc either way, as ix - 1 < esc. */
  const uint64_t esc = ((uint64_t)1 << b) - 1;
  bitw_t bw = {p, 0, 0};
  uint64_t emin = UINT64_MAX, emax = 0, ne = 0;
  /* Without a branch on "exception" (as random as the values): the
   * exceptions' values move to the front of v (ne <= i: v[i] is read
   * first), their range kept with masks. */
  /* 64 / b rows (b <= 8) a step, their indexes put by one bitw_put */
  const unsigned g = 64 / b;
  size_t i = 0;
  for (;;) {
    unsigned m = i + g <= n ? g : (unsigned)(n - i);
    if (!m) break;
    uint64_t acc = 0;
    for (unsigned j = 0; j < m; j++, i++) {
      uint64_t vi = v[i];
      uint64_t ix = (uint8_t)tab[rs[i]]; /* the row's slot from the counting pass, which saw every row */
      uint64_t e = ix == 0, em = 0 - e;
      acc |= ((ix - 1) & esc) << (j * b);
      uint64_t lo = vi | ~em, hi = vi & em;
      emin = lo < emin ? lo : emin;
      emax = hi > emax ? hi : emax;
      v[ne] = vi;
      ne += e;
    }
    bitw_put(&bw, acc, m * b);
  }
  if (!ne) emin = emax = 0;
  unsigned eb = bitlen(emax - emin);
  out[3] = (uint8_t)eb;
  ba_store_le64(out + 8, emin);
  ba_store_le64(out + 16, ne);
  bitw_t be = {bitw_end(&bw), 0, 0};
  BITW_PUT_ROWS(&be, ne, eb, r, v[r] - emin);
  return (size_t)(bitw_end(&be) - out);
}

/* A PDICT field from pdict_plan's table (x->ps, x->pcnt). */
static size_t pdict_write_plan(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, unsigned b, size_t k,
                               uint8_t *out) {
  uint64_t dict[256];
  pdict_dict(x, k, dict);
  /* pcnt now: index + 1 of dictionary values, 0 for the others. */
  for (size_t d = 0; d < x->pnd; d++) x->pcnt[x->ins[d]] = 0;
  for (size_t d = 0; d < k; d++) x->pcnt[pd_find(x, dict[d])] = (uint32_t)d + 1;
  return pdict_write(v, n, w, b, dict, k, x->ps, x->pcnt, out);
}

/* PDICT cost in bits from the counts of the nd (<= DICT_MAX) distinct
 * values, exceptions at exc_bits each (an upper bound of what they take). */
static uint64_t pdict_estimate(const uint64_t *key, const uint8_t *used, const uint32_t *cnt, size_t nd, size_t n,
                               unsigned w, unsigned exc_bits) {
  (void)key;
  uint64_t c[DICT_MAX]; /* counts, descending: sorted as UINT32_MAX - count ascending */
  size_t k = 0;
  for (size_t h = 0; h < DICT_SLOTS && k < nd; h++)
    if (used[h]) c[k++] = UINT32_MAX - cnt[h];
  sort_u64(c, k);
  for (size_t i = 0; i < k; i++) c[i] = UINT32_MAX - c[i];
  uint64_t best = UINT64_MAX, covered = 0;
  size_t j = 0;
  for (unsigned b = 1; b <= 8; b++) {
    size_t kb = BA_MIN(((size_t)1 << b) - 1, k);
    for (; j < kb; j++) covered += c[j] >= 2 ? c[j] : 0;
    uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * exc_bits;
    if (cost < best) best = cost;
  }
  return best;
}

/* The first pass of encode2_int: the minimum and maximum of v[0..n) and the
 * OR of the zigzag row-to-row differences from row 1 on (whose bit length is
 * that of their maximum). Without a branch on the row and with the zigzag
 * taken from the difference's sign bit (logical shifts only: zz's value), so
 * that it vectorises: one copy per width (shifts by immediates), built for
 * the baseline, AVX2 and AVX-512 and chosen once at run time (the same
 * results; 0.83 -> 0.53 / 0.21 ns per value in a micro-benchmark). */
static inline __attribute__((always_inline)) void range_body(const uint64_t *v, size_t n, unsigned w, uint64_t *mn_out,
                                                             uint64_t *mx_out, uint64_t *zor_out) {
  uint64_t m = wmask(w), mn = UINT64_MAX, mx = 0, zor = 0;
  if (n) mn = mx = v[0];
  for (size_t i = 1; i < n; i++) {
    uint64_t x = v[i], d = (x - v[i - 1]) & m;
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
    zor |= ((d << 1) ^ (0 - (d >> (8 * w - 1)))) & m;
  }
  *mn_out = mn;
  *mx_out = mx;
  *zor_out = zor;
}

#define RANGE_WIDTHS(v, n, w, a, b, c)       \
  switch (w) {                               \
    case 1: range_body(v, n, 1, a, b, c); break; \
    case 2: range_body(v, n, 2, a, b, c); break; \
    case 4: range_body(v, n, 4, a, b, c); break; \
    case 8: range_body(v, n, 8, a, b, c); break; \
    default: range_body(v, n, w, a, b, c); break; \
  }

static void range_base(const uint64_t *v, size_t n, unsigned w, uint64_t *a, uint64_t *b, uint64_t *c) {
  RANGE_WIDTHS(v, n, w, a, b, c)
}

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)
#define VEC_OPT /* clang vectorises at -O2 */
#else
#define VEC_OPT , optimize("O3") /* GCC 12 does not vectorise these reductions at -O2 */
#endif
__attribute__((target("avx2") VEC_OPT)) static void range_avx2(const uint64_t *v, size_t n, unsigned w, uint64_t *a,
                                                              uint64_t *b, uint64_t *c) {
  RANGE_WIDTHS(v, n, w, a, b, c)
}
__attribute__((target("avx512f,avx512vl") VEC_OPT)) static void range_avx512(const uint64_t *v, size_t n, unsigned w,
                                                                            uint64_t *a, uint64_t *b, uint64_t *c) {
  RANGE_WIDTHS(v, n, w, a, b, c)
}
#undef VEC_OPT
typedef void (*range_fn)(const uint64_t *, size_t, unsigned, uint64_t *, uint64_t *, uint64_t *);
static pthread_once_t g_range_once = PTHREAD_ONCE_INIT;
static range_fn g_range = range_base;
static void range_init(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) g_range = range_avx512;
  else if (__builtin_cpu_supports("avx2")) g_range = range_avx2;
}
static void range_pass(const uint64_t *v, size_t n, unsigned w, uint64_t *a, uint64_t *b, uint64_t *c) {
  pthread_once(&g_range_once, range_init);
  g_range(v, n, w, a, b, c);
}
#else
#define range_pass range_base
#endif
#undef RANGE_WIDTHS

/* The greatest common divisor of every |v[i] - v0| (0 while all are
 * equal); once it is 1 no later row changes it. */
static uint64_t common_scale(const uint64_t *v, size_t n, uint64_t v0) {
  uint64_t g = 0;
  exdiv_t eg = exdiv_make(1);
  for (size_t i = 1; i < n && g != 1; i++) {
    uint64_t d = v[i] >= v0 ? v[i] - v0 : v0 - v[i];
    if (g == 0 || !exdiv_divides(&eg, d)) { /* (d = 0 divides; no test for it: unpredictable) */
      g = gcd64(g, d);
      if (g) eg = exdiv_make(g);
    }
  }
  return g;
}

/* dict_pass's loop; direct and with_s are constants at each call, so each
 * call is its own loop without their tests (the direct one: the slot from
 * the value, no hash, no probe). */
static inline __attribute__((always_inline)) int dict_rows(const dmap_t *dm, const uint64_t *v, size_t n,
                                                           uint64_t *key, uint8_t *used, uint32_t *cnt,
                                                           uint64_t *dict, size_t *nd, uint16_t *s, int direct,
                                                           int with_s) {
  for (size_t i = 0; i < n; i++) {
    size_t h = direct ? dmap_slot(dm, v[i]) : dict_hash(v[i]);
    while (!direct && used[h] && key[h] != v[i]) h = (h + 1) & (DICT_SLOTS - 1);
    if (with_s) s[i] = (uint16_t)h;
    if (used[h]) {
      cnt[h]++;
      continue;
    }
    cnt[h] = 1;
    if (*nd == DICT_MAX) return 0;
    used[h] = 1;
    key[h] = v[i];
    dict[(*nd)++] = v[i];
  }
  return 1;
}

/* The distinct values, up to DICT_MAX: the table (key, used, cnt: the rows
 * of each), the values in first-seen order in dict[*nd]; each row's slot in
 * *hs (x's scratch; NULL without memory: a writer probes again). 0 when
 * there are more than DICT_MAX. */
static int dict_pass(enc_scratch_t *x, const dmap_t *dm, const uint64_t *v, size_t n, uint64_t *key, uint8_t *used,
                     uint32_t *cnt, uint64_t *dict, size_t *nd, uint16_t **hs) {
  memset(used, 0, DICT_SLOTS);
  uint16_t *s = x->hs;
  if (x->hscap < n) {
    void *q = x->hs;
    s = ba_grow(&q, &x->hscap, n, sizeof *x->hs) == BA_OK ? q : NULL;
    x->hs = q;
  }
  *hs = s;
  if (dm->direct) return s ? dict_rows(dm, v, n, key, used, cnt, dict, nd, s, 1, 1)
                           : dict_rows(dm, v, n, key, used, cnt, dict, nd, s, 1, 0);
  return s ? dict_rows(dm, v, n, key, used, cnt, dict, nd, s, 0, 1)
           : dict_rows(dm, v, n, key, used, cnt, dict, nd, s, 0, 0);
}

/* A DICT field's sorted dictionary at p (w bytes per entry); each v[i]
 * becomes its entry's index. Returns the end of the dictionary. */
static uint8_t *write_dict(uint8_t *p, uint64_t *v, size_t n, unsigned w, uint64_t *dict, size_t nd,
                           const uint64_t *key, const uint16_t *hs, const dmap_t *dm) {
  uint16_t slot_of[DICT_SLOTS];
  sort_u64(dict, nd); /* nd <= DICT_MAX */
  for (size_t d = 0; d < nd; d++) {
    for (unsigned b = 0; b < w; b++) *p++ = (uint8_t)(dict[d] >> (8 * b));
    slot_of[dmap_find(dm, key, dict[d])] = (uint16_t)d;
  }
  if (hs) {
    for (size_t i = 0; i < n; i++) v[i] = slot_of[hs[i]];
  } else {
    for (size_t i = 0; i < n; i++) v[i] = slot_of[dmap_find(dm, key, v[i])];
  }
  return p;
}

/* What encode2_int chooses from: the bit widths of FOR, DELTA and DICT and
 * the cheapest of FOR, FOR in byte planes, DELTA, DELTA in planes and DICT
 * (best 0..4) with its size in bits. */
typedef struct widths {
  unsigned b_for, b_delta, b_dict;
  int best;
  uint64_t best_cost;
} widths_t;

/* Sizes in bits: packed = n * width. Byte planes: LZO has no entropy coder,
 * so a plane costs a byte a row unless it is mostly zero, where each nonzero
 * byte costs about three (a literal between two matches): skewed values, a
 * few large among many small, favour planes. */
static void choose_method(const uint64_t *v, size_t n, unsigned w, int allow_planes, uint64_t mn, uint64_t mx,
                          uint64_t v0, uint64_t zmax, uint64_t sc, const exdiv_t *esc, size_t nd, int dict_ok,
                          widths_t *o) {
  uint64_t m = wmask(w);
  uint64_t maxk = 0, maxz = 0, prev = 0, nzk[8] = {0}, nzz[8] = {0};
  if (allow_planes) {
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(esc, v[i] - mn);
      uint64_t z = zz((k - prev) & m, w, m);
      if (k > maxk) maxk = k;
      if (z > maxz) maxz = z;
      for (unsigned b = 0; b < w; b++) {
        nzk[b] += ((k >> (8 * b)) & 0xff) != 0;
        nzz[b] += ((z >> (8 * b)) & 0xff) != 0;
      }
      prev = k;
    }
  } else if (sc == 1) { /* 3.0 (no planes), the common scale: from the first pass */
    if (n) {
      uint64_t z0 = zz((v0 - mn) & m, w, m); /* row 0's delta is from 0 */
      maxk = mx - mn;
      maxz = z0 | zmax; /* only its bit length is used */
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(esc, v[i] - mn), z = zz((k - prev) & m, w, m);
      maxk = k > maxk ? k : maxk;
      maxz = z > maxz ? z : maxz;
      prev = k;
    }
  }
  o->b_for = bitlen(maxk);
  o->b_delta = bitlen(maxz);
  o->b_dict = nd > 1 ? bitlen(nd - 1) : 0;
  uint64_t pl_k = 0, pl_z = 0;
  for (unsigned b = 0; b < w; b++) {
    pl_k += BA_MIN(8ull * n, 24 * nzk[b]);
    pl_z += BA_MIN(8ull * n, 24 * nzz[b]);
  }
  uint64_t cost[5] = {(uint64_t)n * o->b_for, allow_planes ? pl_k : UINT64_MAX, (uint64_t)n * o->b_delta,
                      allow_planes ? pl_z : UINT64_MAX,
                      dict_ok && nd ? (uint64_t)n * o->b_dict + 8ull * w * nd : UINT64_MAX};
  o->best = 0;
  for (int c = 1; c < 5; c++)
    if (cost[c] < cost[o->best]) o->best = c;
  o->best_cost = cost[o->best];
}

/* A FOR or DELTA field's values at p: bit-packed as transformed, or (2.0)
 * transformed into v and written in byte planes. Returns the end. */
static uint8_t *write_for_delta(uint8_t *p, uint64_t *v, size_t n, unsigned w, int method, int planes,
                                unsigned bits, uint64_t mn, uint64_t sc, const exdiv_t *esc) {
  uint64_t m = wmask(w), prev = 0;
  if (!planes) { /* packed as transformed: no pass writing v back */
    bitw_t bw = {p, 0, 0};
    if (bits && method == XF_FOR && sc == 1) {
      BITW_PUT_ROWS(&bw, n, bits, i, v[i] - mn);
    } else if (bits && method == XF_FOR) {
      BITW_PUT_ROWS(&bw, n, bits, i, exdiv_div(esc, v[i] - mn));
    } else if (bits) {
      for (size_t i = 0; i < n; i++) {
        uint64_t k = exdiv_div(esc, v[i] - mn);
        bitw_put(&bw, zz((k - prev) & m, w, m), bits);
        prev = k;
      }
    }
    return bitw_end(&bw);
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t k = exdiv_div(esc, v[i] - mn);
    v[i] = method == XF_DELTA ? zz((k - prev) & m, w, m) : k;
    prev = k;
  }
  unsigned nb = (bits + 7) / 8;
  for (unsigned b = 0; b < nb; b++)
    for (size_t i = 0; i < n; i++) p[(size_t)b * n + i] = (uint8_t)(v[i] >> (8 * b));
  return p + (size_t)nb * n;
}

static size_t encode2_int(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes,
                          uint8_t *out) {
  uint64_t mn = UINT64_MAX, mx = 0, g, v0 = n ? v[0] : 0;
  /* zmax: the largest zigzag row-to-row difference from row 1 on, which is
   * DELTA's width at scale 1 whatever the minimum (it cancels). */
  uint64_t zmax = 0; /* here the OR of those differences: the same bit length */
  range_pass(v, n, w, &mn, &mx, &zmax);
  if (n && mn == mx) {
    /* One value in every row (IPv4-mapped words, engine ids, ...): FOR at
     * width 0, the value as the base and scale 1, no bits. What the general
     * path below chooses for it (every cost 0 or more, FOR first). */
    memset(out, 0, BA_COL2_FIELD_HDR);
    out[0] = XF_FOR;
    ba_store_le64(out + 8, mn);
    ba_store_le64(out + 16, 1);
    return BA_COL2_FIELD_HDR;
  }
  /* The common scale: the gcd of every |v[i] - v0| (0 while all are equal);
   * once it is 1 no later row changes it. */
  g = common_scale(v, n, v0);
  if (!n) mn = 0;
  uint64_t sc = g ? g : 1;
  /* Every v[i] - mn is a multiple of sc (both v[i] - v0 and mn - v0 are). */
  const exdiv_t esc = exdiv_make(sc);
  /* Distinct values, up to DICT_MAX. */
  uint64_t key[DICT_SLOTS];
  uint8_t used[DICT_SLOTS];
  uint32_t cnt[DICT_SLOTS];
  uint64_t dict[DICT_MAX];
  size_t nd = 0;
  uint16_t *hs = NULL;
  dmap_t dm = {exdiv_div(&esc, mx - mn) < DICT_SLOTS, mn, esc};
  int dict_ok = dict_pass(x, &dm, v, n, key, used, cnt, dict, &nd, &hs);
  widths_t wd;
  choose_method(v, n, w, allow_planes, mn, mx, v0, zmax, sc, &esc, nd, dict_ok, &wd);
  unsigned b_for = wd.b_for, b_delta = wd.b_delta, b_dict = wd.b_dict;
  int best = wd.best;
  uint64_t cost_best = wd.best_cost;
  /* Many distinct values, some frequent (ports: a few services among
   * ephemeral ports): a dictionary of the frequent ones may win. */
  /* 3.0: a few values dominate (a mostly-zero field, small packet
   * counts): the frequent ones in a dictionary of b bits, the rest as
   * exceptions, estimated from the dictionary pass's counts first. */
  if (!allow_planes && dict_ok && nd > 2 && b_for >= 2 &&
      pdict_estimate(key, used, cnt, nd, n, w, b_for) < cost_best) {
    unsigned pb = 0;
    size_t pk = 0;
    if (hs && nd < DICT_MAX) {
      /* The dictionary pass counted every row and kept its slot: planned
       * and written from that table, no second counting pass. The same
       * plan as pdict_plan's (the same counts in the same first-seen
       * order; nd < DICT_MAX: not every one of the first 256 rows
       * distinct, where pdict_plan gives up). */
      uint16_t ins[DICT_MAX];
      for (size_t d = 0; d < nd; d++) ins[d] = (uint16_t)dmap_find(&dm, key, dict[d]);
      uint64_t pc = pdict_choose(x, ins, nd, cnt, key, n, w, b_for, &pb, &pk);
      if (pc < cost_best) {
        uint64_t pd[256];
        uint32_t tab[DICT_SLOTS] = {0}; /* slot -> dictionary index + 1 */
        pdict_dict(x, pk, pd);
        for (size_t d = 0; d < pk; d++) tab[dmap_find(&dm, key, pd[d])] = (uint32_t)d + 1;
        return pdict_write(v, n, w, pb, pd, pk, hs, tab, out);
      }
    } else {
      uint64_t pc = pdict_plan(x, v, n, w, b_for, &pb, &pk);
      if (pc < cost_best) return pdict_write_plan(x, v, n, w, pb, pk, out);
    }
  }
  if (!dict_ok && b_for >= 6) {
    unsigned pb = 0;
    size_t pk = 0;
    uint64_t pc = pdict_plan(x, v, n, w, b_for, &pb, &pk);
    if (pc < cost_best) return pdict_write_plan(x, v, n, w, pb, pk, out);
  }
  int method = best < 2 ? XF_FOR : best < 4 ? XF_DELTA : XF_DICT;
  int planes = best == 1 || best == 3;
  unsigned bits = method == XF_FOR ? b_for : method == XF_DELTA ? b_delta : b_dict;
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR);
  p[0] = (uint8_t)method;
  p[1] = (uint8_t)bits;
  p[2] = (uint8_t)planes;
  if (method == XF_DICT) {
    ba_store_le32(p + 4, (uint32_t)nd);
    ba_store_le64(p + 16, 1);
    p = write_dict(p + BA_COL2_FIELD_HDR, v, n, w, dict, nd, key, hs, &dm);
    bitw_t bw = {p, 0, 0};
    BITW_PUT_ROWS(&bw, n, bits, i, v[i]);
    return (size_t)(bitw_end(&bw) - out);
  }
  ba_store_le64(p + 8, mn);
  ba_store_le64(p + 16, sc);
  return (size_t)(write_for_delta(p + BA_COL2_FIELD_HDR, v, n, w, method, planes, bits, mn, sc, &esc) - out);
}

/* Unpacks n values of b bits (1..64) from p[0..len) (len >= ceil(n*b/8)). */
static void unpack_bits(const uint8_t *p, size_t len, size_t n, unsigned bits, uint64_t *v) {
  uint64_t pos = 0, bm = bmask(bits);
  size_t i = 0;
  if (bits <= 57 && len >= 8)
    for (; i < n && (pos >> 3) <= len - 8; i++, pos += bits) v[i] = (ba_load_le64(p + (pos >> 3)) >> (pos & 7)) & bm;
  for (; i < n; i++, pos += bits) v[i] = bit_get(p, len, pos, bits);
}

#define PDICT_RUN 256 /* escapes unpacked at a time */

static int decode2_pdict(const uint8_t *in, size_t len, size_t n, unsigned w, uint64_t *v, size_t *used) {
  uint64_t m = wmask(w);
  unsigned b = in[1], eb = in[3];
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t ebase = ba_load_le64(in + 8), ne = ba_load_le64(in + 16);
  BA_RETURN_IF(in[2] != 0 || b < 1 || b > 8 || nd == 0 || nd >= (1u << b), BA_ERR_CORRUPT);
  BA_RETURN_IF(eb > 8 * w || ebase > m || ne > n, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  BA_RETURN_IF((size_t)nd * w > len - off, BA_ERR_CORRUPT);
  off += (size_t)nd * w;
  size_t ib = (size_t)(((uint64_t)n * b + 7) / 8);
  BA_RETURN_IF(ib > len - off, BA_ERR_CORRUPT);
  const uint8_t *idx = in + off;
  off += ib;
  size_t eby = (size_t)((ne * eb + 7) / 8);
  BA_RETURN_IF(eby > len - off, BA_ERR_CORRUPT);
  const uint8_t *exc = in + off;
  off += eby;
  unpack_bits(idx, ib, n, b, v);
  /* nd < 2^b <= 256: the entries as numbers first (0 past nd), the escapes
   * unpacked ahead PDICT_RUN at a time; then no branch per value on whether
   * it escapes (escapes come at random) */
  uint64_t esc = ((uint64_t)1 << b) - 1, e = 0, d[256] = {0}, ev[PDICT_RUN + 1], bad = 0, ebase_i = 0, lim = 0;
  for (uint32_t j = 0; j < nd; j++) {
    uint64_t x = 0;
    for (unsigned q = 0; q < w; q++) x |= (uint64_t)dict[(size_t)j * w + q] << (8 * q);
    d[j] = x;
  }
  ev[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (e == lim && e < ne) {
      uint64_t cnt = BA_MIN((uint64_t)PDICT_RUN, ne - e);
      for (uint64_t k = 0; k < cnt; k++) ev[k] = (ebase + bit_get(exc, eby, (e + k) * eb, eb)) & m;
      ev[cnt] = 0;
      ebase_i = e;
      lim = e + cnt;
    }
    uint64_t ix = v[i], is = ix == esc;
    bad |= (is & (e >= ne)) | (!is & (ix >= nd));
    uint64_t dv = d[ix & 0xFF], xv = ev[e - ebase_i];
    v[i] = is ? xv : dv;
    e += is & (e < ne); /* an escape past the last is flagged above, e stays in the run */
  }
  BA_RETURN_IF(bad, BA_ERR_CORRUPT);
  BA_RETURN_IF(e != ne, BA_ERR_CORRUPT);
  *used = off;
  return BA_OK;
}

/* Decodes one field at in[0..len) into v[0..n); *used gets its bytes. */
#define DICT_TABLE 1024 /* dictionaries up to this many entries are read into a table */

static int decode2_int(const uint8_t *in, size_t len, size_t n, unsigned w, int allow_planes, uint64_t *v,
                       size_t *used) {
  uint64_t m = wmask(w);
  BA_RETURN_IF(len < BA_COL2_FIELD_HDR, BA_ERR_CORRUPT);
  int method = in[0], planes = in[2];
  unsigned bits = in[1], nb = (bits + 7) / 8;
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t base = ba_load_le64(in + 8), sc = ba_load_le64(in + 16);
  if (method == XF_PDICT) return decode2_pdict(in, len, n, w, v, used);
  BA_RETURN_IF(planes > allow_planes || in[3] != 0 || (planes && method == XF_DICT), BA_ERR_CORRUPT);
  BA_RETURN_IF(method != XF_FOR && method != XF_DELTA && method != XF_DICT, BA_ERR_CORRUPT);
  BA_RETURN_IF(bits > 8 * w || base > m || sc == 0 || sc > m, BA_ERR_CORRUPT);
  BA_RETURN_IF(method == XF_DICT ? (nd == 0 || nd > n || base != 0 || sc != 1) : nd != 0, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  const uint8_t *dict = in + off;
  size_t dict_bytes = (size_t)nd * w;
  BA_RETURN_IF(dict_bytes > len - off, BA_ERR_CORRUPT);
  off += dict_bytes;
  size_t packed = planes ? (size_t)nb * n : (size_t)(((uint64_t)n * bits + 7) / 8);
  BA_RETURN_IF(packed > len - off, BA_ERR_CORRUPT);
  const uint8_t *p = in + off;
  /* The stored values. */
  if (!bits) {
    memset(v, 0, n * sizeof *v);
  } else if (planes) {
    for (size_t i = 0; i < n; i++) v[i] = p[i];
    for (unsigned b = 1; b < nb; b++)
      for (size_t i = 0; i < n; i++) v[i] |= (uint64_t)p[(size_t)b * n + i] << (8 * b);
  } else {
    unpack_bits(p, packed, n, bits, v);
  }
  /* The values they stand for. */
  if (method == XF_DICT && nd <= DICT_TABLE) {
    /* the entries as numbers first: one load per value, the check folded */
    uint64_t d[DICT_TABLE], bad = 0;
    for (uint32_t j = 0; j < nd; j++) {
      uint64_t x = 0;
      for (unsigned b = 0; b < w; b++) x |= (uint64_t)dict[(size_t)j * w + b] << (8 * b);
      d[j] = x;
    }
    for (size_t i = 0; i < n; i++) {
      uint64_t ix = v[i];
      bad |= ix >= nd;
      v[i] = d[ix < nd ? ix : 0];
    }
    BA_RETURN_IF(bad, BA_ERR_CORRUPT);
  } else if (method == XF_DICT) {
    for (size_t i = 0; i < n; i++) {
      BA_RETURN_IF(v[i] >= nd, BA_ERR_CORRUPT);
      uint64_t x = 0;
      for (unsigned b = 0; b < w; b++) x |= (uint64_t)dict[v[i] * w + b] << (8 * b);
      v[i] = x;
    }
  } else {
    if (method == XF_DELTA) {
      uint64_t acc = 0;
      for (size_t i = 0; i < n; i++) v[i] = acc = (acc + unzz(v[i], m)) & m;
    }
    if (sc == 1) {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i]) & m;
    } else {
      for (size_t i = 0; i < n; i++) v[i] = (base + v[i] * sc) & m;
    }
  }
  *used = off + packed;
  return BA_OK;
}

/* The smallest of FOR, DELTA, DICT and PDICT, bit-packed or in byte planes.
 * v: the n values (clobbered). Returns the field's bytes. */
size_t ba_if_encode(ba_col_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes, uint8_t *out) {
  return encode2_int(x, v, n, w, allow_planes, out);
}

int ba_if_decode(const uint8_t *in, size_t len, size_t n, unsigned w, int allow_planes, uint64_t *v,
                 size_t *used) {
  return decode2_int(in, len, n, w, allow_planes, v, used);
}

int ba_if_scratch_values(ba_col_scratch_t *x, size_t n, uint64_t **v) {
  if (x->vcap < n + 1) {
    void *q = x->v;
    int rc = ba_grow(&q, &x->vcap, n + 1, sizeof *x->v);
    x->v = q;
    BA_FORWARD(rc);
  }
  *v = x->v;
  return BA_OK;
}
