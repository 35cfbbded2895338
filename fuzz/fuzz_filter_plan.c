/* Fuzz target: the filter parser and the planner together. Every input that
 * compiles is run over a small store (written once per process: IPv4 and IPv6
 * flows over two segments) through the bitmap index and through the linear
 * scan; the two must agree on the number of matching rows, and neither may
 * fail. Inputs that do not compile must name a column inside the text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitarc/bitarc.h"
#include "bitarc/query.h"

static ba_store_t *g_store;

static void build_store(void) {
  char dir[] = "/tmp/ba_fuzz_plan_XXXXXX";
  if (!mkdtemp(dir)) abort();
  char path[64];
  snprintf(path, sizeof(path), "%s/st", dir);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 64;
  ba_store_writer_t *w;
  if (ba_store_writer_open(path, &o, &w) != 0) abort();
  uint64_t x = 12345;
  for (int i = 0; i < 600; i++) {
    ba_record_t r;
    memset(&r, 0, sizeof(r));
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    r.kind = BA_REC_FLOW;
    r.first_ns = 1720656000ull * 1000000000ull + (uint64_t)(i % 300) * 12000000000ull + (uint64_t)i * 1000ull +
                 (i >= 300 ? 3600ull * 1000000000ull : 0);
    r.last_ns = r.first_ns + (x >> 50) * 1000000ull;
    r.ipver = (x >> 7) % 8 ? 4 : 6;
    if (r.ipver == 4) {
      ba_addr_set_v4(r.src, 0x0A040000u | (uint32_t)((x >> 20) & 0xFF));
      ba_addr_set_v4(r.dst, 0xC0A80000u | (uint32_t)((x >> 28) & 0x3F));
    } else {
      r.src[0] = 0x20; r.src[1] = 0x01; r.src[15] = (uint8_t)(x >> 33);
      r.dst[0] = 0xfe; r.dst[1] = 0x80; r.dst[15] = (uint8_t)(x >> 41);
    }
    static const uint8_t protos[] = {6, 6, 6, 17, 17, 1, 58, 47};
    r.proto = protos[(x >> 11) % 8];
    r.src_port = (uint16_t)(1024 + ((x >> 13) % 60000));
    r.dst_port = (uint16_t)((x >> 17) % 4 ? ((x >> 19) % 3 ? 80 : 53) : (x >> 23) % 2048);
    r.tcp_flags = r.proto == 6 ? (uint8_t)((x >> 29) & 0x3F) : 0;
    r.packets = 1 + (x >> 37) % 100;
    r.bytes = r.packets * (40 + (x >> 45) % 1400);
    r.tos = (uint8_t)((x >> 9) % 4 == 0 ? 32 : 0);
    r.src_as = (uint32_t)((x >> 3) % 5);
    r.in_if = (uint32_t)((x >> 5) % 4);
    ba_addr_set_v4(r.exporter, 0x7F000001);
    if (ba_store_writer_append(w, &r, 1) != 0) abort();
  }
  if (ba_store_writer_close(w) != 0) abort();
  if (ba_store_open(path, &g_store) != 0) abort();
}

static int count_sink(void *ctx, const ba_record_t *recs, size_t n) {
  (void)ctx;
  (void)recs;
  (void)n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_store) build_store();
  if (size > 4096) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  ba_query_t *q;
  if (ba_query_create(&q) == 0) {
    ba_query_set_now(q, 1720699200ull * 1000000000ull);
    if (ba_query_compile(q, text) == 0) {
      ba_query_exec_opts_t o;
      ba_query_stats_t a, b;
      ba_query_exec_opts_init(&o);
      o.out_cols = BA_COL_ALL & ~(uint32_t)BA_COL_FRAME;
      if (ba_query_run(q, g_store, &o, count_sink, NULL, &a) != 0) abort();
      o.force_scan = 1;
      if (ba_query_run(q, g_store, &o, count_sink, NULL, &b) != 0) abort();
      if (a.rows_matched != b.rows_matched) abort();
      o.force_scan = 0;
      o.count_only = 1;
      if (ba_query_run(q, g_store, &o, count_sink, NULL, &b) != 0) abort();
      if (a.rows_matched != b.rows_matched) abort();
    } else if (ba_query_errcol(q) > size) {
      abort();
    }
    ba_query_free(q);
  }
  free(text);
  return 0;
}
