/* Folding rare values into bins (doc/format.md §7.4): a value whose bitmap
 * holds fewer than min_rows rows loses its exact bitmap, and its rows join
 * the bitmap of its bin (bin_of(value), non-decreasing in value). An attribute of many rare values
 * (ephemeral ports) then costs a few dense bin bitmaps instead of one
 * sparse bitmap and one directory entry per value; a query for a folded
 * value takes its bin and checks the column for the candidate rows.
 *
 * PLWAH bins (the store's codec) are ORed here, group by group: each rare
 * bitmap's words decoded into a table of the segment's 31-row groups
 * (literal, fill, piggybacked position), then the table's nonzero groups
 * appended (ba_bitmap_append_groups) where ba_bitmap_or_many cleared, ORed
 * into and encoded a plain bitset of every row per bin. The same bits
 * through the codec's canonical encoder, so the same words (test_online's
 * test_fold_counts compares with ba_bitmap_or_many). */
#include <string.h>

#include "codec/plwah_words.h"
#include "common/common.h"
#include "index/index.h"

#define OR_BUF 64 /* groups per append_groups call */

/* The OR of k PLWAH bitmaps of nrows rows into *out; acc: ngroups =
 * ceil(nrows / 31) entries of scratch. BA_ERR_UNSUPPORTED: not for this
 * path (another codec or row count), the caller ORs them as before. */
static int or_plwah(const ba_bitmap_t *const *bms, size_t k, uint64_t nrows, uint32_t *acc, uint64_t ngroups,
                    ba_bitmap_t **out) {
  for (size_t j = 0; j < k; j++)
    if (ba_bitmap_codec(bms[j]) != BA_CODEC_PLWAH || ba_bitmap_rows(bms[j]) != nrows) return BA_ERR_UNSUPPORTED;
  memset(acc, 0, (size_t)ngroups * sizeof *acc);
  for (size_t j = 0; j < k; j++) BA_FORWARD(ba_idx_fold_or(acc, ngroups, bms[j]));
  return ba_idx_fold_encode(acc, nrows, out);
}

int ba_idx_fold_or(uint32_t *acc, uint64_t ngroups, const ba_bitmap_t *bm) {
  size_t nw = 0;
  const uint32_t *w = ba_bitmap_words(bm, &nw);
  uint64_t g = 0;
  for (size_t i = 0; i < nw; i++) {
    uint32_t x = w[i];
    if (!(x >> 31)) { /* a literal group */
      BA_RETURN_IF(g >= ngroups, BA_ERR_CORRUPT);
      acc[g++] |= x;
      continue;
    }
    uint64_t c = x & PL_MAXCNT;
    unsigned p = (x >> PL_POS_SHIFT) & 31u, one = (x & PL_VAL) != 0;
    BA_RETURN_IF(c > ngroups - g || (p && c == ngroups - g), BA_ERR_CORRUPT);
    if (one)
      for (uint64_t t = 0; t < c; t++) acc[g + t] = PL_LITMASK;
    g += c;
    if (p) { /* the piggybacked group: one row set (0-fill) or clear (1-fill) */
      uint32_t bit = 1u << (31 - p);
      acc[g++] |= one ? PL_LITMASK ^ bit : bit;
    }
  }
  return BA_OK;
}

/* The PLWAH bitmap of nrows rows whose 31-row groups are acc[0..ceil(nrows
 * / 31)) (MSB-first literals, rows past nrows clear), by the appends
 * ba_bitmap_or_many's encoder gets; acc is left zeroed when it succeeds. */
int ba_idx_fold_encode(uint32_t *acc, uint64_t nrows, ba_bitmap_t **out) {
  const uint64_t ngroups = nrows / PL_G + (nrows % PL_G != 0);
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bitmap_create(BA_CODEC_PLWAH, &bm));
  uint32_t gaps[OR_BUF];
  uint64_t lits[OR_BUF];
  size_t nb = 0;
  int rc = BA_OK;
  const uint64_t full = nrows / PL_G; /* whole groups; a partial last one after them */
  uint64_t done = 0;
  for (uint64_t g = 0; g < full && rc == BA_OK; g++) {
    if (!acc[g]) continue;
    gaps[nb] = (uint32_t)(g - done); /* < 2^32: nrows <= UINT32_MAX * 31 (the caller checks) */
    lits[nb++] = acc[g];
    acc[g] = 0;
    done = g + 1;
    if (nb == OR_BUF) {
      rc = ba_bitmap_append_groups(bm, gaps, lits, nb);
      nb = 0;
    }
  }
  if (rc == BA_OK && nb) rc = ba_bitmap_append_groups(bm, gaps, lits, nb);
  if (rc == BA_OK && full < ngroups && acc[full]) { /* the partial last group, cut to the rows */
    unsigned keep = (unsigned)(nrows - full * PL_G);
    if (full > done) rc = ba_bitmap_append_run(bm, 0, (full - done) * PL_G);
    if (rc == BA_OK) rc = ba_bitmap_append_bits(bm, acc[full] >> (PL_G - keep), keep);
  }
  if (full < ngroups) acc[full] = 0;
  if (rc == BA_OK) rc = ba_bitmap_finish(bm, nrows);
  if (rc < 0) {
    ba_bitmap_free(bm);
    return rc;
  }
  *out = bm;
  return BA_OK;
}

int ba_idx_fold(ba_idx_attr_t *exact, ba_idx_attr_t *bins, uint64_t min_rows, ba_idx_bin_fn bin_of,
                ba_codec_t codec) {
  BA_RETURN_IF(!exact || !bins || bins->n != 0 || !bin_of, BA_ERR_INVALID);
  if (exact->n == 0 || min_rows < 2) return BA_OK;
  uint8_t *rare = ba_calloc(exact->n, 1);
  BA_RETURN_IF(!rare, BA_ERR_NOMEM);
  int rc = BA_OK;
  size_t nrare = 0, nbins = 0;
  uint64_t last_bin = UINT64_MAX; /* values ascend, so bins do */
  for (size_t i = 0; i < exact->n && rc == BA_OK; i++) {
    uint64_t cnt = 0;
    if (exact->counts) cnt = exact->counts[i]; /* the builder's (online_dense.c) */
    else rc = ba_bitmap_count(exact->bms[i], &cnt);
    if (rc == BA_OK && cnt < min_rows) {
      rare[i] = 1;
      nrare++;
      if (bin_of(exact->values[i]) != last_bin) nbins++;
      last_bin = bin_of(exact->values[i]);
    }
  }
  if (rc < 0 || nrare == 0) goto done;
  bins->values = ba_malloc(nbins * sizeof *bins->values);
  bins->bms = ba_calloc(nbins, sizeof *bins->bms);
  const ba_bitmap_t **ops = ba_malloc(nrare * sizeof *ops);
  /* PLWAH: a table of the segment's groups for or_plwah */
  const uint64_t nrows = ba_bitmap_rows(exact->bms[0]), ngroups = nrows / PL_G + (nrows % PL_G != 0);
  uint32_t *acc = codec == BA_CODEC_PLWAH && nrows && nrows / PL_G <= UINT32_MAX && ngroups <= SIZE_MAX / sizeof *acc
                      ? ba_malloc((size_t)ngroups * sizeof *acc)
                      : NULL;
  if (!bins->values || !bins->bms || !ops) {
    ba_free(ops);
    ba_free(acc);
    rc = BA_ERR_NOMEM;
    goto done;
  }
  for (size_t i = 0; i < exact->n && rc == BA_OK;) {
    if (!rare[i]) {
      i++;
      continue;
    }
    uint32_t b = bin_of(exact->values[i]);
    size_t k = 0;
    for (; i < exact->n && bin_of(exact->values[i]) == b; i++)
      if (rare[i]) ops[k++] = exact->bms[i];
    rc = acc ? or_plwah(ops, k, nrows, acc, ngroups, &bins->bms[bins->n]) : BA_ERR_UNSUPPORTED;
    if (rc == BA_ERR_UNSUPPORTED) rc = ba_bitmap_or_many(ops, k, codec, &bins->bms[bins->n]);
    if (rc == BA_OK) bins->values[bins->n++] = b;
  }
  ba_free(ops);
  ba_free(acc);
  if (rc < 0) goto done;
  /* Drop the folded values from the exact attribute. */
  size_t w = 0;
  for (size_t i = 0; i < exact->n; i++) {
    if (rare[i]) {
      ba_bitmap_free(exact->bms[i]);
      continue;
    }
    exact->values[w] = exact->values[i];
    if (exact->counts) exact->counts[w] = exact->counts[i];
    exact->bms[w++] = exact->bms[i];
  }
  exact->n = w;
done:
  if (rc < 0) ba_idx_attr_clear(bins);
  ba_free(rare);
  return rc;
}
