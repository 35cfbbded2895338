/* nfdump 1.6 flow records (record type 10): a 32-byte common part, the
 * required address and counter extensions sized by the record's flags,
 * then the optional extensions listed, in order, by the extension map the
 * record names (record type 2). Layout of nfdump 1.6's nfx.h. */
#include <string.h>

#include "common/common.h"
#include "ingest/nffile_internal.h"

#define V1_FLAG_IPV6 0x01
#define V1_FLAG_PKG64 0x02
#define V1_FLAG_BYTES64 0x04
#define V1_COMMON_LEN 32
#define V1_MAX_EXT 49

/* Bytes of each optional extension (nfx.c's table; 0 = none stored). */
static const uint8_t g_ext_size[V1_MAX_EXT + 1] = {
  [4] = 4, [5] = 8, [6] = 4, [7] = 8, [8] = 4, [9] = 4, [10] = 16, [11] = 4, [12] = 16, [13] = 4,
  [14] = 4, [15] = 8, [16] = 4, [17] = 8, [18] = 4, [19] = 8, [20] = 16, [21] = 16, [22] = 40, [23] = 4,
  [24] = 16, [25] = 4, [26] = 8, [27] = 8, [37] = 20, [38] = 4, [39] = 8, [40] = 32, [41] = 24, [42] = 24,
  [43] = 72, [45] = 24, [46] = 12, [47] = 8, [48] = 8};

/* type 2: header, map_id u16, extension_size u16, ids u16... ending in 0 */
int nf_v1_extmap(nf_ctx_t *c, const uint8_t *p, size_t size) {
  if (size < 10) {
    nff_drop(c, BA_NFDROP_MALFORMED, "extension map of %zu bytes", size);
    return BA_OK;
  }
  nf_extmap_t m = {.present = 1};
  for (size_t off = 8; off + 2 <= size; off += 2) {
    uint16_t id = ba_load_le16(p + off);
    if (!id) break;
    if (id > V1_MAX_EXT || m.n == sizeof m.ids / sizeof m.ids[0]) {
      nff_drop(c, BA_NFDROP_MALFORMED, "extension map %u: extension id %u", ba_load_le16(p + 4), id);
      return BA_OK;
    }
    if (id > 3) m.ids[m.n++] = id;  /* 1..3 are the required ones, never listed */
  }
  int nomem = 0;
  nf_extmap_t *slot = nf_table_get(&c->maps, ba_load_le16(p + 4), 1, &nomem);
  if (!slot) return BA_ERR_NOMEM;
  *slot = m;
  c->res->meta_records++;
  return BA_OK;
}

static uint64_t v1_load_u64(const uint8_t *e) { return ba_load_le64(e); }  /* stored as two host-order halves */

/* One optional extension into r. */
static void v1_ext(ba_record_t *r, unsigned id, const uint8_t *e, uint64_t *agg) {
  switch (id) {
    case 4: r->in_if = ba_load_le16(e); r->out_if = ba_load_le16(e + 2); break;
    case 5: r->in_if = ba_load_le32(e); r->out_if = ba_load_le32(e + 4); break;
    case 6: r->src_as = ba_load_le16(e); r->dst_as = ba_load_le16(e + 2); break;
    case 7: r->src_as = ba_load_le32(e); r->dst_as = ba_load_le32(e + 4); break;
    case 8: r->dst_tos = e[0]; r->direction = e[1]; r->src_mask = e[2]; r->dst_mask = e[3]; break;
    case 9: ba_addr_set_v4(r->next_hop, ba_load_le32(e)); break;
    case 10: nf_load_v6(e, r->next_hop); break;
    case 11: ba_addr_set_v4(r->bgp_next_hop, ba_load_le32(e)); break;
    case 12: nf_load_v6(e, r->bgp_next_hop); break;
    case 13: r->vlan = ba_load_le16(e); r->dst_vlan = ba_load_le16(e + 2); break;
    case 14: r->out_packets = ba_load_le32(e); break;
    case 15: r->out_packets = v1_load_u64(e); break;
    case 16: r->out_bytes = ba_load_le32(e); break;
    case 17: r->out_bytes = v1_load_u64(e); break;
    case 18: *agg = ba_load_le32(e); break;
    case 19: *agg = v1_load_u64(e); break;
    case 20:
      r->in_src_mac = v1_load_u64(e) & 0xFFFFFFFFFFFFull;
      r->out_dst_mac = v1_load_u64(e + 8) & 0xFFFFFFFFFFFFull;
      break;
    case 21:
      r->in_dst_mac = v1_load_u64(e) & 0xFFFFFFFFFFFFull;
      r->out_src_mac = v1_load_u64(e + 8) & 0xFFFFFFFFFFFFull;
      break;
    case 22: for (int i = 0; i < 10; i++) r->mpls[i] = ba_load_le32(e + 4 * i); break;
    case 23: ba_addr_set_v4(r->exporter, ba_load_le32(e)); break;
    case 24: nf_load_v6(e, r->exporter); break;
    case 25: r->engine_type = e[2]; r->engine_id = e[3]; break;
    case 26: r->next_as = ba_load_le32(e); r->prev_as = ba_load_le32(e + 4); break;
    case 27: r->received_ns = v1_load_u64(e) * 1000000u; break;
    case 37: r->fw_event = e[14]; r->fw_xevent = ba_load_le16(e + 16); break;
    case 38: r->xsrc_port = ba_load_le16(e); r->xdst_port = ba_load_le16(e + 2); break;
    case 39: ba_addr_set_v4(r->xsrc, ba_load_le32(e)); ba_addr_set_v4(r->xdst, ba_load_le32(e + 4)); break;
    case 40: nf_load_v6(e, r->xsrc); nf_load_v6(e + 16, r->xdst); break;
    case 46:
      r->nat_event = e[0];
      r->egress_vrf = ba_load_le32(e + 4);
      r->ingress_vrf = ba_load_le32(e + 8);
      break;
    default: break;  /* ACLs, user names, latency, port blocks, reserved: no field */
  }
}

int nf_v1_record(nf_ctx_t *c, const uint8_t *p, size_t size) {
  if (size < V1_COMMON_LEN + 16) {
    nff_drop(c, BA_NFDROP_MALFORMED, "flow record of %zu bytes", size);
    return BA_OK;
  }
  uint16_t flags = ba_load_le16(p + 4), map_id = ba_load_le16(p + 6);
  int nomem = 0;
  const nf_extmap_t *map = nf_table_get(&c->maps, map_id, 0, &nomem);
  if (!map) {
    nff_drop(c, BA_NFDROP_NO_EXTMAP, "flow record names extension map %u, never defined", map_id);
    return BA_OK;
  }
  size_t need = V1_COMMON_LEN + (flags & V1_FLAG_IPV6 ? 32 : 8) + (flags & V1_FLAG_PKG64 ? 8 : 4) +
                (flags & V1_FLAG_BYTES64 ? 8 : 4);
  for (unsigned i = 0; i < map->n; i++) need += g_ext_size[map->ids[i]];
  if (need > size) {
    nff_drop(c, BA_NFDROP_MALFORMED, "flow record of %zu bytes, its extension map %u needs %zu", size, map_id, need);
    return BA_OK;
  }
  ba_record_t r;
  memset(&r, 0, sizeof r);
  r.kind = BA_REC_FLOW;
  nf_apply_exporter(c, ba_load_le16(p + 28), &r);
  uint64_t first_ms = (uint64_t)ba_load_le32(p + 12) * 1000u + ba_load_le16(p + 8);
  uint64_t last_ms = (uint64_t)ba_load_le32(p + 16) * 1000u + ba_load_le16(p + 10);
  r.first_ns = first_ms * 1000000u;
  r.last_ns = last_ms * 1000000u;
  r.tcp_flags = p[21];
  r.proto = p[22];
  r.tos = p[23];
  r.src_port = ba_load_le16(p + 24);
  r.dst_port = ba_load_le16(p + 26);
  const uint8_t *e = p + V1_COMMON_LEN;
  if (flags & V1_FLAG_IPV6) {
    nf_load_v6(e, r.src);
    nf_load_v6(e + 16, r.dst);
    r.ipver = 6;
    e += 32;
  } else {
    ba_addr_set_v4(r.src, ba_load_le32(e));
    ba_addr_set_v4(r.dst, ba_load_le32(e + 4));
    r.ipver = 4;
    e += 8;
  }
  r.packets = flags & V1_FLAG_PKG64 ? v1_load_u64(e) : ba_load_le32(e);
  e += flags & V1_FLAG_PKG64 ? 8 : 4;
  r.bytes = flags & V1_FLAG_BYTES64 ? v1_load_u64(e) : ba_load_le32(e);
  e += flags & V1_FLAG_BYTES64 ? 8 : 4;
  uint64_t agg = 0;  /* 0 = one flow (record.h) */
  for (unsigned i = 0; i < map->n; i++) {
    v1_ext(&r, map->ids[i], e, &agg);
    e += g_ext_size[map->ids[i]];
  }
  r.aggr_flows = (uint32_t)BA_MIN(agg, UINT32_MAX);
  nf_fix_icmp(&r);
  return nf_emit(c, &r);
}
