/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
 * Check value: crc32c("123456789") = 0xE3069283. */
#include <string.h>

#include "common/common.h"

static uint32_t g_table[8][256];
static int g_ready;

static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    g_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) g_table[t][i] = (g_table[t - 1][i] >> 8) ^ g_table[0][g_table[t - 1][i] & 0xff];
  __atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* SSE4.2 has a CRC32C instruction (same polynomial, same reflected result):
 * used when the CPU has it, checked once. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
                                                           size_t len) {
  uint64_t c = ~crc;
  while (len >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    c = __builtin_ia32_crc32di(c, x);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

static int g_hw; /* 0 unknown, 1 yes, 2 no */
#endif

uint32_t ba_crc32c(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = (const uint8_t *)data;
#if defined(__x86_64__) && defined(__GNUC__)
  int hw = __atomic_load_n(&g_hw, __ATOMIC_RELAXED);
  if (BA_UNLIKELY(hw == 0)) {
    __builtin_cpu_init();
    hw = __builtin_cpu_supports("sse4.2") ? 1 : 2;
    __atomic_store_n(&g_hw, hw, __ATOMIC_RELAXED);
  }
  if (hw == 1) return crc32c_hw(crc, p, len);
#endif
  /* Initialising twice from two threads writes the same values: benign. */
  if (!__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE)) crc32c_init();
  crc = ~crc;
  while (len >= 8) {
    uint32_t lo = ba_load_le32(p) ^ crc, hi = ba_load_le32(p + 4);
    crc = g_table[7][lo & 0xff] ^ g_table[6][(lo >> 8) & 0xff] ^ g_table[5][(lo >> 16) & 0xff] ^
          g_table[4][lo >> 24] ^ g_table[3][hi & 0xff] ^ g_table[2][(hi >> 8) & 0xff] ^
          g_table[1][(hi >> 16) & 0xff] ^ g_table[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ g_table[0][(crc ^ *p++) & 0xff];
  return ~crc;
}
