/* Integer fields of column payloads (doc/format.md §3.2, §7.1): one field of
 * n values of w bytes, transformed per block (frame of reference with a
 * common scale, row-to-row deltas, a dictionary, or a dictionary of the
 * frequent values with exceptions) and bit-packed at the width its values
 * need (2.0 may also use byte planes). Shared by the 2.0 and 3.0 column
 * layouts; the 3.0 reader also reads single values through ba_if_reader_t. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "archive/intfield.h"
#include "common/common.h"

enum { XF_FOR = 0, XF_DELTA = 1, XF_DICT = 2, XF_PDICT = 3 };
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
  uint8_t *ix;                 /* PDICT: each row's dictionary index + 1, 0 = exception */
  size_t ixcap;
  uint32_t cur;                /* slot h is in use iff stamp[h] == cur */
  uint32_t stamp[PD_SLOTS];    /* PDICT counting table */
  uint64_t pkey[PD_SLOTS];
  uint32_t pcnt[PD_SLOTS];
  uint16_t ins[PD_MAX];        /* slots in use */
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
  ba_free(x->ix);
  ba_free(x);
}

static inline uint64_t wmask(unsigned w) { return w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1; }
static inline uint64_t bmask(unsigned b) { return b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1; }

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
static inline uint64_t unzz(uint64_t z, uint64_t m) { return ((z >> 1) ^ (0 - (z & 1))) & m; }
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

static inline uint8_t *bitw_end(bitw_t *w) {
  for (unsigned k = 0; k < w->nacc; k += 8) *w->p++ = (uint8_t)(w->acc >> k);
  return w->p;
}

/* Value at bit pos of p[0..len) (pos + b <= 8 * len). */
static inline uint64_t bit_get(const uint8_t *p, size_t len, uint64_t pos, unsigned b) {
  if (!b) return 0;
  size_t byte = (size_t)(pos >> 3);
  unsigned off = (unsigned)(pos & 7);
  if (off + b <= 64 && len >= 8 && byte <= len - 8) return (ba_load_le64(p + byte) >> off) & bmask(b);
  uint64_t v = 0;
  for (unsigned got = 0; got < b; byte++) {
    unsigned take = BA_MIN(8 - off, b - got);
    v |= (uint64_t)((p[byte] >> off) & ((1u << take) - 1)) << got;
    got += take;
    off = 0;
  }
  return v;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}


static inline size_t dict_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 55) & (DICT_SLOTS - 1); }

static inline size_t pd_hash(uint64_t v) { return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 51) & (PD_SLOTS - 1); }
static inline size_t pd_find(const enc_scratch_t *x, uint64_t v) {
  size_t h = pd_hash(v);
  while (x->stamp[h] == x->cur && x->pkey[h] != v) h = (h + 1) & (PD_SLOTS - 1);
  return h;
}

static int cmp_cand(const void *a, const void *b) {
  const uint64_t *x = a, *y = b; /* count descending, then value */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* PDICT plan: counts the values (gives up past PD_MAX distinct), sorts
 * those seen twice or more by frequency and picks the index width b (1..8)
 * that minimises n*b + dictionary + exceptions (estimated at exc_bits each).
 * Returns the cost in bits (UINT64_MAX: not worth trying). */
static uint64_t pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
                           unsigned *b_out, size_t *k_out) {
  if (x->ixcap < n) {
    void *q = x->ix;
    if (ba_grow(&q, &x->ixcap, n, 1) < 0) return UINT64_MAX; /* no memory: not tried */
    x->ix = q;
  }
  if (++x->cur == 0) { /* stamps wrapped: clear once every 2^32 uses */
    memset(x->stamp, 0, sizeof x->stamp);
    x->cur = 1;
  }
  size_t nd = 0, nc = 0;
  for (size_t i = 0; i < n; i++) {
    size_t h = pd_find(x, v[i]);
    if (x->stamp[h] == x->cur) {
      x->pcnt[h]++;
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
  /* Only the 255 most frequent can enter the dictionary: find the count
   * threshold from a histogram, so at most 255 candidates get sorted. */
  uint32_t hist[256] = {0};
  for (size_t d = 0; d < nd; d++) hist[BA_MIN(x->pcnt[x->ins[d]], 255u)]++;
  uint32_t thr = 255, above = 0;
  while (thr > 2 && above + hist[thr] < 255) above += hist[thr--];
  uint32_t eq = 0; /* taken with count == thr: up to 255 - above */
  for (size_t d = 0; d < nd; d++) {
    size_t h = x->ins[d];
    uint32_t c = x->pcnt[h];
    if (c < 2 || c < thr || (c == thr && eq++ >= 255 - above)) continue;
    x->cand[nc][0] = c;
    x->cand[nc][1] = x->pkey[h];
    nc++;
  }
  if (!nc) return UINT64_MAX;
  qsort(x->cand, nc, sizeof x->cand[0], cmp_cand);
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

/* Writes a PDICT field (plan from pdict_plan) at out; returns its bytes. */
static size_t pdict_write(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned b, size_t k,
                          uint8_t *out) {
  uint64_t dict[256];
  for (size_t d = 0; d < k; d++) dict[d] = x->cand[d][1];
  qsort(dict, k, sizeof *dict, cmp_u64);
  /* pcnt now: index + 1 of dictionary values, 0 for the others. */
  for (size_t d = 0; d < PD_MAX && x->stamp[x->ins[d]] == x->cur; d++) x->pcnt[x->ins[d]] = 0;
  for (size_t d = 0; d < k; d++) x->pcnt[pd_find(x, dict[d])] = (uint32_t)d + 1;
  /* One table look-up per row (x->ix reserved by pdict_plan). */
  uint8_t *ixr = x->ix;
  uint64_t emin = UINT64_MAX, emax = 0, ne = 0;
  for (size_t i = 0; i < n; i++) {
    ixr[i] = (uint8_t)x->pcnt[pd_find(x, v[i])];
    if (!ixr[i]) {
      ne++;
      if (v[i] < emin) emin = v[i];
      if (v[i] > emax) emax = v[i];
    }
  }
  if (!ne) emin = emax = 0;
  unsigned eb = bitlen(emax - emin);
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR);
  p[0] = XF_PDICT;
  p[1] = (uint8_t)b;
  p[3] = (uint8_t)eb;
  ba_store_le32(p + 4, (uint32_t)k);
  ba_store_le64(p + 8, emin);
  ba_store_le64(p + 16, ne);
  p += BA_COL2_FIELD_HDR;
  for (size_t d = 0; d < k; d++)
    for (unsigned q = 0; q < w; q++) *p++ = (uint8_t)(dict[d] >> (8 * q));
  uint64_t esc = ((uint64_t)1 << b) - 1;
  bitw_t bw = {p, 0, 0};
  for (size_t i = 0; i < n; i++) bitw_put(&bw, ixr[i] ? (uint64_t)ixr[i] - 1 : esc, b);
  bitw_t be = {bitw_end(&bw), 0, 0};
  if (eb)
    for (size_t i = 0; i < n; i++)
      if (!ixr[i]) bitw_put(&be, v[i] - emin, eb);
  return (size_t)(bitw_end(&be) - out);
}

static int cmp_u32_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x < y) - (x > y);
}

/* PDICT cost in bits from the counts of the nd (<= DICT_MAX) distinct
 * values, exceptions at exc_bits each (an upper bound of what they take). */
static uint64_t pdict_estimate(const uint64_t *key, const uint8_t *used, const uint32_t *cnt, size_t nd, size_t n,
                               unsigned w, unsigned exc_bits) {
  (void)key;
  uint32_t c[DICT_MAX];
  size_t k = 0;
  for (size_t h = 0; h < DICT_SLOTS && k < nd; h++)
    if (used[h]) c[k++] = cnt[h];
  qsort(c, k, sizeof *c, cmp_u32_desc);
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

/* The smallest of FOR, DELTA, DICT and PDICT, bit-packed or in byte planes.
 * v: the n values (clobbered). Returns the field's bytes. */
static size_t encode2_int(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, int allow_planes,
                          uint8_t *out) {
  uint64_t m = wmask(w);
  uint64_t mn = UINT64_MAX, mx = 0, g = 0, v0 = n ? v[0] : 0;
  /* zmax: the largest zigzag row-to-row difference from row 1 on, which is
   * DELTA's width at scale 1 whatever the minimum (it cancels). */
  uint64_t zmax = 0;
  exdiv_t eg = exdiv_make(1);
  for (size_t i = 0; i < n; i++) {
    mn = v[i] < mn ? v[i] : mn;
    mx = v[i] > mx ? v[i] : mx;
    if (i) {
      uint64_t z = zz((v[i] - v[i - 1]) & m, w, m);
      zmax = z > zmax ? z : zmax;
    }
    uint64_t d = v[i] >= v0 ? v[i] - v0 : v0 - v[i];
    if (g != 1 && (g == 0 || !exdiv_divides(&eg, d))) {
      g = gcd64(g, d);
      if (g) eg = exdiv_make(g);
    }
  }
  if (!n) mn = 0;
  uint64_t sc = g ? g : 1;
  /* Every v[i] - mn is a multiple of sc (both v[i] - v0 and mn - v0 are). */
  const exdiv_t esc = exdiv_make(sc);
  /* Distinct values, up to DICT_MAX. */
  uint64_t key[DICT_SLOTS];
  uint16_t slot_of[DICT_SLOTS];
  uint8_t used[DICT_SLOTS];
  uint32_t cnt[DICT_SLOTS];
  uint64_t dict[DICT_MAX];
  size_t nd = 0;
  int dict_ok = 1;
  memset(used, 0, sizeof used);
  for (size_t i = 0; i < n && dict_ok; i++) {
    size_t h = dict_hash(v[i]);
    while (used[h] && key[h] != v[i]) h = (h + 1) & (DICT_SLOTS - 1);
    if (used[h]) {
      cnt[h]++;
      continue;
    }
    cnt[h] = 1;
    if (nd == DICT_MAX) {
      dict_ok = 0;
    } else {
      used[h] = 1;
      key[h] = v[i];
      dict[nd++] = v[i];
    }
  }
  /* Sizes in bits: packed = n * width. Byte planes: LZO has no entropy
   * coder, so a plane costs a byte a row unless it is mostly zero, where
   * each nonzero byte costs about three (a literal between two matches):
   * skewed values, a few large among many small, favour planes. */
  uint64_t maxk = 0, maxz = 0, prev = 0, nzk[8] = {0}, nzz[8] = {0};
  if (allow_planes) {
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(&esc, v[i] - mn);
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
      maxz = z0 > zmax ? z0 : zmax;
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(&esc, v[i] - mn), z = zz((k - prev) & m, w, m);
      maxk = k > maxk ? k : maxk;
      maxz = z > maxz ? z : maxz;
      prev = k;
    }
  }
  unsigned b_for = bitlen(maxk), b_delta = bitlen(maxz), b_dict = nd > 1 ? bitlen(nd - 1) : 0;
  uint64_t pl_k = 0, pl_z = 0;
  for (unsigned b = 0; b < w; b++) {
    pl_k += BA_MIN(8ull * n, 24 * nzk[b]);
    pl_z += BA_MIN(8ull * n, 24 * nzz[b]);
  }
  uint64_t cost[5] = {(uint64_t)n * b_for, allow_planes ? pl_k : UINT64_MAX, (uint64_t)n * b_delta,
                      allow_planes ? pl_z : UINT64_MAX,
                      dict_ok && nd ? (uint64_t)n * b_dict + 8ull * w * nd : UINT64_MAX};
  int best = 0;
  for (int c = 1; c < 5; c++)
    if (cost[c] < cost[best]) best = c;
  /* Many distinct values, some frequent (ports: a few services among
   * ephemeral ports): a dictionary of the frequent ones may win. */
  /* 3.0: a few values dominate (a mostly-zero field, small packet
   * counts): the frequent ones in a dictionary of b bits, the rest as
   * exceptions, estimated from the dictionary pass's counts first. */
  if (!allow_planes && dict_ok && nd > 2 && b_for >= 2 &&
      pdict_estimate(key, used, cnt, nd, n, w, b_for) < cost[best]) {
    unsigned pb = 0;
    size_t pk = 0;
    uint64_t pc = pdict_plan(x, v, n, w, b_for, &pb, &pk);
    if (pc < cost[best]) return pdict_write(x, v, n, w, pb, pk, out);
  }
  if (!dict_ok && b_for >= 6) {
    unsigned pb = 0;
    size_t pk = 0;
    uint64_t pc = pdict_plan(x, v, n, w, b_for, &pb, &pk);
    if (pc < cost[best]) return pdict_write(x, v, n, w, pb, pk, out);
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
    p += BA_COL2_FIELD_HDR;
    qsort(dict, nd, sizeof *dict, cmp_u64);
    for (size_t d = 0; d < nd; d++) {
      for (unsigned b = 0; b < w; b++) *p++ = (uint8_t)(dict[d] >> (8 * b));
      size_t h = dict_hash(dict[d]);
      while (key[h] != dict[d]) h = (h + 1) & (DICT_SLOTS - 1);
      slot_of[h] = (uint16_t)d;
    }
    for (size_t i = 0; i < n; i++) {
      size_t h = dict_hash(v[i]);
      while (key[h] != v[i]) h = (h + 1) & (DICT_SLOTS - 1);
      v[i] = slot_of[h];
    }
  } else {
    ba_store_le64(p + 8, mn);
    ba_store_le64(p + 16, sc);
    p += BA_COL2_FIELD_HDR;
    prev = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t k = exdiv_div(&esc, v[i] - mn);
      v[i] = method == XF_DELTA ? zz((k - prev) & m, w, m) : k;
      prev = k;
    }
  }
  if (planes) {
    unsigned nb = (bits + 7) / 8;
    for (unsigned b = 0; b < nb; b++)
      for (size_t i = 0; i < n; i++) p[(size_t)b * n + i] = (uint8_t)(v[i] >> (8 * b));
    return (size_t)(p - out) + (size_t)nb * n;
  }
  bitw_t bw = {p, 0, 0};
  if (bits)
    for (size_t i = 0; i < n; i++) bitw_put(&bw, v[i], bits);
  return (size_t)(bitw_end(&bw) - out);
}

/* Unpacks n values of b bits (1..64) from p[0..len) (len >= ceil(n*b/8)). */
static void unpack_bits(const uint8_t *p, size_t len, size_t n, unsigned bits, uint64_t *v) {
  uint64_t pos = 0, bm = bmask(bits);
  size_t i = 0;
  if (bits <= 57 && len >= 8)
    for (; i < n && (pos >> 3) <= len - 8; i++, pos += bits) v[i] = (ba_load_le64(p + (pos >> 3)) >> (pos & 7)) & bm;
  for (; i < n; i++, pos += bits) v[i] = bit_get(p, len, pos, bits);
}

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
  uint64_t esc = ((uint64_t)1 << b) - 1, e = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] == esc) {
      BA_RETURN_IF(e >= ne, BA_ERR_CORRUPT);
      v[i] = (ebase + bit_get(exc, eby, e * eb, eb)) & m;
      e++;
    } else {
      BA_RETURN_IF(v[i] >= nd, BA_ERR_CORRUPT);
      uint64_t x = 0;
      for (unsigned q = 0; q < w; q++) x |= (uint64_t)dict[v[i] * w + q] << (8 * q);
      v[i] = x;
    }
  }
  BA_RETURN_IF(e != ne, BA_ERR_CORRUPT);
  *used = off;
  return BA_OK;
}

/* Decodes one field at in[0..len) into v[0..n); *used gets its bytes. */
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
  if (method == XF_DICT) {
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

/* ---------- single values (3.0: bit-packed only) ---------- */
int ba_if_open(const uint8_t *in, size_t len, size_t n, unsigned w, ba_if_reader_t *r, size_t *used) {
  BA_RETURN_IF(len < BA_COL2_FIELD_HDR, BA_ERR_CORRUPT);
  memset(r, 0, sizeof *r);
  uint64_t m = wmask(w);
  r->method = in[0];
  r->bits = in[1];
  r->w = w;
  r->mask = m;
  unsigned layout = in[2];
  uint32_t nd = ba_load_le32(in + 4);
  uint64_t base = ba_load_le64(in + 8), sc = ba_load_le64(in + 16);
  BA_RETURN_IF(layout != 0, BA_ERR_CORRUPT);
  size_t off = BA_COL2_FIELD_HDR;
  if (r->method == XF_PDICT) {
    unsigned eb = in[3];
    BA_RETURN_IF(r->bits < 1 || r->bits > 8 || nd == 0 || nd >= (1u << r->bits), BA_ERR_CORRUPT);
    BA_RETURN_IF(eb > 8 * w || base > m || sc > n, BA_ERR_CORRUPT);
    r->eb = eb;
    r->ne = sc;
  } else {
    BA_RETURN_IF(in[3] != 0, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->method != XF_FOR && r->method != XF_DELTA && r->method != XF_DICT, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->bits > 8 * w || base > m || sc == 0 || sc > m, BA_ERR_CORRUPT);
    BA_RETURN_IF(r->method == XF_DICT ? (nd == 0 || nd > n || base != 0 || sc != 1) : nd != 0, BA_ERR_CORRUPT);
  }
  r->nd = nd;
  r->base = base;
  r->scale = sc;
  BA_RETURN_IF((size_t)nd * w > len - off, BA_ERR_CORRUPT);
  r->dict = in + off;
  /* entry i is read with one load if its first byte + 8 <= len */
  r->dict_fast = len - off >= 8 ? (uint32_t)BA_MIN((uint64_t)nd, (uint64_t)(len - off - 8) / w + 1) : 0;
  off += (size_t)nd * w;
  size_t packed = (size_t)(((uint64_t)n * r->bits + 7) / 8);
  BA_RETURN_IF(packed > len - off, BA_ERR_CORRUPT);
  r->vals = in + off;
  r->vals_len = packed;
  off += packed;
  if (r->method == XF_PDICT) {
    size_t eby = (size_t)((r->ne * r->eb + 7) / 8);
    BA_RETURN_IF(eby > len - off, BA_ERR_CORRUPT);
    r->exc = in + off;
    r->exc_len = eby;
    off += eby;
  }
  r->n = n;
  *used = off;
  return BA_OK;
}

/* Bit count without the popcnt instruction (the build targets baseline
 * x86-64, where __builtin_popcountll is a libgcc call). */
static inline uint64_t popcount_swar(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (x * 0x0101010101010101ull) >> 56;
}

/* How many of the b-bit values (b <= 8) at rows [from, to) of a packed
 * stream have every bit set (PDICT escapes). A 64-bit window holds the
 * (64 - pos % 8) / b whole values from bit pos on; a value's lowest bit
 * survives the AND of the window with its shifts by 1 .. b-1 only if all of
 * its bits are set. `hw`: the popcnt instruction (a constant once inlined). */
static inline __attribute__((always_inline)) uint64_t count_ones_body(const uint8_t *p, size_t len, size_t from,
                                                                      size_t to, unsigned b, int hw) {
  uint64_t starts = 0, n = 0, pos = (uint64_t)from * b;
  for (unsigned s = 0; s + b <= 64; s += b) starts |= 1ull << s;
  for (size_t i = from; i < to;) {
    unsigned sh = (unsigned)(pos & 7);
    size_t k = BA_MIN(to - i, (64 - sh) / b), byte = (size_t)(pos >> 3);
    uint64_t x;
    if (len >= 8 && byte <= len - 8) {
      x = ba_load_le64(p + byte);
    } else { /* the stream's last bytes (byte < len: rows < n) */
      uint8_t t[8] = {0};
      memcpy(t, p + byte, len - byte);
      x = ba_load_le64(t);
    }
    unsigned nb = (unsigned)k * b; /* <= 64 - sh */
    x >>= sh;
    if (nb < 64) x &= (1ull << nb) - 1;
    uint64_t y = x;
    for (unsigned s = 1; s < b; s++) y &= x >> s;
#if defined(__x86_64__) && defined(__GNUC__)
    n += hw ? (uint64_t)__builtin_popcountll(y & starts) : popcount_swar(y & starts);
#else
    (void)hw;
    n += popcount_swar(y & starts);
#endif
    i += k;
    pos += nb;
  }
  return n;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* b a constant in each case: the shifts and ANDs unrolled */
__attribute__((target("popcnt"))) static uint64_t count_ones_hw(const uint8_t *p, size_t len, size_t from, size_t to,
                                                                unsigned b) {
  switch (b) {
    case 1: return count_ones_body(p, len, from, to, 1, 1);
    case 2: return count_ones_body(p, len, from, to, 2, 1);
    case 3: return count_ones_body(p, len, from, to, 3, 1);
    case 4: return count_ones_body(p, len, from, to, 4, 1);
    case 5: return count_ones_body(p, len, from, to, 5, 1);
    case 6: return count_ones_body(p, len, from, to, 6, 1);
    case 7: return count_ones_body(p, len, from, to, 7, 1);
    default: return count_ones_body(p, len, from, to, b, 1);
  }
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
static pthread_once_t g_popcnt_once = PTHREAD_ONCE_INIT;
static int g_popcnt;
static void popcnt_init(void) {
  __builtin_cpu_init();
  g_popcnt = __builtin_cpu_supports("popcnt") ? 1 : 0;
}
#endif

static uint64_t count_all_ones(const uint8_t *p, size_t len, size_t from, size_t to, unsigned b) {
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_popcnt_once, popcnt_init);
  if (g_popcnt) return count_ones_hw(p, len, from, to, b);
#endif
  return count_ones_body(p, len, from, to, b, 0);
}

static inline uint64_t dict_at(const ba_if_reader_t *r, uint64_t ix) {
  if (ix < r->dict_fast) return ba_load_le64(r->dict + ix * r->w) & r->mask;
  uint64_t x = 0;
  for (unsigned q = 0; q < r->w; q++) x |= (uint64_t)r->dict[ix * r->w + q] << (8 * q);
  return x;
}

int ba_if_get(ba_if_reader_t *r, size_t row, uint64_t *out) {
  BA_RETURN_IF(row >= r->n, BA_ERR_INVALID);
  switch (r->method) {
    case XF_FOR:
      *out = (r->base + bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits) * r->scale) & r->mask;
      return BA_OK;
    case XF_DICT: {
      uint64_t ix = bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits);
      BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
      *out = dict_at(r, ix);
      return BA_OK;
    }
    case XF_DELTA: {
      /* Forward cursor: the running sum of the rows before `row`. */
      if (row < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      uint64_t acc = r->acc;
      for (size_t i = r->cur; i <= row; i++)
        acc = (acc + unzz(bit_get(r->vals, r->vals_len, (uint64_t)i * r->bits, r->bits), r->mask)) & r->mask;
      r->cur = row + 1;
      r->acc = acc;
      *out = (r->base + acc * r->scale) & r->mask;
      return BA_OK;
    }
    default: { /* XF_PDICT: forward cursor over the escapes before `row` */
      uint64_t esc = ((uint64_t)1 << r->bits) - 1;
      if (row < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      uint64_t e = r->acc + (row > r->cur ? count_all_ones(r->vals, r->vals_len, r->cur, row, r->bits) : 0);
      uint64_t ix = bit_get(r->vals, r->vals_len, (uint64_t)row * r->bits, r->bits);
      r->cur = row + 1;
      r->acc = e + (ix == esc);
      if (ix == esc) {
        BA_RETURN_IF(e >= r->ne, BA_ERR_CORRUPT);
        *out = (r->base + bit_get(r->exc, r->exc_len, e * r->eb, r->eb)) & r->mask;
      } else {
        BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
        *out = dict_at(r, ix);
      }
      return BA_OK;
    }
  }
}

/* Zigzag-decoded sum of the 8 b-bit values from bit 0 of p (b a constant
 * once inlined: every load offset and shift is one). */
static inline __attribute__((always_inline)) uint64_t zz_sum8(const uint8_t *p, unsigned b) {
  uint64_t bm = bmask(b), s = 0;
  for (unsigned j = 0; j < 8; j++) {
    uint64_t z = (ba_load_le64(p + ((j * b) >> 3)) >> ((j * b) & 7)) & bm;
    s += (z >> 1) ^ (0 - (z & 1));
  }
  return s;
}

static inline __attribute__((always_inline)) uint64_t zz_sum_run(const uint8_t *v, size_t i, size_t end, unsigned b) {
  uint64_t s0 = 0, s1 = 0;
  for (; i + 16 <= end; i += 16) {
    s0 += zz_sum8(v + (i / 8) * b, b);
    s1 += zz_sum8(v + (i / 8 + 1) * b, b);
  }
  if (i < end) s0 += zz_sum8(v + (i / 8) * b, b);
  return s0 + s1;
}

/* The sum over values [i, end) (multiples of 8) of a DELTA stream whose
 * values there are all readable with one 8-byte load (ba_if_get_rows). */
static uint64_t zz_sum_blocks(const uint8_t *v, size_t i, size_t end, unsigned b) {
  switch (b) {
#define ZZ_CASE(w) \
  case w: return zz_sum_run(v, i, end, w);
    ZZ_CASE(1) ZZ_CASE(2) ZZ_CASE(3) ZZ_CASE(4) ZZ_CASE(5) ZZ_CASE(6) ZZ_CASE(7) ZZ_CASE(8)
    ZZ_CASE(9) ZZ_CASE(10) ZZ_CASE(11) ZZ_CASE(12) ZZ_CASE(13) ZZ_CASE(14) ZZ_CASE(15) ZZ_CASE(16)
#undef ZZ_CASE
    default: return zz_sum_run(v, i, end, b);
  }
}

int ba_if_get_rows(ba_if_reader_t *r, const uint32_t *rows, size_t k, uint64_t *out) {
  if (k == 0) return BA_OK;
  BA_RETURN_IF(rows[k - 1] >= r->n, BA_ERR_INVALID);
  const uint8_t *v = r->vals;
  size_t vl = r->vals_len;
  unsigned b = r->bits;
  uint64_t m = r->mask;
  switch (r->method) {
    case XF_FOR:
      for (size_t j = 0; j < k; j++) out[j] = (r->base + bit_get(v, vl, (uint64_t)rows[j] * b, b) * r->scale) & m;
      return BA_OK;
    case XF_DICT:
      for (size_t j = 0; j < k; j++) {
        uint64_t ix = bit_get(v, vl, (uint64_t)rows[j] * b, b);
        BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
        out[j] = dict_at(r, ix);
      }
      return BA_OK;
    case XF_DELTA: {
      if (rows[0] < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      /* sums mod 2^64 agree with the masked sums in the field's width */
      uint64_t acc = r->acc;
      size_t i = r->cur;
      /* rows whose 8 bytes at the value's first byte lie in the stream are
       * read with one unchecked load each (b <= 57: one load holds the value) */
      size_t fast_end = (b && b <= 57 && vl >= 8) ? (size_t)(((uint64_t)(vl - 8) * 8) / b) + 1 : 0;
      uint64_t bm = bmask(b);
      for (size_t j = 0; j < k; j++) {
        size_t stop = (size_t)rows[j] + 1, fe = BA_MIN(stop, fast_end);
        if (fe >= i + 16) { /* to a multiple of 8, then 8 values at a time, shifts constant per width */
          for (; i % 8; i++) {
            uint64_t pos = (uint64_t)i * b, z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
            acc += (z >> 1) ^ (0 - (z & 1));
          }
          size_t e8 = fe & ~(size_t)7;
          acc += zz_sum_blocks(v, i, e8, b);
          i = e8;
        }
        if (i < fe) {
          uint64_t pos = (uint64_t)i * b, a2 = 0;
          for (; i + 1 < fe; i += 2, pos += 2 * b) {
            uint64_t z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
            uint64_t z2 = (ba_load_le64(v + ((pos + b) >> 3)) >> ((pos + b) & 7)) & bm;
            acc += (z >> 1) ^ (0 - (z & 1));
            a2 += (z2 >> 1) ^ (0 - (z2 & 1));
          }
          for (; i < fe; i++, pos += b) {
            uint64_t z = (ba_load_le64(v + (pos >> 3)) >> (pos & 7)) & bm;
            acc += (z >> 1) ^ (0 - (z & 1));
          }
          acc += a2;
        }
        for (; i < stop; i++) {
          uint64_t z = bit_get(v, vl, (uint64_t)i * b, b);
          acc += (z >> 1) ^ (0 - (z & 1));
        }
        out[j] = (r->base + acc * r->scale) & m;
      }
      r->cur = i;
      r->acc = acc & m;
      return BA_OK;
    }
    default: { /* XF_PDICT */
      uint64_t esc = ((uint64_t)1 << b) - 1;
      if (rows[0] < r->cur) {
        r->cur = 0;
        r->acc = 0;
      }
      uint64_t e = r->acc;
      size_t cur = r->cur;
      /* The escapes before a row are counted forward from the cursor, or
       * back from the field's end (ne in all): the largest gap in cur,
       * rows[0], .., rows[k-1], n is not walked. Rows from `back` on get
       * their escape counts (into out) walking back from n first. */
      size_t back = k, gap = r->n - rows[k - 1] - 1;
      if (rows[0] - cur > gap) back = 0, gap = rows[0] - cur;
      for (size_t j = 1; j < k; j++)
        if (rows[j] - rows[j - 1] - 1 > gap) back = j, gap = rows[j] - rows[j - 1] - 1;
      if (back < k) {
        uint64_t after = 0; /* escapes at rows [rows[j], n) */
        size_t hi = r->n;
        for (size_t j = k; j-- > back;) {
          after += count_all_ones(v, vl, rows[j], hi, b);
          hi = rows[j];
          BA_RETURN_IF(after > r->ne, BA_ERR_CORRUPT);
          out[j] = r->ne - after;
        }
      }
      for (size_t j = 0; j < k; j++) {
        size_t row = rows[j];
        if (j >= back) {
          e = out[j];
        } else if (row - cur <= 8) { /* a dense pick: the few values between compared one by one */
          for (size_t i = cur; i < row; i++) e += bit_get(v, vl, (uint64_t)i * b, b) == esc;
        } else if (row > cur) {
          e += count_all_ones(v, vl, cur, row, b);
        }
        uint64_t ix = bit_get(v, vl, (uint64_t)row * b, b);
        cur = row + 1;
        if (ix == esc) {
          BA_RETURN_IF(e >= r->ne, BA_ERR_CORRUPT);
          out[j] = (r->base + bit_get(r->exc, r->exc_len, e * r->eb, r->eb)) & m;
          e++;
        } else {
          BA_RETURN_IF(ix >= r->nd, BA_ERR_CORRUPT);
          out[j] = dict_at(r, ix);
        }
      }
      r->cur = cur;
      r->acc = e;
      return BA_OK;
    }
  }
}
