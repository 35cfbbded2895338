/* Internal helpers shared by every module: error forwarding, branch hints,
 * bit tricks, little-endian loads/stores. Depends on nothing. */
#ifndef BA_COMMON_H
#define BA_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bitarc/errors.h"
#include "bitarc_config.h"

#if defined(__GNUC__)
#define BA_LIKELY(x) __builtin_expect(!!(x), 1)
#define BA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define BA_LIKELY(x) (x)
#define BA_UNLIKELY(x) (x)
#endif

#ifndef NDEBUG
void ba_debug_trace(const char *file, int line, int code);
#define BA_TRACE(code) ba_debug_trace(__FILE__, __LINE__, (code))
#else
#define BA_TRACE(code) ((void)0)
#endif

/* Return `code` when `cond` holds (logged with file:line in debug builds when
 * BITARC_TRACE is set in the environment). */
#define BA_RETURN_IF(cond, code) do { if (BA_UNLIKELY(cond)) { BA_TRACE(code); return (code); } } while (0)
/* Evaluate a call returning a status and return it if it failed. */
#define BA_FORWARD(expr) do { int ba_rc_ = (expr); if (BA_UNLIKELY(ba_rc_ < 0)) { BA_TRACE(ba_rc_); return ba_rc_; } } while (0)

#define BA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BA_MAX(a, b) ((a) > (b) ? (a) : (b))
#define BA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static inline unsigned ba_popcount64(uint64_t x) { return (unsigned)__builtin_popcountll(x); }
static inline unsigned ba_popcount32(uint32_t x) { return (unsigned)__builtin_popcount(x); }
/* Undefined for 0, as the builtins. */
static inline unsigned ba_ctz64(uint64_t x) { return (unsigned)__builtin_ctzll(x); }
static inline unsigned ba_clz64(uint64_t x) { return (unsigned)__builtin_clzll(x); }
static inline unsigned ba_clz32(uint32_t x) { return (unsigned)__builtin_clz(x); }

static inline uint16_t ba_load_le16(const void *p) { const uint8_t *b = (const uint8_t *)p; return (uint16_t)(b[0] | (b[1] << 8)); }
static inline uint32_t ba_load_le32(const void *p) { const uint8_t *b = (const uint8_t *)p; return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24); }
static inline uint64_t ba_load_le64(const void *p) { const uint8_t *b = (const uint8_t *)p; return (uint64_t)ba_load_le32(b) | ((uint64_t)ba_load_le32(b + 4) << 32); }
static inline void ba_store_le16(void *p, uint16_t v) { uint8_t *b = (uint8_t *)p; b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); }
static inline void ba_store_le32(void *p, uint32_t v) { uint8_t *b = (uint8_t *)p; b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24); }
static inline void ba_store_le64(void *p, uint64_t v) { ba_store_le32(p, (uint32_t)v); ba_store_le32((uint8_t *)p + 4, (uint32_t)(v >> 32)); }
/* Network (big-endian) loads for packet and export parsing. */
static inline uint16_t ba_load_be16(const void *p) { const uint8_t *b = (const uint8_t *)p; return (uint16_t)((b[0] << 8) | b[1]); }
static inline uint32_t ba_load_be32(const void *p) { const uint8_t *b = (const uint8_t *)p; return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3]; }
static inline uint64_t ba_load_be64(const void *p) { const uint8_t *b = (const uint8_t *)p; return ((uint64_t)ba_load_be32(b) << 32) | ba_load_be32(b + 4); }

/* CRC32C (Castagnoli), as used for every block and header. `crc` is the value
 * returned by a previous call (0 to start). */
uint32_t ba_crc32c(uint32_t crc, const void *data, size_t len);

/* Allocation hooks: every allocation in the library goes through these. */
void *ba_malloc(size_t n);
void *ba_calloc(size_t n, size_t size);
void *ba_realloc(void *p, size_t n);
void ba_free(void *p);
typedef struct ba_alloc_hooks {
  void *(*malloc_fn)(size_t);
  void *(*calloc_fn)(size_t, size_t);
  void *(*realloc_fn)(void *, size_t);
  void (*free_fn)(void *);
} ba_alloc_hooks_t;
/* NULL restores the C library allocator. Not thread-safe; call before use. */
void ba_set_alloc_hooks(const ba_alloc_hooks_t *hooks);

/* Grows *buf (elements of `elem` bytes) to hold at least `need` elements. */
int ba_grow(void **buf, size_t *cap, size_t need, size_t elem);

/* thread.c: names thread t (printf-style, cut to 15 bytes), best effort. */
void ba_thread_name(pthread_t t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Monotonic clock in nanoseconds (for progress and benchmarks). */
uint64_t ba_now_ns(void);

/* radix.c: stable LSD radix sort of n elements of `words` 64-bit words each
 * (a[i * words .. i * words + words)) by bits [lo, hi) of their word w, 11
 * bits a pass, a pass skipped where every element has the same digit; tmp
 * holds n elements; the result ends in a. */
void ba_radix_sort(uint64_t *a, uint64_t *tmp, size_t n, unsigned words, unsigned w, unsigned lo, unsigned hi);

#endif
