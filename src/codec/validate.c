/* Validation of foreign words (ba_bitmap_from_words, ba_bitmap_deserialize):
 * the words must decode without error, describe exactly the groups (or bits)
 * that nrows needs, keep literals inside their group, and leave the padded rows
 * of the last group 0 (D-3).
 *
 * The rules are written once as a loop over the codec's token decoder
 * (bm_validate_tokens): the reference, called through ops. Loading an index
 * validates every bitmap it reads, which made that loop the largest single cost
 * of selective queries (35-45% of their CPU) while it went through function
 * pointers, so each codec also has a word loop here that restates the same
 * rules without branches on the data: `bad` collects every reject rule of a
 * word, `total` the groups (bits) it covers; the padding rule looks at the
 * last token only, decoded once after the loop. Tests
 * (codec/test_codec_corrupt) and the bitmap_deserialize fuzz target check
 * that both accept exactly the same inputs. */
#include "codec/codec_internal.h"
#include "common/common.h"

#include "codec/compax_impl.h"
#include "codec/masc_impl.h"
#include "codec/plwah_impl.h"

/* The padding rule: the rows of the last group past nrows are 0. */
static int bm_pad_ok(unsigned G, uint64_t nrows, const ba_tok_t *last) {
  if (!G || nrows % G == 0) return 1;
  uint64_t pad = (UINT64_C(1) << (G - (unsigned)(nrows % G))) - 1; /* fewer than G < 64 bits */
  return last->kind != BA_TOK_FILL1 && !(last->kind == BA_TOK_LIT && (last->lit & pad));
}

/* The reference: every token through the codec's decoder. */
static int bm_validate_tokens(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows) {
  const unsigned G = ops->group_bits;
  uint64_t expect = G ? nrows / G + (nrows % G != 0) : nrows;
  uint64_t total = 0;
  ba_dec_t d;
  ba_tok_t t = {0, 0, BA_TOK_FILL0}, last = {0, 0, BA_TOK_FILL0};
  int rc;
  ops->dec_init(&d, words, nwords);
  while ((rc = ops->dec_next(&d, &t)) == 1) {
    uint64_t n = t.n;
    if (t.kind == BA_TOK_LIT) {
      BA_RETURN_IF(G == 0 || (t.lit >> G) != 0, BA_ERR_CORRUPT);
      n = 1;
    } else {
      BA_RETURN_IF(t.kind > BA_TOK_FILL1, BA_ERR_CORRUPT);
    }
    BA_RETURN_IF(n == 0 || n > expect - total, BA_ERR_CORRUPT);
    total += n;
    last = t;
  }
  BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  BA_RETURN_IF(total != expect, BA_ERR_CORRUPT);
  return bm_pad_ok(G, nrows, &last) ? BA_OK : BA_ERR_CORRUPT;
}

/* The total and padding rules once a word loop found no bad word: the last
 * token comes from decoding the last word alone (no token spans words). */
static int bm_validate_end(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
                           uint64_t expect, uint64_t total, int bad) {
  BA_RETURN_IF(bad || total != expect, BA_ERR_CORRUPT);
  if (!nwords) return BA_OK; /* expect = 0: nrows = 0 */
  ba_dec_t d;
  ba_tok_t t, last = {0, 0, BA_TOK_FILL0};
  int rc;
  ops->dec_init(&d, (const uint8_t *)words + (nwords - 1) * ops->word_bytes, 1);
  while ((rc = ops->dec_next(&d, &t)) == 1) last = t;
  BA_RETURN_IF(rc < 0, BA_ERR_CORRUPT);
  return bm_pad_ok(ops->group_bits, nrows, &last) ? BA_OK : BA_ERR_CORRUPT;
}

/* Word loops (masks instead of conditionals: GCC turns those into branches,
 * which mispredict on the mix of literals and fills of index bitmaps). Every
 * word covers k >= 1 groups (bits) when valid, so the running total passes
 * expect at some word exactly when the final sum does. The 32-bit codecs add
 * at most 2^30 per word, and at most BM_VEC_WORDS words go through them, so
 * their sum cannot wrap and is checked once at the end (the loop then has no
 * dependence but the sums, and vectorizes). WAH64 adds up to 2^62 per word:
 * its total cannot wrap before it first passes expect (k, expect < 2^62), and
 * `bad` is sticky from there on. */
#define BM_VEC_WORDS (UINT64_C(1) << 32)

static int bm_validate_wah32(const uint32_t *w, size_t n, uint64_t nrows) {
  uint64_t expect = nrows / 31 + (nrows % 31 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], m = 0u - (x >> 31); /* all ones for a fill */
    uint32_t k = (x & 0x3FFFFFFFu & m) | (1u & ~m);
    bad |= (k == 0);
    total += k;
  }
  return bm_validate_end(&ba_wah32_ops, w, n, nrows, expect, total, bad);
}

static int bm_validate_wah64(const uint64_t *w, size_t n, uint64_t nrows) {
  uint64_t expect = nrows / 63 + (nrows % 63 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = w[i], m = 0u - (x >> 63);
    uint64_t k = (x & ((UINT64_C(1) << 62) - 1) & m) | (1u & ~m);
    bad |= (k == 0);
    total += k; /* cannot wrap before it first passes expect: k, expect < 2^62 */
    bad |= (total > expect);
  }
  return bm_validate_end(&ba_wah64_ops, w, n, nrows, expect, total, bad);
}

static int bm_validate_plwah(const uint32_t *w, size_t n, uint64_t nrows) {
  uint64_t expect = nrows / 31 + (nrows % 31 != 0), total = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = w[i], m = 0u - (x >> 31), cnt = x & PL_MAXCNT, pos = (x >> PL_POS_SHIFT) & 31u;
    bad |= (int)(m & (cnt == 0));
    total += ((cnt + (pos != 0)) & m) | (1u & ~m); /* a position piggybacks one literal group */
  }
  return bm_validate_end(&ba_plwah_ops, w, n, nrows, expect, total, bad);
}

static int bm_validate_compax(const uint32_t *w, size_t n, uint64_t nrows) {
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
  return bm_validate_end(&ba_compax_ops, w, n, nrows, expect, total, bad);
}

/* MASC words cover a run and its carried ones; qt: the type tag bit 30 of a
 * 1-fill must be 1 (MASC-QT) or 0 (MASC). Bit runs have no padding rule. */
static int bm_validate_masc(const uint32_t *w, size_t n, uint64_t nrows, uint32_t qt) {
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

int ba_bm_validate(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
                   int generic) {
  if (generic || nwords > BM_VEC_WORDS) return bm_validate_tokens(ops, words, nwords, nrows);
  switch (ops->id) {
    case BA_CODEC_WAH32: return bm_validate_wah32((const uint32_t *)words, nwords, nrows);
    case BA_CODEC_WAH64: return bm_validate_wah64((const uint64_t *)words, nwords, nrows);
    case BA_CODEC_PLWAH: return bm_validate_plwah((const uint32_t *)words, nwords, nrows);
    case BA_CODEC_COMPAX: return bm_validate_compax((const uint32_t *)words, nwords, nrows);
    case BA_CODEC_MASC: return bm_validate_masc((const uint32_t *)words, nwords, nrows, 0);
    case BA_CODEC_MASC_QT: return bm_validate_masc((const uint32_t *)words, nwords, nrows, 1);
    default: return bm_validate_tokens(ops, words, nwords, nrows);
  }
}
