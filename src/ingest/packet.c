/* Packet header parsing for captured frames: link layers (Ethernet with
 * 802.1Q/QinQ, MPLS and PPPoE, Linux SLL/SLL2, raw IP, BSD loopback), IPv4,
 * PPP, IPv6 with extension headers, TCP/UDP/SCTP/ICMP/ICMPv6. Every length is
 * checked against caplen; a frame cut short keeps what was parsed. */
#include <pcap/dlt.h>
#include <string.h>

#include "bitarc/ingest.h"
#include "common/common.h"

#define ET_IPV4 0x0800
#define ET_IPV6 0x86DD
#define ET_VLAN 0x8100
#define ET_QINQ 0x88A8
#define ET_QINQ_OLD 0x9100
#define ET_MPLS 0x8847
#define ET_MPLS_MC 0x8848
#define ET_PPPOE 0x8864

typedef struct pk {
  const uint8_t *p;
  size_t len; /* bytes captured */
} pk_t;

static void parse_l4(pk_t *k, size_t off, size_t end, uint8_t proto, ba_record_t *r, size_t *udp_off) {
  const uint8_t *p = k->p;
  if (off > end) return;
  size_t n = end - off;
  switch (proto) {
  case 6: /* TCP */
    if (n >= 4) {
      r->src_port = ba_load_be16(p + off);
      r->dst_port = ba_load_be16(p + off + 2);
    }
    if (n >= 14) r->tcp_flags = p[off + 13];
    break;
  case 17:  /* UDP */
  case 136: /* UDP-Lite */
  case 132: /* SCTP */
    if (n >= 4) {
      r->src_port = ba_load_be16(p + off);
      r->dst_port = ba_load_be16(p + off + 2);
    }
    if (proto == 17 && n >= 8 && udp_off) *udp_off = off + 8;
    break;
  case 1:
  case 58:
    if (n >= 2) {
      r->icmp_type = p[off];
      r->icmp_code = p[off + 1];
      r->src_port = 0;
      r->dst_port = (uint16_t)(p[off] << 8 | p[off + 1]);
    }
    break;
  default:
    break;
  }
}

static void parse_ipv4(pk_t *k, size_t off, ba_record_t *r, size_t *udp_off) {
  const uint8_t *p = k->p;
  if (off > k->len || 20 > k->len - off) return;
  if ((p[off] >> 4) != 4) return;
  size_t ihl = (size_t)(p[off] & 15) * 4;
  if (ihl < 20) return;
  r->ipver = 4;
  r->tos = p[off + 1];
  uint16_t tot = ba_load_be16(p + off + 2);
  uint16_t frag = ba_load_be16(p + off + 6);
  r->proto = p[off + 9];
  ba_addr_set_v4(r->src, ba_load_be32(p + off + 12));
  ba_addr_set_v4(r->dst, ba_load_be32(p + off + 16));
  if (frag & 0x1fff) return; /* not the first fragment: no transport header */
  size_t end = k->len;
  if (tot >= ihl && tot <= k->len - off) end = off + tot;
  if (ihl > end - off) return;
  parse_l4(k, off + ihl, end, r->proto, r, udp_off);
}

static void parse_ipv6(pk_t *k, size_t off, ba_record_t *r, size_t *udp_off) {
  const uint8_t *p = k->p;
  if (off > k->len || 40 > k->len - off) return;
  if ((p[off] >> 4) != 6) return;
  r->ipver = 6;
  r->tos = (uint8_t)(ba_load_be32(p + off) >> 20);
  uint16_t plen = ba_load_be16(p + off + 4);
  uint8_t nh = p[off + 6];
  memcpy(r->src, p + off + 8, 16);
  memcpy(r->dst, p + off + 24, 16);
  size_t end = k->len;
  if (plen && plen <= k->len - off - 40) end = off + 40 + plen;
  size_t q = off + 40;
  for (int guard = 0; guard < 16; guard++) {
    size_t hl;
    switch (nh) {
    case 0:   /* hop-by-hop */
    case 43:  /* routing */
    case 60:  /* destination options */
    case 135: /* mobility */
    case 139: /* HIP */
    case 140: /* shim6 */
      if (q > end || 2 > end - q) { r->proto = nh; return; }
      hl = ((size_t)p[q + 1] + 1) * 8;
      break;
    case 51: /* AH */
      if (q > end || 2 > end - q) { r->proto = nh; return; }
      hl = ((size_t)p[q + 1] + 2) * 4;
      break;
    case 44: /* fragment */
      if (q > end || 8 > end - q) { r->proto = nh; return; }
      if (ba_load_be16(p + q + 2) & 0xfff8) { /* not the first fragment */
        r->proto = p[q];
        return;
      }
      hl = 8;
      break;
    default:
      r->proto = nh;
      parse_l4(k, q, end, nh, r, udp_off);
      return;
    }
    if (hl > end - q) { r->proto = nh; return; }
    nh = p[q];
    q += hl;
  }
  r->proto = nh;
}

static void parse_ip_by_version(pk_t *k, size_t off, ba_record_t *r, size_t *udp_off) {
  if (off >= k->len) return;
  uint8_t v = k->p[off] >> 4;
  if (v == 4) parse_ipv4(k, off, r, udp_off);
  else if (v == 6) parse_ipv6(k, off, r, udp_off);
}

/* Ethertype dispatch with VLAN tags, MPLS label stacks and PPPoE sessions. */
static void parse_ethertype(pk_t *k, size_t off, uint16_t et, ba_record_t *r, size_t *udp_off) {
  const uint8_t *p = k->p;
  for (int guard = 0; guard < 8; guard++) {
    switch (et) {
    case ET_IPV4: parse_ipv4(k, off, r, udp_off); return;
    case ET_IPV6: parse_ipv6(k, off, r, udp_off); return;
    case ET_VLAN:
    case ET_QINQ:
    case ET_QINQ_OLD:
      if (off > k->len || 4 > k->len - off) return;
      if (!r->vlan) r->vlan = ba_load_be16(p + off) & 0xfff; /* outer tag */
      et = ba_load_be16(p + off + 2);
      off += 4;
      break;
    case ET_MPLS:
    case ET_MPLS_MC:
      for (int l = 0; l < 16; l++) {
        if (off > k->len || 4 > k->len - off) return;
        int bottom = p[off + 2] & 1;
        off += 4;
        if (bottom) break;
        if (l == 15) return;
      }
      if (off >= k->len) return;
      if ((p[off] >> 4) == 4 || (p[off] >> 4) == 6) {
        parse_ip_by_version(k, off, r, udp_off);
        return;
      }
      /* Ethernet pseudowire with a control word (first nibble 0): inner frame. */
      if ((p[off] >> 4) != 0 || off + 4 > k->len || 14 > k->len - off - 4) return;
      off += 4;
      et = ba_load_be16(p + off + 12);
      off += 14;
      break;
    case ET_PPPOE:
      if (off > k->len || 8 > k->len - off) return;
      {
        uint16_t pp = ba_load_be16(p + off + 6);
        off += 8;
        if (pp == 0x0021) et = ET_IPV4;
        else if (pp == 0x0057) et = ET_IPV6;
        else return;
      }
      break;
    default:
      return;
    }
  }
}

static int af_is_v6(uint32_t af) { return af == 24 || af == 28 || af == 30 || af == 10; }

void ba_packet_parse(int dlt, const uint8_t *data, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns,
                     ba_record_t *r, size_t *udp_off) {
  memset(r, 0, sizeof(*r));
  r->kind = BA_REC_PACKET;
  r->first_ns = r->last_ns = ts_ns;
  r->packets = 1;
  r->bytes = wirelen;
  r->caplen = caplen;
  r->wirelen = wirelen;
  r->linktype = (uint16_t)dlt;
  r->frame = data;
  if (udp_off) *udp_off = SIZE_MAX;
  if (!data) return;
  pk_t k = {data, caplen};
  switch (dlt) {
  case DLT_EN10MB:
    if (caplen >= 14) {
      uint16_t et = ba_load_be16(data + 12);
      if (et >= 0x0600) parse_ethertype(&k, 14, et, r, udp_off);
    }
    break;
  case DLT_NULL:
  case DLT_LOOP:
    if (caplen >= 4) {
      uint32_t be = ba_load_be32(data), le = ba_load_le32(data);
      uint32_t af = dlt == DLT_LOOP ? be : (le < 256 ? le : be);
      if (af == 2) parse_ipv4(&k, 4, r, udp_off);
      else if (af_is_v6(af)) parse_ipv6(&k, 4, r, udp_off);
    }
    break;
  case DLT_RAW:
#ifdef DLT_IPV4
  case DLT_IPV4:
#endif
#ifdef DLT_IPV6
  case DLT_IPV6:
#endif
  case 101: /* LINKTYPE_RAW, in case a caller passes the file's link type */
    parse_ip_by_version(&k, 0, r, udp_off);
    break;
  case DLT_PPP:
  case DLT_PPP_SERIAL:
    /* optional address/control ff 03, then the PPP protocol number */
    {
      size_t o = caplen >= 2 && data[0] == 0xff && data[1] == 0x03 ? 2 : 0;
      if (caplen >= o + 2) {
        uint16_t pp = ba_load_be16(data + o);
        if (pp == 0x0021) parse_ipv4(&k, o + 2, r, udp_off);
        else if (pp == 0x0057) parse_ipv6(&k, o + 2, r, udp_off);
      }
    }
    break;
  case DLT_LINUX_SLL:
    if (caplen >= 16) parse_ethertype(&k, 16, ba_load_be16(data + 14), r, udp_off);
    break;
#ifdef DLT_LINUX_SLL2
  case DLT_LINUX_SLL2:
    if (caplen >= 20) parse_ethertype(&k, 20, ba_load_be16(data), r, udp_off);
    break;
#endif
  default:
    break;
  }
}
