/* nfdump 1.7 "V3" flow records (a 12-byte header, then typed elements) and
 * the exporter / sampler records both layouts share. Element layouts are
 * those of nfdump 1.7's nfxV3.h; offsets below are into an element's
 * payload (after its 4-byte type/length header). */
#include <string.h>

#include "common/common.h"
#include "ingest/nffile_internal.h"

/* Element ids (nfxV3.h). */
enum {
  EX_GENERIC = 1, EX_IPV4 = 2, EX_IPV6 = 3, EX_MISC = 4, EX_CNT = 5, EX_VLAN = 6, EX_AS = 7,
  EX_BGPNH4 = 8, EX_BGPNH6 = 9, EX_NH4 = 10, EX_NH6 = 11, EX_RECV4 = 12, EX_RECV6 = 13, EX_MPLS = 14,
  EX_MAC = 15, EX_ASADJ = 16, EX_LATENCY = 17, EX_SAMPLER = 18, EX_NSEL = 19, EX_XLATE4 = 20,
  EX_XLATE6 = 21, EX_XLATEPORT = 22, EX_ACL = 23, EX_USER = 24, EX_NEL = 25, EX_PORTBLOCK = 26,
  EX_OBSERVATION = 33, EX_VRF = 36, EX_MAXKNOWN = 42
};
/* Payload bytes each element needs at least (0: any length). */
static const uint8_t g_min_len[EX_MAXKNOWN + 1] = {
  [EX_GENERIC] = 48, [EX_IPV4] = 8, [EX_IPV6] = 32, [EX_MISC] = 14, [EX_CNT] = 24, [EX_VLAN] = 8,
  [EX_AS] = 8, [EX_BGPNH4] = 4, [EX_BGPNH6] = 16, [EX_NH4] = 4, [EX_NH6] = 16, [EX_RECV4] = 4,
  [EX_RECV6] = 16, [EX_MPLS] = 40, [EX_MAC] = 32, [EX_ASADJ] = 8, [EX_SAMPLER] = 12, [EX_NSEL] = 15,
  [EX_XLATE4] = 8, [EX_XLATE6] = 32, [EX_XLATEPORT] = 4, [EX_NEL] = 13, [EX_OBSERVATION] = 12, [EX_VRF] = 8};

static uint64_t ms_to_ns(uint64_t ms) { return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u; }

/* One element of a V3 record into r. Returns 0 if it was used, 1 if bitarc
 * keeps none of its fields. Elements override what the exporter record
 * gave (router address, observation domain, sampling). */
static int v3_element(ba_record_t *r, unsigned type, const uint8_t *e, size_t n) {
  switch (type) {
    case EX_GENERIC:
      r->first_ns = ms_to_ns(ba_load_le64(e));
      r->last_ns = ms_to_ns(ba_load_le64(e + 8));
      r->received_ns = ms_to_ns(ba_load_le64(e + 16));
      r->packets = ba_load_le64(e + 24);
      r->bytes = ba_load_le64(e + 32);
      r->src_port = ba_load_le16(e + 40);
      r->dst_port = ba_load_le16(e + 42);
      r->proto = e[44];
      r->tcp_flags = e[45];
      r->tos = e[47];
      return 0;
    case EX_IPV4:
      ba_addr_set_v4(r->src, ba_load_le32(e));
      ba_addr_set_v4(r->dst, ba_load_le32(e + 4));
      r->ipver = 4;
      return 0;
    case EX_IPV6:
      nf_load_v6(e, r->src);
      nf_load_v6(e + 16, r->dst);
      r->ipver = 6;
      return 0;
    case EX_MISC:
      r->in_if = ba_load_le32(e);
      r->out_if = ba_load_le32(e + 4);
      r->src_mask = e[8];
      r->dst_mask = e[9];
      r->direction = e[10];
      r->dst_tos = e[11];
      return 0;
    case EX_CNT:
      r->aggr_flows = (uint32_t)BA_MIN(ba_load_le64(e), UINT32_MAX);
      r->out_packets = ba_load_le64(e + 8);
      r->out_bytes = ba_load_le64(e + 16);
      return 0;
    case EX_VLAN:
      r->vlan = (uint16_t)ba_load_le32(e);
      r->dst_vlan = (uint16_t)ba_load_le32(e + 4);
      return 0;
    case EX_AS:
      r->src_as = ba_load_le32(e);
      r->dst_as = ba_load_le32(e + 4);
      return 0;
    case EX_BGPNH4: ba_addr_set_v4(r->bgp_next_hop, ba_load_le32(e)); return 0;
    case EX_BGPNH6: nf_load_v6(e, r->bgp_next_hop); return 0;
    case EX_NH4: ba_addr_set_v4(r->next_hop, ba_load_le32(e)); return 0;
    case EX_NH6: nf_load_v6(e, r->next_hop); return 0;
    case EX_RECV4: ba_addr_set_v4(r->exporter, ba_load_le32(e)); return 0;
    case EX_RECV6: nf_load_v6(e, r->exporter); return 0;
    case EX_MPLS:
      for (int i = 0; i < 10; i++) r->mpls[i] = ba_load_le32(e + 4 * i);
      return 0;
    case EX_MAC:
      r->in_src_mac = ba_load_le64(e) & 0xFFFFFFFFFFFFull;
      r->out_dst_mac = ba_load_le64(e + 8) & 0xFFFFFFFFFFFFull;
      r->in_dst_mac = ba_load_le64(e + 16) & 0xFFFFFFFFFFFFull;
      r->out_src_mac = ba_load_le64(e + 24) & 0xFFFFFFFFFFFFull;
      return 0;
    case EX_ASADJ:
      r->next_as = ba_load_le32(e);
      r->prev_as = ba_load_le32(e + 4);
      return 0;
    case EX_SAMPLER:
      /* nfdump 1.7.1: id i32, interval u32, mode u16, sysid u16 (12 bytes);
       * later versions keep only a selector id (16 bytes) */
      if (n != 12) return 1;
      r->sampling = ba_load_le32(e + 4);
      r->sampling_algo = (uint8_t)ba_load_le16(e + 8);
      return 0;
    case EX_NSEL:
      r->fw_xevent = ba_load_le16(e + 12);
      r->fw_event = e[14];
      return 0;
    case EX_XLATE4:
      ba_addr_set_v4(r->xsrc, ba_load_le32(e));
      ba_addr_set_v4(r->xdst, ba_load_le32(e + 4));
      return 0;
    case EX_XLATE6:
      nf_load_v6(e, r->xsrc);
      nf_load_v6(e + 16, r->xdst);
      return 0;
    case EX_XLATEPORT:
      r->xsrc_port = ba_load_le16(e);
      r->xdst_port = ba_load_le16(e + 2);
      return 0;
    case EX_NEL:
      if (n >= 21) {  /* older files: msecEvent, egressVrf, ingressVrf, poolID, natEvent */
        r->egress_vrf = ba_load_le32(e + 8);
        r->ingress_vrf = ba_load_le32(e + 12);
        r->nat_event = e[20];
      } else {
        r->nat_event = e[12];
      }
      return 0;
    case EX_OBSERVATION: r->obs_domain = ba_load_le32(e + 8); return 0;
    case EX_VRF:
      r->egress_vrf = ba_load_le32(e);
      r->ingress_vrf = ba_load_le32(e + 4);
      return 0;
  }
  return 1;
}

int nf_v3_record(nf_ctx_t *c, const uint8_t *p, size_t size) {
  if (size < 12) {
    nff_drop(c, BA_NFDROP_MALFORMED, "V3 record of %zu bytes", size);
    return BA_OK;
  }
  ba_record_t r;
  memset(&r, 0, sizeof r);
  r.kind = BA_REC_FLOW;
  unsigned nel = ba_load_le16(p + 4);
  r.engine_type = p[6];
  r.engine_id = p[7];
  uint16_t sysid = ba_load_le16(p + 8);
  nf_apply_exporter(c, sysid, &r);
  int has_addr = 0;
  size_t off = 12;
  uint64_t skipped = 0;
  for (unsigned i = 0; i < nel; i++) {
    unsigned type = size - off >= 4 ? ba_load_le16(p + off) : 0, len = size - off >= 4 ? ba_load_le16(p + off + 2) : 0;
    if (len < 4 || len > size - off || (type <= EX_MAXKNOWN && len - 4 < g_min_len[type])) {
      nff_drop(c, BA_NFDROP_MALFORMED, "V3 element %u of %u (type %u) has length %u", i + 1, nel, type, len);
      return BA_OK;
    }
    if (type == EX_IPV4 || type == EX_IPV6) has_addr = 1;
    skipped += (uint64_t)v3_element(&r, type, p + off + 4, len - 4u);
    off += len;
  }
  if (off != size || !has_addr) {
    nff_drop(c, BA_NFDROP_MALFORMED, "V3 record: %s", !has_addr ? "no address element" : "elements do not fill it");
    return BA_OK;
  }
  c->res->elements_skipped += skipped;
  nf_fix_icmp(&r);
  return nf_emit(c, &r);
}

/* ---------- exporter and sampler records ---------- */


/* type 7: header, version u32, ip (16), sa_family u16, sysid u16, id u32 */
int nf_exporter_record(nf_ctx_t *c, const uint8_t *p, size_t size) {
  if (size < 32) {
    nff_drop(c, BA_NFDROP_MALFORMED, "exporter record of %zu bytes", size);
    return BA_OK;
  }
  int nomem = 0;
  nf_exporter_t *e = nf_table_get(&c->exporters, ba_load_le16(p + 26), 1, &nomem);
  if (!e) return BA_ERR_NOMEM;
  uint16_t family = ba_load_le16(p + 24);
  if (family == 2) ba_addr_set_v4(e->ip, ba_load_le32(p + 16));  /* AF_INET: v4 in the third word */
  else nf_load_v6(p + 8, e->ip);
  e->id = ba_load_le32(p + 28);
  e->present = 1;
  c->res->meta_records++;
  return BA_OK;
}

/* Size 16 (nfdump 1.6 / v0): header, id i32, interval u32, algorithm u16,
 * sysid u16. Size 24 (1.7): header, sysid u16, algorithm u16, id i64,
 * packet interval u32, packet space u32; 1 in (interval + space) / interval. */
int nf_sampler_record(nf_ctx_t *c, const uint8_t *p, size_t size) {
  uint16_t sysid, algo;
  uint32_t rate;
  if (size == 16) {
    rate = ba_load_le32(p + 8);
    algo = ba_load_le16(p + 12);
    sysid = ba_load_le16(p + 14);
  } else if (size == 24) {
    sysid = ba_load_le16(p + 4);
    algo = ba_load_le16(p + 6);
    uint32_t pkt = ba_load_le32(p + 16), space = ba_load_le32(p + 20);
    rate = pkt ? (uint32_t)BA_MIN(((uint64_t)pkt + space) / pkt, UINT32_MAX) : 0;
  } else {
    nff_drop(c, BA_NFDROP_MALFORMED, "sampler record of %zu bytes", size);
    return BA_OK;
  }
  int nomem = 0;
  nf_exporter_t *e = nf_table_get(&c->exporters, sysid, 1, &nomem);
  if (!e) return BA_ERR_NOMEM;
  if (!e->sampling) {  /* the first sampler of an exporter applies to its flows */
    e->sampling = rate;
    e->sampling_algo = algo;
  }
  c->res->meta_records++;
  return BA_OK;
}

void nf_apply_exporter(nf_ctx_t *c, uint16_t sysid, ba_record_t *r) {
  int nomem = 0;
  const nf_exporter_t *e = nf_table_get(&c->exporters, sysid, 0, &nomem);
  if (!e) return;
  if (e->present) {
    memcpy(r->exporter, e->ip, 16);
    r->obs_domain = e->id;
  }
  r->sampling = e->sampling;
  r->sampling_algo = (uint8_t)e->sampling_algo;
}
