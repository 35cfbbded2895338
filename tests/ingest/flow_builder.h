/* A tiny export-datagram builder and a record-collecting sink, shared by the
 * flow decoder tests. */
#ifndef BA_TEST_FLOW_BUILDER_H
#define BA_TEST_FLOW_BUILDER_H

#include <stdint.h>
#include <string.h>

#include "bitarc/ingest.h"

typedef struct { uint8_t b[65536]; size_t n; } buf_t;
static inline void u8(buf_t *b, uint8_t v) { b->b[b->n++] = v; }
static inline void u16(buf_t *b, uint16_t v) { u8(b, (uint8_t)(v >> 8)); u8(b, (uint8_t)v); }
static inline void u32(buf_t *b, uint32_t v) { u16(b, (uint16_t)(v >> 16)); u16(b, (uint16_t)v); }
static inline void u64(buf_t *b, uint64_t v) { u32(b, (uint32_t)(v >> 32)); u32(b, (uint32_t)v); }
static inline void uN(buf_t *b, uint64_t v, int n) { for (int i = n - 1; i >= 0; i--) u8(b, (uint8_t)(v >> (8 * i))); }
static inline void bytes(buf_t *b, const void *p, size_t n) { memcpy(b->b + b->n, p, n); b->n += n; }
static inline void put16(buf_t *b, size_t at, uint16_t v) { b->b[at] = (uint8_t)(v >> 8); b->b[at + 1] = (uint8_t)v; }
static inline size_t set_begin(buf_t *b, uint16_t id) { size_t at = b->n; u16(b, id); u16(b, 0); return at; }
static inline void set_end(buf_t *b, size_t at) { put16(b, at + 2, (uint16_t)(b->n - at)); }
static inline void v9_hdr(buf_t *b, uint32_t uptime, uint32_t secs, uint32_t srcid) {
  b->n = 0; u16(b, 9); u16(b, 0); u32(b, uptime); u32(b, secs); u32(b, 1); u32(b, srcid);
}
static inline void ipfix_hdr(buf_t *b, uint32_t secs, uint32_t dom) {
  b->n = 0; u16(b, 10); u16(b, 0); u32(b, secs); u32(b, 1); u32(b, dom);
}
static inline void ipfix_end(buf_t *b) { put16(b, 2, (uint16_t)b->n); }

typedef struct { ba_record_t r[4096]; size_t n; } got_t;
static inline int collect(void *ctx, const ba_record_t *recs, size_t n) {
  got_t *g = ctx;
  for (size_t i = 0; i < n && g->n < 4096; i++) g->r[g->n++] = recs[i];
  return 0;
}

static const uint8_t EXP_A[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
static const uint8_t EXP_B[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 2};
#define SEC 1000000000ull
#define T0 1700000000u /* export time used by the crafted datagrams */

#endif
