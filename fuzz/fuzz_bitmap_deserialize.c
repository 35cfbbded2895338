/* Fuzz target: ba_bitmap_deserialize on arbitrary bytes. An accepted record must
 * match its header (codec, rows, words), agree with the naive decoder of
 * fuzz_codec_common.h, survive every query/op check, and re-serialize to the
 * same bytes; a rejected one must be rejected by the naive decoder as well (or
 * have a bad header). The per-codec validation loop must agree with the
 * generic one on every input whose words fit. */
#include "fuzz_codec_common.h"
#include "codec/bitmap_internal.h"

/* The per-codec validation word loop must accept exactly what the generic
 * token loop accepts, on any words and row count. */
static void check_fast_validate(ba_codec_t codec, const uint8_t *p, size_t nwords, uint64_t nrows) {
  const ba_codec_ops_t *ops = ba_codec_ops(codec);
  if (!ops) return;
  unsigned wb = ops->word_bytes;
  uint64_t *w = malloc(nwords * wb + 8);
  if (!w) abort();
  for (size_t i = 0; i < nwords; i++) {
    uint64_t x = fz_word(p + i * wb, wb);
    if (wb == 4)
      ((uint32_t *)w)[i] = (uint32_t)x;
    else
      w[i] = x;
  }
  int fast = ba_bm_validate(ops, w, nwords, nrows, 0), generic = ba_bm_validate(ops, w, nwords, nrows, 1);
  FZ_CHECK(fast == generic, "%s: fast validation %d, generic %d (%zu words, %llu rows)", ops->name, fast,
           generic, nwords, (unsigned long long)nrows);
  free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ba_bitmap_t *bm = NULL;
  size_t consumed = 0;
  int rc = ba_bitmap_deserialize(data, size, &bm, &consumed);
  /* Header: [u8 codec][u8 flags][u16 reserved][u64 nrows][u64 nwords][words LE]. */
  int header_ok = size >= 20 && data[0] >= BA_CODEC_MIN && data[0] <= BA_CODEC_MAX &&
                  data[1] == 0 && data[2] == 0 && data[3] == 0;
  uint64_t nrows = header_ok ? fz_word(data + 4, 8) : 0, nwords = header_ok ? fz_word(data + 12, 8) : 0;
  ba_codec_t codec = header_ok ? (ba_codec_t)data[0] : BA_CODEC_WAH32;
  unsigned wb = ba_codec_word_bits(codec) / 8;
  int fits = header_ok && nwords <= (size - 20) / wb;
  if (fits) check_fast_validate(codec, data + 20, (size_t)nwords, nrows);
  if (rc != 0) {
    FZ_CHECK(rc == BA_ERR_CORRUPT || rc == BA_ERR_TRUNCATED || rc == BA_ERR_INVALID ||
                 rc == BA_ERR_OVERFLOW || rc == BA_ERR_UNSUPPORTED,
             "deserialize returned %d (%s)", rc, ba_strerror(rc));
    if (fits && nrows <= FZ_MAX_ROWS) {
      fz_bits_t ref;
      int doubt = 0;
      int ok = fz_naive_decode(codec, data + 20, (size_t)nwords, nrows, &ref, &doubt);
      FZ_CHECK(ok != 0 || doubt, "deserialize rejected a valid %s record (%d: %s)",
               ba_codec_name(codec), rc, ba_strerror(rc));
      fz_bits_free(&ref);
    }
    return 0;
  }
  /* Accepted flags/reserved bytes other than 0 are the library's call; the rest
   * of the header must then still describe what was read. */
  FZ_CHECK(size >= 20 && consumed <= size, "consumed %zu of %zu", consumed, size);
  codec = (ba_codec_t)data[0];
  wb = ba_codec_word_bits(codec) / 8;
  nrows = fz_word(data + 4, 8);
  nwords = fz_word(data + 12, 8);
  FZ_CHECK(ba_bitmap_codec(bm) == codec, "codec");
  FZ_CHECK(ba_bitmap_rows(bm) == nrows, "rows");
  FZ_CHECK(consumed == 20 + nwords * wb, "consumed %zu for %llu words", consumed,
           (unsigned long long)nwords);
  size_t n;
  uint8_t *le = fz_words_le(bm, &n);
  FZ_CHECK(n == nwords && memcmp(le, data + 20, n * wb) == 0, "words differ from the record");
  free(le);
  size_t len = 0, cap = ba_bitmap_serialized_size(bm);
  uint8_t *buf = malloc(cap + 1);
  if (!buf) abort();
  FZ_CHECK(cap == consumed && ba_bitmap_serialize(bm, buf, cap, &len) == 0 && len == cap,
           "serialize");
  FZ_CHECK(memcmp(buf + 4, data + 4, len - 4) == 0 && buf[0] == data[0], "re-serialized bytes differ");
  free(buf);
  if (nrows <= FZ_MAX_ROWS) {
    fz_bits_t ref;
    int doubt = 0;
    int ok = fz_naive_decode(codec, data + 20, n, nrows, &ref, &doubt);
    FZ_CHECK(ok == 0 || doubt, "deserialize accepted a %s record the spec rejects",
             ba_codec_name(codec));
    if (ok == 0) fz_exercise(bm, &ref, data[size - 1]);
    fz_bits_free(&ref);
  }
  ba_bitmap_free(bm);
  return 0;
}
