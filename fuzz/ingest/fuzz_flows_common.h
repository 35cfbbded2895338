/* Shared body of the flow-export fuzz targets. The input is a sequence of
 * datagrams, each prefixed by a 2-byte big-endian length whose top bit picks
 * one of two exporters; `version` (5, 9, 10, or 0 = keep) overwrites each
 * datagram's version field so the fuzzer spends its time in one decoder;
 * 0x5f5 writes the sFlow v5 version word (00 00 00 05). */
#ifndef BA_FUZZ_FLOWS_COMMON_H
#define BA_FUZZ_FLOWS_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/ingest.h"

static int fuzz_sink(void *ctx, const ba_record_t *r, size_t n) {
  uint64_t *acc = ctx;
  for (size_t i = 0; i < n; i++) *acc += r[i].bytes + r[i].first_ns + r[i].src[15] + r[i].dst_port;
  return 0;
}

static int fuzz_flows(const uint8_t *data, size_t size, int version) {
  static const uint8_t ex[2][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1},
                                    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
  ba_flow_decoder_opts_t o;
  ba_flow_decoder_opts_init(&o);
  o.pending_max_sets = 8;
  ba_flow_decoder_t *d;
  if (ba_flow_decoder_create(&o, &d)) return 0;
  uint64_t acc = 0;
  uint8_t *dg = malloc(65536);
  size_t off = 0;
  while (dg && size - off >= 2) {
    uint16_t h = (uint16_t)(data[off] << 8 | data[off + 1]);
    off += 2;
    size_t len = h & 0x7fff;
    if (len > size - off) len = size - off;
    memcpy(dg, data + off, len);
    if (version == 0x5f5 && len >= 4) {
      memcpy(dg, "\0\0\0\5", 4);
    } else if (version && len >= 2) {
      dg[0] = 0;
      dg[1] = (uint8_t)version;
    }
    off += len;
    ba_flow_detect(dg, len);
    ba_flow_decode_at(d, ex[h >> 15], 1700000000000000000ull, dg, len, fuzz_sink, &acc);
  }
  ba_flow_decoder_finish(d);
  ba_ingest_counts_t c;
  ba_flow_decoder_counts(d, &c);
  ba_flow_source_t src[2];
  ba_flow_decoder_sources(d, src, 2);
  ba_flow_decoder_free(d);
  free(dg);
  return (int)(acc & 0);
}

#endif
