/* WAH64 (spec §2): 63-bit groups, literal MSB 0, fill = 1|value|62-bit count. */
#include "codec/codec_internal.h"

#define WAH_W uint64_t
#define WAH_BITS 64
#define WAH_PUSH ba_wordvec_push64
#define WAH_PFX(x) wah64_##x
#include "codec/wah_tmpl.h"

const ba_codec_ops_t ba_wah64_ops = {BA_CODEC_WAH64, "wah64", 8, 63, wah64_put, wah64_end,
                                     wah64_dec_init, wah64_dec_next};
