/* sFlow version 5 (sflow.org sflow_version_5.txt): every flow sample becomes
 * one flow record, as nfdump's sfcapd stores it: packets = the sampling rate,
 * bytes = rate x the sampled frame's length, time = when the datagram was
 * received (sFlow carries no wall clock), the rate kept in `sampling`.
 * Headers come from the sampled packet header (Ethernet, IPv4 or IPv6) or
 * the IPv4/IPv6 data records; the extended switch, router and gateway records
 * give VLANs, next hops, masks and AS numbers. Counter samples are counted,
 * not stored. All fields are big-endian 32-bit words (XDR). */
#include <pcap/dlt.h>
#include <string.h>

#include "common/common.h"
#include "ingest/flow_internal.h"

/* A bounded XDR reader: reads past the end set `bad` and return 0. */
typedef struct xdr {
  const uint8_t *p;
  size_t len, off;
  int bad;
} xdr_t;

static uint32_t x32(xdr_t *x) {
  if (x->bad || x->len - x->off < 4) {
    x->bad = 1;
    return 0;
  }
  uint32_t v = ba_load_be32(x->p + x->off);
  x->off += 4;
  return v;
}

static const uint8_t *xbytes(xdr_t *x, size_t n) {
  size_t padded = (n + 3) & ~(size_t)3;
  if (x->bad || n > x->len || x->len - x->off < padded) {
    x->bad = 1;
    return NULL;
  }
  const uint8_t *q = x->p + x->off;
  x->off += padded;
  return q;
}

/* An sFlow address (type 1 = IPv4, 2 = IPv6) into the 16-byte form; 0 when
 * the type is unknown (the rest cannot be parsed then). */
static int xaddr(xdr_t *x, uint8_t out[16]) {
  uint32_t t = x32(x);
  if (t == 1) {
    const uint8_t *a = xbytes(x, 4);
    if (a && ba_load_be32(a)) ba_addr_set_v4(out, ba_load_be32(a)); /* 0.0.0.0: none */
  } else if (t == 2) {
    const uint8_t *a = xbytes(x, 16);
    if (a) memcpy(out, a, 16);
  } else if (t != 0) {
    x->bad = 1;
  }
  return !x->bad;
}

static uint64_t mac48(const uint8_t *m) { return nf_be_uint(m, 6); }

/* Headers of a sampled packet (header protocol 1 Ethernet, 11 IPv4, 12 IPv6).
 * Later records of the sample (IPv4/IPv6 data) override what they also
 * carry, as in sfcapd. */
static void sampled_header(xdr_t *x, ba_record_t *r, uint32_t *frame_len) {
  uint32_t proto = x32(x);
  *frame_len = x32(x);
  x32(x); /* stripped */
  uint32_t hl = x32(x);
  const uint8_t *hp = xbytes(x, hl);
  if (!hp) return;
  int dlt = proto == 1 ? DLT_EN10MB : (proto == 11 || proto == 12) ? DLT_RAW : -1;
  if (dlt < 0) return;
  ba_record_t pr;
  ba_packet_parse(dlt, hp, hl, *frame_len, 0, &pr, NULL);
  if (proto == 1 && hl >= 12) {
    r->out_dst_mac = mac48(hp);
    r->in_src_mac = mac48(hp + 6);
  }
  if (proto == 1) {
    /* Q-in-Q: the innermost tag, the customer's VLAN (as sfcapd and
     * akvorado take it; ba_packet_parse keeps the outer one for packets) */
    for (uint32_t off = 12; off + 4 <= hl; off += 4) {
      uint16_t et = ba_load_be16(hp + off);
      if (et != 0x8100 && et != 0x88a8 && et != 0x9100) break;
      uint16_t id = ba_load_be16(hp + off + 2) & 0xfff;
      if (id) r->vlan = id;
    }
  } else if (pr.vlan) {
    r->vlan = pr.vlan;
  }
  if (!pr.ipver) return;
  memcpy(r->src, pr.src, 16);
  memcpy(r->dst, pr.dst, 16);
  r->ipver = pr.ipver;
  r->proto = pr.proto;
  r->src_port = pr.src_port;
  r->dst_port = pr.dst_port;
  r->tcp_flags = pr.tcp_flags;
  r->tos = pr.tos;
  r->icmp_type = pr.icmp_type;
  r->icmp_code = pr.icmp_code;
}

static void sampled_ip(xdr_t *x, ba_record_t *r, uint32_t *frame_len, int v6) {
  *frame_len = x32(x);
  r->proto = (uint8_t)x32(x);
  const uint8_t *s = xbytes(x, v6 ? 16 : 4), *d = xbytes(x, v6 ? 16 : 4);
  if (!s || !d) return;
  if (v6) {
    memcpy(r->src, s, 16);
    memcpy(r->dst, d, 16);
  } else {
    ba_addr_set_v4(r->src, ba_load_be32(s));
    ba_addr_set_v4(r->dst, ba_load_be32(d));
  }
  r->ipver = v6 ? 6 : 4;
  r->src_port = (uint16_t)x32(x);
  r->dst_port = (uint16_t)x32(x);
  r->tcp_flags = (uint8_t)x32(x);
  r->tos = (uint8_t)x32(x);
  if (r->proto == 1 || r->proto == 58) { /* type and code in the port fields */
    r->icmp_type = (uint8_t)r->src_port;
    r->icmp_code = (uint8_t)r->dst_port;
    r->src_port = 0;
    r->dst_port = (uint16_t)(r->icmp_type << 8 | r->icmp_code);
  }
}

static void ext_gateway(xdr_t *x, ba_record_t *r) {
  xaddr(x, r->bgp_next_hop);
  x32(x); /* the router's own AS */
  r->src_as = x32(x);
  r->prev_as = x32(x); /* src peer AS */
  uint32_t segs = x32(x);
  for (uint32_t sg = 0; sg < segs && !x->bad; sg++) {
    x32(x); /* segment type */
    uint32_t n = x32(x);
    for (uint32_t i = 0; i < n && !x->bad; i++) {
      uint32_t as = x32(x);
      if (sg == 0 && i == 0) r->next_as = as;
      r->dst_as = as; /* the last AS of the path is the destination's */
    }
  }
  /* communities and local preference follow; the record length skips them */
}

/* One flow record of a flow sample. */
static void flow_record(xdr_t *x, uint32_t fmt, ba_record_t *r, uint32_t *frame_len) {
  switch (fmt) {
  case 1: sampled_header(x, r, frame_len); break;
  case 2: { /* its length is not the sampled size (sfcapd keeps the other records') */
    x32(x);
    const uint8_t *s = xbytes(x, 6), *d = xbytes(x, 6);
    if (s && d) {
      r->in_src_mac = mac48(s);
      r->out_dst_mac = mac48(d);
    }
    break;
  }
  case 3: sampled_ip(x, r, frame_len, 0); break;
  case 4: sampled_ip(x, r, frame_len, 1); break;
  case 1001: { /* a VLAN above 4095 (0xffffffff) is unknown: none */
    uint32_t in = x32(x);
    x32(x);
    uint32_t out = x32(x);
    r->vlan = in <= 4095 ? (uint16_t)in : 0;
    r->dst_vlan = out <= 4095 ? (uint16_t)out : 0;
    break;
  }
  case 1002:
    xaddr(x, r->next_hop);
    r->src_mask = (uint8_t)x32(x);
    r->dst_mask = (uint8_t)x32(x);
    break;
  case 1003: ext_gateway(x, r); break;
  default: break; /* skipped by its length */
  }
}

/* A flow sample (format 1) or expanded flow sample (format 3). Returns 0, or
 * -1 when a length inside it is impossible (error set). */
static int flow_sample(ba_flow_decoder_t *d, const nf_hdr_t *h, xdr_t *x, int expanded, uint32_t sub_agent) {
  uint32_t src_id, rate, in, out;
  x32(x); /* sequence */
  if (expanded) {
    x32(x);
    src_id = x32(x);
  } else {
    src_id = x32(x) & 0xffffff;
  }
  (void)src_id;
  rate = x32(x);
  x32(x); /* pool */
  x32(x); /* drops */
  if (expanded) {
    x32(x);
    in = x32(x);
    x32(x);
    out = x32(x);
  } else {
    in = x32(x) & 0x3fffffff;
    out = x32(x) & 0x3fffffff;
  }
  uint32_t n = x32(x);
  if (x->bad) return -1;
  ba_record_t *r = nf_out_next(d);
  r->in_if = in;
  r->out_if = out;
  uint32_t frame_len = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t fmt = x32(x), len = x32(x);
    const uint8_t *body = xbytes(x, len);
    if (!body) return -1;
    if (fmt >> 12) continue; /* enterprise-specific record */
    xdr_t sub = {body, len, 0, 0};
    flow_record(&sub, fmt & 0xfff, r, &frame_len);
  }
  if (!r->ipver) {
    r->ipver = 4;
    ba_addr_set_v4(r->src, 0);
    ba_addr_set_v4(r->dst, 0);
  }
  r->sampling = rate;
  r->packets = rate;
  r->bytes = (uint64_t)rate * frame_len;
  r->obs_domain = sub_agent;
  CNT(d, sflow_flow_samples)++;
  if (nf_rec_times(d, h, r, h->received_ns, h->received_ns) == 0) nf_out_commit(d);
  return 0;
}

static int sflow_header(xdr_t *x, uint32_t *sub_agent, uint32_t *uptime, uint32_t *nsamples) {
  x32(x); /* version */
  uint8_t agent[16];
  if (!xaddr(x, agent)) return -1;
  *sub_agent = x32(x);
  x32(x); /* sequence */
  *uptime = x32(x);
  *nsamples = x32(x);
  return x->bad ? -1 : 0;
}

int nf_detect_sflow(const uint8_t *buf, size_t len) {
  xdr_t x = {buf, len, 0, 0};
  uint32_t sub, up, n;
  if (len < 28 || ba_load_be32(buf) != 5 || sflow_header(&x, &sub, &up, &n)) return 0;
  if (n == 0 || n > len / 8) return 0;
  for (uint32_t i = 0; i < n; i++) {
    x32(&x);
    uint32_t sl = x32(&x);
    if (!xbytes(&x, sl)) return 0;
  }
  return 1; /* bytes after the last sample are ignored (as sfcapd and tshark) */
}

void nf_decode_sflow(ba_flow_decoder_t *d, const uint8_t *b, size_t len, uint64_t received_ns) {
  xdr_t x = {b, len, 0, 0};
  uint32_t sub, up, n;
  if (sflow_header(&x, &sub, &up, &n)) {
    nf_set_err(d, "sFlow v5 datagram of %zu bytes: header runs past the end or has an unknown agent address type",
               len);
    nf_drop(d, BA_DROP_TRUNCATED, 1);
    return;
  }
  CNT(d, datagrams)++;
  CNT(d, datagrams_sflow)++;
  CNT(d, messages)++;
  nf_hdr_t h = {5, received_ns, received_ns, up, sub};
  for (uint32_t i = 0; i < n; i++) {
    size_t at = x.off;
    uint32_t fmt = x32(&x), sl = x32(&x);
    const uint8_t *body = xbytes(&x, sl);
    if (!body) {
      nf_set_err(d, "sFlow sample %u of %u at offset %zu (format %u, length %u) runs past the datagram (%zu bytes)",
                 i + 1, n, at, fmt, sl, len);
      nf_drop(d, x.len - at >= 8 ? BA_DROP_MALFORMED : BA_DROP_TRUNCATED, 1);
      return;
    }
    xdr_t s = {body, sl, 0, 0};
    uint32_t f = fmt & 0xfff;
    if (fmt >> 12) continue;
    if (f == 1 || f == 3) {
      if (flow_sample(d, &h, &s, f == 3, sub)) {
        nf_set_err(d, "sFlow flow sample %u at offset %zu: a record runs past the sample's %u bytes", i + 1, at, sl);
        nf_drop(d, BA_DROP_MALFORMED, 1);
      }
    } else if (f == 2 || f == 4) {
      CNT(d, sflow_counter_samples)++;
    }
  }
}
