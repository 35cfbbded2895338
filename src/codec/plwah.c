/* PLWAH, 32-bit, one piggybacked position (spec §3, D-7, D-8).
 * literal: 0 | 31-bit group.  fill: 1 | value | p (5 bits) | count (25 bits).
 * p = 0: no piggyback; p in 1..31: after the count groups comes one literal
 * group that differs from the fill value in payload bit 31 - p only (a 0-fill
 * carries a single 1, a 1-fill a single 0).
 *
 * Encoder state: s[0] = open fill value + 1 (0 = none), s[1] = its count.
 * The open fill is written when the next token shows whether it can absorb a
 * literal: only the last word of a split run gets a position. */

#include "codec/plwah_impl.h"

const ba_codec_ops_t ba_plwah_ops = {BA_CODEC_PLWAH, "plwah", 4, 31, plwah_put, plwah_end,
                                     plwah_dec_init, plwah_dec_next};
