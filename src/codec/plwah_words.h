/* PLWAH's 32-bit word layout (spec §3, D-7, D-8), for the codec and for the
 * index builders that write or read PLWAH words themselves (online_small.c,
 * fold.c). literal: 0 | 31-bit group.  fill: 1 | value | p (5 bits) |
 * count (25 bits); p in 1..31: one more group that differs from the fill
 * value in payload bit 31 - p only. */
#ifndef BA_CODEC_PLWAH_WORDS_H
#define BA_CODEC_PLWAH_WORDS_H

#define PL_G 31u /* rows per group */
#define PL_LITMASK 0x7FFFFFFFu
#define PL_FILL 0x80000000u
#define PL_VAL 0x40000000u
#define PL_MAXCNT 0x01FFFFFFu /* 2^25 - 1 */
#define PL_POS_SHIFT 25

#endif
