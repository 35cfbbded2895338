/* COMPAX (NET-FLi §4.2.2), bitarc layout D-9, canonical encoder D-10.
 * Layout and rules: specs/codecs.md §4 (doc/codecs.md in the tree).
 *
 *   [L]   1 | 31-bit group                      (all-ones groups are literals)
 *   [0F]  000 | count of zero groups (1..2^29-1)
 *   [LFL] 001 | q1:2 | q2:2 | 0 | d1:8 | F:8 | d2:8
 *   [FLF] 010 | q:2 | 000 | F1:8 | d:8 | F2:8
 *   011   reserved (invalid)
 *
 * Encoder: groups become tokens ([L], or an open [0F] that zero groups extend).
 * Closed tokens go through a three-token window; `L F L` and `F L F` that
 * qualify are replaced by one word, which never takes part in a later merge.
 * This is NET-FLi's look-back of two words: at most two closed tokens wait in
 * the state until the third decides. */
#include "codec/compax_impl.h"

const ba_codec_ops_t ba_compax_ops = {
  .id = BA_CODEC_COMPAX,
  .name = "compax",
  .word_bytes = 4,
  .group_bits = 31,
  .put = cx_put,
  .end = cx_end,
  .dec_init = cx_dec_init,
  .dec_next = cx_dec_next,
};
