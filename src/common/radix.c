/* Stable LSD radix sort of elements made of 64-bit words (common.h,
 * ba_radix_sort): the one sort of reindex --cluster's ranks and keys
 * (archive/cluster.c) and of a clustered segment's records by first time
 * (query/order.c). */
#include <string.h>

#include "common/common.h"

#define RBITS 11
#define RBUCKETS (1u << RBITS)

/* One element of `words` words from s to d (a constant in each caller
 * below, so the copy is a few moves). */
static inline void copy_elem(uint64_t *d, const uint64_t *s, unsigned words) {
  for (unsigned k = 0; k < words; k++) d[k] = s[k];
}

static inline void radix(uint64_t *a, uint64_t *tmp, size_t n, unsigned words, unsigned w, unsigned lo,
                         unsigned hi) {
  size_t cnt[RBUCKETS];
  uint64_t *src = a, *dst = tmp;
  for (unsigned b = lo; b < hi; b += RBITS) {
    unsigned width = hi - b < RBITS ? hi - b : RBITS;
    uint64_t mask = (1ull << width) - 1;
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++) cnt[(src[i * words + w] >> b) & mask]++;
    if (cnt[(src[w] >> b) & mask] == n) continue; /* every element has this digit */
    size_t sum = 0;
    for (unsigned d = 0; d < RBUCKETS; d++) {
      size_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) copy_elem(dst + words * cnt[(src[i * words + w] >> b) & mask]++, src + i * words, words);
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * words * sizeof *a);
}

void ba_radix_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned words, unsigned w, unsigned lo, unsigned hi) {
  if (n == 0 || w >= words || lo >= hi || hi > 64) return;
  switch (words) {
  case 1: radix(a, tmp, n, 1, w, lo, hi); break;
  case 2: radix(a, tmp, n, 2, w, lo, hi); break;
  case 3: radix(a, tmp, n, 3, w, lo, hi); break;
  default: radix(a, tmp, n, words, w, lo, hi); break;
  }
}
