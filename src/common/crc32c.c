/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
 * Check value: crc32c("123456789") = 0xE3069283. */
#include <pthread.h>
#include <string.h>

#include "common/common.h"

/* Tables are built once per process (pthread_once: no thread reads a table
 * another thread is still writing). */
static uint32_t g_table[8][256];
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    g_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) g_table[t][i] = (g_table[t - 1][i] >> 8) ^ g_table[0][g_table[t - 1][i] & 0xff];
}

#if defined(__x86_64__) && defined(__GNUC__)
/* SSE4.2 has a CRC32C instruction (same polynomial, same reflected result):
 * used when the CPU has it, checked once. The instruction has a latency of
 * three cycles and a throughput of one, so long buffers run three streams at
 * once over three adjacent stretches and join them: the raw CRC register is
 * linear, crc(A || B) = shift_|B|(crc(A)) ^ crc0(B), where shift_n applies n
 * zero bytes (a 32x32 bit matrix, kept as four byte tables per length). */
#define CRC_LONG 8192u
#define CRC_SHORT 256u

static uint32_t g_shift_long[4][256], g_shift_short[4][256];
static int g_hw; /* the CPU has the instruction; set with the shift tables, once */
static pthread_once_t g_hw_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static void crc32c_shift_init(uint32_t t[4][256], size_t n) {
  uint32_t col[32]; /* the shift of each single-bit register */
  for (unsigned b = 0; b < 32; b++) {
    uint64_t c = UINT32_C(1) << b;
    for (size_t i = 0; i < n; i += 8) c = __builtin_ia32_crc32di(c, 0);
    col[b] = (uint32_t)c;
  }
  for (unsigned k = 0; k < 4; k++)
    for (unsigned v = 0; v < 256; v++) {
      uint32_t x = 0;
      for (unsigned b = 0; b < 8; b++)
        if (v >> b & 1) x ^= col[8 * k + b];
      t[k][v] = x;
    }
}

static inline uint32_t crc32c_shift(const uint32_t t[4][256], uint32_t c) {
  return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* Three streams over 3 * n bytes from p, joined onto the register c. */
__attribute__((target("sse4.2"))) static inline uint64_t crc32c_3way(uint64_t c, const uint8_t *p, size_t n,
                                                                     const uint32_t t[4][256]) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x0, x1, x2;
    memcpy(&x0, p + i, 8);
    memcpy(&x1, p + n + i, 8);
    memcpy(&x2, p + 2 * n + i, 8);
    c = __builtin_ia32_crc32di(c, x0);
    c1 = __builtin_ia32_crc32di(c1, x1);
    c2 = __builtin_ia32_crc32di(c2, x2);
  }
  c = crc32c_shift(t, (uint32_t)c) ^ (uint32_t)c1;
  return crc32c_shift(t, (uint32_t)c) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
                                                           size_t len) {
  uint64_t c = ~crc;
  if (len >= 3 * CRC_SHORT) {
    for (; len >= 3 * CRC_LONG; p += 3 * CRC_LONG, len -= 3 * CRC_LONG)
      c = crc32c_3way(c, p, CRC_LONG, (const uint32_t(*)[256])g_shift_long);
    for (; len >= 3 * CRC_SHORT; p += 3 * CRC_SHORT, len -= 3 * CRC_SHORT)
      c = crc32c_3way(c, p, CRC_SHORT, (const uint32_t(*)[256])g_shift_short);
  }
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

static void crc32c_hw_init(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return;
  crc32c_shift_init(g_shift_long, CRC_LONG);
  crc32c_shift_init(g_shift_short, CRC_SHORT);
  g_hw = 1;
}
#endif

uint32_t ba_crc32c(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = (const uint8_t *)data;
#if defined(__x86_64__) && defined(__GNUC__)
  pthread_once(&g_hw_once, crc32c_hw_init);
  if (g_hw) return crc32c_hw(crc, p, len);
#endif
  pthread_once(&g_table_once, crc32c_init);
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
