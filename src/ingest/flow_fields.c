/* Which record field each v9/IPFIX information element feeds, how a value is
 * applied, and how a decoded record is finished: counters (delta, total,
 * initiator/responder, RFC 5103 reverse), sampling, ICMP, times, exporter
 * identity and clock checks. The element numbers and their meaning follow
 * IANA's IPFIX registry and nfdump's v9/IPFIX maps (doc/decoders.md). */
#include <pcap/dlt.h>
#include <stddef.h>
#include <string.h>

#include "common/common.h"
#include "ingest/flow_internal.h"

/* Counters are unsigned with reduced-size encoding (RFC 7011 §6.2): 1..8 bytes. */
#define U(op) (u ? (op) : OP_SKIP)
#define UMAX(op, m) (u && len <= (m) ? (op) : OP_SKIP)
#define LEN(op, l) (len == (l) ? (op) : OP_SKIP)

static uint8_t reverse_op(uint16_t type, uint16_t len) {
  int u = len >= 1 && len <= 8;
  switch (type) {
  case 1: return U(OP_OUT_BYTES);
  case 2: return U(OP_OUT_PKTS);
  case 85: return U(OP_OUT_BYTES_TOTAL);
  case 86: return U(OP_OUT_PKTS_TOTAL);
  case 6: return U(OP_REV_FLAGS);
  default: return OP_SKIP; /* other reverse values describe the same flow; kept from the forward side */
  }
}

uint8_t nf_element_op(int version, uint32_t pen, uint16_t type, uint16_t len) {
  int u = len >= 1 && len <= 8;
  if (pen == 0 && (type == 292 || type == 293)) return type == 292 ? OP_SUBTMPL : OP_SUBTMPL_MULTI; /* RFC 6313 */
  if (len == NF_VARLEN) return pen == 0 && type == 315 ? OP_FRAME_SECTION : OP_SKIP;
  if (pen == PEN_REVERSE) return reverse_op(type, len);
  if (pen) return OP_SKIP;
  if (type >= 70 && type <= 79) return UMAX(OP_MPLS0 + (type - 70), 4);
  switch (type) {
  case 1: return U(OP_BYTES);
  case 2: return U(OP_PKTS);
  case 3: return UMAX(OP_AGGR_FLOWS, 4);
  case 4: return LEN(OP_PROTO, 1);
  case 5: return LEN(OP_TOS, 1);
  case 6: return U(OP_FLAGS); /* 1 byte in v9, 2 in IPFIX */
  case 7: return UMAX(OP_SPORT, 2);
  case 8: return LEN(OP_SRC4, 4);
  case 9: case 29: return LEN(OP_SRC_MASK, 1);
  case 10: return UMAX(OP_IN_IF, 4);
  case 11: return UMAX(OP_DPORT, 2);
  case 12: return LEN(OP_DST4, 4);
  case 13: case 30: return LEN(OP_DST_MASK, 1);
  case 14: return UMAX(OP_OUT_IF, 4);
  case 15: return LEN(OP_NH4, 4);
  case 16: return UMAX(OP_SRC_AS, 4);
  case 17: return UMAX(OP_DST_AS, 4);
  case 18: return LEN(OP_BGPNH4, 4);
  case 21: return UMAX(OP_LAST_UP, 4);
  case 22: return UMAX(OP_FIRST_UP, 4);
  case 23: return U(OP_OUT_BYTES);
  case 24: return U(OP_OUT_PKTS);
  case 27: return LEN(OP_SRC6, 16);
  case 28: return LEN(OP_DST6, 16);
  case 32: case 139: return LEN(OP_ICMP_TC, 2);
  case 34: case 50: return UMAX(OP_SAMPLING, 4);
  case 35: case 49: case 304: return LEN(OP_SAMPLING_ALGO, 1);
  case 38: return LEN(OP_ENGINE_TYPE, 1);
  case 39: return LEN(OP_ENGINE_ID, 1);
  case 48: case 302: return U(OP_SAMPLER_ID);
  case 55: return LEN(OP_DST_TOS, 1);
  case 56: return LEN(OP_IN_SRC_MAC, 6);
  case 57: return LEN(OP_OUT_DST_MAC, 6);
  case 58: case 243: return UMAX(OP_VLAN, 2);
  case 59: case 254: return UMAX(OP_DST_VLAN, 2);
  case 60: return LEN(OP_IPVER, 1);
  case 61: return LEN(OP_DIRECTION, 1);
  case 62: return LEN(OP_NH6, 16);
  case 63: return LEN(OP_BGPNH6, 16);
  case 80: return LEN(OP_IN_DST_MAC, 6);
  case 81: return LEN(OP_OUT_SRC_MAC, 6);
  case 85: return U(OP_BYTES_TOTAL);
  case 86: return U(OP_PKTS_TOTAL);
  case 128: return UMAX(OP_NEXT_AS, 4);
  case 129: return UMAX(OP_PREV_AS, 4);
  case 149: return UMAX(OP_OBS_DOMAIN, 4);
  case 150: return U(OP_START_S);
  case 151: return U(OP_END_S);
  case 152: return U(OP_START_MS);
  case 153: return U(OP_END_MS);
  case 154: case 156: return LEN(OP_START_NTP, 8);
  case 155: case 157: return LEN(OP_END_NTP, 8);
  case 158: return U(OP_START_DUS);
  case 159: return U(OP_END_DUS);
  case 160: return U(OP_SYSINIT_MS);
  case 161: return U(OP_DURATION_MS);
  case 171: return U(OP_OUT_BYTES_TOTAL);
  case 172: return U(OP_OUT_PKTS_TOTAL);
  case 176: case 178: return LEN(OP_ICMP_TYPE, 1);
  case 177: case 179: return LEN(OP_ICMP_CODE, 1);
  case 225: return LEN(OP_XSRC4, 4);
  case 226: return LEN(OP_XDST4, 4);
  case 227: return UMAX(OP_XSPORT, 2);
  case 228: return UMAX(OP_XDPORT, 2);
  case 230: return LEN(OP_NAT_EVENT, 1);
  case 231: return U(OP_INIT_BYTES);
  case 232: return U(OP_RESP_BYTES);
  case 233: return LEN(OP_FW_EVENT, 1);
  case 234: return UMAX(OP_IN_VRF, 4);
  case 235: return UMAX(OP_OUT_VRF, 4);
  case 281: return LEN(OP_XSRC6, 16);
  case 282: return LEN(OP_XDST6, 16);
  case 298: return U(OP_INIT_PKTS);
  case 299: return U(OP_RESP_PKTS);
  case 305: return UMAX(OP_PKT_INTERVAL, 4);
  case 306: return UMAX(OP_SPACE_INTERVAL, 4);
  case 312: return U(OP_FRAME_SIZE);
  case 315: return OP_FRAME_SECTION;
  case 323: return U(OP_EVENT_MS);
  default: break;
  }
  if (version != 9) return OP_SKIP; /* the numbers below would be enterprise bits in IPFIX */
  switch (type) { /* Cisco ASA NSEL (v9 only) */
  case 33002: return UMAX(OP_FW_XEVENT, 2);
  case 40001: return LEN(OP_XSRC4, 4);
  case 40002: return LEN(OP_XDST4, 4);
  case 40003: return UMAX(OP_XSPORT, 2);
  case 40004: return UMAX(OP_XDPORT, 2);
  case 40005: return LEN(OP_FW_EVENT, 1);
  default: return OP_SKIP;
  }
}

uint8_t nf_option_op(int version, int scope, uint16_t type, uint16_t len) {
  int u = len >= 1 && len <= 8;
  if (version == 9 && scope) return type == 2 ? UMAX(OPT_IFINDEX, 4) : OP_SKIP; /* 2 = interface scope */
  switch (type) {
  case 160: return U(OPT_SYSINIT);
  case 34: return UMAX(OPT_SAMPLING, 4);
  case 35: case 49: case 304: return U(OPT_SAMPLING_ALGO);
  case 48: case 302: return U(OPT_SAMPLER_ID);
  case 50: case 306: return UMAX(OPT_SPACE, 4);
  case 305: return UMAX(OPT_PKT_INTERVAL, 4);
  case 10: return UMAX(OPT_IFINDEX, 4);
  case 82: return OPT_IFNAME;
  case 83: return OPT_IFDESC;
  default: return OP_SKIP;
  }
}


static inline uint64_t ntp_to_ns(const uint8_t *p) {
  uint64_t sec = ba_load_be32(p), frac = ba_load_be32(p + 4);
  if (sec < NTP_UNIX_OFFSET) return 0;
  return (sec - NTP_UNIX_OFFSET) * NS_PER_S + ((frac * NS_PER_S) >> 32);
}

static inline int zero16(const uint8_t *p) {
  uint64_t a, b;
  memcpy(&a, p, 8);
  memcpy(&b, p + 8, 8);
  return !(a | b);
}

/* Next hops and NAT addresses: 0.0.0.0 stays all zero (none). */
static void set_addr(uint8_t dst[16], const uint8_t *p, unsigned len) {
  if (len == 4) {
    if (ba_load_be32(p)) nf_addr_v4(dst, ba_load_be32(p));
  } else {
    memcpy(dst, p, 16);
  }
}

/* Applies ops that only set a field of the record (v: the field as an
 * unsigned, 0 past 8 bytes). */
static void apply_plain(ba_record_t *r, uint8_t op, const uint8_t *p, unsigned len, uint64_t v) {
  if (op >= OP_MPLS0 && op <= OP_MPLS9) {
    r->mpls[op - OP_MPLS0] = (uint32_t)v;
    return;
  }
  switch (op) {
  case OP_SPORT: r->src_port = (uint16_t)v; break;
  case OP_DPORT: r->dst_port = (uint16_t)v; break;
  case OP_PROTO: r->proto = (uint8_t)v; break;
  case OP_TOS: r->tos = (uint8_t)v; break;
  case OP_FLAGS: r->tcp_flags |= (uint8_t)v; break;
  case OP_REV_FLAGS: r->tcp_flags |= (uint8_t)v; break;
  case OP_IN_IF: r->in_if = (uint32_t)v; break;
  case OP_OUT_IF: r->out_if = (uint32_t)v; break;
  case OP_SRC_AS: r->src_as = (uint32_t)v; break;
  case OP_DST_AS: r->dst_as = (uint32_t)v; break;
  case OP_PREV_AS: r->prev_as = (uint32_t)v; break;
  case OP_NEXT_AS: r->next_as = (uint32_t)v; break;
  case OP_VLAN: if (!r->vlan) r->vlan = (uint16_t)(v & 0xfff); break;
  case OP_DST_VLAN: if (!r->dst_vlan) r->dst_vlan = (uint16_t)(v & 0xfff); break;
  case OP_IPVER: if (!r->ipver && (v == 4 || v == 6)) r->ipver = (uint8_t)v; break;
  case OP_SRC_MASK: r->src_mask = (uint8_t)v; break;
  case OP_DST_MASK: r->dst_mask = (uint8_t)v; break;
  case OP_NH4: case OP_NH6: set_addr(r->next_hop, p, len); break;
  case OP_BGPNH4: case OP_BGPNH6: set_addr(r->bgp_next_hop, p, len); break;
  case OP_XSRC4: case OP_XSRC6: set_addr(r->xsrc, p, len); break;
  case OP_XDST4: case OP_XDST6: set_addr(r->xdst, p, len); break;
  case OP_XSPORT: r->xsrc_port = (uint16_t)v; break;
  case OP_XDPORT: r->xdst_port = (uint16_t)v; break;
  case OP_DST_TOS: r->dst_tos = (uint8_t)v; break;
  case OP_IN_SRC_MAC: r->in_src_mac = v; break;
  case OP_OUT_DST_MAC: r->out_dst_mac = v; break;
  case OP_IN_DST_MAC: r->in_dst_mac = v; break;
  case OP_OUT_SRC_MAC: r->out_src_mac = v; break;
  case OP_DIRECTION: r->direction = (uint8_t)v; break;
  case OP_SAMPLING_ALGO: r->sampling_algo = (uint8_t)v; break;
  case OP_ENGINE_TYPE: r->engine_type = (uint8_t)v; break;
  case OP_ENGINE_ID: r->engine_id = (uint8_t)v; break;
  case OP_NAT_EVENT: r->nat_event = (uint8_t)v; break;
  case OP_FW_EVENT: r->fw_event = (uint8_t)v; break;
  case OP_FW_XEVENT: r->fw_xevent = (uint16_t)v; break;
  case OP_IN_VRF: r->ingress_vrf = (uint32_t)v; break;
  case OP_OUT_VRF: r->egress_vrf = (uint32_t)v; break;
  case OP_AGGR_FLOWS: r->aggr_flows = (uint32_t)v; break;
  default: break;
  }
}

#define PLAIN(f) (*roff = (uint16_t)offsetof(ba_record_t, f), *rw = (uint8_t)sizeof(((ba_record_t *)0)->f))
void nf_plain_field(uint8_t op, unsigned len, uint16_t *roff, uint8_t *rw) {
  *roff = 0;
  *rw = 0;
  if (len > 8) return; /* nf_apply stores 0 for those: left to it */
  if (op >= OP_MPLS0 && op <= OP_MPLS9) {
    *roff = (uint16_t)(offsetof(ba_record_t, mpls) + 4u * (unsigned)(op - OP_MPLS0));
    *rw = 4;
    return;
  }
  /* the cases of apply_plain (and OP_SAMPLING of nf_apply) that are one
   * truncating store, nothing else */
  switch (op) {
  case OP_SPORT: PLAIN(src_port); break;
  case OP_DPORT: PLAIN(dst_port); break;
  case OP_PROTO: PLAIN(proto); break;
  case OP_TOS: PLAIN(tos); break;
  case OP_IN_IF: PLAIN(in_if); break;
  case OP_OUT_IF: PLAIN(out_if); break;
  case OP_SRC_AS: PLAIN(src_as); break;
  case OP_DST_AS: PLAIN(dst_as); break;
  case OP_PREV_AS: PLAIN(prev_as); break;
  case OP_NEXT_AS: PLAIN(next_as); break;
  case OP_SRC_MASK: PLAIN(src_mask); break;
  case OP_DST_MASK: PLAIN(dst_mask); break;
  case OP_XSPORT: PLAIN(xsrc_port); break;
  case OP_XDPORT: PLAIN(xdst_port); break;
  case OP_DST_TOS: PLAIN(dst_tos); break;
  case OP_IN_SRC_MAC: PLAIN(in_src_mac); break;
  case OP_OUT_DST_MAC: PLAIN(out_dst_mac); break;
  case OP_IN_DST_MAC: PLAIN(in_dst_mac); break;
  case OP_OUT_SRC_MAC: PLAIN(out_src_mac); break;
  case OP_DIRECTION: PLAIN(direction); break;
  case OP_SAMPLING_ALGO: PLAIN(sampling_algo); break;
  case OP_ENGINE_TYPE: PLAIN(engine_type); break;
  case OP_ENGINE_ID: PLAIN(engine_id); break;
  case OP_NAT_EVENT: PLAIN(nat_event); break;
  case OP_FW_EVENT: PLAIN(fw_event); break;
  case OP_FW_XEVENT: PLAIN(fw_xevent); break;
  case OP_IN_VRF: PLAIN(ingress_vrf); break;
  case OP_OUT_VRF: PLAIN(egress_vrf); break;
  case OP_AGGR_FLOWS: PLAIN(aggr_flows); break;
  case OP_SAMPLING: PLAIN(sampling); break;
  default: break;
  }
}
#undef PLAIN

uint8_t nf_plan_kind(uint8_t op, unsigned len, uint8_t rw) {
  if (rw) {
    if (rw == len) return rw == 1 ? NF_PK_1_1 : rw == 2 ? NF_PK_2_2 : rw == 4 ? NF_PK_4_4 : NF_PK_8_8;
    if (rw == 4 && len == 2) return NF_PK_4_2;
    if (rw == 8 && len == 4) return NF_PK_8_4;
    return NF_PK_PLAIN;
  }
  switch (op) {
  case OP_SRC4: return len == 4 ? NF_PK_SRC4 : NF_PK_APPLY;
  case OP_DST4: return len == 4 ? NF_PK_DST4 : NF_PK_APPLY;
  case OP_BYTES: return len == 4 ? NF_PK_BYTES4 : len == 8 ? NF_PK_BYTES8 : NF_PK_APPLY;
  case OP_PKTS: return len == 4 ? NF_PK_PKTS4 : len == 8 ? NF_PK_PKTS8 : NF_PK_APPLY;
  case OP_FIRST_UP: return len == 4 ? NF_PK_FIRST_UP4 : NF_PK_APPLY;
  case OP_LAST_UP: return len == 4 ? NF_PK_LAST_UP4 : NF_PK_APPLY;
  case OP_FLAGS:
  case OP_REV_FLAGS: return len == 1 ? NF_PK_FLAGS1 : len == 2 ? NF_PK_FLAGS2 : NF_PK_APPLY;
  default: return NF_PK_APPLY;
  }
}

void nf_apply(ba_record_t *r, nf_rec_state_t *s, uint8_t op, const uint8_t *p, unsigned len) {
  uint64_t v = len <= 8 ? nf_be_uint(p, len) : 0;
  switch (op) {
  /* Templates may carry both IPv4 and IPv6 addresses, the unused pair zero:
   * a zero address never replaces a non-zero one of the other family. */
  case OP_SRC4: if (v || !s->src6) nf_addr_v4(r->src, (uint32_t)v); s->have_addr = 1; break;
  case OP_DST4: if (v || !s->dst6) nf_addr_v4(r->dst, (uint32_t)v); s->have_addr = 1; break;
  case OP_SRC6: if (!zero16(p)) { memcpy(r->src, p, 16); s->src6 = 1; } else if (!s->have_addr) memcpy(r->src, p, 16); s->have_addr = 1; break;
  case OP_DST6: if (!zero16(p)) { memcpy(r->dst, p, 16); s->dst6 = 1; } else if (!s->have_addr) memcpy(r->dst, p, 16); s->have_addr = 1; break;
  case OP_BYTES: r->bytes = v; s->have_bytes = 1; break;
  case OP_PKTS: r->packets = v; s->have_pkts = 1; break;
  case OP_BYTES_TOTAL: s->bytes_total = v; break;
  case OP_PKTS_TOTAL: s->pkts_total = v; break;
  case OP_OUT_BYTES: r->out_bytes = v; s->have_out_bytes = 1; break;
  case OP_OUT_PKTS: r->out_packets = v; s->have_out_pkts = 1; break;
  case OP_OUT_BYTES_TOTAL: s->out_bytes_total = v; break;
  case OP_OUT_PKTS_TOTAL: s->out_pkts_total = v; break;
  case OP_INIT_BYTES: s->init_bytes = v; s->have_init_bytes = 1; break;
  case OP_INIT_PKTS: s->init_pkts = v; s->have_init_pkts = 1; break;
  case OP_RESP_BYTES: s->resp_bytes = v; s->have_resp_bytes = 1; break;
  case OP_RESP_PKTS: s->resp_pkts = v; s->have_resp_pkts = 1; break;
  case OP_FIRST_UP: s->first_up = (int64_t)v; break;
  case OP_LAST_UP: s->last_up = (int64_t)v; break;
  case OP_START_S: s->start_abs = v * NS_PER_S; break;
  case OP_END_S: s->end_abs = v * NS_PER_S; break;
  case OP_START_MS: s->start_abs = v * NS_PER_MS; break;
  case OP_END_MS: s->end_abs = v * NS_PER_MS; break;
  case OP_START_NTP: s->start_abs = ntp_to_ns(p); break;
  case OP_END_NTP: s->end_abs = ntp_to_ns(p); break;
  case OP_START_DUS: s->start_dus = (int64_t)(v & 0x7fffffffffffull); break;
  case OP_END_DUS: s->end_dus = (int64_t)(v & 0x7fffffffffffull); break;
  case OP_SYSINIT_MS: s->sysinit_ms = (int64_t)(v & 0x7fffffffffffull); break;
  case OP_DURATION_MS: s->duration_ms = (int64_t)(v & 0x7fffffffffffull); break;
  case OP_EVENT_MS: s->event_ms = (int64_t)(v & 0x7fffffffffffull); break;
  case OP_ICMP_TC: s->have_icmp = 1; s->icmp_type = p[0]; s->icmp_code = p[1]; break;
  case OP_ICMP_TYPE: s->have_icmp = 1; s->icmp_type = p[0]; break;
  case OP_ICMP_CODE: s->have_icmp = 1; s->icmp_code = p[0]; break;
  case OP_FRAME_SECTION: s->frame = p; s->frame_len = len; break;
  case OP_FRAME_SIZE: s->frame_size = v; s->have_frame = 1; break;
  case OP_SAMPLING: r->sampling = (uint32_t)v; break;
  case OP_SAMPLER_ID: s->sampler_id = v; s->have_sampler_id = 1; break;
  case OP_PKT_INTERVAL: s->pkt_interval = v; break;
  case OP_SPACE_INTERVAL: s->space_interval = v; break;
  case OP_OBS_DOMAIN: r->obs_domain = (uint32_t)v; s->have_obs = 1; break;
  default: apply_plain(r, op, p, len, v); break;
  }
}

/* ---------- samplers and interface names kept per exporter ---------- */

#define NF_MAX_SAMPLERS 4096
#define NF_MAX_IFNAMES 65536

const nf_sampler_t *nf_sampler_find(const nf_source_t *s, uint32_t domain, int have_id, uint64_t id) {
  const nf_sampler_t *generic = NULL;
  uint64_t want = have_id ? id : 0;
  for (size_t i = 0; i < s->nsamplers; i++) {
    const nf_sampler_t *m = &s->samplers[i];
    if (m->domain != domain) continue;
    if (m->generic) generic = m;
    else if (m->id == want) return m;
  }
  return generic;
}

int nf_sampler_put(nf_source_t *s, const nf_sampler_t *smp) {
  for (size_t i = 0; i < s->nsamplers; i++) {
    nf_sampler_t *m = &s->samplers[i];
    if (m->domain == smp->domain && m->generic == smp->generic && m->id == smp->id) {
      *m = *smp;
      return 0;
    }
  }
  if (s->nsamplers >= NF_MAX_SAMPLERS) return -1;
  if (s->nsamplers == s->samplers_cap) {
    size_t nc = s->samplers_cap ? s->samplers_cap * 2 : 4;
    nf_sampler_t *n = ba_realloc(s->samplers, nc * sizeof(*n));
    if (!n) return BA_ERR_NOMEM;
    s->samplers = n;
    s->samplers_cap = nc;
  }
  s->samplers[s->nsamplers++] = *smp;
  return 0;
}

static void copy_name(char dst[64], const char *src) {
  size_t n = 0;
  for (; src[n] && n < 63; n++) dst[n] = (char)((unsigned char)src[n] < 0x20 ? '?' : src[n]);
  dst[n] = 0;
}

int nf_ifname_put(nf_source_t *s, uint32_t domain, uint32_t ifindex, const char *name, const char *desc) {
  nf_ifname_t *e = NULL;
  for (size_t i = 0; i < s->nifnames && !e; i++)
    if (s->ifnames[i].domain == domain && s->ifnames[i].ifindex == ifindex) e = &s->ifnames[i];
  if (!e) {
    if (s->nifnames >= NF_MAX_IFNAMES) return -1;
    if (s->nifnames == s->ifnames_cap) {
      size_t nc = s->ifnames_cap ? s->ifnames_cap * 2 : 8;
      nf_ifname_t *n = ba_realloc(s->ifnames, nc * sizeof(*n));
      if (!n) return BA_ERR_NOMEM;
      s->ifnames = n;
      s->ifnames_cap = nc;
    }
    e = &s->ifnames[s->nifnames++];
    memset(e, 0, sizeof(*e));
    e->domain = domain;
    e->ifindex = ifindex;
  }
  if (name) copy_name(e->name, name);
  if (desc) copy_name(e->desc, desc);
  return 0;
}

/* ---------- finishing a record ---------- */

static uint64_t scale(uint64_t v, uint64_t mul, uint64_t div) {
  if (v && mul > UINT64_MAX / v) return UINT64_MAX;
  return v * mul / div;
}

/* Counters in preference order (delta, total, initiator/responder, frame),
 * then the exporter's sampler as nfdump applies it. */
static void rec_counters(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, const nf_rec_state_t *s) {
  if (!s->have_bytes) r->bytes = s->bytes_total ? s->bytes_total : s->have_init_bytes ? s->init_bytes : s->frame_size;
  if (!s->have_pkts)
    r->packets = s->pkts_total ? s->pkts_total : s->have_init_pkts ? s->init_pkts : (s->have_frame ? 1 : 0);
  if (!s->have_out_bytes) r->out_bytes = s->out_bytes_total ? s->out_bytes_total : s->resp_bytes;
  if (!s->have_out_pkts) r->out_packets = s->out_pkts_total ? s->out_pkts_total : s->resp_pkts;
  const nf_sampler_t *m = nf_sampler_find(d->cur, h->domain, s->have_sampler_id, s->sampler_id);
  if (m) {
    uint64_t pk = m->packet_interval ? m->packet_interval : 1, tot = pk + m->space_interval;
    if (m->space_interval && !(d->o.flags & BA_FLOW_RAW_COUNTERS)) {
      r->packets = scale(r->packets, tot, pk);
      r->bytes = scale(r->bytes, tot, pk);
      r->out_packets = scale(r->out_packets, tot, pk);
      r->out_bytes = scale(r->out_bytes, tot, pk);
    }
    r->sampling = (uint32_t)BA_MIN(tot / pk, UINT32_MAX);
    r->sampling_algo = m->algorithm;
  } else if (s->pkt_interval || s->space_interval) {
    uint64_t pk = s->pkt_interval ? s->pkt_interval : 1;
    r->sampling = (uint32_t)BA_MIN((pk + s->space_interval) / pk, UINT32_MAX);
  }
}

static void rec_icmp(ba_record_t *r, nf_rec_state_t *s) {
  if (r->proto != 1 && r->proto != 58) return;
  if (!s->have_icmp) {
    s->icmp_type = (uint8_t)(r->dst_port >> 8);
    s->icmp_code = (uint8_t)r->dst_port;
  }
  r->icmp_type = s->icmp_type;
  r->icmp_code = s->icmp_code;
  r->src_port = 0;
  r->dst_port = (uint16_t)(s->icmp_type << 8 | s->icmp_code);
}

/* A sampled frame (IPFIX dataLinkFrameSection): the headers come from it. */
static void rec_frame(ba_record_t *r, nf_rec_state_t *s) {
  if (!s->frame || !s->frame_len || s->have_addr) return;
  ba_record_t pr;
  ba_packet_parse(DLT_EN10MB, s->frame, s->frame_len, s->frame_len, 0, &pr, NULL);
  if (!pr.ipver) return;
  memcpy(r->src, pr.src, 16);
  memcpy(r->dst, pr.dst, 16);
  r->ipver = pr.ipver;
  r->proto = pr.proto;
  r->src_port = pr.src_port;
  r->dst_port = pr.dst_port;
  r->tcp_flags |= pr.tcp_flags;
  r->tos = pr.tos;
  if (!r->vlan) r->vlan = pr.vlan;
  if (pr.proto == 1 || pr.proto == 58) {
    s->have_icmp = 1;
    s->icmp_type = pr.icmp_type;
    s->icmp_code = pr.icmp_code;
  }
}

/* NetFlow v5/v9 FIRST/LAST_SWITCHED (sysUpTime ms) to ns, as nfdump:
 * boot = export time - uptime; a start above the end means the uptime
 * wrapped between them (start 2^32 ms earlier); v5 only: an end more than
 * 100 s past the uptime means it wrapped after the flow (Cisco IOS bug
 * CSCei12353). */
static inline void up_times(const nf_hdr_t *h, int64_t first_up, int64_t last_up, uint64_t *first, uint64_t *last) {
  int64_t boot = (int64_t)(h->export_ns / NS_PER_MS) - (int64_t)h->uptime_ms;
  int64_t wrap = (int64_t)1 << 32, f = 0, l = 0;
  if (first_up >= 0) f = boot + first_up - (last_up >= 0 && first_up > last_up ? wrap : 0);
  if (last_up >= 0) l = boot + last_up;
  if (h->version == 5 && last_up > (int64_t)h->uptime_ms && last_up - (int64_t)h->uptime_ms > 100000) {
    f -= wrap;
    l -= wrap;
  }
  if (!*first && first_up >= 0 && f > 0) *first = (uint64_t)f * NS_PER_MS;
  if (!*last && last_up >= 0 && l > 0) *last = (uint64_t)l * NS_PER_MS;
}

/* ba_addr_is_v4 with two loads (a per-record cost of nf_rec_finish). */
static inline int addr_is_v4(const uint8_t a[16]) {
  static const uint8_t mapped[4] = {0, 0, 0xff, 0xff};
  uint64_t lo;
  uint32_t mid, want;
  memcpy(&lo, a, 8);
  memcpy(&mid, a + 8, 4);
  memcpy(&want, mapped, 4); /* host order either way */
  return lo == 0 && mid == want;
}

int nf_rec_finish(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, nf_rec_state_t *s) {
  rec_frame(r, s);
  rec_counters(d, h, r, s);
  rec_icmp(r, s);
  uint64_t first = s->start_abs, last = s->end_abs;
  int64_t boot_ms = -1;
  if (s->sysinit_ms >= 0) boot_ms = s->sysinit_ms;
  else if (d->cur->sysinit_ms >= 0) boot_ms = d->cur->sysinit_ms;
  if (h->version == 5 || h->version == 9) {
    up_times(h, s->first_up, s->last_up, &first, &last);
  } else if (boot_ms >= 0) { /* IPFIX 22/21 from systemInitTimeMilliseconds */
    if (!first && s->first_up >= 0) first = (uint64_t)(boot_ms + s->first_up) * NS_PER_MS;
    if (!last && s->last_up >= 0) last = (uint64_t)(boot_ms + s->last_up) * NS_PER_MS;
  }
  if (!first && s->start_dus >= 0 && (uint64_t)s->start_dus * 1000 <= h->export_ns)
    first = h->export_ns - (uint64_t)s->start_dus * 1000;
  if (!last && s->end_dus >= 0 && (uint64_t)s->end_dus * 1000 <= h->export_ns)
    last = h->export_ns - (uint64_t)s->end_dus * 1000;
  if (!first && s->event_ms >= 0) first = (uint64_t)s->event_ms * NS_PER_MS;
  if (s->duration_ms >= 0) {
    if (first && !last) last = first + (uint64_t)s->duration_ms * NS_PER_MS;
    else if (last && !first && (uint64_t)s->duration_ms * NS_PER_MS <= last)
      first = last - (uint64_t)s->duration_ms * NS_PER_MS;
  }
  if (!first) first = last ? last : h->export_ns;
  if (!last) last = first; /* a missing end is the start; an end before the start is kept as sent */
  if (!s->have_obs) r->obs_domain = h->domain;
  if (h->version == 9) { /* nfdump: a v9 source id is engine type << 8 | engine id unless 38/39 say */
    if (!r->engine_type) r->engine_type = (uint8_t)(h->domain >> 8);
    if (!r->engine_id) r->engine_id = (uint8_t)h->domain;
  }
  if (s->have_addr) {
    r->ipver = s->src6 || s->dst6 || !addr_is_v4(r->src) || !addr_is_v4(r->dst) ? 6 : 4;
    if (r->ipver == 6) { /* an IPv4 partner of an IPv6 address was a zero placeholder */
      if (addr_is_v4(r->src) && !ba_addr_get_v4(r->src)) memset(r->src, 0, 16);
      if (addr_is_v4(r->dst) && !ba_addr_get_v4(r->dst)) memset(r->dst, 0, 16);
    }
  }
  if (!r->ipver) { /* no address elements: 0.0.0.0 */
    r->ipver = 4;
    ba_addr_set_v4(r->src, 0);
    ba_addr_set_v4(r->dst, 0);
  }
  return nf_rec_times(d, h, r, first, last);
}

int nf_rec_finish_v5(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, uint32_t first_up, uint32_t last_up) {
  if (d->cur->nsamplers) { /* the exporter's sampler options (v9/IPFIX from its address): nf_rec_finish's way */
    nf_rec_state_t s;
    nf_state_init(&s);
    s.first_up = first_up;
    s.last_up = last_up;
    s.have_bytes = s.have_pkts = s.have_addr = 1;
    return nf_rec_finish(d, h, r, &s);
  }
  /* That state in nf_rec_finish: no frame; the counters set, the outbound
   * ones 0 (as r holds); no sampler; ICMP from the destination port; the
   * times from FIRST/LAST alone; both addresses IPv4 (ipver 4 as set). */
  if (r->proto == 1 || r->proto == 58) {
    r->icmp_type = (uint8_t)(r->dst_port >> 8);
    r->icmp_code = (uint8_t)r->dst_port;
    r->src_port = 0; /* dst_port: type << 8 | code, as it was */
  }
  uint64_t first = 0, last = 0;
  up_times(h, first_up, last_up, &first, &last);
  if (!first) first = last ? last : h->export_ns;
  if (!last) last = first;
  r->obs_domain = h->domain;
  return nf_rec_times(d, h, r, first, last);
}

/* t moved by (to - from), clamped to [0, UINT64_MAX]. */
static uint64_t shift(uint64_t t, uint64_t from, uint64_t to) {
  if (to >= from) return t > UINT64_MAX - (to - from) ? UINT64_MAX : t + (to - from);
  return from - to > t ? 0 : t - (from - to);
}

int nf_rec_times(ba_flow_decoder_t *d, const nf_hdr_t *h, ba_record_t *r, uint64_t first, uint64_t last) {
  uint64_t ex = h->export_ns;
  if (ex && (first > ex + NS_PER_DAY || first + NS_PER_DAY < ex)) {
    CNT(d, clock_far)++;
    d->cur->clock_suspicious = 1;
  }
  uint64_t past = (uint64_t)d->o.past_s * NS_PER_S, fut = (uint64_t)d->o.future_s * NS_PER_S;
  if ((past && ex > past && first < ex - past) || (fut && first > ex + fut)) {
    nf_set_err(d, "flow start %llu s is outside the window of %u s before / %u s after export time %llu s",
               (unsigned long long)(first / NS_PER_S), d->o.past_s, d->o.future_s,
               (unsigned long long)(ex / NS_PER_S));
    nf_drop(d, BA_DROP_TIME, 1);
    return -1;
  }
  if ((d->o.flags & BA_FLOW_REBASE_TIME) && h->received_ns) {
    first = shift(first, ex, h->received_ns);
    last = shift(last, ex, h->received_ns);
  }
  r->first_ns = first;
  r->last_ns = last;
  r->received_ns = h->received_ns;
  r->kind = BA_REC_FLOW;
  memcpy(r->exporter, d->cur->addr, 16);
  return 0;
}

/* Export time against the receive time, per message. */
void nf_hdr_clock(ba_flow_decoder_t *d, const nf_hdr_t *h) {
  if (h->export_ns < 946684800ull * NS_PER_S) d->cur->clock_suspicious = 1; /* before 2000 */
  if (!h->received_ns) return;
  int64_t skew = h->export_ns >= h->received_ns ? (int64_t)((h->export_ns - h->received_ns) / NS_PER_S)
                                                 : -(int64_t)((h->received_ns - h->export_ns) / NS_PER_S);
  d->cur->export_skew_s = skew;
  if (skew > 86400 || skew < -86400) d->cur->clock_suspicious = 1;
}
