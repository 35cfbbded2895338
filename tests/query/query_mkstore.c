/* Test helper: writes a store of random skewed records with the writer API.
 *   query_mkstore DIR N flows|packets [seed [K]]
 * With K > 1 the same records are also split over K stores DIR.1 .. DIR.K
 * (record i to store (i + i / 7) % K: interleaved in time, as exporters
 * are), each with another slice width (1 h, 30 min, 2 h, ...), so a query
 * over the K stores can be compared with one over DIR. Start times
 * increase strictly, so DIR's row order is the merged start-time order.
 * Packet records carry real Ethernet/IPv4|IPv6/TCP|UDP|ICMP frames whose
 * headers agree with the record fields, so a pcap written by `bitarc query -w`
 * can be checked with tcpdump/tshark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitarc/bitarc.h"
#include "testsupport.h"

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static size_t make_frame(const ba_record_t *r, uint8_t *f, size_t payload) {
  memset(f, 0, 14);
  f[0] = 0x02; f[5] = 0x01; f[6] = 0x02; f[11] = 0x02;
  size_t l4 = r->proto == 6 ? 20 : 8;
  size_t off;
  if (r->ipver == 4) {
    put16(f + 12, 0x0800);
    uint8_t *ip = f + 14;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[1] = r->tos;
    put16(ip + 2, (uint16_t)(20 + l4 + payload));
    ip[8] = 64;
    ip[9] = r->proto;
    memcpy(ip + 12, r->src + 12, 4);
    memcpy(ip + 16, r->dst + 12, 4);
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    put16(ip + 10, (uint16_t)~sum);
    off = 34;
  } else {
    put16(f + 12, 0x86DD);
    uint8_t *ip = f + 14;
    memset(ip, 0, 40);
    ip[0] = 0x60;
    put16(ip + 4, (uint16_t)(l4 + payload));
    ip[6] = r->proto;
    ip[7] = 64;
    memcpy(ip + 8, r->src, 16);
    memcpy(ip + 24, r->dst, 16);
    off = 54;
  }
  uint8_t *t = f + off;
  memset(t, 0, l4 + payload);
  if (r->proto == 6) {
    put16(t, r->src_port);
    put16(t + 2, r->dst_port);
    t[12] = 0x50;
    t[13] = r->tcp_flags;
    put16(t + 14, 1024);
  } else if (r->proto == 17) {
    put16(t, r->src_port);
    put16(t + 2, r->dst_port);
    put16(t + 4, (uint16_t)(8 + payload));
  } else {
    t[0] = r->icmp_type;
    t[1] = r->icmp_code;
  }
  return off + l4 + payload;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DIR N flows|packets [seed [K]]\n", argv[0]);
    return 2;
  }
  size_t n = strtoull(argv[2], NULL, 10);
  int packets = !strcmp(argv[3], "packets");
  ba_rng_t r;
  ba_rng_seed(&r, argc > 4 ? strtoull(argv[4], NULL, 10) : 1);
  ba_store_opts_t o;
  ba_store_opts_init(&o);
  o.block_rows = 1000;
  ba_store_writer_t *w, *part[8];
  if (ba_store_writer_open(argv[1], &o, &w) < 0) return 1;
  size_t k = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
  if (k > 8) k = 8;
  static const uint32_t slices[8] = {3600, 1800, 7200, 900, 3600, 1800, 7200, 900};
  for (size_t s = 0; k > 1 && s < k; s++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s.%zu", argv[1], s + 1);
    ba_store_opts_t po = o;
    po.slice_seconds = slices[s];
    if (ba_store_writer_open(dir, &po, &part[s]) < 0) return 1;
  }
  static uint8_t frames[64][256];
  ba_record_t recs[64];
  const uint64_t base = 1720656000ull * 1000000000ull;
  static const uint16_t svc[] = {80, 443, 53, 137, 445, 22, 8080, 123};
  for (size_t i = 0; i < n; i += 64) {
    size_t m = n - i < 64 ? n - i : 64;
    for (size_t j = 0; j < m; j++) {
      ba_record_t *x = &recs[j];
      memset(x, 0, sizeof(*x));
      x->first_ns = base + (uint64_t)(i + j) * 2000000000ull * 3600 / (n ? n : 1) + (i + j) % 1000;
      x->ipver = ba_rng_below(&r, 10) ? 4 : 6;
      if (x->ipver == 4) {
        ba_addr_set_v4(x->src, ba_rng_below(&r, 2) ? 0x0A040000u | (uint32_t)ba_rng_zipf(&r, 4096, 1.0)
                                                   : (uint32_t)ba_rng_next(&r));
        ba_addr_set_v4(x->dst, 0x0A050000u | (uint32_t)ba_rng_zipf(&r, 65536, 1.1));
      } else {
        static const uint8_t p6[8] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0};
        memcpy(x->src, p6, 8);
        memcpy(x->dst, p6, 8);
        x->src[7] = (uint8_t)ba_rng_below(&r, 3);
        x->src[15] = (uint8_t)ba_rng_zipf(&r, 100, 1.0);
        x->dst[15] = (uint8_t)ba_rng_zipf(&r, 100, 1.0);
      }
      unsigned pk = (unsigned)ba_rng_below(&r, 10);
      x->proto = pk < 6 ? 6 : pk < 9 ? 17 : (x->ipver == 4 ? 1 : 58);
      if (x->proto == 6 || x->proto == 17) {
        x->dst_port = ba_rng_below(&r, 3) ? svc[ba_rng_zipf(&r, 8, 1.0)] : (uint16_t)ba_rng_below(&r, 65536);
        x->src_port = (uint16_t)(1024 + ba_rng_below(&r, 64512));
      } else {
        x->icmp_type = ba_rng_below(&r, 2) ? 8 : 0;
        if (x->proto == 58) x->icmp_type = x->icmp_type ? 128 : 129;
        x->dst_port = (uint16_t)(x->icmp_type << 8);
      }
      if (x->proto == 6) {
        static const uint8_t fl[] = {0x02, 0x12, 0x10, 0x18, 0x11, 0x04, 0x14, 0x19};
        x->tcp_flags = fl[ba_rng_zipf(&r, 8, 1.0)];
      }
      x->tos = (uint8_t)(x->ipver == 4 && !ba_rng_below(&r, 5) ? 0x20 : 0);
      if (packets) {
        x->kind = BA_REC_PACKET;
        x->last_ns = x->first_ns;
        x->packets = 1;
        size_t pl = ba_rng_below(&r, 100);
        x->caplen = (uint32_t)make_frame(x, frames[j], pl);
        x->wirelen = x->caplen;
        x->bytes = x->wirelen;
        x->linktype = 1;
        x->frame = frames[j];
      } else {
        x->kind = BA_REC_FLOW;
        x->last_ns = x->first_ns + ba_rng_zipf(&r, 100000, 1.1) * 1000000ull;
        x->packets = 1 + ba_rng_zipf(&r, 10000, 1.2);
        x->bytes = x->packets * (40 + ba_rng_below(&r, 1400));
        x->src_as = (uint32_t)ba_rng_below(&r, 100);
        x->dst_as = (uint32_t)ba_rng_below(&r, 100);
        x->in_if = (uint32_t)ba_rng_below(&r, 4);
        x->out_if = (uint32_t)ba_rng_below(&r, 4);
      }
    }
    if (ba_store_writer_append(w, recs, m) < 0) return 1;
    for (size_t j = 0; k > 1 && j < m; j++)
      if (ba_store_writer_append(part[(i + j + (i + j) / 7) % k], &recs[j], 1) < 0) return 1;
  }
  for (size_t s = 0; k > 1 && s < k; s++)
    if (ba_store_writer_close(part[s]) < 0) return 1;
  return ba_store_writer_close(w) < 0;
}
