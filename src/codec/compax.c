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
#include "codec/kernel.h"

#define CX_LIT_FLAG 0x80000000u
#define CX_PAYLOAD 0x7FFFFFFFu
#define CX_FILL_MAX ((1u << 29) - 1)
#define CX_HDR_LFL 1u
#define CX_HDR_FLF 2u

/* Encoder state (ba_enc_state_t.s): */
#define CX_S_OPEN 0 /* count of the open [0F], 0 = none */
#define CX_S_NPEND 1 /* closed, un-merged tokens waiting (0..2) */
#define CX_S_PEND 2 /* s[2], s[3]: their [L]/[0F] words, oldest first */

/* 1 if the 31-bit payload `x` has exactly one non-zero byte; its position and value. */
static inline int cx_single_dirty(uint32_t x, uint32_t *q, uint32_t *d) {
  int found = 0;
  for (uint32_t i = 0; i < 4; i++) {
    uint32_t b = (x >> (8 * i)) & 0xFFu;
    if (b) {
      if (found) return 0;
      found = 1;
      *q = i;
      *d = b;
    }
  }
  return found;
}

static inline int cx_is_lit(uint32_t w) { return (w & CX_LIT_FLAG) != 0; }

/* Tries to merge three closed token words into an [LFL] or [FLF]. */
static inline int cx_try_merge(uint32_t a, uint32_t b, uint32_t c, uint32_t *out) {
  uint32_t q1, d1, q2, d2;
  if (cx_is_lit(a) && !cx_is_lit(b) && cx_is_lit(c)) {
    if (b > 255 || !cx_single_dirty(a & CX_PAYLOAD, &q1, &d1) ||
        !cx_single_dirty(c & CX_PAYLOAD, &q2, &d2))
      return 0;
    *out = (CX_HDR_LFL << 29) | (q1 << 27) | (q2 << 25) | (d1 << 16) | (b << 8) | d2;
    return 1;
  }
  if (!cx_is_lit(a) && cx_is_lit(b) && !cx_is_lit(c)) {
    if (a > 255 || c > 255 || !cx_single_dirty(b & CX_PAYLOAD, &q1, &d1)) return 0;
    *out = (CX_HDR_FLF << 29) | (q1 << 27) | (a << 16) | (d1 << 8) | c;
    return 1;
  }
  return 0;
}

/* A token ([L] or [0F] word) is closed: window of three, greedy merge. */
static inline int cx_close(ba_wordvec_t *out, ba_enc_state_t *st, uint32_t word) {
  uint64_t *s = st->s;
  if (s[CX_S_NPEND] < 2) {
    s[CX_S_PEND + s[CX_S_NPEND]] = word;
    s[CX_S_NPEND]++;
    return BA_OK;
  }
  uint32_t a = (uint32_t)s[CX_S_PEND], b = (uint32_t)s[CX_S_PEND + 1], m;
  if (cx_try_merge(a, b, word, &m)) {
    s[CX_S_NPEND] = 0;
    return ba_wordvec_push32(out, m);
  }
  BA_FORWARD(ba_wordvec_push32(out, a));
  s[CX_S_PEND] = b;
  s[CX_S_PEND + 1] = word;
  return BA_OK;
}

static inline int cx_close_open_fill(ba_wordvec_t *out, ba_enc_state_t *st) {
  uint64_t f = st->s[CX_S_OPEN];
  if (f == 0) return BA_OK;
  st->s[CX_S_OPEN] = 0;
  return cx_close(out, st, (uint32_t)f);
}

static inline int cx_put_zero_groups(ba_wordvec_t *out, ba_enc_state_t *st, uint64_t n) {
  while (n > 0) {
    uint64_t room = CX_FILL_MAX - st->s[CX_S_OPEN];
    if (room == 0) { /* saturated: close it, a new [0F] starts */
      BA_FORWARD(cx_close_open_fill(out, st));
      room = CX_FILL_MAX;
    }
    uint64_t take = BA_MIN(n, room);
    st->s[CX_S_OPEN] += take;
    n -= take;
  }
  return BA_OK;
}

static inline int cx_put_literal(ba_wordvec_t *out, ba_enc_state_t *st, uint32_t payload) {
  BA_FORWARD(cx_close_open_fill(out, st));
  return cx_close(out, st, CX_LIT_FLAG | payload);
}

static inline int cx_put(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok) {
  switch (tok->kind) {
  case BA_TOK_FILL0:
    return cx_put_zero_groups(out, st, tok->n);
  case BA_TOK_FILL1:
    /* No 1-fill in COMPAX: every all-ones group is a literal. */
    for (uint64_t i = 0; i < tok->n; i++) BA_FORWARD(cx_put_literal(out, st, CX_PAYLOAD));
    return BA_OK;
  case BA_TOK_LIT:
    BA_RETURN_IF(tok->lit > CX_PAYLOAD, BA_ERR_INVALID);
    if (tok->lit == 0) return cx_put_zero_groups(out, st, 1);
    return cx_put_literal(out, st, (uint32_t)tok->lit);
  default:
    return BA_ERR_INVALID;
  }
}

static inline int cx_end(ba_wordvec_t *out, ba_enc_state_t *st) {
  BA_FORWARD(cx_close_open_fill(out, st));
  for (uint64_t i = 0; i < st->s[CX_S_NPEND]; i++)
    BA_FORWARD(ba_wordvec_push32(out, (uint32_t)st->s[CX_S_PEND + i]));
  memset(st, 0, sizeof *st);
  return BA_OK;
}

/* Decoder state (ba_dec_t.s): s[0] = queued tokens (0..2) of an [LFL]/[FLF],
 * s[1], s[2] = queued tokens as kind << 32 | value. */
static inline void cx_dec_init(ba_dec_t *d, const void *words, size_t nwords) {
  memset(d, 0, sizeof *d);
  d->words = words;
  d->nwords = nwords;
}

static inline void cx_tok(ba_tok_t *tok, uint64_t kind, uint64_t v) {
  tok->kind = (uint8_t)kind;
  if (kind == BA_TOK_LIT) {
    tok->n = 1;
    tok->lit = v;
  } else {
    tok->n = v;
    tok->lit = 0;
  }
}

/* A dirty byte `b` at position `q` as a literal payload; 0 if invalid. */
static inline uint32_t cx_dirty_group(uint32_t q, uint32_t b) {
  if (b == 0 || (q == 3 && b > 0x7F)) return 0;
  return b << (8 * q);
}

static inline int cx_dec_next(ba_dec_t *d, ba_tok_t *tok) {
  if (d->s[0]) {
    uint64_t t = d->s[1];
    d->s[1] = d->s[2];
    d->s[0]--;
    cx_tok(tok, t >> 32, t & 0xFFFFFFFFu);
    return 1;
  }
  if (d->pos >= d->nwords) return 0;
  uint32_t x = ((const uint32_t *)d->words)[d->pos++];
  switch (x >> 29) {
  case 0: {
    uint32_t cnt = x & CX_FILL_MAX;
    BA_RETURN_IF(cnt == 0, BA_ERR_CORRUPT);
    cx_tok(tok, BA_TOK_FILL0, cnt);
    return 1;
  }
  case CX_HDR_LFL: {
    uint32_t g1 = cx_dirty_group((x >> 27) & 3, (x >> 16) & 0xFF);
    uint32_t g2 = cx_dirty_group((x >> 25) & 3, x & 0xFF);
    uint32_t f = (x >> 8) & 0xFF;
    BA_RETURN_IF((x >> 24) & 1, BA_ERR_CORRUPT);
    BA_RETURN_IF(f == 0 || g1 == 0 || g2 == 0, BA_ERR_CORRUPT);
    d->s[0] = 2;
    d->s[1] = ((uint64_t)BA_TOK_FILL0 << 32) | f;
    d->s[2] = ((uint64_t)BA_TOK_LIT << 32) | g2;
    cx_tok(tok, BA_TOK_LIT, g1);
    return 1;
  }
  case CX_HDR_FLF: {
    uint32_t g = cx_dirty_group((x >> 27) & 3, (x >> 8) & 0xFF);
    uint32_t f1 = (x >> 16) & 0xFF, f2 = x & 0xFF;
    BA_RETURN_IF((x >> 24) & 7, BA_ERR_CORRUPT);
    BA_RETURN_IF(f1 == 0 || f2 == 0 || g == 0, BA_ERR_CORRUPT);
    d->s[0] = 2;
    d->s[1] = ((uint64_t)BA_TOK_LIT << 32) | g;
    d->s[2] = ((uint64_t)BA_TOK_FILL0 << 32) | f2;
    cx_tok(tok, BA_TOK_FILL0, f1);
    return 1;
  }
  case 3: /* reserved for a [1F] extension, off */
    return BA_ERR_CORRUPT;
  default: { /* [L] */
    uint32_t p = x & CX_PAYLOAD;
    BA_RETURN_IF(p == 0, BA_ERR_CORRUPT);
    cx_tok(tok, BA_TOK_LIT, p);
    return 1;
  }
  }
}

/* The word loop of validate.c's rules (see the note there). */
static int cx_validate(const void *words, size_t n, uint64_t nrows) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t expect = nrows / 31 + (nrows % 31 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], k;
    switch (x >> 29) {
      case 0: /* [0F] */
        k = x & CX_FILL_MAX;
        bad |= (k == 0);
        break;
      case CX_HDR_LFL: { /* literal, 0-fill, literal */
        uint32_t f = (x >> 8) & 0xFF;
        bad |= ((x >> 24) & 1) | (f == 0) | (cx_dirty_group((x >> 27) & 3, (x >> 16) & 0xFF) == 0) |
               (cx_dirty_group((x >> 25) & 3, x & 0xFF) == 0);
        k = f + 2;
        break;
      }
      case CX_HDR_FLF: { /* 0-fill, literal, 0-fill */
        uint32_t f1 = (x >> 16) & 0xFF, f2 = x & 0xFF;
        bad |= (((x >> 24) & 7) != 0) | (f1 == 0) | (f2 == 0) |
               (cx_dirty_group((x >> 27) & 3, (x >> 8) & 0xFF) == 0);
        k = f1 + f2 + 1;
        break;
      }
      case 3: /* reserved */
        bad = 1;
        k = 1;
        break;
      default: /* [L] */
        bad |= ((x & CX_PAYLOAD) == 0);
        k = 1;
        break;
    }
    total += k;
  }
  return ba_bm_validate_end(&ba_compax_ops, w, n, nrows, expect, total, bad);
}

/* [L], [0F], [LFL] = two dirty bytes, [FLF] = one. */
static int cx_count(const void *words, size_t n, uint64_t *out) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i];
    switch (x >> 29) {
      case 0: break;
      case 1: c += ba_bm_popcnt((x >> 16) & 0xFFu) + ba_bm_popcnt(x & 0xFFu); break;
      case 2: c += ba_bm_popcnt((x >> 8) & 0xFFu); break;
      case 3: return 0; /* reserved: the decoder reports it */
      default: c += ba_bm_popcnt(x & 0x7FFFFFFFu); break;
    }
  }
  *out = c;
  return 1;
}

/* Pair kernels with the coder above inlined (real-data AND 1.85x the
 * generic loop; bench/history/2026-11-22-codecs.md). */
BA_GROUP_KERNELS(cx, cx_dec_next, cx_put, OPK_NONE)

static int cx_put_groups(ba_wordvec_t *v, ba_enc_state_t *st, const uint32_t *gaps, const uint64_t *lits, size_t n,
                         uint64_t all) {
  return groups_put(v, st, gaps, lits, n, all, cx_put);
}

const ba_codec_ops_t ba_compax_ops = {
  .id = BA_CODEC_COMPAX,
  .name = "compax",
  .word_bytes = 4,
  .group_bits = 31,
  .put = cx_put,
  .end = cx_end,
  .dec_init = cx_dec_init,
  .dec_next = cx_dec_next,
  .validate = cx_validate,
  .count = cx_count,
  .kernels = cx_kernels,
  .put_groups = cx_put_groups,
};
