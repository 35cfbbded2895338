/* Fuzz target: an index directory and its bitmaps.
 * Input: [u32 LE dir_len][IDXDIR payload][bitmap bytes]; directory offsets
 * are relative to the bitmap bytes. Every entry is loaded with its CRC made
 * to match, so the bitmap decoder is reached. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/store.h"
#include "common/common.h"
#include "index/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t dl = ba_load_le32(data);
  if (dl > size - 4) return 0;
  const uint8_t *dir = data + 4, *bm = data + 4 + dl;
  size_t bl = size - 4 - dl;
  ba_idx_dirent_t *d = NULL;
  size_t n = 0;
  if (ba_idx_dir_decode(dir, dl, BA_ATTR_COUNT, 0, bl, &d, &n) != BA_OK) return 0;
  for (size_t i = 0; i < n && i < 64; i++) {
    const uint8_t *p = bm + d[i].off;
    if (d[i].len < 12) continue;
    uint64_t rows = ba_load_le64(p + 4);
    ba_codec_t codec = (ba_codec_t)p[0];
    ba_bitmap_t *b = NULL;
    if (ba_idx_bitmap_load(p, d[i].len, ba_crc32c(0, p, d[i].len), codec, rows, &b) == BA_OK) {
      uint64_t cnt = 0;
      ba_bitmap_count(b, &cnt);
      if (cnt > rows) abort();
      ba_bitmap_free(b);
    }
    if (ba_idx_dir_find(d, n, d[i].attr, d[i].value) != (long)i) abort();
  }
  free(d);
  return 0;
}
