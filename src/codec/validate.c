/* Validation of foreign words (ba_bitmap_from_words, ba_bitmap_deserialize):
 * the words must decode without error, describe exactly the groups (or bits)
 * that nrows needs, keep literals inside their group, and leave the padded rows
 * of the last group 0 (D-3).
 *
 * The rules are written once as a loop over the codec's token decoder
 * (bm_validate_tokens): the reference, called through ops. Loading an index
 * validates every bitmap it reads, which made that loop the largest single cost
 * of selective queries (35-45% of their CPU) while it went through function
 * pointers, so each codec also has a word loop (ops->validate, in the
 * codec's file) that restates the same rules without branches on the data:
 * `bad` collects every reject rule of a word, `total` the groups (bits) it
 * covers; the padding rule looks at the last token only, decoded once after
 * the loop (ba_bm_validate_end). Tests
 * (codec/test_codec_corrupt) and the bitmap_deserialize fuzz target check
 * that both accept exactly the same inputs. */
#include "codec/bitmap_internal.h"

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
int ba_bm_validate_end(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
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

/* The codecs' word loops use masks instead of conditionals (GCC turns those
 * into branches, which mispredict on the mix of literals and fills of index
 * bitmaps). Every word covers k >= 1 groups (bits) when valid, so the
 * running total passes expect at some word exactly when the final sum does.
 * The 32-bit codecs add at most 2^30 per word, and at most BM_VEC_WORDS
 * words go through them, so their sum cannot wrap and is checked once at the
 * end (the loop then has no dependence but the sums, and vectorizes). WAH64
 * adds up to 2^62 per word: its total cannot wrap before it first passes
 * expect (k, expect < 2^62), and `bad` is sticky from there on. */
#define BM_VEC_WORDS (UINT64_C(1) << 32)

int ba_bm_validate(const ba_codec_ops_t *ops, const void *words, size_t nwords, uint64_t nrows,
                   int generic) {
  if (generic || nwords > BM_VEC_WORDS || !ops->validate) return bm_validate_tokens(ops, words, nwords, nrows);
  return ops->validate(words, nwords, nrows);
}
