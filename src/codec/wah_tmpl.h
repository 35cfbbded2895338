/* WAH encoder/decoder body of wah32.c and wah64.c (spec §2), included once
 * by each (the coder is inlined into that codec's fast paths).
 * Before including, define:
 *   WAH_W       word type (uint32_t / uint64_t)
 *   WAH_BITS    32 / 64
 *   WAH_PUSH    ba_wordvec_push32 / ba_wordvec_push64
 *   WAH_PFX(x)  prefix for the static functions
 *
 * Canonical form (D-4): every maximal run of k >= 1 homogeneous groups is a
 * fill, split into fills of MAXCNT and a remainder; no literal is 0 or all
 * ones. Encoder state: s[0] = open fill value + 1 (0 = none), s[1] = its
 * group count (not yet split). */

#define WAH_G (WAH_BITS - 1)
#define WAH_LITMASK ((WAH_W)(((WAH_W)1 << WAH_G) - 1))
#define WAH_FILL ((WAH_W)1 << (WAH_BITS - 1))
#define WAH_VAL ((WAH_W)1 << (WAH_BITS - 2))
#define WAH_MAXCNT ((WAH_W)(WAH_VAL - 1))

static inline int WAH_PFX(flush)(ba_wordvec_t *out, ba_enc_state_t *st) {
  if (!st->s[0]) return 0;
  WAH_W hdr = WAH_FILL | (st->s[0] == 2 ? WAH_VAL : 0);
  uint64_t c = st->s[1];
  st->s[0] = 0;
  if (c <= WAH_MAXCNT) return WAH_PUSH(out, hdr | (WAH_W)c);
  int rc = ba_wordvec_reserve(out, (size_t)(c / WAH_MAXCNT) + 1, WAH_BITS / 8);
  if (rc < 0) return rc;
  while (c > WAH_MAXCNT) {
    WAH_PUSH(out, hdr | WAH_MAXCNT);
    c -= WAH_MAXCNT;
  }
  return WAH_PUSH(out, hdr | (WAH_W)c);
}

static inline int WAH_PFX(put)(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok) {
  unsigned kind = tok->kind;
  uint64_t n = tok->n;
  if (kind == BA_TOK_LIT) {
    WAH_W lit = (WAH_W)tok->lit & WAH_LITMASK;
    if (lit != 0 && lit != WAH_LITMASK) {
      if (st->s[0]) {
        int rc = WAH_PFX(flush)(out, st);
        if (rc < 0) return rc;
      }
      return WAH_PUSH(out, lit);
    }
    kind = lit ? BA_TOK_FILL1 : BA_TOK_FILL0;
    n = 1;
  }
  if (n == 0) return 0;
  if (st->s[0] == kind + 1u) {
    st->s[1] += n;
    return 0;
  }
  int rc = WAH_PFX(flush)(out, st);
  if (rc < 0) return rc;
  st->s[0] = kind + 1u;
  st->s[1] = n;
  return 0;
}

static inline int WAH_PFX(end)(ba_wordvec_t *out, ba_enc_state_t *st) { return WAH_PFX(flush)(out, st); }

static inline void WAH_PFX(dec_init)(ba_dec_t *d, const void *words, size_t nwords) {
  d->words = words;
  d->nwords = nwords;
  d->pos = 0;
}

static inline int WAH_PFX(dec_next)(ba_dec_t *d, ba_tok_t *tok) {
  if (d->pos >= d->nwords) return 0;
  WAH_W x = ((const WAH_W *)d->words)[d->pos++];
  if (!(x & WAH_FILL)) {
    tok->kind = BA_TOK_LIT;
    tok->lit = x;
    tok->n = 1;
    return 1;
  }
  WAH_W k = x & WAH_MAXCNT;
  if (k == 0) return BA_ERR_CORRUPT; /* D-5 */
  tok->kind = (x & WAH_VAL) ? BA_TOK_FILL1 : BA_TOK_FILL0;
  tok->n = k;
  tok->lit = 0;
  return 1;
}

#undef WAH_G
#undef WAH_LITMASK
#undef WAH_FILL
#undef WAH_VAL
#undef WAH_MAXCNT
