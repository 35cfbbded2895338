/* WAH32 (spec §2): 31-bit groups, literal MSB 0, fill = 1|value|30-bit count. */
#include "codec/codec_internal.h"

#define WAH_W uint32_t
#define WAH_BITS 32
#define WAH_PUSH ba_wordvec_push32
#define WAH_PFX(x) wah32_##x
#include "codec/wah_tmpl.h"

const ba_codec_ops_t ba_wah32_ops = {BA_CODEC_WAH32, "wah32", 4, 31, wah32_put, wah32_end,
                                     wah32_dec_init, wah32_dec_next};
