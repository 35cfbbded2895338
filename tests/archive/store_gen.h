/* Random flow and packet records for the store tests (IPv4 and IPv6, skewed
 * values so bitmaps have runs, frames for packets). */
#ifndef BA_TEST_STORE_GEN_H
#define BA_TEST_STORE_GEN_H

#include <stdlib.h>
#include <string.h>

#include "testsupport.h"

typedef struct gen {
  ba_record_t *r;
  size_t n;
  uint8_t *frames; /* arena the frame pointers point into */
} gen_t;

/* The extended flow fields (record.h), each set on about half the calls,
 * skewed like real exporters (few distinct values, some large). */
static inline void gen_extended(ba_record_t *r, ba_rng_t *rng) {
#define MAYBE(stmt) do { if (ba_rng_below(rng, 2)) { stmt; } } while (0)
  MAYBE(r->out_packets = 1 + ba_rng_zipf(rng, 100000, 1.3); r->out_bytes = r->out_packets * (40 + ba_rng_below(rng, 1460)));
  MAYBE(r->received_ns = r->first_ns + ba_rng_below(rng, 60000000000ull));
  MAYBE(r->in_src_mac = 0x0000AABBCC000000ull | ba_rng_below(rng, 16); r->out_dst_mac = ba_rng_next(rng) & 0xFFFFFFFFFFFFull);
  MAYBE(r->in_dst_mac = ba_rng_below(rng, 4); r->out_src_mac = 0xFFFFFFFFFFFFull);
  MAYBE(ba_addr_set_v4(r->next_hop, 0xC0A80001u + (uint32_t)ba_rng_below(rng, 4)));
  MAYBE(for (int k = 0; k < 16; k++) r->bgp_next_hop[k] = (uint8_t)ba_rng_below(rng, 3); r->bgp_next_hop[0] = 0x20);
  MAYBE(ba_addr_set_v4(r->xsrc, (uint32_t)ba_rng_next(rng)); ba_addr_set_v4(r->xdst, 0x64400000u | (uint32_t)ba_rng_below(rng, 1000));
        r->xsrc_port = (uint16_t)ba_rng_next(rng); r->xdst_port = 443; r->nat_event = (uint8_t)ba_rng_below(rng, 3));
  MAYBE(for (int k = 0; k < 10; k++) r->mpls[k] = k < 3 ? (uint32_t)ba_rng_next(rng) : 0);
  MAYBE(r->obs_domain = (uint32_t)ba_rng_below(rng, 3); r->engine_type = 1; r->engine_id = (uint8_t)ba_rng_below(rng, 256));
  MAYBE(r->direction = (uint8_t)ba_rng_below(rng, 2));
  MAYBE(r->sampling = 1000; r->sampling_algo = 2);
  MAYBE(r->ingress_vrf = (uint32_t)ba_rng_below(rng, 5); r->egress_vrf = UINT32_MAX);
  MAYBE(r->prev_as = (uint32_t)ba_rng_below(rng, 70000); r->next_as = (uint32_t)ba_rng_next(rng));
  MAYBE(r->aggr_flows = (uint32_t)ba_rng_below(rng, 100));
  MAYBE(r->fw_event = (uint8_t)ba_rng_below(rng, 6); r->fw_xevent = (uint16_t)(1000 + ba_rng_below(rng, 10)));
  MAYBE(r->dst_tos = 0xB8; r->dst_vlan = (uint16_t)ba_rng_below(rng, 4096));
  MAYBE(r->src_mask = (uint8_t)ba_rng_below(rng, 33); r->dst_mask = 24);
#undef MAYBE
}

/* n records with first_ns in [t0, t0 + span_ns), in time order if `sorted`. */
static inline void gen_records(gen_t *g, size_t n, uint64_t seed, uint64_t t0, uint64_t span_ns,
                               int sorted) {
  ba_rng_t rng;
  ba_rng_seed(&rng, seed);
  g->n = n;
  g->r = calloc(n ? n : 1, sizeof *g->r);
  g->frames = malloc(n * 200 + 1);
  size_t fo = 0;
  for (size_t i = 0; i < n; i++) {
    ba_record_t *r = &g->r[i];
    uint64_t t = sorted ? t0 + span_ns * i / (n ? n : 1) + ba_rng_below(&rng, 1000)
                        : t0 + ba_rng_below(&rng, span_ns);
    r->first_ns = t;
    r->last_ns = t + ba_rng_below(&rng, 5000000000ull);
    int pkt = ba_rng_below(&rng, 3) == 0;
    r->kind = pkt ? BA_REC_PACKET : BA_REC_FLOW;
    unsigned v = (unsigned)ba_rng_below(&rng, 10);
    r->ipver = v < 7 ? 4 : v < 9 ? 6 : (pkt ? 0 : 4);
    if (r->ipver == 4) {
      ba_addr_set_v4(r->src, 0x0A000000u | (uint32_t)ba_rng_zipf(&rng, 5000, 1.1));
      ba_addr_set_v4(r->dst, 0xC0A80000u | (uint32_t)ba_rng_zipf(&rng, 300, 1.2));
    } else if (r->ipver == 6) {
      for (int k = 0; k < 16; k++) {
        r->src[k] = (uint8_t)ba_rng_below(&rng, 4);
        r->dst[k] = (uint8_t)ba_rng_next(&rng);
      }
      r->src[0] = 0x20;
    }
    static const uint16_t ports[] = {80, 443, 53, 22, 445, 137, 8080, 123};
    r->src_port = (uint16_t)(ba_rng_below(&rng, 4) ? 1024 + ba_rng_below(&rng, 64000) : ports[ba_rng_below(&rng, 8)]);
    r->dst_port = (uint16_t)(ba_rng_below(&rng, 5) ? ports[ba_rng_zipf(&rng, 8, 1.0)] : ba_rng_below(&rng, 65536));
    static const uint8_t protos[] = {6, 17, 1, 58, 47};
    r->proto = r->ipver ? protos[ba_rng_zipf(&rng, 5, 1.5)] : 0;
    r->tcp_flags = r->proto == 6 ? (uint8_t)ba_rng_below(&rng, 64) : 0;
    r->tos = (uint8_t)(ba_rng_below(&rng, 8) == 0 ? 0x10 : 0);
    r->src_as = (uint32_t)ba_rng_below(&rng, 70000);
    r->dst_as = (uint32_t)ba_rng_zipf(&rng, 100, 1.0);
    r->in_if = (uint32_t)ba_rng_below(&rng, 4);
    r->out_if = (uint32_t)ba_rng_below(&rng, 4);
    r->packets = pkt ? 1 : 1 + ba_rng_zipf(&rng, 100000, 1.3);
    r->bytes = r->packets * (40 + ba_rng_below(&rng, 1460));
    r->vlan = (uint16_t)(ba_rng_below(&rng, 4) == 0 ? 100 : 0);
    if (r->proto == 1) {
      r->icmp_type = (uint8_t)ba_rng_below(&rng, 12);
      r->icmp_code = (uint8_t)ba_rng_below(&rng, 4);
    }
    if (!pkt && ba_rng_below(&rng, 3) == 0) gen_extended(r, &rng);
    if (!pkt) {
      ba_addr_set_v4(r->exporter, 0x7F000001u + (uint32_t)ba_rng_below(&rng, 3));
    } else {
      r->caplen = (uint32_t)ba_rng_below(&rng, 200);
      r->wirelen = r->caplen + (uint32_t)ba_rng_below(&rng, 1000);
      r->linktype = 1;
      for (uint32_t k = 0; k < r->caplen; k++) g->frames[fo + k] = (uint8_t)ba_rng_next(&rng);
      r->frame = r->caplen ? g->frames + fo : NULL;
      fo += r->caplen;
    }
  }
}

static inline void gen_free(gen_t *g) {
  free(g->r);
  free(g->frames);
  memset(g, 0, sizeof *g);
}

/* Field equality restricted to the columns in mask (BA_COL_*). */
static inline int rec_equal(const ba_record_t *a, const ba_record_t *b, uint32_t mask) {
  if (a->kind != b->kind || a->ipver != b->ipver) return 0;
  if ((mask & BA_COL_FIRST) && a->first_ns != b->first_ns) return 0;
  if ((mask & BA_COL_LAST) && a->last_ns != b->last_ns) return 0;
  if ((mask & BA_COL_SRC) && memcmp(a->src, b->src, 16)) return 0;
  if ((mask & BA_COL_DST) && memcmp(a->dst, b->dst, 16)) return 0;
  if ((mask & BA_COL_PORTS) && (a->src_port != b->src_port || a->dst_port != b->dst_port)) return 0;
  if ((mask & BA_COL_PROTO) && a->proto != b->proto) return 0;
  if ((mask & BA_COL_FLAGS) && a->tcp_flags != b->tcp_flags) return 0;
  if ((mask & BA_COL_TOS) && a->tos != b->tos) return 0;
  if ((mask & BA_COL_AS) && (a->src_as != b->src_as || a->dst_as != b->dst_as)) return 0;
  if ((mask & BA_COL_IF) && (a->in_if != b->in_if || a->out_if != b->out_if)) return 0;
  if ((mask & BA_COL_PACKETS) && a->packets != b->packets) return 0;
  if ((mask & BA_COL_BYTES) && a->bytes != b->bytes) return 0;
  if ((mask & BA_COL_EXPORTER) && memcmp(a->exporter, b->exporter, 16)) return 0;
  if ((mask & BA_COL_VLAN) && a->vlan != b->vlan) return 0;
  if ((mask & BA_COL_ICMP) && (a->icmp_type != b->icmp_type || a->icmp_code != b->icmp_code)) return 0;
  if (mask & BA_COL_FRAME) {
    if (a->caplen != b->caplen || a->wirelen != b->wirelen || a->linktype != b->linktype) return 0;
    if (a->caplen && memcmp(a->frame, b->frame, a->caplen)) return 0;
  }
#define SAME(f) (a->f == b->f)
#define SAMEB(f) (memcmp(a->f, b->f, sizeof a->f) == 0)
  if ((mask & BA_COL_OUT) && !(SAME(out_packets) && SAME(out_bytes))) return 0;
  if ((mask & BA_COL_NEXTHOP) && !(SAMEB(next_hop) && SAMEB(bgp_next_hop))) return 0;
  if ((mask & BA_COL_MASK) && !(SAME(src_mask) && SAME(dst_mask))) return 0;
  if ((mask & BA_COL_DSTTOS) && !(SAME(dst_tos) && SAME(dst_vlan))) return 0;
  if ((mask & BA_COL_ENGINE) && !(SAME(obs_domain) && SAME(engine_type) && SAME(engine_id) && SAME(direction)))
    return 0;
  if ((mask & BA_COL_SAMPLING) && !(SAME(sampling) && SAME(sampling_algo))) return 0;
  if ((mask & BA_COL_NAT) && !(SAMEB(xsrc) && SAMEB(xdst) && SAME(xsrc_port) && SAME(xdst_port) && SAME(nat_event)))
    return 0;
  if ((mask & BA_COL_FW) && !(SAME(fw_event) && SAME(fw_xevent) && SAME(ingress_vrf) && SAME(egress_vrf))) return 0;
  if ((mask & BA_COL_MPLS) && !SAMEB(mpls)) return 0;
  if ((mask & BA_COL_MAC) && !(SAME(in_src_mac) && SAME(out_dst_mac) && SAME(in_dst_mac) && SAME(out_src_mac)))
    return 0;
  if ((mask & BA_COL_BGPAS) && !(SAME(prev_as) && SAME(next_as))) return 0;
  if ((mask & BA_COL_MISC) && !(SAME(received_ns) && SAME(aggr_flows))) return 0;
#undef SAME
#undef SAMEB
  return 1;
}

/* Unasked fields must be zero. */
static inline int rec_zero_outside(const ba_record_t *a, uint32_t mask) {
  static const uint8_t z[16] = {0};
  if (!(mask & BA_COL_FIRST) && a->first_ns) return 0;
  if (!(mask & BA_COL_SRC) && memcmp(a->src, z, 16)) return 0;
  if (!(mask & BA_COL_PORTS) && (a->src_port || a->dst_port)) return 0;
  if (!(mask & BA_COL_BYTES) && a->bytes) return 0;
  if (!(mask & BA_COL_FRAME) && (a->caplen || a->frame)) return 0;
  if (!(mask & BA_COL_OUT) && (a->out_packets || a->out_bytes)) return 0;
  if (!(mask & BA_COL_MPLS) && a->mpls[0]) return 0;
  if (!(mask & BA_COL_NAT) && memcmp(a->xsrc, z, 16)) return 0;
  return 1;
}

/* The linear reference for one attribute value of a record. */
static inline uint32_t ref_attr(ba_attr_t a, const ba_record_t *r, uint64_t start, uint64_t bin_ns) {
  switch (a) {
    case BA_ATTR_SRC_V6NET: return r->ipver == 6 ? ba_test_v6_hash(r->src, 6) : UINT32_MAX;
    case BA_ATTR_DST_V6NET: return r->ipver == 6 ? ba_test_v6_hash(r->dst, 6) : UINT32_MAX;
    case BA_ATTR_SRC_V6HOST: return r->ipver == 6 ? ba_test_v6_hash(r->src, 16) : UINT32_MAX;
    case BA_ATTR_DST_V6HOST: return r->ipver == 6 ? ba_test_v6_hash(r->dst, 16) : UINT32_MAX;
    case BA_ATTR_SRC_IP0: case BA_ATTR_SRC_IP1: case BA_ATTR_SRC_IP2: case BA_ATTR_SRC_IP3:
      return r->ipver == 4 ? (ba_addr_get_v4(r->src) >> (8 * (3 - (a - BA_ATTR_SRC_IP0)))) & 0xFF : UINT32_MAX;
    case BA_ATTR_DST_IP0: case BA_ATTR_DST_IP1: case BA_ATTR_DST_IP2: case BA_ATTR_DST_IP3:
      return r->ipver == 4 ? (ba_addr_get_v4(r->dst) >> (8 * (3 - (a - BA_ATTR_DST_IP0)))) & 0xFF : UINT32_MAX;
    case BA_ATTR_SRC_PORT: return r->src_port;
    case BA_ATTR_DST_PORT: return r->dst_port;
    case BA_ATTR_PROTO: return r->proto;
    case BA_ATTR_TCP_FLAGS: return r->tcp_flags;
    case BA_ATTR_TIME_BIN: return (uint32_t)((r->first_ns - start) / bin_ns);
    case BA_ATTR_IPVER: return r->ipver;
    default: return UINT32_MAX;
  }
}

/* The reference column of attribute a over a whole segment's records: as
 * ref_attr, with ports held by fewer than n >> 10 rows (when that is at
 * least 2) folded into their bin (doc/format.md §7.4): no SRC/DST_PORT
 * value, a SRC/DST_PORT_BIN value instead. */
static inline void ref_column(ba_attr_t a, const ba_record_t *r, size_t n, uint64_t start, uint64_t bin_ns,
                              uint32_t *out) {
  int port = a == BA_ATTR_SRC_PORT || a == BA_ATTR_DST_PORT, bin = a == BA_ATTR_SRC_PORT_BIN || a == BA_ATTR_DST_PORT_BIN;
  if (!port && !bin) {
    for (size_t i = 0; i < n; i++) out[i] = ref_attr(a, &r[i], start, bin_ns);
    return;
  }
  int dst = a == BA_ATTR_DST_PORT || a == BA_ATTR_DST_PORT_BIN;
  uint32_t *cnt = calloc(65536, sizeof *cnt);
  for (size_t i = 0; i < n; i++) cnt[dst ? r[i].dst_port : r[i].src_port]++;
  uint64_t thr = n >> 10;
  for (size_t i = 0; i < n; i++) {
    uint32_t p = dst ? r[i].dst_port : r[i].src_port;
    int folded = thr >= 2 && cnt[p] < thr;
    out[i] = port ? (folded ? UINT32_MAX : p) : (folded ? ba_port_bin(p) : UINT32_MAX);
  }
  free(cnt);
}

#endif
