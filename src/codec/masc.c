/* MASC (Maximized Stride with Carrier) and its query-table word variant MASC-QT.
 * Layout and rules: specs/codecs.md §5 (doc/codecs.md in the tree), D-11, D-12.
 *
 *   0-fill          0 | 0 | 00000 | counter:20 | additional:5    L = 31*counter + additional zeros
 *   1-carried 0-fill 0 | 1 | c:5   | counter:20 | additional:5    L zeros, then c (1..30) ones
 *   1-fill          1 | t | 00000 | counter:20 | additional:5    L ones; t = 0 (MASC), 1 (MASC-QT)
 *
 * MASC is a bit-run code: tokens are FILL0/FILL1 of any number of bits. The
 * encoder merges adjacent runs of the same value, keeps a closed 0-run pending
 * until the next 1-run is known (the carrier decision), and splits runs longer
 * than MAXRUN bits into several words; only the last word of a 0-run carries. */
#include "codec/masc_impl.h"
#include "codec/masc_qt_table.h"

/* Encoder state (ba_enc_state_t.s): */
#define MS_S_VAL 0  /* value of the open run */
#define MS_S_LEN 1  /* length of the open run, 0 = none */
#define MS_S_ZERO 2 /* closed 0-run waiting for the next 1-run, 0 = none */

static uint32_t ms_len_field(uint64_t len) {
  return (uint32_t)(((len / 31) << 5) | (len % 31));
}

/* Emits a run of `len` >= 1 bits of value `v`; `carry` ones ride on the last word of a 0-run. */
static int ms_emit(ba_wordvec_t *out, int qt, int v, uint64_t len, uint64_t carry) {
  uint32_t tag = v ? (MS_BIT31 | (qt ? MS_BIT30 : 0)) : 0;
  while (len > MS_MAXRUN) {
    BA_FORWARD(ba_wordvec_push32(out, tag | ms_len_field(MS_MAXRUN)));
    len -= MS_MAXRUN;
  }
  uint32_t w = tag | ms_len_field(len);
  if (carry) w |= MS_BIT30 | ((uint32_t)carry << MS_CARRIER_SHIFT);
  return ba_wordvec_push32(out, w);
}

/* A maximal run is complete (the next run has the other value, or the stream ended). */
static int ms_close_run(ba_wordvec_t *out, ba_enc_state_t *st, int qt, int v, uint64_t len) {
  if (v == 0) { /* runs alternate, so nothing can be pending here */
    st->s[MS_S_ZERO] = len;
    return BA_OK;
  }
  uint64_t z = st->s[MS_S_ZERO];
  st->s[MS_S_ZERO] = 0;
  if (z) {
    if (len <= MS_MAXCARRY) return ms_emit(out, qt, 0, z, len);
    BA_FORWARD(ms_emit(out, qt, 0, z, 0));
  }
  return ms_emit(out, qt, 1, len, 0);
}

static int ms_put(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok, int qt) {
  BA_RETURN_IF(tok->kind != BA_TOK_FILL0 && tok->kind != BA_TOK_FILL1, BA_ERR_INVALID);
  uint64_t v = tok->kind == BA_TOK_FILL1;
  if (tok->n == 0) return BA_OK;
  uint64_t *s = st->s;
  if (s[MS_S_LEN] && s[MS_S_VAL] == v) {
    BA_RETURN_IF(tok->n > UINT64_MAX - s[MS_S_LEN], BA_ERR_OVERFLOW);
    s[MS_S_LEN] += tok->n;
    return BA_OK;
  }
  if (s[MS_S_LEN]) BA_FORWARD(ms_close_run(out, st, qt, (int)s[MS_S_VAL], s[MS_S_LEN]));
  s[MS_S_VAL] = v;
  s[MS_S_LEN] = tok->n;
  return BA_OK;
}

static int ms_end(ba_wordvec_t *out, ba_enc_state_t *st, int qt) {
  if (st->s[MS_S_LEN]) BA_FORWARD(ms_close_run(out, st, qt, (int)st->s[MS_S_VAL], st->s[MS_S_LEN]));
  if (st->s[MS_S_ZERO]) BA_FORWARD(ms_emit(out, qt, 0, st->s[MS_S_ZERO], 0));
  memset(st, 0, sizeof *st);
  return BA_OK;
}

static int masc_put(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok) { return ms_put(out, st, tok, 0); }
static int masc_qt_put(ba_wordvec_t *out, ba_enc_state_t *st, const ba_tok_t *tok) { return ms_put(out, st, tok, 1); }
static int masc_end(ba_wordvec_t *out, ba_enc_state_t *st) { return ms_end(out, st, 0); }
static int masc_qt_end(ba_wordvec_t *out, ba_enc_state_t *st) { return ms_end(out, st, 1); }

/* The word loop of validate.c's rules (see the note there). MASC words
 * cover a run and its carried ones; qt: the type tag bit 30 of a 1-fill must
 * be 1 (MASC-QT) or 0 (MASC). Bit runs have no padding rule. */
static inline int ms_validate(const uint32_t *w, size_t n, uint64_t nrows, uint32_t qt) {
  uint64_t total = 0;
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], add = x & 31u, c = (x & MS_FIELD_29_25) >> MS_CARRIER_SHIFT;
    uint32_t one = x >> 31, tag = (x >> 30) & 1u;
    uint32_t l = ((x & MS_COUNT_MASK) >> 5) * 31 + add; /* < 2^25 */
    uint32_t b = (add == 31) | (l == 0);
    /* 1-fill: no carrier, tag = qt; 0-fill: carrier 1..30 exactly when bit 30
     * is set (so c counts only when valid: a 1-fill's c != 0 is bad anyway) */
    uint32_t bad1 = (c != 0) | (tag != qt);
    uint32_t bad0 = (tag & ((c == 0) | (c > MS_MAXCARRY))) | ((tag ^ 1u) & (c != 0));
    b |= (one & bad1) | ((one ^ 1u) & bad0);
    bad |= b;
    total += l + c;
  }
  return bad || total != nrows ? BA_ERR_CORRUPT : BA_OK;
}

static int masc_validate(const void *w, size_t n, uint64_t nrows) {
  return ms_validate((const uint32_t *)w, n, nrows, 0);
}
static int masc_qt_validate(const void *w, size_t n, uint64_t nrows) {
  return ms_validate((const uint32_t *)w, n, nrows, 1);
}

/* Set rows: a 1-fill's run, a 0-fill's carried ones (both variants). */
static int ms_count(const void *words, size_t n, uint64_t *out) {
  const uint32_t *w = (const uint32_t *)words;
  uint64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i];
    if (x >> 31) c += (uint64_t)((x & 0x01FFFFFFu) >> 5) * 31 + (x & 31u);
    else if (x & 0x40000000u) c += (x >> 25) & 31u;
  }
  *out = c;
  return 1;
}

static int masc_dec_next(ba_dec_t *d, ba_tok_t *tok) { return ms_dec_next(d, tok, 0); }
static int masc_qt_dec_next(ba_dec_t *d, ba_tok_t *tok) { return ms_dec_next(d, tok, 1); }

const ba_codec_ops_t ba_masc_ops = {
  .id = BA_CODEC_MASC,
  .name = "masc",
  .word_bytes = 4,
  .group_bits = 0,
  .put = masc_put,
  .end = masc_end,
  .dec_init = ms_dec_init,
  .dec_next = masc_dec_next,
  .validate = masc_validate,
  .count = ms_count,
  .kernels = ba_masc_kernels,
  .range_rows = ba_masc_range_rows,
  .range_count = ba_masc_range_count,
  .cache_free = ba_masc_cache_free,
};

const ba_codec_ops_t ba_masc_qt_ops = {
  .id = BA_CODEC_MASC_QT,
  .name = "masc-qt",
  .word_bytes = 4,
  .group_bits = 0,
  .put = masc_qt_put,
  .end = masc_qt_end,
  .dec_init = ms_dec_init,
  .dec_next = masc_qt_dec_next,
  .validate = masc_qt_validate,
  .count = ms_count,
  .kernels = ba_masc_kernels,
  .range_rows = ba_masc_range_rows,
  .range_count = ba_masc_range_count,
  .cache_free = ba_masc_cache_free,
};
