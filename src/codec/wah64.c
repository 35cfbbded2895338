/* WAH64 (spec §2): 63-bit groups, literal MSB 0, fill = 1|value|62-bit count.
 * Coder: wah_tmpl.h. Here: validation, count and the fast paths over it. */
#include "codec/kernel.h"

#define WAH_W uint64_t
#define WAH_BITS 64
#define WAH_PUSH ba_wordvec_push64
#define WAH_PFX(x) wah64_##x
#include "codec/wah_tmpl.h"

/* The word loop of validate.c's rules (see the note there). A fill adds up
 * to 2^62 groups: the total cannot wrap before it first passes expect (k,
 * expect < 2^62), and `bad` is sticky from there on. */
static int wah64_validate(const void *words, size_t n, uint64_t nrows) {
  const uint64_t *w = (const uint64_t *)words;
  uint64_t expect = nrows / 63 + (nrows % 63 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = w[i], m = 0u - (x >> 63);
    uint64_t k = (x & ((UINT64_C(1) << 62) - 1) & m) | (1u & ~m);
    bad |= (k == 0);
    total += k; /* cannot wrap before it first passes expect: k, expect < 2^62 */
    bad |= (total > expect);
  }
  return ba_bm_validate_end(&ba_wah64_ops, w, n, nrows, expect, total, bad);
}

static int wah64_count(const void *words, size_t n, uint64_t *out) {
  const uint64_t *w = (const uint64_t *)words;
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = w[i];
    if (!(x >> 63))
      c += ba_bm_popcnt(x);
    else if (x & (UINT64_C(1) << 62))
      c += (x & ((UINT64_C(1) << 62) - 1)) * 63;
  }
  *out = c;
  return 1;
}

BA_GROUP_KERNELS(wah64, wah64_dec_next, wah64_put, OPK_W64)
BA_BITSET_PATHS(wah64, wah64_dec_next, wah64_put)

const ba_codec_ops_t ba_wah64_ops = {
  .id = BA_CODEC_WAH64,
  .name = "wah64",
  .word_bytes = 8,
  .group_bits = 63,
  .put = wah64_put,
  .end = wah64_end,
  .dec_init = wah64_dec_init,
  .dec_next = wah64_dec_next,
  .validate = wah64_validate,
  .count = wah64_count,
  .kernels = wah64_kernels,
  .bitset_or = wah64_bitset_or,
  .bitset_put = wah64_bitset_put,
  .put_groups = wah64_put_groups,
};
