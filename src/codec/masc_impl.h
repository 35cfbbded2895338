/* MASC word format and decoder (specs/codecs.md §5.3), private to the MASC
 * files: masc.c (coder, validation, count), masc_kernels.c (run-merge pair
 * kernels) and masc_qt_table.c (query table, range selection); inlined in
 * each. See masc.c for the layout. */
#ifndef BA_CODEC_MASC_IMPL_H
#define BA_CODEC_MASC_IMPL_H

#include <string.h>

#include "codec/codec.h"
#include "common/common.h"

#define MS_MAXRUN ((((uint64_t)1 << 20) - 1) * 31 + 30) /* 32,505,855 bits (D-12) */
#define MS_MAXCARRY 30
#define MS_BIT31 0x80000000u
#define MS_BIT30 0x40000000u
#define MS_CARRIER_SHIFT 25
#define MS_FIELD_29_25 0x3E000000u
#define MS_COUNT_MASK 0x01FFFFFFu /* counter and additional */

/* Decoder state (ba_dec_t.s): s[0] = ones carried by the last word, not yet returned. */
static inline void ms_dec_init(ba_dec_t *d, const void *words, size_t nwords) {
  memset(d, 0, sizeof *d);
  d->words = words;
  d->nwords = nwords;
}

/* Decodes one MASC word (qt = 1 for MASC-QT): run value *v and length *len,
 * then *carry ones (0 if none). BA_ERR_CORRUPT per the spec's §5.3 rules. */
static inline int ba_masc_word(uint32_t x, int qt, int *v, uint64_t *len, uint32_t *carry) {
  uint32_t add = x & 31u;
  uint64_t l = (uint64_t)((x & MS_COUNT_MASK) >> 5) * 31 + add;
  BA_RETURN_IF(add == 31 || l == 0, BA_ERR_CORRUPT);
  uint32_t c = (x & MS_FIELD_29_25) >> MS_CARRIER_SHIFT;
  *len = l;
  if (x & MS_BIT31) { /* 1-fill: bit 30 is the MASC-QT type tag (D-11) */
    BA_RETURN_IF(c != 0, BA_ERR_CORRUPT);
    BA_RETURN_IF(((x & MS_BIT30) != 0) != (qt != 0), BA_ERR_CORRUPT);
    *v = 1;
    *carry = 0;
    return BA_OK;
  }
  if (x & MS_BIT30)
    BA_RETURN_IF(c == 0 || c > MS_MAXCARRY, BA_ERR_CORRUPT);
  else
    BA_RETURN_IF(c != 0, BA_ERR_CORRUPT);
  *v = 0;
  *carry = c;
  return BA_OK;
}

static inline int ms_dec_next(ba_dec_t *d, ba_tok_t *tok, int qt) {
  tok->lit = 0;
  if (d->s[0]) {
    tok->kind = BA_TOK_FILL1;
    tok->n = d->s[0];
    d->s[0] = 0;
    return 1;
  }
  if (d->pos >= d->nwords) return 0;
  int v;
  uint32_t c;
  BA_FORWARD(ba_masc_word(((const uint32_t *)d->words)[d->pos++], qt, &v, &tok->n, &c));
  tok->kind = v ? BA_TOK_FILL1 : BA_TOK_FILL0;
  d->s[0] = c;
  return 1;
}

/* masc_kernels.c: the run-merge pair kernels (ops 0..3) of every pair of
 * bit-run operands (MASC, MASC-QT), any output codec. */
extern const ba_pair_kernel_fn ba_masc_kernels[4];

#endif
