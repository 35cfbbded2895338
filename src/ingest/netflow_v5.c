/* NetFlow v5: a 24-byte header and up to 30 records of 48 bytes. Some
 * exporters and replay tools concatenate several messages in one datagram;
 * each is decoded. The header's engine type/id and sampling interval are
 * kept in every record; a sampling interval N > 1 multiplies the counters by
 * N, as nfdump does (doc/decoders.md). */
#include <string.h>

#include "common/common.h"
#include "ingest/flow_internal.h"

#define V5_HDR 24
#define V5_REC 48
#define V5_MAX 30

int nf_detect_v5(const uint8_t *buf, size_t len) {
  size_t off = 0;
  while (off < len) {
    if (len - off < V5_HDR || ba_load_be16(buf + off) != 5) return 0;
    uint16_t count = ba_load_be16(buf + off + 2);
    if (count == 0 || count > V5_MAX || len - off < V5_HDR + (size_t)V5_REC * count) return 0;
    off += V5_HDR + (size_t)V5_REC * count;
  }
  return 1;
}

/* ba_addr_set_v4 into a zeroed address, from the 4 bytes at be (network
 * order: stored as they are). */
static inline void v4_into_zeroed(uint8_t a[16], const uint8_t *be) {
  a[10] = 0xff;
  a[11] = 0xff;
  memcpy(a + 12, be, 4);
}

static void v5_record(ba_flow_decoder_t *d, const nf_hdr_t *h, const uint8_t *hb, const uint8_t *p) {
  ba_record_t *r = nf_out_next(d); /* zeroed */
  v4_into_zeroed(r->src, p);
  v4_into_zeroed(r->dst, p + 4);
  if (ba_load_be32(p + 8)) v4_into_zeroed(r->next_hop, p + 8);
  r->ipver = 4;
  r->in_if = ba_load_be16(p + 12);
  r->out_if = ba_load_be16(p + 14);
  r->packets = ba_load_be32(p + 16);
  r->bytes = ba_load_be32(p + 20);
  r->src_port = ba_load_be16(p + 32);
  r->dst_port = ba_load_be16(p + 34);
  r->tcp_flags = p[37];
  r->proto = p[38];
  r->tos = p[39];
  r->src_as = ba_load_be16(p + 40);
  r->dst_as = ba_load_be16(p + 42);
  r->src_mask = p[44];
  r->dst_mask = p[45];
  r->engine_type = hb[20];
  r->engine_id = hb[21];
  uint16_t smp = ba_load_be16(hb + 22);
  uint32_t interval = smp & 0x3fff;
  if (interval) {
    r->sampling = interval;
    r->sampling_algo = (uint8_t)(smp >> 14);
    if (interval > 1 && !(d->o.flags & BA_FLOW_RAW_COUNTERS)) {
      r->packets *= interval;
      r->bytes *= interval;
    }
  }
  if (nf_rec_finish_v5(d, h, r, ba_load_be32(p + 24), ba_load_be32(p + 28)) == 0) nf_out_commit(d);
}

void nf_decode_v5(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns) {
  if (len < V5_HDR) {
    nf_set_err(d, "NetFlow v5 datagram of %zu bytes is shorter than its header", len);
    nf_drop(d, BA_DROP_TRUNCATED, 1);
    return;
  }
  CNT(d, datagrams)++;
  CNT(d, datagrams_v5)++;
  size_t off = 0;
  unsigned msg = 0;
  while (off < len) {
    const uint8_t *hb = b + off;
    if (len - off < V5_HDR || ba_load_be16(hb) != 5) {
      nf_set_err(d, "%zu bytes at offset %zu after %u NetFlow v5 message(s) are no v5 message", len - off, off, msg);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    CNT(d, messages)++;
    msg++;
    uint16_t count = ba_load_be16(hb + 2);
    nf_hdr_t h;
    h.version = 5;
    h.uptime_ms = ba_load_be32(hb + 4);
    h.export_ns = (uint64_t)ba_load_be32(hb + 8) * NS_PER_S + BA_MIN(ba_load_be32(hb + 12), 999999999u);
    h.received_ns = received_ns;
    h.domain = 0;
    nf_hdr_clock(d, &h);
    size_t have = (len - off - V5_HDR) / V5_REC;
    if (count > V5_MAX) {
      nf_set_err(d, "NetFlow v5 message %u at offset %zu says %u records (at most 30)", msg, off, count);
      nf_drop(d, BA_DROP_MALFORMED, 1);
      return;
    }
    if (count > have) {
      nf_set_err(d, "NetFlow v5 message %u at offset %zu says %u records but holds %zu", msg, off, count, have);
      nf_drop(d, BA_DROP_TRUNCATED, 1);
    }
    size_t n = BA_MIN((size_t)count, have);
    for (size_t i = 0; i < n; i++) v5_record(d, &h, hb, hb + V5_HDR + V5_REC * i);
    if (count > have) return;
    off += V5_HDR + (size_t)V5_REC * count;
  }
}
