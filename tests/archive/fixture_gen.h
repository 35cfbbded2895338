/* Deterministic records of the committed 1.0 segment fixture
 * (tests/archive/data/seg-v1_0.bitarc). Self-contained on purpose: the
 * fixture's contents must not move when other test generators change.
 * Flows and packets (with frames), IPv4, IPv6 and non-IP, every column set. */
#ifndef BA_TEST_FIXTURE_GEN_H
#define BA_TEST_FIXTURE_GEN_H

#include <stdint.h>
#include <string.h>

#include "bitarc/record.h"

#define FX_N 250
#define FX_T0 1763769600000000000ull /* 2025-11-22 00:00:00 UTC */
#define FX_FRAME_BYTES (FX_N * 48)

static inline uint64_t fx_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Fills r[0..FX_N) and frames[0..FX_FRAME_BYTES) (frame pointers point in). */
static inline void fx_records(ba_record_t *r, uint8_t *frames) {
  uint64_t s = 0x5EED1234u, t = FX_T0;
  size_t fo = 0;
  memset(r, 0, FX_N * sizeof *r);
  for (size_t i = 0; i < FX_N; i++) {
    ba_record_t *x = &r[i];
    t += fx_next(&s) % 50000000u;
    x->first_ns = t;
    int pkt = i % 3 == 0;
    x->kind = pkt ? BA_REC_PACKET : BA_REC_FLOW;
    x->last_ns = pkt ? t : t + (fx_next(&s) % 5000u) * 1000000u;
    unsigned v = (unsigned)(fx_next(&s) % 10);
    x->ipver = v < 7 ? 4 : v < 9 ? 6 : (pkt ? 0 : 4);
    if (x->ipver == 4) {
      ba_addr_set_v4(x->src, 0x0A000000u | (uint32_t)(fx_next(&s) % 300));
      ba_addr_set_v4(x->dst, 0xC0A80000u | (uint32_t)(fx_next(&s) % 40));
    } else if (x->ipver == 6) {
      for (int k = 0; k < 16; k++) {
        x->src[k] = (uint8_t)(fx_next(&s) % 4);
        x->dst[k] = (uint8_t)fx_next(&s);
      }
      x->src[0] = 0x20;
    }
    if (x->ipver) {
      x->proto = (uint8_t)((const uint8_t[]){6, 17, 1, 6, 6, 17})[fx_next(&s) % 6];
      x->src_port = (uint16_t)(1024 + fx_next(&s) % 64000);
      x->dst_port = (uint16_t)((const uint16_t[]){80, 443, 53, 22})[fx_next(&s) % 4];
      x->tcp_flags = x->proto == 6 ? (uint8_t)(fx_next(&s) % 64) : 0;
      x->tos = (uint8_t)(fx_next(&s) % 8 == 0 ? 0x10 : 0);
      if (x->proto == 1) {
        x->icmp_type = 8;
        x->icmp_code = (uint8_t)(fx_next(&s) % 3);
        x->src_port = 0;
        x->dst_port = (uint16_t)(x->icmp_type << 8 | x->icmp_code);
      }
    }
    x->vlan = (uint16_t)(i % 4 == 0 ? 100 : 0);
    if (pkt) {
      x->packets = 1;
      x->caplen = (uint32_t)(fx_next(&s) % 49); /* 0..48, some empty */
      x->wirelen = x->caplen + (uint32_t)(fx_next(&s) % 1400);
      x->bytes = x->wirelen;
      x->linktype = 1;
      for (uint32_t k = 0; k < x->caplen; k++) frames[fo + k] = (uint8_t)fx_next(&s);
      x->frame = x->caplen ? frames + fo : NULL;
      fo += x->caplen;
    } else {
      x->packets = 1 + fx_next(&s) % 100000;
      x->bytes = x->packets * (40 + fx_next(&s) % 1460);
      x->src_as = (uint32_t)(fx_next(&s) % 70000);
      x->dst_as = (uint32_t)(fx_next(&s) % 100);
      x->in_if = (uint32_t)(fx_next(&s) % 4);
      x->out_if = (uint32_t)(fx_next(&s) % 4);
      ba_addr_set_v4(x->exporter, 0xAC100001u + (uint32_t)(fx_next(&s) % 3));
    }
  }
}

#endif
