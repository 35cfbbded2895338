/* Private to the integer-field coder (intfield*.c) and its single-value
 * reader (intfield_get.c): the transform ids and bit helpers both use. */
#ifndef BA_ARCHIVE_INTFIELD_INT_H
#define BA_ARCHIVE_INTFIELD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

enum { XF_FOR = 0, XF_DELTA = 1, XF_DICT = 2, XF_PDICT = 3 };

static inline uint64_t wmask(unsigned w) { return w >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * w)) - 1; }
static inline uint64_t bmask(unsigned b) { return b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1; }
static inline uint64_t unzz(uint64_t z, uint64_t m) { return ((z >> 1) ^ (0 - (z & 1))) & m; }

/* Value at bit pos of p[0..len) (pos + b <= 8 * len) byte by byte: the
 * stream's last bytes, or values spanning more than 8 bytes. */
static __attribute__((noinline, unused)) uint64_t bit_get_slow(const uint8_t *p, uint64_t pos, unsigned b) {
  size_t byte = (size_t)(pos >> 3);
  unsigned off = (unsigned)(pos & 7);
  uint64_t v = 0;
  for (unsigned got = 0; got < b; byte++) {
    unsigned take = BA_MIN(8 - off, b - got);
    v |= (uint64_t)((p[byte] >> off) & ((1u << take) - 1)) << got;
    got += take;
    off = 0;
  }
  return v;
}

/* Value at bit pos of p[0..len) (pos + b <= 8 * len): one load when its 8
 * bytes lie in the stream (inlined everywhere; the rest out of line). */
static inline __attribute__((always_inline)) uint64_t bit_get(const uint8_t *p, size_t len, uint64_t pos, unsigned b) {
  if (!b) return 0;
  size_t byte = (size_t)(pos >> 3);
  unsigned off = (unsigned)(pos & 7);
  if (__builtin_expect(off + b <= 64 && len >= 8 && byte <= len - 8, 1)) return (ba_load_le64(p + byte) >> off) & bmask(b);
  return bit_get_slow(p, pos, b);
}

#endif
