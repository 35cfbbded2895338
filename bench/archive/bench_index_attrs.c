/* Index representations compared on the records of a store (doc/format.md
 * §7.4, §7.6): for every segment, the bitmaps of candidate attribute
 * definitions are built with the batch builder in the segment's codec and
 * their serialized bytes (plus 24 directory bytes per bitmap) summed per
 * attribute. Prints bytes per record per candidate.
 * Usage: bench_index_attrs STORE [codec] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitarc.h"
#include "index/index.h"

enum {
  C_SRC_IP0, C_SRC_IP1, C_SRC_IP2, C_SRC_IP3, C_DST_IP0, C_DST_IP1, C_DST_IP2, C_DST_IP3,
  C_SRC_V4HI, C_SRC_V4LO, C_DST_V4HI, C_DST_V4LO, C_SRC_V4P24, C_DST_V4P24,
  C_SRC_PORT, C_DST_PORT,
  C_SRC_PORT_F12, C_SRC_BIN_F12, C_DST_PORT_F12, C_DST_BIN_F12,   /* fold < rows/4096 into >>10 bins */
  C_SRC_PORT_F10, C_SRC_BIN_F10, C_DST_PORT_F10, C_DST_BIN_F10,   /* fold < rows/1024 into >>12 bins */
  C_SRC_LT1024, C_DST_LT1024,                                     /* exact below 1024, nothing above */
  C_N
};
static const char *const g_names[C_N] = {
    "src_ip0", "src_ip1", "src_ip2", "src_ip3", "dst_ip0", "dst_ip1", "dst_ip2", "dst_ip3",
    "src_v4hi (a.b)", "src_v4lo (c.d)", "dst_v4hi (a.b)", "dst_v4lo (c.d)", "src_v4p24 (a.b.c)", "dst_v4p24 (a.b.c)",
    "src_port exact", "dst_port exact",
    "src_port frequent (>=rows/4096)", "  + src bins port>>10", "dst_port frequent (>=rows/4096)", "  + dst bins port>>10",
    "src_port frequent (>=rows/1024)", "  + src bins port>>12", "dst_port frequent (>=rows/1024)", "  + dst bins port>>12",
    "src_port < 1024 only", "dst_port < 1024 only"};

typedef struct acc {
  ba_record_t *r;
  size_t n, cap;
} acc_t;

static int sink(void *ctx, const ba_record_t *recs, size_t n) {
  acc_t *a = ctx;
  if (a->n + n > a->cap) {
    a->cap = (a->n + n) * 2;
    a->r = realloc(a->r, a->cap * sizeof *a->r);
    if (!a->r) return -1;
  }
  memcpy(a->r + a->n, recs, n * sizeof *recs);
  a->n += n;
  return 0;
}

static uint64_t attr_bytes(ba_codec_t codec, uint32_t domain, const uint32_t *v, size_t n) {
  ba_idx_attr_t at;
  memset(&at, 0, sizeof at);
  if (ba_idx_batch_build(codec, domain, v, n, &at) != BA_OK) {
    fprintf(stderr, "build failed\n");
    exit(1);
  }
  uint64_t b = 0;
  for (size_t i = 0; i < at.n; i++) b += ba_bitmap_serialized_size(at.bms[i]) + 24;
  ba_idx_attr_clear(&at);
  return b;
}

static uint32_t v4(const uint8_t a[16]) { return ba_addr_get_v4(a); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s STORE [codec]\n", argv[0]);
    return 2;
  }
  ba_store_t *st;
  if (ba_store_open(argv[1], &st) != BA_OK) {
    fprintf(stderr, "%s: cannot open\n", argv[1]);
    return 1;
  }
  uint64_t bytes[C_N] = {0}, rows = 0;
  for (size_t s = 0; s < ba_store_segment_count(st); s++) {
    ba_segment_t *seg;
    ba_segment_info_t inf;
    if (ba_store_segment(st, s, &seg) != BA_OK || ba_segment_info(seg, &inf) != BA_OK) continue;
    ba_codec_t codec = argc > 2 ? (ba_codec_t)atoi(argv[2]) : inf.codec;
    acc_t a = {0};
    if (ba_segment_scan(seg, BA_COL_SRC | BA_COL_DST | BA_COL_PORTS, sink, &a, NULL) != BA_OK) continue;
    size_t n = a.n;
    rows += n;
    uint32_t *v = malloc((n + 1) * sizeof *v);
    uint32_t *cnt = calloc(65536, sizeof *cnt);
    for (int c = 0; c < C_N; c++) {
      uint32_t dom = 256;
      int dst = 0;
      switch (c) {
        case C_SRC_IP0: case C_SRC_IP1: case C_SRC_IP2: case C_SRC_IP3:
        case C_DST_IP0: case C_DST_IP1: case C_DST_IP2: case C_DST_IP3: {
          dst = c >= C_DST_IP0;
          int byte = (c - C_SRC_IP0) % 4;
          for (size_t i = 0; i < n; i++)
            v[i] = a.r[i].ipver == 4 ? (v4(dst ? a.r[i].dst : a.r[i].src) >> (24 - 8 * byte)) & 0xFF : BA_IDX_NONE;
          break;
        }
        case C_SRC_V4HI: case C_SRC_V4LO: case C_DST_V4HI: case C_DST_V4LO: {
          dst = c >= C_DST_V4HI;
          int lo = (c - C_SRC_V4HI) % 2;
          dom = 65536;
          for (size_t i = 0; i < n; i++)
            v[i] = a.r[i].ipver == 4 ? (v4(dst ? a.r[i].dst : a.r[i].src) >> (lo ? 0 : 16)) & 0xFFFF : BA_IDX_NONE;
          break;
        }
        case C_SRC_V4P24: case C_DST_V4P24:
          dst = c == C_DST_V4P24;
          dom = 1u << 24;
          for (size_t i = 0; i < n; i++) v[i] = a.r[i].ipver == 4 ? v4(dst ? a.r[i].dst : a.r[i].src) >> 8 : BA_IDX_NONE;
          break;
        case C_SRC_PORT: case C_DST_PORT:
          dom = 65536;
          for (size_t i = 0; i < n; i++) v[i] = c == C_SRC_PORT ? a.r[i].src_port : a.r[i].dst_port;
          break;
        case C_SRC_LT1024: case C_DST_LT1024:
          dom = 65536;
          for (size_t i = 0; i < n; i++) {
            uint32_t p = c == C_SRC_LT1024 ? a.r[i].src_port : a.r[i].dst_port;
            v[i] = p < 1024 ? p : BA_IDX_NONE;
          }
          break;
        default: { /* folded ports: exact / bins pairs */
          int k = c - C_SRC_PORT_F12;
          int which = k % 2; /* 0 exact part, 1 bins */
          int isdst = (k / 2) % 2;
          int f10 = k >= 4;
          uint64_t thr = n / (f10 ? 1024 : 4096);
          unsigned shift = f10 ? 12 : 10;
          memset(cnt, 0, 65536 * sizeof *cnt);
          for (size_t i = 0; i < n; i++) cnt[isdst ? a.r[i].dst_port : a.r[i].src_port]++;
          dom = 65536;
          for (size_t i = 0; i < n; i++) {
            uint32_t p = isdst ? a.r[i].dst_port : a.r[i].src_port;
            int frequent = cnt[p] >= thr;
            v[i] = which == 0 ? (frequent ? p : BA_IDX_NONE) : (frequent ? BA_IDX_NONE : p >> shift);
          }
          break;
        }
      }
      bytes[c] += attr_bytes(codec, dom, v, n);
    }
    free(v);
    free(cnt);
    free(a.r);
    ba_segment_release(seg);
  }
  printf("%s: %llu records\n%-36s %10s\n", argv[1], (unsigned long long)rows, "attribute", "B/record");
  for (int c = 0; c < C_N; c++) printf("%-36s %10.3f\n", g_names[c], rows ? (double)bytes[c] / rows : 0);
  ba_store_close(st);
  return 0;
}
