/* WAH32 (spec §2): 31-bit groups, literal MSB 0, fill = 1|value|30-bit count.
 * Coder: wah_tmpl.h. Here: validation, count and the fast paths over it. */
#include "codec/kernel.h"

#define WAH_W uint32_t
#define WAH_BITS 32
#define WAH_PUSH ba_wordvec_push32
#define WAH_PFX(x) wah32_##x
#include "codec/wah_tmpl.h"

/* The word loop of validate.c's rules (see the note there): a fill covers
 * its count of groups (0 is bad), a literal one group. */
static int wah32_validate(const void *words, size_t n, uint64_t nrows) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t expect = nrows / 31 + (nrows % 31 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], m = 0u - (x >> 31); /* all ones for a fill */
    uint32_t k = (x & 0x3FFFFFFFu & m) | (1u & ~m);
    bad |= (k == 0);
    total += k;
  }
  return ba_bm_validate_end(&ba_wah32_ops, w, n, nrows, expect, total, bad);
}

static int wah32_count(const void *words, size_t n, uint64_t *out) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i];
    if (!(x >> 31))
      c += ba_bm_popcnt(x);
    else if (x & 0x40000000u)
      c += (uint64_t)(x & 0x3FFFFFFFu) * 31;
  }
  *out = c;
  return 1;
}

BA_GROUP_KERNELS(wah32, wah32_dec_next, wah32_put, OPK_W32)
BA_BITSET_PATHS(wah32, wah32_dec_next, wah32_put)

const ba_codec_ops_t ba_wah32_ops = {
  .id = BA_CODEC_WAH32,
  .name = "wah32",
  .word_bytes = 4,
  .group_bits = 31,
  .put = wah32_put,
  .end = wah32_end,
  .dec_init = wah32_dec_init,
  .dec_next = wah32_dec_next,
  .validate = wah32_validate,
  .count = wah32_count,
  .kernels = wah32_kernels,
  .bitset_or = wah32_bitset_or,
  .bitset_put = wah32_bitset_put,
  .put_groups = wah32_put_groups,
};
