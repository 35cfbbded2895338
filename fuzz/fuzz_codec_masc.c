/* Fuzz target: masc words -> ba_bitmap_from_words, checked against a naive
 * decoder and naive bitset algebra (see fuzz_codec_common.h). */
#include "fuzz_codec_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fz_codec_input(BA_CODEC_MASC, data, size);
}
