/* PDICT fields of the integer-field encoder (doc/format.md §7.1): a
 * dictionary of the frequent values, the other rows as exceptions. Counts
 * the distinct values (pdict_plan), chooses the width and dictionary
 * (pdict_choose, pdict_best) and writes the field (pdict_write). Called by
 * encode2_int (intfield.c). */
#include <stdlib.h>
#include <string.h>

#include "archive/intfield_enc.h"

/* The sorts below take at most SORT_MAX entries (dictionaries and their
 * candidates): bottom-up merge sorts with a merge step without a branch on
 * the comparison (a conditional move), inline, where qsort's indirect
 * comparisons and mispredicted branches cost ~3 % of a group's encoding.
 * Ascending u64 keys; the order of equal keys is immaterial to callers. */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

void ba_if_sort_u64(uint64_t *a, size_t n) {
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
uint64_t ba_if_pdict_choose(enc_scratch_t *x, const uint16_t *ins, size_t nd, const uint32_t *cnt,
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
uint64_t ba_if_pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
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
  if (nrep > 255) return ba_if_pdict_choose(x, x->ins, nd, x->pcnt, x->pkey, n, w, exc_bits, b_out, k_out);
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
void ba_if_pdict_dict(const enc_scratch_t *x, size_t k, uint64_t *dict) {
  for (size_t d = 0; d < k; d++) dict[d] = x->cand[d][1];
  ba_if_sort_u64(dict, k); /* k <= 255 */
}

/* Writes a PDICT field of dictionary dict[0..k) at out; row i's index + 1
 * is (uint8_t)tab[rs[i]] (0: an exception). Returns its bytes. v is
 * clobbered (the exceptions gathered at its front). */
size_t ba_if_pdict_write(uint64_t *v, size_t n, unsigned w, unsigned b, const uint64_t *dict, size_t k,
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
size_t ba_if_pdict_write_plan(enc_scratch_t *x, uint64_t *v, size_t n, unsigned w, unsigned b, size_t k,
                               uint8_t *out) {
  uint64_t dict[256];
  ba_if_pdict_dict(x, k, dict);
  /* pcnt now: index + 1 of dictionary values, 0 for the others. */
  for (size_t d = 0; d < x->pnd; d++) x->pcnt[x->ins[d]] = 0;
  for (size_t d = 0; d < k; d++) x->pcnt[pd_find(x, dict[d])] = (uint32_t)d + 1;
  return ba_if_pdict_write(v, n, w, b, dict, k, x->ps, x->pcnt, out);
}

/* PDICT cost in bits from the counts of the nd (<= DICT_MAX) distinct
 * values, exceptions at exc_bits each (an upper bound of what they take). */
uint64_t ba_if_pdict_estimate(const uint64_t *key, const uint8_t *used, const uint32_t *cnt, size_t nd, size_t n,
                               unsigned w, unsigned exc_bits) {
  (void)key;
  uint64_t c[DICT_MAX]; /* counts, descending: sorted as UINT32_MAX - count ascending */
  size_t k = 0;
  for (size_t h = 0; h < DICT_SLOTS && k < nd; h++)
    if (used[h]) c[k++] = UINT32_MAX - cnt[h];
  ba_if_sort_u64(c, k);
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
