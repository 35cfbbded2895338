/* Folding rare values into bins (doc/format.md §7.4): a value whose bitmap
 * holds fewer than min_rows rows loses its exact bitmap, and its rows join
 * the bitmap of its bin (bin_of(value), non-decreasing in value). An attribute of many rare values
 * (ephemeral ports) then costs a few dense bin bitmaps instead of one
 * sparse bitmap and one directory entry per value; a query for a folded
 * value takes its bin and checks the column for the candidate rows. */
#include <string.h>

#include "common/common.h"
#include "index/index.h"

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
  if (!bins->values || !bins->bms || !ops) {
    ba_free(ops);
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
    rc = ba_bitmap_or_many(ops, k, codec, &bins->bms[bins->n]);
    if (rc == BA_OK) bins->values[bins->n++] = b;
  }
  ba_free(ops);
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
