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

/* pdict_best by a sort of every candidate (more than SORT_MAX of them: more
 * than 255 values seen over 255 times, row groups of 65,280 rows or more). */
static uint64_t pdict_best_sorted(enc_scratch_t *x, size_t nc, size_t n, unsigned w, unsigned exc_bits,
                                  unsigned *b_out, size_t *k_out) {
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

#define PD_BIG_COUNT 256u

/* PDICT's least cost in bits over widths b = 1..8, a dictionary of the
 * 2^b - 1 largest of nc counts, rows not covered as exceptions at exc_bits
 * each (reps_only: a count under 2 covers no row). The counts are taken in
 * descending order: first big[0..nbig) (sorted, as UINT64_MAX - count),
 * then the histogram of the counts below PD_BIG_COUNT, walked down. At the
 * least cost: *b_out, *k_out (dictionary size) and *kth_out (its smallest
 * count). */
static uint64_t pd_walk(const uint64_t *big, size_t nbig, const uint16_t *hist, size_t nc, size_t n, unsigned w,
                        unsigned exc_bits, int reps_only, unsigned *b_out, size_t *k_out, uint64_t *kth_out) {
  uint64_t best = UINT64_MAX, covered = 0, kth = 0;
  size_t k = 0, bi = 0;
  unsigned hc = PD_BIG_COUNT - 1; /* the histogram walked down from here */
  uint32_t hleft = hist[hc];
  for (unsigned b = 1; b <= 8; b++) {
    size_t kb = BA_MIN(((size_t)1 << b) - 1, nc);
    for (; k < kb; k++) { /* the next count in descending order */
      if (bi < nbig) {
        kth = UINT64_MAX - big[bi++];
      } else {
        while (!hleft) hleft = hist[--hc];
        hleft--;
        kth = hc;
      }
      covered += reps_only && kth < 2 ? 0 : kth;
    }
    uint64_t cost = (uint64_t)n * b + 8ull * w * kb + (n - covered) * exc_bits;
    if (cost < best) {
      best = cost;
      *kth_out = kth;
      *b_out = b;
      *k_out = kb;
    }
  }
  return best;
}

/* The PDICT width b (1..8) and dictionary size k that minimise n*b +
 * dictionary + exceptions (estimated at exc_bits each), from the nc
 * candidates in x->cand: the k most frequent (count descending, then value
 * ascending) end up in x->cand[0..k), in no order. The costs need only the
 * counts in descending order, taken from a histogram (counts of
 * PD_BIG_COUNT or more, at most n / PD_BIG_COUNT of them, sorted), not a
 * sort of every candidate; the order of values matters only among those
 * of the k-th count, sorted then. Returns the cost in bits (UINT64_MAX: not
 * worth trying). */
static uint64_t pdict_best(enc_scratch_t *x, size_t nc, size_t n, unsigned w, unsigned exc_bits, unsigned *b_out,
                           size_t *k_out) {
  if (!nc) return UINT64_MAX;
  if (nc > SORT_MAX) return pdict_best_sorted(x, nc, n, w, exc_bits, b_out, k_out);
  uint64_t big[SORT_MAX]; /* counts >= PD_BIG_COUNT, as UINT64_MAX - count (ascending: count descending) */
  uint16_t hist[PD_BIG_COUNT] = {0};
  size_t nbig = 0;
  for (size_t c = 0; c < nc; c++) {
    uint64_t k = x->cand[c][0];
    if (k < PD_BIG_COUNT) hist[k]++;
    else big[nbig++] = UINT64_MAX - k;
  }
  ba_if_sort_u64(big, nbig);
  uint64_t best_kth = 0;
  uint64_t best = pd_walk(big, nbig, hist, nc, n, w, exc_bits, 0, b_out, k_out, &best_kth);
  size_t kb = *k_out;
  if (kb < nc) { /* the kb most frequent to the front: counts above the kb-th's, then the smallest values of its count */
    uint64_t tie[SORT_MAX];
    size_t above = 0, nt = 0;
    for (size_t c = 0; c < nc; c++) {
      uint64_t cc = x->cand[c][0], cv = x->cand[c][1];
      if (cc > best_kth) {
        x->cand[above][0] = cc;
        x->cand[above][1] = cv;
        above++;
      } else if (cc == best_kth) {
        tie[nt++] = cv;
      }
    }
    ba_if_sort_u64(tie, nt);
    for (size_t c = above; c < kb; c++) {
      x->cand[c][0] = best_kth;
      x->cand[c][1] = tie[c - above];
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

/* pdict_plan's row i: its value's slot into ps[i] and the counts.
 * Without a branch on "seen before" (as random as the values: half of them
 * mispredicted, a third of the plan's time): every row stores its slot's
 * stamp, key and count and the slot at ins[*nd] and rep[*nrep], which only
 * a new value (*nd) or a second sight (*nrep) keeps; the probe's two tests
 * one branch, taken only on a collision. */
static inline __attribute__((always_inline)) void plan_row(enc_scratch_t *x, uint32_t cur, uint64_t val,
                                                           uint16_t *ps, size_t *nd, size_t *nrep) {
  size_t h = pd_hash(val);
  uint32_t seen;
  for (;;) {
    seen = x->stamp[h] == cur;
    uint32_t other = x->pkey[h] != val;
    __asm__("" : "+r"(other)); /* kept a value: one test of both, no branch on either */
    if (__builtin_expect(!(seen & other), 1)) break;
    h = (h + 1) & (PD_SLOTS - 1);
  }
  *ps = (uint16_t)h;
  const uint32_t c = (x->pcnt[h] & (0u - seen)) + 1; /* seen: one more; new: 1 */
  x->stamp[h] = cur;
  x->pkey[h] = val;
  x->pcnt[h] = c;
  x->ins[*nd] = (uint16_t)h;
  *nd += !seen;
  x->rep[*nrep] = (uint16_t)h;
  *nrep += c == 2;
}

/* The plan's table made ready for n rows (0; -1 without memory). */
static int plan_begin(enc_scratch_t *x, size_t n) {
  if (x->pscap < n) {
    void *q = x->ps;
    if (ba_grow(&q, &x->pscap, n, sizeof *x->ps) < 0) return -1;
    x->ps = q;
  }
  if (++x->cur == 0) { /* stamps wrapped: clear once every 2^32 uses */
    memset(x->stamp, 0, sizeof x->stamp);
    x->cur = 1;
  }
  return 0;
}

/* Rows [i, n) counted on (nd distinct and nrep repeated so far); 0, or -1
 * past PD_MAX distinct. */
static int plan_rows(enc_scratch_t *x, const uint64_t *v, size_t i, size_t n, size_t *nd, size_t *nrep) {
  const uint32_t cur = x->cur;
  size_t d = *nd, r = *nrep;
  if (n <= PD_MAX) { /* never more than PD_MAX distinct */
    for (; i < n; i++) plan_row(x, cur, v[i], &x->ps[i], &d, &r);
  } else {
    for (; i < n; i++) {
      plan_row(x, cur, v[i], &x->ps[i], &d, &r);
      if (d > PD_MAX) return -1; /* (ins and rep hold PD_MAX + 1) */
    }
  }
  *nd = d;
  *nrep = r;
  return 0;
}

/* The plan's choice from the counts. */
static uint64_t plan_choose(enc_scratch_t *x, size_t nd, size_t nrep, size_t n, unsigned w, unsigned exc_bits,
                            unsigned *b_out, size_t *k_out) {
  x->pnd = nd;
  if (nrep > 255) return ba_if_pdict_choose(x, x->ins, nd, x->pcnt, x->pkey, n, w, exc_bits, b_out, k_out);
  /* At most 255 values repeat (most rows distinct: times, addresses):
   * every one is a candidate, as pdict_choose would find after two passes
   * over all nd values (the sort's order is total, so theirs is too; the
   * order of rep matters to nothing chosen). */
  for (size_t r = 0; r < nrep; r++) {
    x->cand[r][0] = x->pcnt[x->rep[r]];
    x->cand[r][1] = x->pkey[x->rep[r]];
  }
  return pdict_best(x, nrep, n, w, exc_bits, b_out, k_out);
}

/* PDICT plan of a field with more than DICT_MAX distinct values: counts
 * them (gives up past PD_MAX distinct), each row's slot into x->ps, then
 * pdict_choose. */
uint64_t ba_if_pdict_plan(enc_scratch_t *x, const uint64_t *v, size_t n, unsigned w, unsigned exc_bits,
                           unsigned *b_out, size_t *k_out) {
  if (plan_begin(x, n) < 0) return UINT64_MAX;
  const uint32_t cur = x->cur;
  size_t nd = 0, nrep = 0, i = 0;
  /* All of the first 256 rows distinct (timestamps): give up early. */
  for (; i < n && i < 256; i++) plan_row(x, cur, v[i], &x->ps[i], &nd, &nrep);
  if (nd == 256) return UINT64_MAX;
  if (plan_rows(x, v, i, n, &nd, &nrep) < 0) return UINT64_MAX;
  return plan_choose(x, nd, nrep, n, w, exc_bits, b_out, k_out);
}

uint64_t ba_if_pdict_plan_from(enc_scratch_t *x, const uint64_t *v, size_t n, size_t i0, const uint64_t *dv,
                               const uint32_t *dc, const uint16_t *hs, const uint8_t *d_of, unsigned w,
                               unsigned exc_bits, unsigned *b_out, size_t *k_out) {
  _Static_assert(DICT_MAX == 256, "the dictionary pass gives up at the 257th value, the plan after 256 rows");
  /* The 257th distinct value at row i0 = 256: the first 256 rows all
   * distinct, where pdict_plan gives up. */
  if (i0 <= 256 || plan_begin(x, n) < 0) return UINT64_MAX;
  const uint32_t cur = x->cur;
  /* The DICT_MAX values first, in their first-seen order (ins: as
   * pdict_plan's), with their counts; then each counted row's slot. */
  uint16_t slot[DICT_MAX];
  size_t nd = 0, nrep = 0;
  for (size_t d = 0; d < DICT_MAX; d++) {
    size_t h = pd_find(x, dv[d]); /* not in the table: distinct */
    x->stamp[h] = cur;
    x->pkey[h] = dv[d];
    x->pcnt[h] = dc[d];
    x->ins[nd++] = (uint16_t)h;
    x->rep[nrep] = (uint16_t)h;
    nrep += dc[d] >= 2;
    slot[d] = (uint16_t)h;
  }
  for (size_t i = 0; i < i0; i++) x->ps[i] = slot[d_of[hs[i]]];
  if (plan_rows(x, v, i0, n, &nd, &nrep) < 0) return UINT64_MAX;
  return plan_choose(x, nd, nrep, n, w, exc_bits, b_out, k_out);
}

/* The k most frequent values of the plan (x->cand), ascending, into dict. */
void ba_if_pdict_dict(const enc_scratch_t *x, size_t k, uint64_t *dict) {
  for (size_t d = 0; d < k; d++) dict[d] = x->cand[d][1];
  ba_if_sort_u64(dict, k); /* k <= 255 */
}

/* pdict_write's rows: each row's code (tab[rs[i]]: its b bits, bit 8 set
 * for an exception) packed, 64 / b rows a step put by one bitw_put; without
 * a branch on "exception" (as random as the values): the exceptions' values
 * move to the front of v (ne <= i: v[i] is read first). Returns how many. */
static inline __attribute__((always_inline)) size_t pd_rows(uint64_t *v, size_t n, const unsigned b,
                                                            const uint16_t *rs, const uint32_t *tab, bitw_t *bw) {
  const unsigned g = 64 / b;
  size_t i = 0, ne = 0;
  for (; i + g <= n; i += g) {
    uint64_t acc = 0;
    for (unsigned j = 0; j < g; j++) {
      uint32_t c = tab[rs[i + j]]; /* the row's slot from the counting pass, which saw every row */
      acc |= (uint64_t)(c & 0xffu) << (j * b);
      v[ne] = v[i + j];
      ne += c >> 8;
    }
    bitw_put(bw, acc, g * b);
  }
  for (; i < n; i++) {
    uint32_t c = tab[rs[i]];
    bitw_put(bw, c & 0xffu, b);
    v[ne] = v[i];
    ne += c >> 8;
  }
  return ne;
}

/* Writes a PDICT field of dictionary dict[0..k) at out. Every row's slot
 * rs[i] is one of ins[0..nd), the slots of the field's distinct values
 * (key[ins[d]]); tab[ins[d]] is that value's dictionary index + 1, 0 for an
 * exception (tab is rewritten). Returns its bytes. v is clobbered (the
 * exceptions gathered at its front). */
size_t ba_if_pdict_write(uint64_t *v, size_t n, unsigned w, unsigned b, const uint64_t *dict, size_t k,
                         const uint16_t *rs, uint32_t *tab, const uint16_t *ins, size_t nd, const uint64_t *key,
                         uint8_t *out) {
  uint8_t *p = out;
  memset(p, 0, BA_COL2_FIELD_HDR); /* emin, the exceptions and their width: after the rows */
  p[0] = XF_PDICT;
  p[1] = (uint8_t)b;
  ba_store_le32(p + 4, (uint32_t)k);
  p += BA_COL2_FIELD_HDR;
  for (size_t d = 0; d < k; d++)
    for (unsigned q = 0; q < w; q++) *p++ = (uint8_t)(dict[d] >> (8 * q));
  /* Each distinct value's code, once: its dictionary index, or the escape
   * (all b bits set) with bit 8 set for an exception; the exceptions' range
   * from the distinct values, not the rows (the same: each occurs in a row). */
  const uint32_t esc = (UINT32_C(1) << b) - 1;
  uint64_t emin = UINT64_MAX, emax = 0;
  for (size_t d = 0; d < nd; d++) {
    uint32_t ix = tab[ins[d]];
    tab[ins[d]] = ix ? ix - 1 : esc | 0x100u;
    if (!ix) {
      uint64_t x = key[ins[d]];
      emin = x < emin ? x : emin;
      emax = x > emax ? x : emax;
    }
  }
  bitw_t bw = {p, 0, 0};
  size_t ne;
  switch (b) { /* b a constant in each: the steps unrolled */
    case 1: ne = pd_rows(v, n, 1, rs, tab, &bw); break;
    case 2: ne = pd_rows(v, n, 2, rs, tab, &bw); break;
    case 3: ne = pd_rows(v, n, 3, rs, tab, &bw); break;
    case 4: ne = pd_rows(v, n, 4, rs, tab, &bw); break;
    case 5: ne = pd_rows(v, n, 5, rs, tab, &bw); break;
    case 6: ne = pd_rows(v, n, 6, rs, tab, &bw); break;
    case 7: ne = pd_rows(v, n, 7, rs, tab, &bw); break;
    default: ne = pd_rows(v, n, 8, rs, tab, &bw); break;
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
  return ba_if_pdict_write(v, n, w, b, dict, k, x->ps, x->pcnt, x->ins, x->pnd, x->pkey, out);
}

/* PDICT cost in bits from the counts of the nd (<= DICT_MAX) distinct
 * values, exceptions at exc_bits each (an upper bound of what they take). */
uint64_t ba_if_pdict_estimate(const uint64_t *key, const uint8_t *used, const uint32_t *cnt, size_t nd, size_t n,
                               unsigned w, unsigned exc_bits) {
  (void)key;
  /* The counts in descending order, as pdict_best takes them: a histogram of
   * those below PD_BIG_COUNT, the larger ones (at most n / PD_BIG_COUNT)
   * sorted. */
  uint64_t big[DICT_MAX]; /* UINT64_MAX - count: ascending is count descending */
  uint16_t hist[PD_BIG_COUNT] = {0};
  size_t k = 0, nbig = 0;
  for (size_t h = 0; h < DICT_SLOTS && k < nd; h++)
    if (used[h]) {
      k++;
      if (cnt[h] < PD_BIG_COUNT) hist[cnt[h]]++;
      else big[nbig++] = UINT64_MAX - cnt[h];
    }
  ba_if_sort_u64(big, nbig);
  unsigned b;
  size_t kb;
  uint64_t kth;
  return pd_walk(big, nbig, hist, k, n, w, exc_bits, 1, &b, &kb, &kth);
}
